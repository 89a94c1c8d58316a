"""3x3 separable box blur (the DSL's running example), 1536 x 2560 f32."""

from __future__ import annotations

from ir import Func, Input, Pipeline, Var, f32
from ir.builder import ScheduleBuilder

DESCRIPTION = "3x3 separable box blur, f32"
SIZES = {"full": (1536, 2560), "small": (40, 24)}


def build(size: str = "full") -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", f32, 2)
    blur_x = Func("blur_x")
    blur_x[x, y] = (inp[x - 1, y] + inp[x, y] + inp[x + 1, y]) / 3
    blur_y = Func("blur_y")
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3
    return Pipeline([blur_y], {blur_y: SIZES[size]}, name="blur")


def schedule(p: Pipeline, target=None):
    """Halide's classic: tiles of the output in parallel, blur_x computed per tile, both vectorized."""
    w, h = p.output_sizes["blur_y"]
    tx, ty = min(256, w), min(32, h)
    s = ScheduleBuilder(p, target)
    s.root("blur_y", tiles=[{"x": tx, "y": ty}], vectorize="x", parallel=True)
    s.compute_at("blur_x", "blur_y", level=0, vectorize="x")
    return s.build()


def gpu_schedule(p: Pipeline, target="h100"):
    """Halide's GPU classic: 32x16-point blocks of blur_y, each of 32x8 threads computing two rows; blur_x's
    tile (32x18) computed per block into shared memory, a point per thread."""
    from ir.gpu_schedule import GpuScheduleBuilder

    w, h = p.output_sizes["blur_y"]
    s = GpuScheduleBuilder(p, target)
    s.gpu_tile("blur_y", {"x": min(32, w), "y": min(16, h)}, per_thread={"y": min(2, h)})
    s.compute_at_block("blur_x", "blur_y")
    return s.build()
