"""Bilateral guided upsampling (Chen et al. 2016; seeds/adams2019 §6.1; Halide's apps/bgu), f32 RGB.

Fit: splat a low-resolution input/output pair (splat_loc -> values) into a bilateral grid of sums for
a least-squares fit of one 3x4 affine color model per cell (the 4x4 symmetric normal matrix of
[r, g, b, 1] and its three right-hand sides: 22 sums, data-dependent splat updates into the grid's
intensity dimension), blur the grid with a 7-tap ~1/d^3 filter in z, y and x, and solve the regularized
4x4 system per cell (sqrt-free Cholesky, LDL^T, written out; 3 right-hand sides; lambda = 0.1 pulls
each model towards the identity). Slice: interpolate the models trilinearly at every pixel of the
full-resolution guide (slice_loc), at the guide's luma, and apply them to the guide's color.

As in Halide's app: s_sigma = 16 pixels per spatial cell of the low-res image, r_sigma = 1/8 (9
intensity bins), a 192 x 320 low-resolution pair upsampled 8x to a 1536 x 2560 guide. The sigmas are
constants here (Halide passes them as scalar parameters).
"""

from __future__ import annotations

import math

from ir import Func, Input, Pipeline, RDom, Var, cast, clamp, f32, i32, round, select
from ir.builder import ScheduleBuilder

DESCRIPTION = "bilateral guided upsampling: splat a 3x4 affine-model grid, blur, 4x4 LDL solve, slice; f32"
# (low-res width, low-res height, guide width, guide height, s_sigma); r_sigma = 1 / R_BINS
SIZES = {"full": (192, 320, 1536, 2560, 16), "small": (16, 12, 32, 24, 4)}
R_BINS = 8
LAMBDA = 0.1
TAPS = (1.0 / 64, 1.0 / 27, 1.0 / 8, 1.0, 1.0 / 8, 1.0 / 27, 1.0 / 64)  # offsets -3..3


def _pack(c, exprs):
    """Halide's pack_channels: exprs[c] as a select chain (the last one is the default)."""
    e = exprs[-1]
    for i in range(len(exprs) - 2, -1, -1):
        e = select(c == i, exprs[i], e)
    return e


def _lerp(a, b, w):
    return a * (1.0 - w) + b * w


def solve_symmetric(A, B):
    """Solve A X = B for a symmetric M x M A and an M x N B (nested lists of Exprs or numbers) by
    Halide's sqrt-free Cholesky (LDL^T, with 1/D kept on the diagonal), in Halide's order."""
    M, N = len(A), len(B[0])
    A = [row[:] for row in A]
    B = [row[:] for row in B]
    for j in range(M):
        A[j][j] = 1.0 / A[j][j]
        for i in range(j + 1, M):
            A[i][j] = A[i][j] * A[j][j]
        for i in range(j + 1, M):
            for k in range(j + 1, M):
                A[i][k] = A[k][i] if k < i else A[i][k] - A[k][j] * A[j][i]
    for k in range(N):
        for j in range(M):  # L z = b
            for i in range(j):
                B[j][k] = B[j][k] - A[j][i] * B[i][k]
        for j in range(M):  # D^-1
            B[j][k] = B[j][k] * A[j][j]
        for j in range(M - 1, -1, -1):  # L^T x = z
            for i in range(j + 1, M):
                B[j][k] = B[j][k] - A[i][j] * B[i][k]
    return B


def build(size: str = "full") -> Pipeline:
    lw, lh, gw, gh, s_sigma = SIZES[size]
    x, y, z, c = Var("x"), Var("y"), Var("z"), Var("c")
    splat_loc = Input("splat_loc", f32, 3)  # low-res input, lw x lh x 3
    values = Input("values", f32, 3)  # low-res output, lw x lh x 3
    slice_loc = Input("slice_loc", f32, 3)  # full-res guide, gw x gh x 3

    # repeat-edge boundary conditions on the low-res pair
    clamped_values = Func("clamped_values")
    clamped_values[x, y, c] = values[clamp(x, 0, lw - 1), clamp(y, 0, lh - 1), c]
    clamped_splat_loc = Func("clamped_splat_loc")
    clamped_splat_loc[x, y, c] = splat_loc[clamp(x, 0, lw - 1), clamp(y, 0, lh - 1), c]

    upsample = max(math.ceil(gw / lw), math.ceil(gh / lh))
    big_sigma = s_sigma * upsample  # guide pixels per grid cell

    gray_splat_loc = Func("gray_splat_loc")
    gray_splat_loc[x, y] = (0.25 * clamped_splat_loc[x, y, 0] + 0.5 * clamped_splat_loc[x, y, 1]
                            + 0.25 * clamped_splat_loc[x, y, 2])
    gray_slice_loc = Func("gray_slice_loc")
    gray_slice_loc[x, y] = 0.25 * slice_loc[x, y, 0] + 0.5 * slice_loc[x, y, 1] + 0.25 * slice_loc[x, y, 2]

    # the bilateral grid of the sums of a least-squares fit of values from splat_loc, per cell
    histogram = Func("histogram")
    histogram[x, y, z, c] = 0.0
    r = RDom((0, s_sigma), (0, s_sigma), name="r")
    sx = x * s_sigma + r.x - s_sigma // 2
    sy = y * s_sigma + r.y - s_sigma // 2
    pos = clamp(gray_splat_loc[sx, sy], 0.0, 1.0)
    zi = clamp(cast(i32, round(pos * float(R_BINS))), 0, R_BINS)
    vr, vg, vb = (clamped_values[sx, sy, k] for k in range(3))
    sr, sg, sb = (clamped_splat_loc[sx, sy, k] for k in range(3))
    histogram[x, y, zi, c] += _pack(c, [sr * sr, sr * sg, sr * sb, sr, sg * sg, sg * sb, sg, sb * sb, sb, 1.0,
                                        vr * sr, vr * sg, vr * sb, vr,
                                        vg * sr, vg * sg, vg * sb, vg,
                                        vb * sr, vb * sg, vb * sb, vb])

    # blur the grid (convolution pyramids suggest a ~1/d^3 membrane)
    def blur7(f, name, axis):
        g = Func(name)
        args = [x, y, z, c]
        terms = []
        for k, t in enumerate(TAPS):
            a = list(args)
            a[axis] = a[axis] + (k - 3)
            terms.append(f[tuple(a)] * t)
        acc = terms[0]
        for t in terms[1:]:
            acc = acc + t
        g[x, y, z, c] = acc
        return g

    blurz = blur7(histogram, "blurz", 2)
    blury = blur7(blurz, "blury", 1)
    blurx = blur7(blury, "blurx", 0)

    # the regularized normal equations per cell, solved for a 3x4 affine model (c = 4 * out + in)
    line = Func("line")
    g = [blurx[x, y, z, k] for k in range(22)]
    A = [[g[0], g[1], g[2], g[3]],
         [g[1], g[4], g[5], g[6]],
         [g[2], g[5], g[7], g[8]],
         [g[3], g[6], g[8], g[9]]]
    B = [[g[10 + 4 * k + i] for k in range(3)] for i in range(4)]
    for i in range(4):
        A[i][i] = A[i][i] + LAMBDA
    for i in range(3):
        B[i][i] = B[i][i] + LAMBDA
    X = solve_symmetric(A, B)
    line[x, y, z, c] = _pack(c, [X[j][i] for i in range(3) for j in range(4)])

    # slice: trilinear interpolation of the models, in y, then x, then intensity
    interpolated_matrix_y = Func("interpolated_matrix_y")
    yi = y / big_sigma
    yf = cast(f32, y) / float(big_sigma) - cast(f32, yi)
    interpolated_matrix_y[x, y, z, c] = _lerp(line[x, yi, z, c], line[x, yi + 1, z, c], yf)
    interpolated_matrix_x = Func("interpolated_matrix_x")
    xi = x / big_sigma
    xf = cast(f32, x) / float(big_sigma) - cast(f32, xi)
    interpolated_matrix_x[x, y, z, c] = _lerp(interpolated_matrix_y[xi, y, z, c],
                                              interpolated_matrix_y[xi + 1, y, z, c], xf)
    interpolated_matrix_z = Func("interpolated_matrix_z")
    zv = clamp(gray_slice_loc[x, y], 0.0, 1.0) * float(R_BINS)
    zs = clamp(cast(i32, zv), 0, R_BINS)  # the clamp changes nothing but bounds the access
    zf = zv - cast(f32, zs)
    interpolated_matrix_z[x, y, c] = _lerp(interpolated_matrix_x[x, y, zs, c],
                                           interpolated_matrix_x[x, y, zs + 1, c], zf)

    # apply the 3x4 model to the guide's color
    interpolated = Func("interpolated")
    interpolated[x, y, c] = (interpolated_matrix_z[x, y, 4 * c] * slice_loc[x, y, 0]
                             + interpolated_matrix_z[x, y, 4 * c + 1] * slice_loc[x, y, 1]
                             + interpolated_matrix_z[x, y, 4 * c + 2] * slice_loc[x, y, 2]
                             + interpolated_matrix_z[x, y, 4 * c + 3])
    out = Func("slice")
    out[x, y, c] = clamp(interpolated[x, y, c], 0.0, 1.0)
    return Pipeline([out], {out: (gw, gh, 3)}, name="bgu")


def schedule(p: Pipeline, target=None):
    """Halide's CPU schedule for BGU, in this IR's terms. Fitting: the grid's z blur at root, parallel
    over rows, with each row's histogram splatted (and its luma computed) per row; the solve at root,
    parallel over rows, with the x and y blurs of the sums it needs computed per row. Slicing: the
    y-interpolated models at root (parallel); tiles of the output in parallel, with the guide's luma
    and the 12 interpolated coefficients per tile; the x-interpolation, the boundary conditions and
    the 3x4 model application inlined."""
    dag = p.dag
    s = ScheduleBuilder(p, target)
    nv = s.target.natural_vector_size(f32)

    def vec(name, cap=nv):
        """A SIMD width along x for `name`: the native width, or less on a narrow grid."""
        return max(1, min(cap, dag.node(name).region_extent(0)))

    gw, gh, _ = p.output_sizes["slice"]
    tx, ty = min(4 * nv, gw), min(16, gh)
    s.root("slice", tiles=[{"x": tx, "y": ty, "c": 3}], vectorize="x", vector_width=vec("slice"), parallel=True)
    s.inline("interpolated")
    s.compute_at("interpolated_matrix_z", "slice", level=0, vectorize="x", vector_width=vec("slice"))
    s.compute_at("gray_slice_loc", "slice", level=0, vectorize="x", vector_width=vec("slice"))
    s.inline("interpolated_matrix_x")
    # the grid is a few cells wide: SIMD lanes along its x would need overlapping tiles, so the grid's
    # stages run scalar over whole rows
    s.root("interpolated_matrix_y", tiles=[{"y": min(64, gh)}], parallel=True)
    s.root("line", tiles=[{"y": 1}], parallel=True)
    s.compute_at("blurx", "line", level=0)
    s.compute_at("blury", "line", level=0)
    s.root("blurz", tiles=[{"y": 1}], parallel=True)
    s.compute_at("histogram", "blurz", level=0)
    s.compute_at("gray_splat_loc", "blurz", level=0, vectorize="x", vector_width=vec("gray_splat_loc"))
    s.inline("clamped_splat_loc")
    s.inline("clamped_values")
    return s.build()
