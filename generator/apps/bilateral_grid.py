"""Bilateral grid (Chen, Paris and Durand 2007), after Halide's apps/bilateral_grid: splat a gray image
into a 3-D grid (x / s_sigma, y / s_sigma, intensity / r_sigma) of (value, weight) pairs with a
data-dependent update, blur the grid along z, x and y with 5-tap [1 4 6 4 1] filters, and slice it
with trilinear interpolation, normalizing by the interpolated weight. 1536 x 2560 f32 (Halide's
estimates), s_sigma = 8, r_sigma = 0.1 (Halide's estimate for its runtime parameter, fixed here)."""

from __future__ import annotations

from ir import Func, Input, Pipeline, RDom, Var, cast, clamp, f32, i32, select
from ir.builder import ScheduleBuilder

DESCRIPTION = "bilateral grid: data-dependent splat into a 3-D grid, 5-tap blurs in z, x, y, trilinear slice; f32 gray"
SIZES = {"full": (1536, 2560), "small": (24, 16)}
S_SIGMA = 8
R_SIGMA = 0.1


def lerp(a, b, w):
    return a * (1 - w) + b * w


def build(size: str = "full") -> Pipeline:
    W, H = SIZES[size]
    s = S_SIGMA
    zmax = int(1.0 / R_SIGMA + 0.5)  # the largest grid z a value in [0, 1] lands in
    x, y, z, c = Var("x"), Var("y"), Var("z"), Var("c")
    inp = Input("input", f32, 2)

    clamped = Func("clamped")  # repeat_edge
    clamped[x, y] = inp[clamp(x, 0, W - 1), clamp(y, 0, H - 1)]

    # splat: each grid cell accumulates the s_sigma x s_sigma pixels around it at their intensity
    r = RDom((0, s), (0, s), name="r")
    val = clamp(clamped[x * s + r.x - s // 2, y * s + r.y - s // 2], 0.0, 1.0)
    zi = clamp(cast(i32, val * (1.0 / R_SIGMA) + 0.5), 0, zmax)  # the clamp only bounds the index
    histogram = Func("histogram")
    histogram[x, y, z, c] = 0.0
    histogram[x, y, zi, c] += select(c == 0, val, 1.0)

    blurz, blurx, blury = Func("blurz"), Func("blurx"), Func("blury")
    blurz[x, y, z, c] = (histogram[x, y, z - 2, c] + histogram[x, y, z - 1, c] * 4 + histogram[x, y, z, c] * 6
                         + histogram[x, y, z + 1, c] * 4 + histogram[x, y, z + 2, c])
    blurx[x, y, z, c] = (blurz[x - 2, y, z, c] + blurz[x - 1, y, z, c] * 4 + blurz[x, y, z, c] * 6
                         + blurz[x + 1, y, z, c] * 4 + blurz[x + 2, y, z, c])
    blury[x, y, z, c] = (blurx[x, y - 2, z, c] + blurx[x, y - 1, z, c] * 4 + blurx[x, y, z, c] * 6
                         + blurx[x, y + 1, z, c] * 4 + blurx[x, y + 2, z, c])

    # slice: trilinear samples of the blurred grid
    v = clamp(inp[x, y], 0.0, 1.0)
    zv = v * (1.0 / R_SIGMA)
    zi = cast(i32, zv)
    zf = zv - zi
    zc = clamp(zi, 0, zmax)  # equal to zi; bounds the data-dependent index
    xf = cast(f32, x % s) / s
    yf = cast(f32, y % s) / s
    xi, yi = x / s, y / s
    interpolated = Func("interpolated")
    interpolated[x, y, c] = lerp(
        lerp(lerp(blury[xi, yi, zc, c], blury[xi + 1, yi, zc, c], xf),
             lerp(blury[xi, yi + 1, zc, c], blury[xi + 1, yi + 1, zc, c], xf), yf),
        lerp(lerp(blury[xi, yi, zc + 1, c], blury[xi + 1, yi, zc + 1, c], xf),
             lerp(blury[xi, yi + 1, zc + 1, c], blury[xi + 1, yi + 1, zc + 1, c], xf), yf),
        zf)

    bilateral_grid = Func("bilateral_grid")
    bilateral_grid[x, y] = interpolated[x, y, 0] / interpolated[x, y, 1]
    return Pipeline([bilateral_grid], {bilateral_grid: (W, H)}, name="bilateral_grid")


def schedule(p: Pipeline, target=None):
    """After Halide's CPU schedule: blurx at root, parallel over grid rows, with the histogram and blurz
    computed per row of it; the output in parallel strips of 8 rows (one grid row), with the 2 rows of
    blury a strip needs computed per strip; vectorized along x. (blurx itself is not split into SIMD
    vectors: its 1 + width / 8 columns rarely divide into vectors, and only the outermost level of a
    LoopNest may shift its last tile inwards, so a SIMD split would recompute a whole extra tile of the
    histogram.) The boundary condition is inlined, as in Halide."""
    w, h = p.output_sizes["bilateral_grid"]
    s = ScheduleBuilder(p, target)
    nv = s.target.natural_vector_size(f32)
    gv = min(nv, p.dag.node("blurx").region_extent(0))  # grid columns
    s.root("bilateral_grid", tiles=[{"x": w, "y": min(S_SIGMA, h)}], vectorize="x", vector_width=min(nv, w),
           parallel=True)
    s.compute_at("blury", "bilateral_grid", level=0, vectorize="x", vector_width=gv)
    s.inline("interpolated")
    s.root("blurx", tiles=[{"y": 1}], parallel=True)
    s.compute_at("blurz", "blurx", level=0, vectorize="x", vector_width=gv)
    s.compute_at("histogram", "blurx", level=0, vectorize="x", vector_width=gv)
    s.inline("clamped")
    return s.build()
