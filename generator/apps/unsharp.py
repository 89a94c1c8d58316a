"""Unsharp mask on an RGB image: luma, a separable 5-tap Gaussian, sharpen, ratio, 1536 x 2560 x 3."""

from __future__ import annotations

from ir import Func, Input, Pipeline, Var, f32
from ir.builder import ScheduleBuilder

DESCRIPTION = "unsharp mask: luma, separable 5-tap Gaussian, sharpen, ratio; f32 RGB"
SIZES = {"full": (1536, 2560, 3), "small": (36, 20, 3)}
GAUSS = (0.0625, 0.25, 0.375, 0.25, 0.0625)


def build(size: str = "full") -> Pipeline:
    x, y, c = Var("x"), Var("y"), Var("c")
    inp = Input("input", f32, 3)
    gray = Func("gray")
    gray[x, y] = 0.299 * inp[x, y, 0] + 0.587 * inp[x, y, 1] + 0.114 * inp[x, y, 2]
    blur_y = Func("blur_y")
    blur_y[x, y] = sum((w * gray[x, y + k - 2] for k, w in enumerate(GAUSS[1:], 1)), GAUSS[0] * gray[x, y - 2])
    blur_x = Func("blur_x")
    blur_x[x, y] = sum((w * blur_y[x + k - 2, y] for k, w in enumerate(GAUSS[1:], 1)), GAUSS[0] * blur_y[x - 2, y])
    sharpen = Func("sharpen")
    sharpen[x, y] = 2 * gray[x, y] - blur_x[x, y]
    ratio = Func("ratio")
    ratio[x, y] = sharpen[x, y] / (gray[x, y] + 0.001)
    output = Func("output")
    output[x, y, c] = ratio[x, y] * inp[x, y, c]
    return Pipeline([output], {output: SIZES[size]}, name="unsharp")


def schedule(p: Pipeline, target=None):
    """Tiles of the output in parallel; luma and the vertical blur per tile; the rest inlined."""
    w, h, _ = p.output_sizes["output"]
    s = ScheduleBuilder(p, target)
    s.root("output", tiles=[{"x": min(256, w), "y": min(32, h), "c": 3}], vectorize="x", parallel=True)
    s.compute_at("ratio", "output", level=0, vectorize="x")
    s.compute_at("blur_y", "output", level=0, vectorize="x")
    s.compute_at("gray", "output", level=0, vectorize="x")
    s.inline("sharpen")
    s.inline("blur_x")
    return s.build()


def gpu_schedule(p: Pipeline, target="h100"):
    """32x8-point blocks of the output, each thread computing its three channels; gray and the vertical
    blur per block in shared memory (the horizontal blur and sharpening inlined), ratio per thread."""
    from ir.gpu_schedule import GpuScheduleBuilder

    w, h, c = p.output_sizes["output"]
    s = GpuScheduleBuilder(p, target)
    s.gpu_tile("output", {"x": min(32, w), "y": min(8, h), "c": c}, per_thread={"c": c})
    s.compute_at_thread("ratio", "output")
    s.compute_at_block("blur_y", "output")
    s.compute_at_block("gray", "output")
    s.inline("sharpen")
    s.inline("blur_x")
    return s.build()
