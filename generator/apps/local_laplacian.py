"""Local Laplacian filter (Paris, Hasinoff and Kautz 2011), after Halide's apps/local_laplacian.

A remapping curve as a lookup table; K = 8 processed copies of the gray image (one per intensity
level), their Gaussian pyramids (1 3 3 1 downsampling) and Laplacian pyramids (bilinear upsampling);
the Gaussian pyramid of the input selects and interpolates, per pixel and level, between the two
nearest processed Laplacian pyramids; the output Laplacian pyramid is collapsed and color
reintroduced. u16 RGB in and out, 1536 x 2560 x 3 (Halide's estimates), levels = 8, alpha = beta = 1
(Halide's estimates for its runtime parameters, fixed here). Pyramid levels J: 8 at "full" (Halide's
generator default, the paper's setting) and 4 at "small" (a 24 x 16 image has nothing left to
filter below 3 x 2).
"""

from __future__ import annotations

from ir import Func, Input, Pipeline, Var, cast, clamp, exp, f32, i32, u16
from ir.builder import ScheduleBuilder, x_tiling

DESCRIPTION = "local Laplacian filter: remap LUT, Gaussian/Laplacian pyramids over 8 intensity levels, collapse; u16 RGB"
SIZES = {"full": (1536, 2560, 3), "small": (24, 16, 3)}
PYRAMID_LEVELS = {"full": 8, "small": 4}
LEVELS = 8  # K, intensity levels
ALPHA = 1.0
BETA = 1.0
EPS = 0.01

x, y, c, k = Var("x"), Var("y"), Var("c"), Var("k")


def _downsample(f: Func, name: str, dims: int) -> Func:
    """1 3 3 1 filter and subsample by 2 in x, then in y (Halide's downsample)."""
    rest = (k,) if dims == 3 else ()
    downx, downy = Func(f"{name}_downx"), Func(name)
    downx[(x, y) + rest] = (f[(2 * x - 1, y) + rest] + 3.0 * (f[(2 * x, y) + rest] + f[(2 * x + 1, y) + rest])
                            + f[(2 * x + 2, y) + rest]) / 8.0
    downy[(x, y) + rest] = (downx[(x, 2 * y - 1) + rest] + 3.0 * (downx[(x, 2 * y) + rest] + downx[(x, 2 * y + 1) + rest])
                            + downx[(x, 2 * y + 2) + rest]) / 8.0
    return downy


def _upsample(f: Func, name: str, dims: int) -> Func:
    """Bilinear upsampling by 2 in x, then in y (Halide's upsample)."""
    rest = (k,) if dims == 3 else ()
    upx, upy = Func(f"{name}_upx"), Func(f"{name}_upy")
    upx[(x, y) + rest] = 0.25 * f[(x / 2 - 1 + 2 * (x % 2), y) + rest] + 0.75 * f[(x / 2, y) + rest]
    upy[(x, y) + rest] = 0.25 * upx[(x, y / 2 - 1 + 2 * (y % 2)) + rest] + 0.75 * upx[(x, y / 2) + rest]
    return upy


def build(size: str = "full") -> Pipeline:
    W, H, C = SIZES[size]
    J = PYRAMID_LEVELS[size]
    inp = Input("input", u16, 3)

    # the remapping function as a lookup table, 256 entries per intensity level
    remap = Func("remap")
    fx = cast(f32, x) / 256.0
    remap[x] = ALPHA * fx * exp(-fx * fx / 2.0)

    clamped = Func("clamped")  # repeat_edge
    clamped[x, y, c] = inp[clamp(x, 0, W - 1), clamp(y, 0, H - 1), c]
    floating = Func("floating")
    floating[x, y, c] = clamped[x, y, c] / 65535.0
    gray = Func("gray")
    gray[x, y] = 0.299 * floating[x, y, 0] + 0.587 * floating[x, y, 1] + 0.114 * floating[x, y, 2]

    # the processed Gaussian pyramids, one per intensity level k
    g_pyr = [Func("gPyramid_0")]
    level = k * (1.0 / (LEVELS - 1))
    idx = clamp(cast(i32, gray[x, y] * float(LEVELS - 1) * 256.0), 0, (LEVELS - 1) * 256)
    g_pyr[0][x, y, k] = BETA * (gray[x, y] - level) + level + remap[idx - 256 * k]
    for j in range(1, J):
        g_pyr.append(_downsample(g_pyr[j - 1], f"gPyramid_{j}", 3))

    # their Laplacian pyramids (the coarsest level is the Gaussian one)
    l_pyr = [None] * J
    l_pyr[J - 1] = g_pyr[J - 1]
    for j in range(J - 2, -1, -1):
        up = _upsample(g_pyr[j + 1], f"gPyramid_{j + 1}", 3)
        l_pyr[j] = Func(f"lPyramid_{j}")
        l_pyr[j][x, y, k] = g_pyr[j][x, y, k] - up[x, y, k]

    # the Gaussian pyramid of the input (its level 0 is gray)
    in_g_pyr = [gray]
    for j in range(1, J):
        in_g_pyr.append(_downsample(in_g_pyr[j - 1], f"inGPyramid_{j}", 2))

    # the output's Laplacian pyramid: interpolate between the two processed pyramids nearest in intensity
    out_l_pyr = []
    for j in range(J):
        lv = in_g_pyr[j][x, y] * float(LEVELS - 1)
        li = clamp(cast(i32, lv), 0, LEVELS - 2)
        lf = lv - cast(f32, li)
        f = Func(f"outLPyramid_{j}")
        f[x, y] = (1.0 - lf) * l_pyr[j][x, y, li] + lf * l_pyr[j][x, y, li + 1]
        out_l_pyr.append(f)

    # collapse it (the coarsest level of the output's Gaussian pyramid is the Laplacian one)
    out_g_pyr = [None] * J
    out_g_pyr[J - 1] = out_l_pyr[J - 1]
    for j in range(J - 2, -1, -1):
        up = _upsample(out_g_pyr[j + 1], f"outGPyramid_{j + 1}", 2)
        out_g_pyr[j] = Func(f"outGPyramid_{j}")
        out_g_pyr[j][x, y] = up[x, y] + out_l_pyr[j][x, y]

    # reintroduce color, back to 16 bits
    color = Func("color")
    color[x, y, c] = out_g_pyr[0][x, y] * (floating[x, y, c] + EPS) / (gray[x, y] + EPS)
    output = Func("output")
    output[x, y, c] = cast(u16, clamp(color[x, y, c], 0.0, 1.0) * 65535.0)
    return Pipeline([output], {output: (W, H, C)}, name="local_laplacian")


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule: the output in parallel strips of 64 rows; gray and levels 1-4 of both
    Gaussian pyramids at root, parallel and vectorized; the output pyramid's levels 1-4 as sliding
    windows over each strip's rows, its level 0 per row; the coarse levels (5+) at root, the processed
    pyramid parallel over k; everything else (the level-0 processed images, the Laplacian levels, the
    up/downsampling passes, the boundary condition, color) inlined. Root Funcs are also tiled along x,
    in whole vectors about 256 wide: only a LoopNest's outermost level shifts its last tile inwards, so
    a row that is not a multiple of the vector width would otherwise split into two overlapping halves."""
    w, h, _ = p.output_sizes["output"]
    J = sum(1 for f in p.funcs if f.name.startswith("outLPyramid_"))
    s = ScheduleBuilder(p, target)
    nv = s.target.natural_vector_size(f32)

    def root_tiled(name, rows):
        node = p.dag.node(name)
        tile, vw = x_tiling(node.region_extent(0), nv)
        s.root(name, tiles=[{"x": tile, "y": min(rows, node.region_extent(1))}], vectorize="x", vector_width=vw,
               parallel=True)

    ov = min(nv, w)
    while w % ov:  # whole rows of whole vectors
        ov //= 2
    s.root("output", tiles=[{"y": min(64, h)}, {"y": 1}], vectorize="x", vector_width=ov, parallel=True)
    s.root("remap")
    root_tiled("gray", 32)
    for j in range(J):
        coarsest = f"outLPyramid_{j}" if j == J - 1 else f"outGPyramid_{j}"
        if j == 0:
            s.compute_at("outGPyramid_0", "output", level=1, vectorize="x", vector_width=min(nv, w))
        elif j < 5:
            root_tiled(f"inGPyramid_{j}", 32)
            root_tiled(f"gPyramid_{j}", 8)
            s.compute_at(coarsest, "output", level=1, store_level=0, vectorize="x",
                         vector_width=min(nv, -(-w // 2**j)))
        else:
            s.root(f"inGPyramid_{j}")
            s.root(f"gPyramid_{j}", tiles=[{"k": 1}], parallel=True)
            s.root(coarsest)
    return s.build()
