"""A depthwise-separable convolution layer (seeds/anderson2021 §8, Halide's apps/depthwise_separable_conv):
a 3x3 convolution of each channel on its own (channel multiplier 1, zero padding), then a 1x1 pointwise
convolution across channels plus a bias, then ReLU. f32, at the size of MobileNet v2's second layer
(Halide's estimates): 112 x 112 spatial, 32 input channels, 16 output channels, batch 4.

Layout: input[x, y, c, n] (x contiguous); depthwise_filter[kx, ky, c]; pointwise_filter[ci, co];
bias[co]; output[x, y, co, n]. Both convolutions are RDom updates.
"""

from __future__ import annotations

from ir import Func, Input, Pipeline, RDom, Var, clamp, f32, select
from ir import max as hmax
from ir.builder import ScheduleBuilder, StageSpec

DESCRIPTION = "depthwise 3x3 conv per channel (zero padded), then 1x1 pointwise conv + bias, ReLU; f32"
# (width, height, input channels, output channels, batch)
SIZES = {"full": (112, 112, 32, 16, 4), "small": (8, 6, 4, 3, 2)}


def build(size: str = "full") -> Pipeline:
    w, h, ci, co, nb = SIZES[size]
    x, y, c, n = Var("x"), Var("y"), Var("c"), Var("n")
    inp = Input("input", f32, 4)  # [x, y, ci, n], w x h
    dw_filter = Input("depthwise_filter", f32, 3)  # [kx, ky, ci]
    pw_filter = Input("pointwise_filter", f32, 2)  # [ci, co]
    bias = Input("bias", f32, 1)  # [co]

    # zero padding, written out (Halide's app also avoids the boundary-condition helpers here)
    padded = Func("input_bounded")
    inside = (x >= 0) & (x < w) & (y >= 0) & (y < h)
    padded[x, y, c, n] = select(inside, inp[clamp(x, 0, w - 1), clamp(y, 0, h - 1), c, n], 0.0)

    k = RDom((0, 3), (0, 3), name="k")
    depthwise = Func("depthwise")
    depthwise[x, y, c, n] = 0.0
    depthwise[x, y, c, n] += dw_filter[k.x, k.y, c] * padded[x + k.x - 1, y + k.y - 1, c, n]

    rc = RDom((0, ci), name="rc")
    pointwise = Func("pointwise")
    pointwise[x, y, c, n] = bias[c]
    pointwise[x, y, c, n] += pw_filter[rc, c] * depthwise[x, y, rc, n]

    output = Func("output")
    output[x, y, c, n] = hmax(pointwise[x, y, c, n], 0.0)
    return Pipeline([output], {output: (w, h, co, nb)}, name="depthwise_separable_conv")


def schedule(p: Pipeline, target=None):
    """Halide's CPU strategy with x as the SIMD dimension: tiles of the output (a strip of x, a few rows,
    all output channels, one image) in parallel; per tile, the zero-padded input and the depthwise conv
    of all input channels, then the pointwise conv accumulated in a register tile of a SIMD vector of x by
    unrolled output channels, the channel reduction outside it."""
    w, h, co, _ = p.output_sizes["output"]
    s = ScheduleBuilder(p, target)
    nv = min(s.target.natural_vector_size(f32), w)
    vw = min(2 * nv, w)
    ty = min(4, h)
    uc = min(4, co)
    s.root("output", tiles=[{"x": vw, "y": ty, "c": co, "n": 1}], vectorize="x", vector_width=nv, parallel=True)
    s.compute_at("pointwise", "output", level=0, vectorize="x", vector_width=nv,
                 stages={1: StageSpec(tiles=[{"x": vw, "y": 1, "c": uc}], vectorize="x", vector_width=vw,
                                      unroll={"c": uc})})
    s.compute_at("depthwise", "output", level=0, vectorize="x", vector_width=nv,
                 stages={1: StageSpec(tiles=[{"x": vw, "y": 1, "c": 1}], vectorize="x", vector_width=vw)})
    # the zero padding per tile: inlined into the depthwise conv, its clamped loads would all be gathers
    s.compute_at("input_bounded", "output", level=0, vectorize="x", vector_width=nv)
    return s.build()
