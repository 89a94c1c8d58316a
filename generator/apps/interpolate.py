"""Multi-scale interpolation, after Halide's apps/interpolate: premultiply an RGBA image by its alpha,
downsample it through a pyramid ([1 2 1] / 4 in x, then in y), then from the coarsest level up
upsample (2-tap averages) and fill each level's transparent parts from the level below in proportion
to 1 - alpha; finally divide the color by the interpolated alpha, with Halide's boundary condition
at level 4 that keeps the footprint of the deep levels near the image. f32 RGBA in, RGB out,
1536 x 2560 (Halide's estimates). Levels: 10 at "full" (Halide's generator default); 5 at "small",
which still has the level-4 boundary condition (a 24 x 16 image is one pixel wide from level 5 on,
and each level adds five Funcs that numba needs seconds to compile).
"""

from __future__ import annotations

from ir import Func, Input, Pipeline, Var, clamp, f32, select
from ir.builder import ScheduleBuilder, x_tiling

DESCRIPTION = "multi-scale interpolation: alpha-weighted 10-level pyramid down, upsample and blend back; f32 RGBA"
SIZES = {"full": (1536, 2560, 3), "small": (24, 16, 3)}
LEVELS = {"full": 10, "small": 5}


def build(size: str = "full", levels: int | None = None) -> Pipeline:
    W, H, C = SIZES[size]
    levels = levels or LEVELS[size]
    x, y, c = Var("x"), Var("y"), Var("c")
    inp = Input("input", f32, 3)  # RGBA: the pipeline reads channels 0..3

    clamped = Func("clamped")  # repeat_edge
    clamped[x, y, c] = inp[clamp(x, 0, W - 1), clamp(y, 0, H - 1), c]

    downsampled = [Func(f"downsampled_{l}") for l in range(levels)]
    downx = [None] + [Func(f"downx_{l}") for l in range(1, levels)]
    interpolated = [Func(f"interpolated_{l}") for l in range(levels)]
    upsampled = [Func(f"upsampled_{l}") for l in range(levels - 1)]
    upsampledx = [Func(f"upsampledx_{l}") for l in range(levels - 1)]

    downsampled[0][x, y, c] = select(c < 3, clamped[x, y, c] * clamped[x, y, 3], clamped[x, y, 3])
    for l in range(1, levels):
        prev = downsampled[l - 1]
        if l == 4:
            # a boundary condition at a middle level, so the deep levels' footprint stays near the image
            w, h = W // (1 << (l - 1)), H // (1 << (l - 1))

            def prev_at(a, b, ch, f=prev, w=w, h=h):
                return f[clamp(a, 0, w), clamp(b, 0, h), ch]
        else:
            def prev_at(a, b, ch, f=prev):
                return f[a, b, ch]
        downx[l][x, y, c] = (prev_at(x * 2 - 1, y, c) + 2.0 * prev_at(x * 2, y, c) + prev_at(x * 2 + 1, y, c)) * 0.25
        downsampled[l][x, y, c] = (downx[l][x, y * 2 - 1, c] + 2.0 * downx[l][x, y * 2, c]
                                   + downx[l][x, y * 2 + 1, c]) * 0.25

    interpolated[levels - 1][x, y, c] = downsampled[levels - 1][x, y, c]
    for l in range(levels - 2, -1, -1):
        upsampledx[l][x, y, c] = (interpolated[l + 1][x / 2, y, c] + interpolated[l + 1][(x + 1) / 2, y, c]) / 2.0
        upsampled[l][x, y, c] = (upsampledx[l][x, y / 2, c] + upsampledx[l][x, (y + 1) / 2, c]) / 2.0
        alpha = 1.0 - downsampled[l][x, y, 3]
        interpolated[l][x, y, c] = downsampled[l][x, y, c] + alpha * upsampled[l][x, y, c]

    normalize = Func("normalize")
    normalize[x, y, c] = interpolated[0][x, y, c] / interpolated[0][x, y, 3]
    return Pipeline([normalize], {normalize: (W, H, C)}, name="interpolate")


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule: levels 1 .. L-2 of the downsampled pyramid at root, parallel over strips of
    8 rows and vectorized; the output in parallel strips of 32 rows, with every interpolated level as a
    sliding window over the strip's rows; the rest (the boundary condition, the x passes, the
    upsampling) inlined. (Halide also computes a clone of level 0 per row of level 1; schedlab has no
    clone_in, so level 0 is inlined, as it is in Halide's other uses of it.)"""
    w, h, _ = p.output_sizes["normalize"]
    levels = sum(1 for f in p.funcs if f.name.startswith("interpolated_"))
    s = ScheduleBuilder(p, target)
    nv = s.target.natural_vector_size(f32)
    ov = min(nv, w)
    while w % ov:  # whole rows of whole vectors
        ov //= 2
    s.root("normalize", tiles=[{"y": min(32, h)}, {"y": 1}], vectorize="x", vector_width=ov, parallel=True)
    for l in range(levels - 1, 0, -1):
        vw = min(nv, -(-w // 2**l))
        s.compute_at(f"interpolated_{l}", "normalize", level=1, store_level=0,
                     **({"vectorize": "x", "vector_width": vw} if vw > 1 else {}))
    for l in range(1, levels - 1):
        node = p.dag.node(f"downsampled_{l}")
        tile, vw = x_tiling(node.region_extent(0), nv)
        s.root(f"downsampled_{l}", tiles=[{"x": tile, "y": min(8, node.region_extent(1))}], vectorize="x",
               vector_width=vw, parallel=True)
    return s.build()
