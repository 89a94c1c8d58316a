"""Lens blur (Halide's apps/lens_blur; seeds/anderson2021 §8): synthetic depth of field from a stereo
pair. A cost volume over disparities (squared color differences, per slice), its confidence (variance
across the slices), a push-pull pyramid that spreads confident costs into unconfident regions, the
minimum-cost slice as the depth, a bokeh radius growing with the distance from the focal plane, a
max filter of that radius, and a stochastic aperture: each pixel averages samples at pseudo-random
offsets within its worst-case radius, kept where the sample's bokeh covers the pixel (or the sample is
in front of it) and the pixel's covers the sample; an alpha channel normalizes.

Faithful to Halide's algorithm, with these changes, all forced by the DSL:
  - argmin (a Tuple reduction) is two reductions: the minimum cost, then the first slice attaining it
    (the same index as Halide's argmin, including its NaN behaviour);
  - random_float() is an integer hash of (x, y, sample, seed) with i32 wrap-around (an LCG step; bits
    16..30 as the fraction), so samples are a deterministic pseudo-random function of the pixel;
  - the sample locations (a Tuple Func) are two Funcs, and their reads are re-clamped to the maximum
    blur radius (a no-op that bounds the data-dependent accesses);
  - the max filters start from 0 rather than the type's minimum (the radius is never negative);
  - pow(e, 2) is written e * e (what Halide simplifies it to) and the pull level's lerp(a, b, 0.5) is
    a * 0.5 + b * 0.5; the copy pull[top] = push[top] is folded away.
Scalar parameters are constants: 32 slices, focus depth 13, blur radius scale 0.5, 32 aperture samples,
an 8-level pyramid, a 1536 x 2560 RGB u8 stereo pair (Halide's estimates). The small size keeps the
structure with 8 slices, 8 samples and a 3-level pyramid (24 x 16 -> 6 x 4).
"""

from __future__ import annotations

from ir import Func, Input, Pipeline, RDom, Var, cast, clamp, f32, i32, select, u8
from ir import abs as habs
from ir import max as hmax
from ir import min as hmin
from ir.builder import ScheduleBuilder, StageSpec

DESCRIPTION = "lens blur: stereo cost volume, push-pull pyramid, argmin depth, bokeh max filter, stochastic aperture"
# (width, height, slices, focus depth, blur radius scale, aperture samples, pyramid levels)
SIZES = {"full": (1536, 2560, 32, 13, 0.5, 32, 8), "small": (24, 16, 8, 3, 0.5, 8, 3)}

# hash constants of the pseudo-random aperture samples (all fit in i32)
HASH_X, HASH_Y, HASH_Z, HASH_SEED = 73856093, 19349663, 83492791, 2654435
LCG_A, LCG_C = 1103515245, 12345


def random_float(x, y, z, seed: int):
    """A pseudo-random f32 in [0, 1) from integer coordinates: a linear hash, one LCG step (i32 wrap)."""
    h = x * HASH_X + y * HASH_Y + z * HASH_Z + seed * HASH_SEED
    h = h * LCG_A + LCG_C
    return cast(f32, (h / 65536) % 32768) / 32768.0


def params(size: str):
    w, h, slices, focus, scale, samples, levels = SIZES[size]
    max_radius = int(max(slices - focus, focus) * scale)
    return w, h, slices, focus, scale, samples, levels, max_radius


def build(size: str = "full") -> Pipeline:
    w, h, slices, focus, scale, samples, levels, max_radius = params(size)
    x, y, z, c = Var("x"), Var("y"), Var("z"), Var("c")
    left_im = Input("left_im", u8, 3)
    right_im = Input("right_im", u8, 3)

    left, right = Func("left"), Func("right")  # repeat-edge boundary conditions
    left[x, y, c] = left_im[clamp(x, 0, w - 1), clamp(y, 0, h - 1), c]
    right[x, y, c] = right_im[clamp(x, 0, w - 1), clamp(y, 0, h - 1), c]

    def absd(a, b):
        return hmax(a, b) - hmin(a, b)

    diff = Func("diff")
    diff[x, y, z, c] = hmin(absd(left[x, y, c], right[x + 2 * z, y, c]),
                            absd(left[x, y, c], right[x + 2 * z + 1, y, c]))
    cost = Func("cost")
    d = [cast(f32, diff[x, y, z, k]) for k in range(3)]
    cost[x, y, z] = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]

    # confidence of the cost estimate: its variance across the slices
    r = RDom((0, slices), name="r")
    cost_sq_sum = Func("cost_sq_sum")
    cost_sq_sum[x, y] = 0.0
    cost_sq_sum[x, y] += cost[x, y, r] * cost[x, y, r]
    cost_mean = Func("cost_mean")
    cost_mean[x, y] = 0.0
    cost_mean[x, y] += cost[x, y, r] / slices
    cost_confidence = Func("cost_confidence")
    cost_confidence[x, y] = cost_sq_sum[x, y] / slices - cost_mean[x, y] * cost_mean[x, y]

    # push-pull: blur the confidence-weighted cost volume, inpainting where confidence is low
    push = [Func("push0")]
    push[0][x, y, z, c] = select(c == 0, cost[x, y, z] * cost_confidence[x, y], cost_confidence[x, y])
    wi, hi = w, h
    for i in range(1, levels):
        f = push[i - 1]
        downx, downy = Func(f"downx{i}"), Func(f"downy{i}")  # a 1 3 3 1 filter
        downx[x, y, z, c] = (f[2 * x - 1, y, z, c] + 3.0 * (f[2 * x, y, z, c] + f[2 * x + 1, y, z, c])
                             + f[2 * x + 2, y, z, c]) / 8.0
        downy[x, y, z, c] = (downx[x, 2 * y - 1, z, c] + 3.0 * (downx[x, 2 * y, z, c] + downx[x, 2 * y + 1, z, c])
                             + downx[x, 2 * y + 2, z, c]) / 8.0
        wi, hi = wi // 2, hi // 2
        g = Func(f"push{i}")  # repeat-edge over the level's size
        g[x, y, z, c] = downy[clamp(x, 0, wi - 1), clamp(y, 0, hi - 1), z, c]
        push.append(g)
    pull = push[levels - 1]
    for i in range(levels - 2, -1, -1):
        upx, upy = Func(f"upx{i}"), Func(f"upy{i}")  # bilinear
        upx[x, y, z, c] = 0.25 * pull[x / 2 - 1 + 2 * (x % 2), y, z, c] + 0.75 * pull[x / 2, y, z, c]
        upy[x, y, z, c] = 0.25 * upx[x, y / 2 - 1 + 2 * (y % 2), z, c] + 0.75 * upx[x, y / 2, z, c]
        g = Func(f"pull{i}")
        g[x, y, z, c] = upy[x, y, z, c] * 0.5 + push[i][x, y, z, c] * 0.5
        pull = g
    filtered_cost = Func("filtered_cost")
    filtered_cost[x, y, z] = pull[x, y, z, 0] / pull[x, y, z, 1]

    # the minimum-cost slice is the depth (Halide's argmin: the first index of the minimum)
    min_cost = Func("min_cost")
    min_cost[x, y] = filtered_cost[x, y, 0]
    r1 = RDom((1, slices - 1), name="r1")
    min_cost[x, y] = hmin(min_cost[x, y], filtered_cost[x, y, r1])
    depth = Func("depth")
    depth[x, y] = 0
    k = RDom((0, slices), name="k")  # from the last slice down: the last match written is the first
    depth[x, y] = select(filtered_cost[x, y, slices - 1 - k] == min_cost[x, y], slices - 1 - k, depth[x, y])

    bokeh_radius = Func("bokeh_radius")
    bokeh_radius[x, y] = cast(f32, habs(depth[x, y] - focus)) * scale
    bokeh_radius_squared = Func("bokeh_radius_squared")
    bokeh_radius_squared[x, y] = bokeh_radius[x, y] * bokeh_radius[x, y]

    # the worst-case bokeh radius to consider at each pixel: a max filter of the radius
    m = RDom((-max_radius, 2 * max_radius + 1), name="m")
    worst_y = Func("worst_case_bokeh_radius_y")
    worst_y[x, y] = 0.0
    worst_y[x, y] = hmax(worst_y[x, y], bokeh_radius[x, y + m])
    worst = Func("worst_case_bokeh_radius")
    worst[x, y] = 0.0
    worst[x, y] = hmax(worst[x, y], worst_y[x + m, y])

    input_with_alpha = Func("input_with_alpha")
    input_with_alpha[x, y, c] = select(c == 0, cast(f32, left[x, y, 0]), c == 1, cast(f32, left[x, y, 1]),
                                       c == 2, cast(f32, left[x, y, 2]), 255.0)

    # pseudo-random sample offsets within the worst-case radius
    sample_u, sample_v = Func("sample_u"), Func("sample_v")
    sample_u[x, y, z] = clamp(cast(i32, (random_float(x, y, z, 0) - 0.5) * 2.0 * worst[x, y]), -max_radius, max_radius)
    sample_v[x, y, z] = clamp(cast(i32, (random_float(x, y, z, 1) - 0.5) * 2.0 * worst[x, y]), -max_radius, max_radius)

    def offsets(zz):
        u = clamp(sample_u[x, y, zz], -max_radius, max_radius)
        v = clamp(sample_v[x, y, zz], -max_radius, max_radius)
        return u, v

    u, v = offsets(z)
    sx, sy = x + u, y + v
    r_squared = u * u + v * v
    sample_weight = Func("sample_weight")
    sample_weight[x, y, z] = select(((r_squared < bokeh_radius_squared[x, y]) | (depth[sx, sy] < depth[x, y]))
                                    & (r_squared < bokeh_radius_squared[sx, sy]), 1.0, 0.0)

    output = Func("output")
    output[x, y, c] = input_with_alpha[x, y, c]
    s = RDom((0, samples), name="s")
    u, v = offsets(s)
    output[x, y, c] += sample_weight[x, y, s] * input_with_alpha[x + u, y + v, c]

    final = Func("final")
    final[x, y, c] = output[x, y, c] / output[x, y, 3]
    return Pipeline([final], {final: (w, h, 3)}, name="lens_blur")


def _simd(p: Pipeline, name: str, native: int, region: int | None = None) -> dict:
    """Vectorize `name` along x with the widest width (at most `native`, at least 4) dividing the extent
    of x it is computed over, so that its x loop needs no overlapping tiles; scalar if none does."""
    e = region if region is not None else p.dag.node(name).region_extent(0)
    widths = [d for d in range(4, min(native, e) + 1) if e % d == 0]
    return {"vectorize": "x", "vector_width": max(widths)} if widths else {}


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule for lens blur, in this IR's terms (x is the SIMD dimension throughout).

    Cost volume: level 0 of the pyramid at root in parallel tiles, the costs, their confidence and the
    right image's repeat-edge per tile, the left one's at root (clamped indices inlined into the cost
    would make every load a gather; Halide partitions those loops instead). Pyramid: the coarser
    levels at root, parallel over (slice, channel), every level's downsampling and upsampling in x
    stored at that level (so that the y passes read them along x). Depth at root in tiles, with the filtered cost (the finest pull level
    inlined) and its minimum per tile. Output: parallel tiles with the max filters of the bokeh
    radius, the sample locations and weights and the aperture sum per tile."""
    w, h = p.output_sizes["final"][:2]
    levels = 1 + max(int(f.name[4:]) for f in p.funcs if f.name.startswith("push"))
    s = ScheduleBuilder(p, target)
    nv = min(s.target.natural_vector_size(f32), w)
    tx, ty = min(8 * nv, w), min(8, h)
    v = {"vectorize": "x", "vector_width": nv}
    s.root("final", tiles=[{"x": tx, "y": ty, "c": 3}], parallel=True, **v)
    for f in ("output", "sample_weight", "sample_u", "sample_v", "worst_case_bokeh_radius",
              "worst_case_bokeh_radius_y"):
        s.compute_at(f, "final", level=0, **v)
    s.inline("bokeh_radius_squared")
    s.inline("bokeh_radius")
    s.compute_at("input_with_alpha", "final", level=0, **v)
    # depth's initialization is a serial pass (each parallel loop costs numba compile time)
    s.root("depth", tiles=[{"x": tx, "y": ty}], **v,
           stages={1: StageSpec(tiles=[{"x": tx, "y": ty}], parallel=True, **v)})
    s.compute_at("min_cost", "depth", level=0, consumer_stage=1, **v)
    s.compute_at("filtered_cost", "depth", level=0, consumer_stage=1, **v)
    schedule_pyramid(s, p, levels, nv, depth_tile=tx)
    schedule_cost_volume(s, p, tx, ty, nv)
    return s.build()


def schedule_pyramid(s: ScheduleBuilder, p: Pipeline, levels: int, nv: int, depth_tile: int) -> None:
    """Levels 1.. at root, one (slice, channel) per task; the finest upsampling in x per depth tile."""
    assert levels >= 3, "the schedule computes levels 2.. within level 1"
    s.inline("pull0")
    s.inline("upy0")
    s.compute_at("upx0", "depth", level=0, consumer_stage=1, **_simd(p, "upx0", nv, depth_tile))
    s.root("pull1", tiles=[{"z": 1, "c": 1}], parallel=True, **_simd(p, "pull1", nv))
    for i in range(1, levels):
        if i < levels - 1:
            if i > 1:
                s.compute_at(f"pull{i}", "pull1", level=0, **_simd(p, f"pull{i}", nv))
            s.inline(f"upy{i}")
            s.compute_at(f"upx{i}", "pull1", level=0, **_simd(p, f"upx{i}", nv))
        s.compute_at(f"push{i}", "pull1", level=0, **_simd(p, f"push{i}", nv))
        s.compute_at(f"downy{i}", "pull1", level=0, **_simd(p, f"downy{i}", nv))
        s.compute_at(f"downx{i}", "pull1", level=0, **_simd(p, f"downx{i}", nv))


def schedule_cost_volume(s: ScheduleBuilder, p: Pipeline, tx: int, ty: int, nv: int) -> None:
    v = {"vectorize": "x", "vector_width": nv}
    s.root("push0", tiles=[{"x": tx, "y": ty}], parallel=True, **v)
    for f in ("cost_confidence", "cost_mean", "cost_sq_sum", "cost"):
        s.compute_at(f, "push0", level=0, **v)
    s.inline("diff")
    s.compute_at("right", "push0", level=0, **v)
    s.root("left", **_simd(p, "left", 4 * nv))  # also read by input_with_alpha
