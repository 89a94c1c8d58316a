"""A CNN layer with ReLU (seeds/adams2019 §6.1, Halide's apps/conv_layer): a 3x3 convolution over all
input channels plus a bias, then max(0, .). 24 output channels, 120 input channels, 100 x 80 spatial,
batch 5, f32.

Layout: input[x, y, ci, n] (x contiguous), pre-padded to (W+2) x (H+2) as in Halide's app (the layer
reads input[x + kx, y + ky]); filter[ci, kx, ky, co]; bias[co]; relu[x, y, co, n]. The reduction is one
RDom update over (ci, kx, ky), ci innermost.
"""

from __future__ import annotations

from ir import Func, Input, Pipeline, RDom, Var, f32
from ir import max as hmax
from ir.builder import ScheduleBuilder, StageSpec

DESCRIPTION = "CNN layer: 3x3 conv over input channels + bias, ReLU; f32 [x, y, c, n]"
# (width, height, input channels, output channels, batch)
SIZES = {"full": (100, 80, 120, 24, 5), "small": (8, 6, 4, 3, 2)}


def build(size: str = "full") -> Pipeline:
    w, h, ci, co, nb = SIZES[size]
    x, y, c, n = Var("x"), Var("y"), Var("c"), Var("n")
    inp = Input("input", f32, 4)  # [x, y, ci, n], (w + 2) x (h + 2)
    filt = Input("filter", f32, 4)  # [ci, kx, ky, co]
    bias = Input("bias", f32, 1)  # [co]
    r = RDom((0, ci), (0, 3), (0, 3), name="r")
    conv = Func("conv")
    conv[x, y, c, n] = bias[c]
    conv[x, y, c, n] += filt[r.x, r.y, r.z, c] * inp[x + r.y, y + r.z, r.x, n]
    relu = Func("relu")
    relu[x, y, c, n] = hmax(0, conv[x, y, c, n])
    return Pipeline([relu], {relu: (w, h, co, nb)}, name="conv_layer")


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule transposed to x-innermost storage: tiles of relu (32 columns, 8 rows, 8
    output channels, one image) in parallel; conv accumulated per tile, the whole reduction outside a
    register tile of 32 x-lanes (two SIMD vectors) by 2 unrolled rows by 4 unrolled output channels."""
    w, h, co, _ = p.output_sizes["relu"]
    s = ScheduleBuilder(p, target)
    nv = min(s.target.natural_vector_size(f32), w)
    vw = min(2 * nv, w)  # a longer SIMD loop amortizes its per-loop overhead over the reduction
    uy, uc = min(2, h), min(4, co)
    ty, tc = min(8, h), min(8, co)
    s.root("relu", tiles=[{"x": vw, "y": ty, "c": tc, "n": 1}], vectorize="x", vector_width=nv, parallel=True)
    s.compute_at("conv", "relu", level=0, vectorize="x", vector_width=nv,
                 stages={1: StageSpec(tiles=[{"x": vw, "y": uy, "c": uc}], vectorize="x", vector_width=vw,
                                      unroll={"y": uy, "c": uc})})
    return s.build()


def gpu_schedule(p: Pipeline, target="h100"):
    """Blocks of 32 columns x 4 rows x 8 output channels of relu; each thread accumulates 4 output channels
    of one pixel in registers (conv computed per thread, the reduction serial inside it)."""
    from ir.gpu_schedule import GpuScheduleBuilder

    w, h, co, _ = p.output_sizes["relu"]
    s = GpuScheduleBuilder(p, target)
    s.gpu_tile("relu", {"x": min(32, w), "y": min(4, h), "c": min(8, co), "n": 1}, per_thread={"c": min(4, co)})
    s.compute_at_thread("conv", "relu")
    return s.build()
