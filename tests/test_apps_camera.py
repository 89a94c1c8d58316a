"""The apps camera_pipe, harris, hist_eq, max_filter and iir_blur at their small sizes: the interpreter
against an independent numpy implementation of each (plain numpy, the same math and integer
semantics), and the numba backend under the naive and the expert schedule against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import backends
import ir
from generator.apps import camera_pipe, harris, hist_eq, iir_blur, max_filter
from ir.builder import naive_schedule

from .fuzz import CHECK_ONLY

f32, u8, u16, u32, i16, i32 = np.float32, np.uint8, np.uint16, np.uint32, np.int16, np.int32
MODULES = {"camera_pipe": camera_pipe, "harris": harris, "hist_eq": hist_eq, "max_filter": max_filter,
           "iir_blur": iir_blur}


def grid(xs, ys):
    """Index arrays X, Y of shape (len(xs), len(ys)) (x first, as the buffers are indexed)."""
    return np.meshgrid(np.asarray(xs), np.asarray(ys), indexing="ij")


# -- camera pipe ----------------------------------------------------------------------------------


def camera_pipe_numpy(p, inputs):
    raw = inputs["input"]
    (x0, _), (y0, _) = p.input_regions["input"]
    W, H, _ = p.output_sizes["processed"]

    def shifted(X, Y):
        return raw[X + 16 - x0, Y + 12 - y0]

    def denoised(X, Y):
        a = np.maximum(np.maximum(shifted(X - 2, Y), shifted(X + 2, Y)),
                       np.maximum(shifted(X, Y - 2), shifted(X, Y + 2)))
        return np.minimum(shifted(X, Y), a)  # clamp(v, 0, a) of unsigned values

    def channel(dx, dy):  # the Bayer channel at offset (dx, dy) of each 2x2 block
        return lambda X, Y: denoised(2 * X + dx, 2 * Y + dy)

    g_gr, r_r, b_b, g_gb = channel(0, 0), channel(1, 0), channel(0, 1), channel(1, 1)

    def avg(a, b):  # rounding up, in the wider type
        wide = u32 if a.dtype == u16 else np.uint16
        return ((a.astype(wide) + b.astype(wide) + 1) // 2).astype(a.dtype)

    def absd(a, b):
        return np.maximum(a, b) - np.minimum(a, b)

    def g_r(X, Y):
        gv, gvd = avg(g_gb(X, Y - 1), g_gb(X, Y)), absd(g_gb(X, Y - 1), g_gb(X, Y))
        gh, ghd = avg(g_gr(X + 1, Y), g_gr(X, Y)), absd(g_gr(X + 1, Y), g_gr(X, Y))
        return np.where(ghd < gvd, gh, gv)

    def g_b(X, Y):
        gv, gvd = avg(g_gr(X, Y + 1), g_gr(X, Y)), absd(g_gr(X, Y + 1), g_gr(X, Y))
        gh, ghd = avg(g_gb(X - 1, Y), g_gb(X, Y)), absd(g_gb(X - 1, Y), g_gb(X, Y))
        return np.where(ghd < gvd, gh, gv)

    def corrected_at(known, green, g_known, dx1, dy1, dx2, dy2):
        """known + (green - the same interpolation of green): red/blue at a site, from the two
        neighbours (X+dx1, Y+dy1) and (X+dx2, Y+dy2). u16 arithmetic wraps."""
        def f(X, Y):
            corr = green(X, Y) - avg(g_known(X + dx1, Y + dy1), g_known(X + dx2, Y + dy2))
            return corr + avg(known(X + dx1, Y + dy1), known(X + dx2, Y + dy2))
        return f

    r_gr = corrected_at(r_r, g_gr, g_r, 0, 0, -1, 0)
    b_gr = corrected_at(b_b, g_gr, g_b, 0, 0, 0, -1)
    r_gb = corrected_at(r_r, g_gb, g_r, 0, 0, 0, 1)
    b_gb = corrected_at(b_b, g_gb, g_b, 0, 0, 1, 0)

    def r_b(X, Y):
        rp = corrected_at(r_r, g_b, g_r, 0, 0, -1, 1)(X, Y)
        rpd = absd(r_r(X, Y), r_r(X - 1, Y + 1))
        rn = corrected_at(r_r, g_b, g_r, -1, 0, 0, 1)(X, Y)
        rnd = absd(r_r(X - 1, Y), r_r(X, Y + 1))
        return np.where(rpd < rnd, rp, rn)

    def b_r(X, Y):
        bp = corrected_at(b_b, g_r, g_b, 0, 0, 1, -1)(X, Y)
        bpd = absd(b_b(X, Y), b_b(X + 1, Y - 1))
        bn = corrected_at(b_b, g_r, g_b, 1, 0, 0, -1)(X, Y)
        bnd = absd(b_b(X + 1, Y), b_b(X, Y - 1))
        return np.where(bpd < bnd, bp, bn)

    def full_res(top_even, top_odd, bottom_even, bottom_odd):
        def f(X, Y):
            top = np.where(X % 2 == 0, top_even(X // 2, Y // 2), top_odd(X // 2, Y // 2))
            bottom = np.where(X % 2 == 0, bottom_even(X // 2, Y // 2), bottom_odd(X // 2, Y // 2))
            return np.where(Y % 2 == 0, top, bottom)
        return f

    rgb = [full_res(r_gr, r_r, r_b, r_gb), full_res(g_gr, g_r, g_b, g_gb), full_res(b_gr, b_r, b_b, b_gb)]

    # color matrix, Q8.8: Halide's f32 interpolation of the two matrices at color_temp 3700
    alpha = (f32(1) / f32(3700) - f32(1) / f32(3200)) / (f32(1) / f32(7000) - f32(1) / f32(3200))
    m = ((inputs["matrix_3200"] * alpha + inputs["matrix_7000"] * (f32(1) - alpha)) * f32(256)).astype(i16)

    # tone curve LUT: black level 25, white level 1023, gamma 2, contrast 50
    v = np.arange(1024)
    xf = np.clip((v - 25).astype(f32) * (f32(1) / f32(998)), f32(0), f32(1))
    g = np.power(xf, f32(0.5))
    b = f32(2) - np.power(f32(2), f32(0.5))
    a = f32(2) - f32(2) * b
    z = np.where(g > f32(0.5), f32(1) - (a * (f32(1) - g) * (f32(1) - g) + b * (f32(1) - g)), a * g * g + b * g)
    val = np.clip(z * f32(255) + f32(0.5), f32(0), f32(255)).astype(u8)
    curve = np.where(v <= 25, 0, np.where(v > 1023, 255, val)).astype(u8)

    # the curved image over the output plus a one-pixel border (what the 3x3 sharpening reads)
    X, Y = grid(np.arange(-1, W + 1), np.arange(-1, H + 1))
    demosaiced = [ch(X, Y).astype(i16).astype(i32) for ch in rgb]
    curved = np.empty(X.shape + (3,), u8)
    for k in range(3):
        acc = m[3, k] + m[0, k].astype(i32) * demosaiced[0] + m[1, k] * demosaiced[1] + m[2, k] * demosaiced[2]
        corrected = (acc // 256).astype(i16)
        curved[..., k] = curve[np.clip(corrected, 0, 1023)]

    # sharpen: unsharp mask of a 1-2-1 blur in y then x, strength 1 (32 in 2.5 fixed point)
    def blur121(p, q, s):
        return avg(avg(p, s), q)

    unsharp_y = blur121(curved[:, :-2], curved[:, 1:-1], curved[:, 2:])  # x in [-1, W], y in [0, H)
    unsharp = blur121(unsharp_y[:-2], unsharp_y[1:-1], unsharp_y[2:])
    center = curved[1:-1, 1:-1].astype(i16)
    mask = center - unsharp.astype(i16)
    return np.clip(center + (mask * i16(32)) // 32, 0, 255).astype(u8)


@pytest.mark.parametrize("bits", [16, 10])
def test_camera_pipe_interpreter_matches_numpy(bits):
    p = camera_pipe.build("small")
    inputs = p.random_inputs(seed=1)
    if bits < 16:  # 10 bits: the data the black/white levels and the tone curve are for
        inputs["input"] = np.asfortranarray(inputs["input"] % u16(1 << bits))
    want = camera_pipe_numpy(p, inputs)
    got = ir.interpret(p, inputs)["processed"]
    assert got.dtype == np.uint8 and got.shape == (24, 16, 3)
    np.testing.assert_array_equal(got, want)
    if bits == 10:
        assert len(np.unique(got)) > 50  # not saturated: the curve and the sharpening are exercised


# -- harris ---------------------------------------------------------------------------------------


def harris_numpy(p, inputs):
    a = inputs["input"]  # from (0, 0)
    W, H = p.output_sizes["output"]
    gray = f32(0.299) * a[..., 0] + f32(0.587) * a[..., 1] + f32(0.114) * a[..., 2]

    def at(f, dx, dy, n, m):  # f[1 + dx + i, 1 + dy + j] for i in [0, n), j in [0, m)
        return f[1 + dx:1 + dx + n, 1 + dy:1 + dy + m]

    n, m = gray.shape[0] - 2, gray.shape[1] - 2  # Ix, Iy over [1, n] x [1, m] of gray's coordinates
    w1, w2 = f32(1.0 / 12), f32(2.0 / 12)
    Iy = (at(gray, -1, -1, n, m) * -w1 + at(gray, -1, 1, n, m) * w1 + at(gray, 0, -1, n, m) * -w2
          + at(gray, 0, 1, n, m) * w2 + at(gray, 1, -1, n, m) * -w1 + at(gray, 1, 1, n, m) * w1)
    Ix = (at(gray, -1, -1, n, m) * -w1 + at(gray, 1, -1, n, m) * w1 + at(gray, -1, 0, n, m) * -w2
          + at(gray, 1, 0, n, m) * w2 + at(gray, -1, 1, n, m) * -w1 + at(gray, 1, 1, n, m) * w1)

    def sum3x3(f):
        k, l = f.shape[0] - 2, f.shape[1] - 2
        terms = [at(f, dx, dy, k, l) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
        acc = terms[0]
        for t in terms[1:]:
            acc = acc + t
        return acc

    Sxx, Syy, Sxy = sum3x3(Ix * Ix), sum3x3(Iy * Iy), sum3x3(Ix * Iy)  # x, y from 2 in gray's coordinates
    det = Sxx * Syy - Sxy * Sxy
    trace = Sxx + Syy
    return (det - f32(0.04) * trace * trace)[:W, :H]


def test_harris_interpreter_matches_numpy():
    p = harris.build("small")
    inputs = p.random_inputs(seed=1)
    got = ir.interpret(p, inputs)["output"]
    want = harris_numpy(p, inputs)
    assert got.dtype == np.float32 and got.shape == want.shape == (24, 16)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)  # same f32 operations in the same order


# -- histogram equalization ----------------------------------------------------------------------


def hist_eq_numpy(p, inputs):
    a = inputs["input"].astype(f32)
    W, H, _ = p.output_sizes["output"]
    R, G, B = a[..., 0], a[..., 1], a[..., 2]
    Y = f32(0.299) * R + f32(0.587) * G + f32(0.114) * B
    Cr = (R - Y) * f32(0.713) + f32(128)
    Cb = (B - Y) * f32(0.564) + f32(128)
    bins = np.clip(Y, 0, 255).astype(i32)  # a float->int cast truncates
    hist = np.bincount(bins.ravel(), minlength=256).astype(i32)
    cdf = np.cumsum(hist).astype(i32)
    scale = f32(255) / f32(W * H)
    eq = np.clip(cdf[np.clip(Y, 0, 255).astype(u8)].astype(f32) * scale, f32(0), f32(255))
    red = np.clip(eq + (Cr - f32(128)) * f32(1.4), 0, 255).astype(u8)
    green = np.clip(eq - f32(0.343) * (Cb - f32(128)) - f32(0.711) * (Cr - f32(128)), 0, 255).astype(u8)
    blue = np.clip(eq + f32(1.765) * (Cb - f32(128)), 0, 255).astype(u8)
    return np.stack([red, green, blue], axis=-1)


def test_hist_eq_interpreter_matches_numpy():
    p = hist_eq.build("small")
    inputs = p.random_inputs(seed=1)
    got = ir.interpret(p, inputs)["output"]
    want = hist_eq_numpy(p, inputs)
    assert got.dtype == np.uint8 and got.shape == (24, 16, 3)
    np.testing.assert_array_equal(got, want)


# -- max filter -----------------------------------------------------------------------------------


def max_filter_numpy(p, inputs, radius=26):
    """The max over the disc Halide's app uses, directly: for each column offset dx, the vertical max
    over |dy| <= t(dx) (t the number of dy in [0, radius] with dx^2 + dy^2 < (radius + 1/4)^2), of the
    repeat-edge input."""
    a = inputs["input"]
    W, H, _ = p.output_sizes["output"]
    pad_y = radius + 1
    padded = np.pad(a, ((radius, radius), (pad_y, pad_y), (0, 0)), mode="edge")
    out = np.full(a.shape, -np.inf, f32)
    for dx in range(-radius, radius + 1):
        t = min(sum(dx * dx + dy * dy < (radius + 0.25) ** 2 for dy in range(radius + 1)), radius + 1)
        cols = padded[radius + dx:radius + dx + W]
        for dy in range(-t, t + 1):
            out = np.maximum(out, cols[:, pad_y + dy:pad_y + dy + H])
    return out


@pytest.mark.parametrize("radius", [26, 5, 10])
def test_max_filter_interpreter_matches_numpy(radius):
    """Radius 26 (the app's) covers the whole small image from every pixel; smaller radii check the
    log-step slices and the disc's shape where they show. (Halide's algorithm needs two samples of its
    largest slice to span the 2 radius + 3 rows at dx = 0: true for these radii, not for 3, 4, 7, 8.)"""
    p = max_filter.build("small", radius=radius)
    inputs = p.random_inputs(seed=1)
    got = ir.interpret(p, inputs)["output"]
    want = max_filter_numpy(p, inputs, radius)
    assert got.dtype == np.float32 and got.shape == (24, 16, 3)
    np.testing.assert_array_equal(got, want)  # maxima of the input values: exact


# -- IIR blur -------------------------------------------------------------------------------------


def iir_blur_numpy(inputs, alpha=0.1):
    alpha = f32(alpha)
    beta = f32(1) - alpha

    def blur_cols_transpose(a):
        b = a.copy()
        for y in range(1, a.shape[1]):
            b[:, y] = beta * b[:, y - 1] + alpha * a[:, y]
        for y in range(a.shape[1] - 2, -1, -1):
            b[:, y] = beta * b[:, y + 1] + alpha * b[:, y]
        return b.transpose(1, 0, 2)

    return blur_cols_transpose(blur_cols_transpose(inputs["input"]))


def test_iir_blur_interpreter_matches_numpy():
    p = iir_blur.build("small")
    inputs = p.random_inputs(seed=1)
    got = ir.interpret(p, inputs)["output"]
    want = iir_blur_numpy(inputs)
    assert got.dtype == np.float32 and got.shape == (24, 16, 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)  # same f32 operations in the same order


# -- the backend, naive and expert schedules ------------------------------------------------------


def schedules(name):
    return ["naive"] + (["expert"] if getattr(MODULES[name], "schedule", None) else [])


@pytest.mark.parametrize("name, which", [(n, s) for n in MODULES for s in schedules(n)])
def test_app_compiles_and_matches_interpreter(name, which):
    mod = MODULES[name]
    p = mod.build("small")
    assert p.name == name
    inputs = p.random_inputs(seed=2)
    ln = naive_schedule(p) if which == "naive" else mod.schedule(p)
    m = backends.measure(backends.compile(p, ln), inputs, CHECK_ONLY, expected=ir.interpret(p, inputs))
    assert m.status == "ok", m.error
