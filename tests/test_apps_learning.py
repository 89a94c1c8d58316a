"""The apps of the learning papers' suites (seeds/adams2019 §6.1, anderson2021 §8): conv layer,
depthwise-separable conv, bilateral guided upsampling and lens blur. At their small sizes, the
interpreter agrees with an independent numpy implementation of each algorithm written here, and the
numba backend agrees with the interpreter under the naive schedule and the expert schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import backends
import ir
from generator.apps import bgu, conv_layer, depthwise_separable_conv, lens_blur
from ir.builder import naive_schedule

from .fuzz import CHECK_ONLY

APPS = {m.__name__.rsplit(".", 1)[1]: m for m in (conv_layer, depthwise_separable_conv, bgu, lens_blur)}
f32 = np.float32


def app_inputs(name: str, p, seed: int) -> dict[str, np.ndarray]:
    """random_inputs; for the convolution layers shifted to [-0.5, 0.5), so that ReLU clips."""
    inputs = p.random_inputs(seed)
    if "conv" in name:
        inputs = {k: np.asfortranarray(a - f32(0.5)) for k, a in inputs.items()}
    return inputs


# -- independent numpy implementations ------------------------------------------------------------


def conv_layer_reference(inp, filt, bias):
    """inp [x, y, ci, n] padded by 2, filt [ci, kx, ky, co], bias [co] -> relu [x, y, co, n]."""
    win = sliding_window_view(inp.astype(np.float64), (3, 3), axis=(0, 1))  # [x, y, ci, n, kx, ky]
    conv = np.einsum("xyinab,iabo->xyon", win, filt.astype(np.float64)) + bias[None, None, :, None]
    return np.maximum(conv, 0.0)


def depthwise_separable_reference(inp, dwf, pwf, bias):
    """inp [x, y, c, n], dwf [kx, ky, c], pwf [ci, co], bias [co] -> [x, y, co, n], zero padding."""
    padded = np.pad(inp.astype(np.float64), ((1, 1), (1, 1), (0, 0), (0, 0)))
    win = sliding_window_view(padded, (3, 3), axis=(0, 1))  # [x, y, c, n, kx, ky]
    dw = np.einsum("xycnab,abc->xycn", win, dwf.astype(np.float64))
    pw = np.einsum("xycn,co->xyon", dw, pwf.astype(np.float64)) + bias[None, None, :, None]
    return np.maximum(pw, 0.0)


def bgu_reference(splat, values, guide, s_sigma, bins=8, lam=0.1):
    """Bilateral guided upsampling in float64, the per-cell fit by np.linalg.solve. The luma that picks
    a sample's or a pixel's intensity bin is computed in f32, as the pipeline does, so that samples fall
    in the same bins."""
    lw, lh = splat.shape[:2]
    gw, gh = guide.shape[:2]
    big = s_sigma * max(math.ceil(gw / lw), math.ceil(gh / lh))  # guide pixels per cell
    nx, ny = (gw - 1) // big + 2, (gh - 1) // big + 2  # cells the slice reads
    gx, gy = np.arange(-3, nx + 3), np.arange(-3, ny + 3)  # and the 7-tap blurs around them
    r = np.arange(s_sigma)
    sx = np.clip(gx[:, None] * s_sigma + r[None, :] - s_sigma // 2, 0, lw - 1).ravel()  # (cell, sample)
    sy = np.clip(gy[:, None] * s_sigma + r[None, :] - s_sigma // 2, 0, lh - 1).ravel()
    S, V = splat[sx[:, None], sy[None, :]], values[sx[:, None], sy[None, :]]
    gray = (f32(0.25) * S[..., 0] + f32(0.5) * S[..., 1]) + f32(0.25) * S[..., 2]
    z = np.rint(np.clip(gray, f32(0), f32(1)) * f32(bins)).astype(np.int64)
    sa = np.concatenate([S.astype(np.float64), np.ones(S.shape[:2] + (1,))], axis=-1)  # [r, g, b, 1]
    cx, cy = np.meshgrid(np.repeat(np.arange(len(gx)), s_sigma), np.repeat(np.arange(len(gy)), s_sigma),
                         indexing="ij")
    AtA = np.zeros((len(gx), len(gy), bins + 7, 4, 4))  # z from -3
    Atb = np.zeros((len(gx), len(gy), bins + 7, 4, 3))
    np.add.at(AtA, (cx, cy, z + 3), sa[..., :, None] * sa[..., None, :])
    np.add.at(Atb, (cx, cy, z + 3), sa[..., :, None] * V.astype(np.float64)[..., None, :])
    taps = [1 / 64, 1 / 27, 1 / 8, 1, 1 / 8, 1 / 27, 1 / 64]

    def blur(a, axis):
        n = a.shape[axis] - 6
        return sum(t * np.take(a, np.arange(k, k + n), axis=axis) for k, t in enumerate(taps))

    A = blur(blur(blur(AtA, 2), 1), 0) + lam * np.eye(4)
    b = blur(blur(blur(Atb, 2), 1), 0) + lam * np.eye(4, 3)
    M = np.linalg.solve(A, b)  # [cx, cy, z, in (r, g, b, 1), out]
    x, y = np.arange(gw)[:, None], np.arange(gh)[None, :]
    xi, yi = x // big, y // big
    xf, yf = x / big - xi, y / big - yi
    g = (f32(0.25) * guide[..., 0] + f32(0.5) * guide[..., 1]) + f32(0.25) * guide[..., 2]
    zv = np.clip(g, f32(0), f32(1)) * f32(bins)
    zi = zv.astype(np.int64)
    zf = (zv - zi.astype(f32)).astype(np.float64)
    G = guide.astype(np.float64)
    out = np.zeros((gw, gh, 3))
    for dx, wx in ((0, 1 - xf), (1, xf)):
        for dy, wy in ((0, 1 - yf), (1, yf)):
            for dz, wz in ((0, 1 - zf), (1, zf)):
                m = M[xi + dx, yi + dy, zi + dz]  # [x, y, in, out]
                out += (wx * wy * wz)[..., None] * (np.einsum("xyjc,xyj->xyc", m[..., :3, :], G) + m[..., 3, :])
    return np.clip(out, 0.0, 1.0)


def _i32(a):
    """Wrap int64 values into i32, as the DSL's integer arithmetic does."""
    return (a + 2**31) % 2**32 - 2**31


def _random(x, y, z, seed):
    h = _i32(x * lens_blur.HASH_X + y * lens_blur.HASH_Y + z * lens_blur.HASH_Z + seed * lens_blur.HASH_SEED)
    h = _i32(h * lens_blur.LCG_A + lens_blur.LCG_C)
    return ((h // 65536) % 32768).astype(f32) / f32(32768)


def lens_blur_reference(left_im, right_im, size):
    """Halide's lens blur in numpy, its f32 arithmetic in the pipeline's order (depth is an argmin and
    the aperture samples are kept by float comparisons, so the reference must round as the pipeline
    does to pick the same ones). Stages are functions of coordinate arrays, with repeat-edge clamps."""
    w, h, slices, focus, scale, samples, levels, R = lens_blur.params(size)
    zs = np.arange(slices)

    def img(a, X, Y):  # [X, Y] -> [..., c], repeat edge
        return a[np.clip(X, 0, w - 1), np.clip(Y, 0, h - 1)].astype(np.int64)

    def push0(X, Y):  # -> [..., z, 2]
        X, Y = X[..., None], Y[..., None]
        L = img(left_im, X, Y)
        d0 = np.abs(L - img(right_im, X + 2 * zs, Y))
        d1 = np.abs(L - img(right_im, X + 2 * zs + 1, Y))
        d = np.minimum(d0, d1).astype(f32)
        cost = (d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]) + d[..., 2] * d[..., 2]
        sq, mean = np.zeros(cost.shape[:-1], f32), np.zeros(cost.shape[:-1], f32)
        for k in range(slices):
            sq = sq + cost[..., k] * cost[..., k]
            mean = mean + cost[..., k] / f32(slices)
        conf = (sq / f32(slices) - mean * mean)[..., None]
        return np.stack([cost * conf, np.broadcast_to(conf, cost.shape)], axis=-1)

    push = [push0]
    wi, hi = w, h
    for _ in range(1, levels):
        f = push[-1]
        wi, hi = wi // 2, hi // 2
        X, Y = np.arange(wi)[:, None], np.arange(-1, 2 * hi + 1)[None, :]
        dx = (f(2 * X - 1, Y) + f32(3) * (f(2 * X, Y) + f(2 * X + 1, Y)) + f(2 * X + 2, Y)) / f32(8)  # y from -1
        dy = (dx[:, 0:2 * hi:2] + f32(3) * (dx[:, 1:2 * hi + 1:2] + dx[:, 2:2 * hi + 2:2]) + dx[:, 3:2 * hi + 3:2]) / f32(8)
        push.append(lambda X, Y, a=dy, wi=wi, hi=hi: a[np.clip(X, 0, wi - 1), np.clip(Y, 0, hi - 1)])

    def pull(i, X, Y):
        if i == levels - 1:
            return push[i](X, Y)

        def upx(X, Y):
            return f32(0.25) * pull(i + 1, X // 2 - 1 + 2 * (X % 2), Y) + f32(0.75) * pull(i + 1, X // 2, Y)

        upy = f32(0.25) * upx(X, Y // 2 - 1 + 2 * (Y % 2)) + f32(0.75) * upx(X, Y // 2)
        return upy * f32(0.5) + push[i](X, Y) * f32(0.5)

    # everything below is needed on the image grown by the max radius R (sample offsets, max filters)
    X, Y = np.arange(-2 * R, w + 2 * R)[:, None], np.arange(-2 * R, h + 2 * R)[None, :]
    p0 = pull(0, X, Y)
    fc = p0[..., 0] / p0[..., 1]
    best = fc[..., 0]
    for k in range(1, slices):
        best = np.where(fc[..., k] < best, fc[..., k], best)
    depth = np.zeros(best.shape, np.int64)
    for k in range(slices - 1, -1, -1):
        depth = np.where(fc[..., k] == best, k, depth)
    br = np.abs(depth - focus).astype(f32) * f32(scale)
    br2 = br * br
    o = 2 * R  # index of coordinate 0 in these arrays

    def at(a, X, Y):
        return a[X + o, Y + o]

    xs, ys = np.arange(-R, w + R)[:, None], np.arange(h)[None, :]
    worst_y = np.zeros((len(xs[:, 0]), h), f32)
    for m in range(-R, R + 1):
        worst_y = np.maximum(worst_y, at(br, xs, ys + m))
    x, y = np.arange(w)[:, None], np.arange(h)[None, :]
    worst = np.zeros((w, h), f32)
    for m in range(-R, R + 1):
        worst = np.maximum(worst, worst_y[x + m + R, y])

    def iwa(X, Y):
        rgb = img(left_im, *np.broadcast_arrays(X, Y)).astype(f32)
        return np.concatenate([rgb, np.full(rgb.shape[:-1] + (1,), 255, f32)], axis=-1)

    out = iwa(x, y)
    for s in range(samples):
        u = np.clip((((_random(x, y, s, 0) - f32(0.5)) * f32(2)) * worst).astype(np.int32), -R, R)
        v = np.clip((((_random(x, y, s, 1) - f32(0.5)) * f32(2)) * worst).astype(np.int32), -R, R)
        r2 = (u * u + v * v).astype(f32)
        keep = (((r2 < at(br2, x, y)) | (at(depth, x + u, y + v) < at(depth, x, y)))
                & (r2 < at(br2, x + u, y + v)))
        weight = np.where(keep, f32(1), f32(0))
        out = out + weight[..., None] * iwa(x + u, y + v)
    return out[..., :3] / out[..., 3:]


def reference(name: str, p, inputs):
    if name == "conv_layer":
        return conv_layer_reference(inputs["input"], inputs["filter"], inputs["bias"])
    if name == "depthwise_separable_conv":
        return depthwise_separable_reference(inputs["input"], inputs["depthwise_filter"],
                                             inputs["pointwise_filter"], inputs["bias"])
    if name == "bgu":
        return bgu_reference(inputs["splat_loc"], inputs["values"], inputs["slice_loc"], bgu.SIZES["small"][4])
    if name == "lens_blur":
        return lens_blur_reference(inputs["left_im"], inputs["right_im"], "small")
    raise KeyError(name)


# -- tests ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(APPS))
def test_interpreter_matches_numpy_reference(name, seed):
    p = APPS[name].build("small")
    inputs = app_inputs(name, p, seed)
    got = ir.interpret(p, inputs)[p.output_names[0]]
    want = reference(name, p, inputs)
    assert got.shape == want.shape and got.dtype == np.float32
    if name == "lens_blur":
        # f32 in the same order: exact (a flipped depth or sample would differ by far more)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    else:
        # the references sum in float64 in another order; atol for sums of signed terms near zero
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert np.isfinite(got).all()


def test_relu_clips_and_lens_blur_blurs():
    """The references are not vacuous: ReLU clips some outputs, lens blur moves some pixels."""
    for name in ("conv_layer", "depthwise_separable_conv"):
        p = APPS[name].build("small")
        out = ir.interpret(p, app_inputs(name, p, 0))[p.output_names[0]]
        assert 0.05 < (out == 0).mean() < 0.95
    p = lens_blur.build("small")
    inputs = p.random_inputs(0)
    out = ir.interpret(p, inputs)["final"]
    assert (np.abs(out - inputs["left_im"].astype(np.float32)) > 1).mean() > 0.1


@pytest.mark.parametrize("name", sorted(APPS))
def test_compiled_naive_and_expert_schedules_match_interpreter(name):
    m = APPS[name]
    p = m.build("small")
    inputs = app_inputs(name, p, 1)
    expected = ir.interpret(p, inputs)
    schedules = [naive_schedule(p)] + ([m.schedule(p)] if hasattr(m, "schedule") else [])
    for ln in schedules:
        got = backends.measure(backends.compile(p, ln), inputs, CHECK_ONLY, expected=expected)
        assert got.status == "ok", got.error


def test_expert_schedules_exist():
    assert hasattr(conv_layer, "schedule") and hasattr(depthwise_separable_conv, "schedule")
