"""Halide's max filter (apps/max_filter): a 2-D max over a disc of radius 26 of an f32 RGB image with
repeat-edge boundaries. A vertical running max in log steps (vert_log, an RDom update over rows and
slices: slice t holds the max over 2^t rows), every vertical max of height 2t+1 from two overlapping
slices (vert), the disc's half-height per column offset (filter_height, a reduction), and the
horizontal max over the disc's columns (an RDom update of the output). "full" is Halide's estimate,
1536 x 2560 x 3.

As in Halide's app, the column at dx = 0 spans 2 radius + 3 rows, which two samples of the largest
slice cover only when 2^ceil(log2 radius) >= radius + 2: true for 26, false for e.g. 3, 4, 7 or 8.
"""

from __future__ import annotations

import math

from ir import Func, Input, Pipeline, RDom, Var, cast, clamp, f32, floor, i32, log, select
from ir import max as hmax
from ir.builder import ScheduleBuilder, StageSpec
from ir.expr import as_expr

DESCRIPTION = "max filter over a disc of radius 26: log-step vertical running max, horizontal max; f32 RGB"
SIZES = {"full": (1536, 2560, 3), "small": (24, 16, 3)}
RADIUS = 26
LOWEST_F32 = -3.4028234663852886e38  # the init of Halide's maximum() for f32 (any value below the data does)


def pow2(e, n):
    """2**e for an integer expression e in [0, n] (the DSL has no shifts)."""
    if n == 0:
        return as_expr(1)
    args = []
    for k in range(n):
        args += [e == k, 1 << k]
    return select(*args, 1 << n)


def build(size: str = "full", radius: int = RADIUS) -> Pipeline:
    w, h, _ = SIZES[size]
    x, y, c, t = Var("x"), Var("y"), Var("c"), Var("t")
    inp = Input("input", f32, 3)
    slices = math.ceil(math.log(radius) / math.log(2)) + 1

    # repeat_edge(input)
    clamped = Func("clamped")
    clamped[x, y, c] = inp[clamp(x, 0, w - 1), clamp(y, 0, h - 1), c]

    # slice t: max over rows y .. y + 2^t - 1 (all filters look downwards)
    vert_log = Func("vert_log")
    vert_log[x, y, c, t] = clamped[x, y, c]
    r = RDom((-radius, h + radius), (1, slices - 1), name="r")
    vert_log[x, r.x, c, r.y] = hmax(vert_log[x, r.x, c, r.y - 1],
                                    vert_log[x, r.x + clamp(pow2(r.y - 1, slices - 2), 0, radius * 2), c, r.y - 1])

    # which slice to use for a vertical max of height 2t + 1
    slice_for_radius = Func("slice_for_radius")
    slice_for_radius[t] = cast(i32, floor(log(2 * t + 1) / math.log(2)))

    # every vertical max of height 2t + 1 centred on y, from two overlapping samples of one slice
    vert = Func("vert")
    # Halide clamps to [0, slices]; slice `slices` does not exist (vert_log would have to be computed
    # over it), and for the radii the algorithm is valid for (see above) it never occurs
    sl = clamp(slice_for_radius[t], 0, slices - 1)
    first_sample = vert_log[x, y - t, c, sl]
    second_sample = vert_log[x, y + t + 1 - clamp(pow2(sl, slices - 1), 0, 2 * radius), c, sl]
    vert[x, y, c, t] = hmax(first_sample, second_sample)

    # the disc's half-height at each column offset
    filter_height = Func("filter_height")
    dy = RDom((0, radius + 1), name="dy")
    filter_height[x] = 0
    filter_height[x] += select(x * x + dy * dy < (radius + 0.25) * (radius + 0.25), 1, 0)

    # the horizontal max over the disc's columns
    output = Func("output")
    dx = RDom((-radius, 2 * radius + 1), name="dx")
    output[x, y, c] = LOWEST_F32
    output[x, y, c] = hmax(output[x, y, c], vert[x + dx, y, c, clamp(filter_height[dx], 0, radius + 1)])
    return Pipeline([output], {output: SIZES[size]}, name="max_filter")


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule: the output in vertical strips of 256 columns per channel, in parallel;
    the log-step vertical maxima computed per strip, vectorized along x with the scan over rows and
    slices inside; every vertical max computed per output row; the two LUTs at root."""
    w, h, _ = p.output_sizes["output"]
    s = ScheduleBuilder(p, target)
    vec = min(8, w)
    sx = min(256, w)
    s.root("output", tiles=[{"x": sx, "y": h, "c": 1}, {"x": sx, "y": 1, "c": 1}], vectorize="x",
           vector_width=vec, parallel=True)
    s.compute_at("vert", "output", level=1, consumer_stage=1, vectorize="x", vector_width=vec)
    s.compute_at("vert_log", "output", level=0, consumer_stage=1, vectorize="x", vector_width=vec,
                 stages={1: StageSpec(vectorize="x", vector_width=vec)})
    s.inline("clamped")
    s.root("slice_for_radius")
    s.root("filter_height")
    return s.build()
