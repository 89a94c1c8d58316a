"""Non-local means denoising (Buades et al. 2005), after Halide's apps/nl_means: for every offset
(dx, dy) of a 7 x 7 search window, the squared color difference between the image and its shifted
copy, summed over 7 x 7 patches (two separable RDom sums); weights exp(-patch distance / h^2) with
h^2 = sigma^2 patch_size^2; the output is the weighted mean of the shifted pixels, normalized by the
summed weights (an alpha channel of ones). The boundary condition (repeat_edge) is a Func, as
Halide's BoundaryConditions make it. f32 RGB, 1536 x 2560 x 3 (the estimates of Halide's
current generator), patch_size = search_area = 7, sigma = 0.12 (Halide's estimates for its runtime
parameters, fixed here). Halide uses fast_exp; this uses exp.
"""

from __future__ import annotations

import numpy as np

from ir import Func, Input, Pipeline, RDom, Var, clamp, exp, f32, select
from ir.builder import ScheduleBuilder, StageSpec, x_tiling

DESCRIPTION = "non-local means: patch distances over a 7x7 search window with RDom sums, exp weights, normalized; f32 RGB"
SIZES = {"full": (1536, 2560, 3), "small": (24, 16, 3)}
PATCH_SIZE = 7
SEARCH_AREA = 7
SIGMA = 0.12


def inv_sigma_sq() -> float:
    """-1 / (sigma^2 patch_size^2), evaluated in f32 in Halide's order."""
    s, p = np.float32(SIGMA), np.float32(PATCH_SIZE)
    return float(np.float32(-1.0) / (s * s * p * p))


def build(size: str = "full") -> Pipeline:
    W, H, C = SIZES[size]
    x, y, c, dx, dy = Var("x"), Var("y"), Var("c"), Var("dx"), Var("dy")
    inp = Input("input", f32, 3)

    clamped = Func("clamped")  # repeat_edge
    clamped[x, y, c] = inp[clamp(x, 0, W - 1), clamp(y, 0, H - 1), c]

    # the difference images, summed over the color channels
    def dc(ch):
        diff = clamped[x, y, ch] - clamped[x + dx, y + dy, ch]
        return diff * diff  # Halide's pow(diff, 2), which it lowers to diff * diff

    d = Func("d")
    d[x, y, dx, dy] = dc(0) + dc(1) + dc(2)

    # the patch distances: blur the difference images with a box of patch_size
    patch = RDom((-(PATCH_SIZE // 2), PATCH_SIZE), name="patch")
    blur_d_y = Func("blur_d_y")
    blur_d_y[x, y, dx, dy] = 0.0
    blur_d_y[x, y, dx, dy] += d[x, y + patch, dx, dy]
    blur_d = Func("blur_d")
    blur_d[x, y, dx, dy] = 0.0
    blur_d[x, y, dx, dy] += blur_d_y[x + patch, y, dx, dy]

    w = Func("w")
    w[x, y, dx, dy] = exp(blur_d[x, y, dx, dy] * inv_sigma_sq())

    clamped_with_alpha = Func("clamped_with_alpha")
    clamped_with_alpha[x, y, c] = select(c == 0, clamped[x, y, 0], c == 1, clamped[x, y, 1], c == 2, clamped[x, y, 2],
                                         1.0)

    # the weighted sum over the search window
    s = RDom((-(SEARCH_AREA // 2), SEARCH_AREA), (-(SEARCH_AREA // 2), SEARCH_AREA), name="s_dom")
    non_local_means_sum = Func("non_local_means_sum")
    non_local_means_sum[x, y, c] = 0.0
    non_local_means_sum[x, y, c] += w[x, y, s.x, s.y] * clamped_with_alpha[x + s.x, y + s.y, c]

    non_local_means = Func("non_local_means")
    non_local_means[x, y, c] = clamp(non_local_means_sum[x, y, c] / non_local_means_sum[x, y, 3], 0.0, 1.0)
    return Pipeline([non_local_means], {non_local_means: (W, H, C)}, name="nl_means")


def schedule(p: Pipeline, target=None):
    """After Halide's CPU schedule: tiles of the output in parallel; the difference images and their
    vertical patch sums per tile; per row of a tile (and all channels) the horizontal patch sums, the
    weights and the weighted sum, its channels unrolled and the search window outside the SIMD loop.
    Adapted to this backend: tiles of 64 x 8 rather than 16 x 8 (short SIMD loops and tile overheads
    cost more than Halide's, and the halos of d and blur_d_y shrink); the boundary condition
    materialized at root (Halide inlines it and partitions the loops to drop the clamps in the steady
    state, which schedlab cannot do); the horizontal patch sums for all search offsets before the
    weighted sum rather than per offset inside it (a LoopNest iterates an update's RVars only at its
    innermost level; the same work); and the weights computed once rather than inlined into each
    unrolled channel (Halide's CSE takes each exp once; numba does not across unrolled copies)."""
    w, h, _ = p.output_sizes["non_local_means"]
    s = ScheduleBuilder(p, target)
    vw = min(s.target.natural_vector_size(f32), w)
    tx, ty = min(64, w), min(8, h)
    vec = {"vectorize": "x", "vector_width": vw}
    s.root("non_local_means", tiles=[{"x": tx, "y": ty}, {"y": 1}], parallel=True, **vec)
    s.compute_at("non_local_means_sum", "non_local_means", level=1, unroll={"c": 4},
                 stages={1: StageSpec(unroll={"c": 4}, **vec)}, **vec)
    s.inline("clamped_with_alpha")
    s.compute_at("w", "non_local_means", level=1, **vec)
    s.compute_at("blur_d", "non_local_means", level=1, **vec)
    s.compute_at("blur_d_y", "non_local_means", level=0, **vec)
    s.compute_at("d", "non_local_means", level=0, **vec)
    cl = p.dag.node("clamped")
    ctile, cvw = x_tiling(cl.region_extent(0), vw)
    s.root("clamped", tiles=[{"x": ctile, "y": min(8, cl.region_extent(1))}], parallel=True, vectorize="x",
           vector_width=cvw)
    return s.build()
