"""Halide's IIR blur (apps/iir_blur, adams2019 §6.1): a first-order low-pass IIR filter run in four
passes over an f32 RGB image. The columns are filtered top to bottom and then bottom to top (two scans,
RDom updates of one Func), the result is transposed, and the same column filter runs again over the
transpose (so over the rows of the image: left to right, right to left) before transposing back.
alpha is Halide's estimate, 0.1; "full" is Halide's estimate, 1536 x 2560 x 3.

Halide's blur starts from undef and copies the first row in an update; here the pure definition copies
the whole input (the same values, since the downward scan overwrites every other row).
"""

from __future__ import annotations

import numpy as np

from ir import Func, Input, Pipeline, RDom, Var, f32
from ir.builder import ScheduleBuilder, StageSpec

DESCRIPTION = "IIR blur: first-order recursive filter down, up, then (transposed) right and left; f32 RGB"
SIZES = {"full": (1536, 2560, 3), "small": (24, 16, 3)}
ALPHA = 0.1


def blur_cols_transpose(inp, height: int, alpha: float, name: str, transpose_name: str) -> tuple[Func, Func]:
    """(blur, its transpose): `inp`'s columns filtered down, then up."""
    x, y, c = Var("x"), Var("y"), Var("c")
    blur = Func(name)
    blur[x, y, c] = inp[x, y, c]
    ry = RDom((1, height - 1), name="ry")
    beta = float(np.float32(1) - np.float32(alpha))  # Halide's 1 - alpha, in f32
    blur[x, ry, c] = beta * blur[x, ry - 1, c] + alpha * inp[x, ry, c]
    flip_ry = height - ry - 1
    blur[x, flip_ry, c] = beta * blur[x, flip_ry + 1, c] + alpha * blur[x, flip_ry, c]
    transpose = Func(transpose_name)
    transpose[x, y, c] = blur[y, x, c]
    return blur, transpose


def build(size: str = "full") -> Pipeline:
    w, h, _ = SIZES[size]
    inp = Input("input", f32, 3)
    _, blury_t = blur_cols_transpose(inp, h, ALPHA, "blur_y", "blur_y_T")
    _, out = blur_cols_transpose(blury_t, w, ALPHA, "blur_x", "output")  # blur_x's transpose: the image
    return Pipeline([out], {out: SIZES[size]}, name="iir_blur")


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule: each transpose in strips of 4 vectors' worth of rows (a strip of columns
    of the filtered image), in parallel over strips and channels, vectorized; the filter computed per
    strip, its scans vectorized across the columns of the strip."""
    s = ScheduleBuilder(p, target)
    vec = s.target.natural_vector_size(f32)
    for blur, t in (("blur_x", "output"), ("blur_y", "blur_y_T")):
        ext = [p.dag.node(t).region_extent(d) for d in range(3)]
        vx, sy = min(vec, ext[0]), min(4 * vec, ext[1])
        s.root(t, tiles=[{"x": ext[0], "y": sy, "c": 1}], vectorize="x", vector_width=vx, parallel=True)
        spec = StageSpec(vectorize="x", vector_width=min(vec, sy))
        s.compute_at(blur, t, level=0, vectorize="x", vector_width=min(vec, sy), stages={1: spec, 2: spec})
    return s.build()
