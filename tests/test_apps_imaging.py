"""The imaging apps (bilateral grid, local Laplacian, interpolate, non-local means) at their "small"
size: the interpreter against independent numpy implementations written here from the apps' math
(Halide's apps), and the numba backend against the interpreter under the naive and the expert
schedules.

The numpy references evaluate every operation in the same f32 order as the pipelines, so they agree
with the interpreter to rounding (bit-exactly for the u16 output of the local Laplacian).
Transcendentals go through the C library's expf (via ctypes), which is what the interpreter and the
compiled kernels call; numpy's own f32 exp may differ by an ulp.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np
import pytest

import backends
import ir
from generator.apps import bilateral_grid, interpolate, local_laplacian, nl_means
from ir.builder import naive_schedule

from .fuzz import CHECK_ONLY

F = np.float32
APPS = {"bilateral_grid": bilateral_grid, "local_laplacian": local_laplacian, "interpolate": interpolate,
        "nl_means": nl_means}
SEED = 7

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.expf.restype = ctypes.c_float
_libm.expf.argtypes = [ctypes.c_float]
_expf = np.frompyfunc(_libm.expf, 1, 1)


def expf(a) -> np.ndarray:
    a = np.asarray(a, dtype=F)
    return np.asarray(_expf(a), dtype=F).reshape(a.shape)


@functools.cache
def case(name: str):
    """(pipeline, inputs, interpreter outputs) at the small size."""
    p = APPS[name].build("small")
    inputs = p.random_inputs(SEED)
    return p, inputs, ir.interpret(p, inputs)


# -- ranges: arrays with an origin, indexed by absolute coordinates -------------------------------


class Grid:
    """An array over coordinates [lo[d], lo[d] + shape[d]) in its first two (spatial) dimensions."""

    def __init__(self, arr: np.ndarray, lo: tuple[int, int]):
        self.arr, self.lo = arr, lo

    def at(self, xs, ys) -> np.ndarray:
        """Values at integer coordinate arrays xs (broadcast along x) and ys (along y)."""
        xi = np.asarray(xs)[:, None] - self.lo[0]
        yi = np.asarray(ys)[None, :] - self.lo[1]
        assert xi.min() >= 0 and xi.max() < self.arr.shape[0], "x out of the computed range"
        assert yi.min() >= 0 and yi.max() < self.arr.shape[1], "y out of the computed range"
        return self.arr[xi, yi]


def span(lo: int, hi: int) -> np.ndarray:
    return np.arange(lo, hi + 1)


# -- bilateral grid -------------------------------------------------------------------------------


def bilateral_grid_ref(a: np.ndarray) -> np.ndarray:
    W, H = a.shape
    s, zmax = bilateral_grid.S_SIGMA, 10
    inv_r = F(10.0)  # 1 / r_sigma
    gx, gy = (W - 1) // s + 1, (H - 1) // s + 1  # largest grid coordinate the slice reads
    # histogram over grid x, y in [-2, g + 2] (the x and y blurs' footprints), z in [-2, 13]
    hx, hy = span(-2, gx + 2), span(-2, gy + 2)
    hist = np.zeros((len(hx), len(hy), zmax + 6, 2), F)
    X, Y = np.meshgrid(hx, hy, indexing="ij")
    ii, jj = np.meshgrid(np.arange(len(hx)), np.arange(len(hy)), indexing="ij")
    for ry in range(s):
        for rx in range(s):
            v = a[np.clip(X * s + rx - s // 2, 0, W - 1), np.clip(Y * s + ry - s // 2, 0, H - 1)]
            v = np.clip(v, F(0), F(1))
            zi = np.clip(np.trunc(v * inv_r + F(0.5)).astype(np.int64), 0, zmax)
            hist[ii, jj, zi + 2, 0] += v
            hist[ii, jj, zi + 2, 1] += F(1)

    def blur(g, axis):  # [1 4 6 4 1] along axis; g covers 2 more on each side than the result
        n = g.shape[axis] - 4
        t = [np.take(g, np.arange(k, k + n), axis=axis) for k in range(5)]
        return t[0] + t[1] * F(4) + t[2] * F(6) + t[3] * F(4) + t[4]

    bz = blur(hist, 2)  # z in [0, 11]
    bx = blur(bz, 0)  # x in [0, gx + 0]: hx was [-2, gx + 2]
    by = blur(bx, 1)  # y in [0, gy]
    v = np.clip(a, F(0), F(1))
    zv = v * inv_r
    zi = np.trunc(zv).astype(np.int64)
    zf = zv - zi.astype(F)
    x, y = np.meshgrid(np.arange(W), np.arange(H), indexing="ij")
    xi, yi = x // s, y // s
    xf, yf = (x % s).astype(F) / F(s), (y % s).astype(F) / F(s)

    def lerp(p, q, w):
        return p * (F(1) - w) + q * w

    def interp(c):
        def g(dx, dy, dz):
            return by[xi + dx, yi + dy, zi + dz, c]
        return lerp(lerp(lerp(g(0, 0, 0), g(1, 0, 0), xf), lerp(g(0, 1, 0), g(1, 1, 0), xf), yf),
                    lerp(lerp(g(0, 0, 1), g(1, 0, 1), xf), lerp(g(0, 1, 1), g(1, 1, 1), xf), yf), zf)

    return interp(0) / interp(1)


def test_bilateral_grid_matches_numpy():
    _, inputs, out = case("bilateral_grid")
    got = out["bilateral_grid"]
    assert got.dtype == np.float32 and got.shape == (24, 16)
    np.testing.assert_allclose(got, bilateral_grid_ref(inputs["input"]), rtol=1e-5, atol=1e-6)


# -- local Laplacian ------------------------------------------------------------------------------


def _down(g: Grid, clamp_to=None) -> Grid:
    """Halide's downsample: [1 3 3 1] / 8 in x, then in y, over every point g can produce."""
    (x0, y0), (nx, ny) = g.lo, g.arr.shape[:2]
    xs = span(-((-(x0 + 1)) // 2), (x0 + nx - 3) // 2)
    ys_all = span(y0, y0 + ny - 1)
    dx = (g.at(2 * xs - 1, ys_all) + F(3) * (g.at(2 * xs, ys_all) + g.at(2 * xs + 1, ys_all))
          + g.at(2 * xs + 2, ys_all)) / F(8)
    dxg = Grid(dx, (xs[0], y0))
    ys = span(-((-(y0 + 1)) // 2), (y0 + ny - 3) // 2)
    out = (dxg.at(xs, 2 * ys - 1) + F(3) * (dxg.at(xs, 2 * ys) + dxg.at(xs, 2 * ys + 1))
           + dxg.at(xs, 2 * ys + 2)) / F(8)
    return Grid(out, (xs[0], ys[0]))


def _up(g: Grid) -> Grid:
    """Halide's upsample (bilinear, 0.25 / 0.75) over every point g can produce."""
    (x0, y0), (nx, ny) = g.lo, g.arr.shape[:2]
    xs = span(2 * (x0 + 1), 2 * (x0 + nx - 2) + 1)
    ys_all = span(y0, y0 + ny - 1)
    ux = F(0.25) * g.at(xs // 2 - 1 + 2 * (xs % 2), ys_all) + F(0.75) * g.at(xs // 2, ys_all)
    uxg = Grid(ux, (xs[0], y0))
    ys = span(2 * (y0 + 1), 2 * (y0 + ny - 2) + 1)
    out = F(0.25) * uxg.at(xs, ys // 2 - 1 + 2 * (ys % 2)) + F(0.75) * uxg.at(xs, ys // 2)
    return Grid(out, (xs[0], ys[0]))


def local_laplacian_ref(inp: np.ndarray, J: int) -> np.ndarray:
    W, H, _ = inp.shape
    K = local_laplacian.LEVELS
    alpha, beta, eps = F(local_laplacian.ALPHA), F(local_laplacian.BETA), F(local_laplacian.EPS)
    # the remapping LUT over [-(K-1)*256, (K-1)*256]
    lut_lo = -(K - 1) * 256
    fx = np.arange(lut_lo, -lut_lo + 1).astype(F) / F(256)
    remap = alpha * fx * expf((F(0) - fx) * fx / F(2))

    pad = 4 << J  # enough margin that every level covers what the levels above read
    xs, ys = span(-pad, W - 1 + pad), span(-pad, H - 1 + pad)
    clamped = inp[np.clip(xs, 0, W - 1)[:, None], np.clip(ys, 0, H - 1)[None, :], :]
    floating = Grid(clamped / F(65535), (-pad, -pad))
    fl = floating.arr
    gray = Grid(F(0.299) * fl[..., 0] + F(0.587) * fl[..., 1] + F(0.114) * fl[..., 2], (-pad, -pad))

    idx = np.clip(np.trunc(gray.arr * F(K - 1) * F(256)).astype(np.int64), 0, (K - 1) * 256)
    g0 = np.empty(gray.arr.shape + (K,), F)
    for k in range(K):
        level = F(k) * F(1.0 / (K - 1))
        g0[..., k] = beta * (gray.arr - level) + level + remap[idx - 256 * k - lut_lo]
    g_pyr = [Grid(g0, gray.lo)]
    in_pyr = [gray]
    for j in range(1, J):
        g_pyr.append(_down(g_pyr[-1]))
        in_pyr.append(_down(in_pyr[-1]))

    # the ranges each output level is needed over
    ranges = [((0, W - 1), (0, H - 1))]
    for j in range(1, J):
        (xl, xh), (yl, yh) = ranges[-1]
        ranges.append(((xl // 2 - 1, xh // 2 + 1), (yl // 2 - 1, yh // 2 + 1)))

    def out_l(j):  # the output Laplacian level j over ranges[j]
        (xl, xh), (yl, yh) = ranges[j]
        xs_, ys_ = span(xl, xh), span(yl, yh)
        lap = g_pyr[j].at(xs_, ys_)
        if j < J - 1:
            lap = lap - _up(g_pyr[j + 1]).at(xs_, ys_)
        lv = in_pyr[j].at(xs_, ys_) * F(K - 1)
        li = np.clip(np.trunc(lv).astype(np.int64), 0, K - 2)
        lf = lv - li.astype(F)
        a = np.take_along_axis(lap, li[..., None], axis=2)[..., 0]
        b = np.take_along_axis(lap, li[..., None] + 1, axis=2)[..., 0]
        return Grid((F(1) - lf) * a + lf * b, (xl, yl))

    out_g = out_l(J - 1)
    for j in range(J - 2, -1, -1):
        (xl, xh), (yl, yh) = ranges[j]
        xs_, ys_ = span(xl, xh), span(yl, yh)
        out_g = Grid(_up(out_g).at(xs_, ys_) + out_l(j).arr, (xl, yl))
    fl0 = floating.at(span(0, W - 1), span(0, H - 1))
    gray0 = gray.at(span(0, W - 1), span(0, H - 1))
    color = out_g.arr[..., None] * (fl0 + eps) / (gray0 + eps)[..., None]
    return np.trunc(np.clip(color, F(0), F(1)) * F(65535)).astype(np.uint16)


def test_local_laplacian_matches_numpy():
    _, inputs, out = case("local_laplacian")
    got = out["output"]
    assert got.dtype == np.uint16 and got.shape == (24, 16, 3)
    want = local_laplacian_ref(inputs["input"], local_laplacian.PYRAMID_LEVELS["small"])
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 100  # not saturated or constant


# -- interpolate ----------------------------------------------------------------------------------


def interpolate_ref(inp: np.ndarray, levels: int) -> np.ndarray:
    W, H, _ = inp.shape
    # the ranges each interpolated level is needed over
    need = [((0, W - 1), (0, H - 1))]
    for _ in range(1, levels):
        (xl, xh), (yl, yh) = need[-1]
        need.append(((xl // 2, (xh + 1) // 2), (yl // 2, (yh + 1) // 2)))
    # the ranges of each downsampled level: what its interpolated level and the next level read
    ds_rng = [None] * levels
    ds_rng[levels - 1] = need[levels - 1]
    for l in range(levels - 2, -1, -1):
        (xl, xh), (yl, yh) = ds_rng[l + 1]
        if l + 1 == 4:  # level 4 reads level 3 through a clamp to [0, W/8] x [0, H/8]
            w, h = W // 8, H // 8
            rx = (min(max(2 * xl - 1, 0), w), min(max(2 * xh + 1, 0), w))
            ry = (min(max(2 * yl - 1, 0), h), min(max(2 * yh + 1, 0), h))
        else:
            rx, ry = (2 * xl - 1, 2 * xh + 1), (2 * yl - 1, 2 * yh + 1)
        (nxl, nxh), (nyl, nyh) = need[l]
        ds_rng[l] = ((min(rx[0], nxl), max(rx[1], nxh)), (min(ry[0], nyl), max(ry[1], nyh)))

    (xl, xh), (yl, yh) = ds_rng[0]
    xs, ys = span(xl, xh), span(yl, yh)
    cl = inp[np.clip(xs, 0, W - 1)[:, None], np.clip(ys, 0, H - 1)[None, :], :]
    d0 = np.concatenate([cl[..., :3] * cl[..., 3:], cl[..., 3:]], axis=2)
    ds = [Grid(d0, (xl, yl))]
    for l in range(1, levels):
        prev = ds[-1]
        (xl, xh), (yl, yh) = ds_rng[l]
        xs, ys = span(xl, xh), span(yl, yh)
        yx = span(2 * yl - 1, 2 * yh + 1)  # the rows of downx that level reads
        if l == 4:
            w, h = W // 8, H // 8

            def at(a, b, prev=prev, w=w, h=h):
                return prev.at(np.clip(a, 0, w), np.clip(b, 0, h))
        else:
            at = prev.at
        dx = Grid((at(2 * xs - 1, yx) + F(2) * at(2 * xs, yx) + at(2 * xs + 1, yx)) * F(0.25), (xl, yx[0]))
        ds.append(Grid((dx.at(xs, 2 * ys - 1) + F(2) * dx.at(xs, 2 * ys) + dx.at(xs, 2 * ys + 1)) * F(0.25),
                       (xl, yl)))

    (xl, xh), (yl, yh) = need[levels - 1]
    interp = Grid(ds[levels - 1].at(span(xl, xh), span(yl, yh)), (xl, yl))
    for l in range(levels - 2, -1, -1):
        (xl, xh), (yl, yh) = need[l]
        xs, ys = span(xl, xh), span(yl, yh)
        yu = span(yl // 2, (yh + 1) // 2)
        ux = Grid((interp.at(xs // 2, yu) + interp.at((xs + 1) // 2, yu)) / F(2), (xl, yu[0]))
        up = (ux.at(xs, ys // 2) + ux.at(xs, (ys + 1) // 2)) / F(2)
        d = ds[l].at(xs, ys)
        alpha = F(1) - d[..., 3:]
        interp = Grid(d + alpha * up, (xl, yl))
    i0 = interp.arr
    return i0[..., :3] / i0[..., 3:]


def test_interpolate_matches_numpy():
    _, inputs, out = case("interpolate")
    got = out["normalize"]
    assert got.dtype == np.float32 and got.shape == (24, 16, 3)
    want = interpolate_ref(inputs["input"], interpolate.LEVELS["small"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- non-local means ------------------------------------------------------------------------------


def nl_means_ref(inp: np.ndarray) -> np.ndarray:
    W, H, _ = inp.shape
    r = nl_means.PATCH_SIZE // 2
    sr = nl_means.SEARCH_AREA // 2
    m = r + sr  # padding: d is read at x in [-r, W - 1 + r], shifted by up to sr
    P = inp[np.clip(span(-m, W - 1 + m), 0, W - 1)[:, None], np.clip(span(-m, H - 1 + m), 0, H - 1)[None, :], :]

    def pix(x0, nx, y0, ny):  # the clamped image over [x0, x0 + nx) x [y0, y0 + ny)
        return P[x0 + m:x0 + m + nx, y0 + m:y0 + m + ny, :]

    inv = F(nl_means.inv_sigma_sq())
    num = np.zeros((W, H, 4), F)
    cwa = np.concatenate([P, np.ones(P.shape[:2] + (1,), F)], axis=2)
    weights = {}
    for ddy in range(-sr, sr + 1):
        for ddx in range(-sr, sr + 1):
            # d over x in [-r, W - 1 + r], y in [-r, H - 1 + r]
            nx, ny = W + 2 * r, H + 2 * r
            diff = pix(-r, nx, -r, ny) - pix(-r + ddx, nx, -r + ddy, ny)
            sq = diff * diff
            d = sq[..., 0] + sq[..., 1] + sq[..., 2]
            by = np.zeros((nx, H), F)  # x in [-r, W - 1 + r], y in [0, H - 1]
            for k in range(2 * r + 1):
                by += d[:, k:k + H]
            bd = np.zeros((W, H), F)
            for k in range(2 * r + 1):
                bd += by[k:k + W, :]
            weights[ddx, ddy] = expf(bd * inv)
    for ddy in range(-sr, sr + 1):  # the search window's x innermost, as the RDom iterates
        for ddx in range(-sr, sr + 1):
            shifted = cwa[m + ddx:m + ddx + W, m + ddy:m + ddy + H, :]
            num += weights[ddx, ddy][..., None] * shifted
    return np.clip(num[..., :3] / num[..., 3:], F(0), F(1))


def test_nl_means_matches_numpy():
    _, inputs, out = case("nl_means")
    got = out["non_local_means"]
    assert got.dtype == np.float32 and got.shape == (24, 16, 3)
    np.testing.assert_allclose(got, nl_means_ref(inputs["input"]), rtol=1e-5, atol=1e-6)


# -- the numba backend ----------------------------------------------------------------------------


@pytest.mark.parametrize("schedule", ["naive", "expert"])
@pytest.mark.parametrize("name", sorted(APPS))
def test_app_schedules_match_interpreter(name, schedule):
    p, inputs, expected = case(name)
    if schedule == "naive":
        ln = naive_schedule(p)
    else:
        if getattr(APPS[name], "schedule", None) is None:
            pytest.skip(f"{name} has no expert schedule")
        ln = APPS[name].schedule(p)
    m = backends.measure(backends.compile(p, ln), inputs, CHECK_ONLY, expected=expected)
    assert m.status == "ok", m.error
