"""Halide's Harris corner detector (apps/harris): gray, Sobel gradients, their products, 3x3 box sums
of the structure tensor and the response det - 0.04 trace^2, without non-maximum suppression.

As Halide's app, the output is the response shifted by (2, 2) so that it reads the input from (0, 0):
"full" is Halide's estimate, a (1536 - 6) x (2560 - 6) output of a 1536 x 2560 RGB f32 input (of which
the pipeline reads 1534 x 2558).
"""

from __future__ import annotations

from ir import Func, Input, Pipeline, Var, f32
from ir.builder import ScheduleBuilder

DESCRIPTION = "Harris corner response: gray, Sobel, structure tensor 3x3 sums, det - k trace^2; f32"
SIZES = {"full": (1530, 2554), "small": (24, 16)}
K = 0.04


def sum3x3(f, x, y):
    return (f[x - 1, y - 1] + f[x - 1, y] + f[x - 1, y + 1]
            + f[x, y - 1] + f[x, y] + f[x, y + 1]
            + f[x + 1, y - 1] + f[x + 1, y] + f[x + 1, y + 1])


def build(size: str = "full") -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", f32, 3)
    gray = Func("gray")
    gray[x, y] = 0.299 * inp[x, y, 0] + 0.587 * inp[x, y, 1] + 0.114 * inp[x, y, 2]
    Iy = Func("Iy")
    Iy[x, y] = (gray[x - 1, y - 1] * (-1.0 / 12) + gray[x - 1, y + 1] * (1.0 / 12)
                + gray[x, y - 1] * (-2.0 / 12) + gray[x, y + 1] * (2.0 / 12)
                + gray[x + 1, y - 1] * (-1.0 / 12) + gray[x + 1, y + 1] * (1.0 / 12))
    Ix = Func("Ix")
    Ix[x, y] = (gray[x - 1, y - 1] * (-1.0 / 12) + gray[x + 1, y - 1] * (1.0 / 12)
                + gray[x - 1, y] * (-2.0 / 12) + gray[x + 1, y] * (2.0 / 12)
                + gray[x - 1, y + 1] * (-1.0 / 12) + gray[x + 1, y + 1] * (1.0 / 12))
    Ixx, Iyy, Ixy = Func("Ixx"), Func("Iyy"), Func("Ixy")
    Ixx[x, y] = Ix[x, y] * Ix[x, y]
    Iyy[x, y] = Iy[x, y] * Iy[x, y]
    Ixy[x, y] = Ix[x, y] * Iy[x, y]
    Sxx, Syy, Sxy = Func("Sxx"), Func("Syy"), Func("Sxy")
    Sxx[x, y] = sum3x3(Ixx, x, y)
    Syy[x, y] = sum3x3(Iyy, x, y)
    Sxy[x, y] = sum3x3(Ixy, x, y)
    det, trace = Func("det"), Func("trace")
    det[x, y] = Sxx[x, y] * Syy[x, y] - Sxy[x, y] * Sxy[x, y]
    trace[x, y] = Sxx[x, y] + Syy[x, y]
    harris = Func("harris")
    harris[x, y] = det[x, y] - K * trace[x, y] * trace[x, y]
    output = Func("output")
    output[x, y] = harris[x + 2, y + 2]
    return Pipeline([output], {output: SIZES[size]}, name="harris")


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule: strips of 32 rows (here also split into 512 columns) in parallel,
    vectorized along x; the gradients Ix and Iy computed a row at a time into sliding windows stored
    per strip; everything else inlined."""
    w, h = p.output_sizes["output"]
    s = ScheduleBuilder(p, target)
    vec = s.target.natural_vector_size(f32)
    strip = min(32, h)
    tx = min(512, w)
    s.root("output", tiles=[{"x": tx, "y": strip}, {"x": tx, "y": 1}], vectorize="x",
           vector_width=min(vec, w), parallel=True)
    for f in ("harris", "det", "trace", "Sxx", "Syy", "Sxy", "Ixx", "Iyy", "Ixy"):
        s.inline(f)
    for f in ("Ix", "Iy"):
        s.compute_at(f, "output", level=1, store_level=0, vectorize="x", vector_width=min(vec, w))
    s.inline("gray")
    return s.build()


def gpu_schedule(p: Pipeline, target="h100"):
    """32x8-point blocks of the output, a point per thread; the gradients Ix and Iy per block in shared
    memory (the structure tensor and response inlined into the output, gray into the gradients)."""
    from ir.gpu_schedule import GpuScheduleBuilder

    w, h = p.output_sizes["output"]
    s = GpuScheduleBuilder(p, target)
    s.gpu_tile("output", {"x": min(32, w), "y": min(8, h)})
    for f in ("harris", "det", "trace", "Sxx", "Syy", "Sxy", "Ixx", "Iyy", "Ixy", "gray"):
        s.inline(f)
    for f in ("Ix", "Iy"):
        s.compute_at_block(f, "output")
    return s.build()
