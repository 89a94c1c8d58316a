"""Histogram equalization, Halide's apps/hist: the luma Y of an RGB u8 image, its histogram (per row,
by a data-dependent update, then summed over rows), the cumulative distribution (a scan), Y remapped
through it, and the image rebuilt from the equalized luma and its chroma (Cr, Cb); u8 in and out.
"full" is Halide's estimate, 1536 x 2560 x 3.
"""

from __future__ import annotations

import numpy as np

from ir import Func, Input, Pipeline, RDom, Var, cast, clamp, f32, i32, select, u8
from ir.builder import ScheduleBuilder

DESCRIPTION = "histogram equalization: luma histogram, CDF scan, remap, back to RGB; u8"
SIZES = {"full": (1536, 2560, 3), "small": (24, 16, 3)}


def build(size: str = "full") -> Pipeline:
    w, h, _ = SIZES[size]
    x, y, c = Var("x"), Var("y"), Var("c")
    inp = Input("input", u8, 3)
    Y = Func("Y")
    Y[x, y] = 0.299 * inp[x, y, 0] + 0.587 * inp[x, y, 1] + 0.114 * inp[x, y, 2]
    Cr = Func("Cr")
    Cr[x, y] = (inp[x, y, 0] - Y[x, y]) * 0.713 + 128
    Cb = Func("Cb")
    Cb[x, y] = (inp[x, y, 2] - Y[x, y]) * 0.564 + 128

    hist_rows = Func("hist_rows")
    hist_rows[x, y] = 0
    rx = RDom((0, w), name="rx")
    hist_rows[cast(i32, clamp(Y[rx, y], 0, 255)), y] += 1

    hist = Func("hist")
    hist[x] = 0
    ry = RDom((0, h), name="ry")
    hist[x] += hist_rows[x, ry]

    cdf = Func("cdf")
    cdf[x] = hist[0]
    b = RDom((1, 255), name="b")
    cdf[b] = cdf[b - 1] + hist[b]

    eq = Func("equalize")
    cdf_bin = cast(u8, clamp(Y[x, y], 0, 255))
    scale = float(np.float32(255) / np.float32(w * h))  # Halide: 255.0f / (height * width), in f32
    eq[x, y] = clamp(cdf[cdf_bin] * scale, 0, 255)

    red = cast(u8, clamp(eq[x, y] + (Cr[x, y] - 128) * 1.4, 0, 255))
    green = cast(u8, clamp(eq[x, y] - 0.343 * (Cb[x, y] - 128) - 0.711 * (Cr[x, y] - 128), 0, 255))
    blue = cast(u8, clamp(eq[x, y] + 1.765 * (Cb[x, y] - 128), 0, 255))
    output = Func("output")
    output[x, y, c] = select(c == 0, red, c == 1, green, blue)
    return Pipeline([output], {output: SIZES[size]}, name="hist_eq")


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule: Y at root, in parallel strips of rows, vectorized; the per-row histograms
    in parallel over rows; their sum vectorized over bins; the CDF serial; the output in parallel
    strips of rows, vectorized, with the equalized luma and the chroma computed per strip (Halide
    computes them per vector of x with the channel loop unrolled; here the channel select evaluates
    every branch, so inlining them would compute each three times per channel)."""
    w, h, _ = p.output_sizes["output"]
    s = ScheduleBuilder(p, target)
    vec = min(s.target.natural_vector_size(f32), w)
    rows = min(8, h)
    s.root("output", tiles=[{"x": w, "y": rows, "c": 3}], vectorize="x", vector_width=vec, parallel=True)
    for f in ("equalize", "Cr", "Cb"):
        s.compute_at(f, "output", level=0, vectorize="x", vector_width=vec)
    s.root("cdf")
    s.root("hist", vectorize="x", vector_width=vec)
    s.root("hist_rows", tiles=[{"x": 256, "y": rows}], parallel=True)
    s.root("Y", tiles=[{"x": w, "y": rows}], vectorize="x", vector_width=vec, parallel=True)
    return s.build()
