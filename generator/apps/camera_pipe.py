"""Halide's camera pipe (apps/camera_pipe, with the sharpening stage adams2019 §6.1 mentions).

A u16 Bayer raw image (GRBG) goes through hot-pixel suppression, a deinterleave into the four Bayer
channels, an edge-directed demosaic (green by the smaller of the horizontal/vertical gradients, red
and blue corrected by the green second derivative), a Q8.8 color correction by a 3x4 matrix
interpolated between two calibrated ones (f32 Inputs, as Halide's), a gamma/contrast tone curve
looked up in a 1024-entry u8 LUT, and an unsharp-mask sharpening, to a u8 RGB image.

Halide's runtime Params are constants here, at the values of Halide's estimates: color_temp 3700,
gamma 2.0, contrast 50, sharpen_strength 1.0 (32 in 2.5 fixed point), blackLevel 25, whiteLevel 1023.
"full" is the FCam output of Halide's app, 2560 x 1920 x 3, made from the 2592 x 1968 raw (the input
is read shifted by (16, 12); the region the pipeline actually reads is 2572 x 1932 of it).
"""

from __future__ import annotations

import numpy as np

from ir import Func, Input, Pipeline, Var, cast, clamp, f32, i16, i32, pow, select, u8, u16, u32
from ir import max as hmax
from ir import min as hmin
from ir.builder import ScheduleBuilder

DESCRIPTION = "camera pipe: hot pixels, deinterleave, demosaic, color matrix, tone curve LUT, sharpen; u16 raw -> u8 RGB"
SIZES = {"full": (2560, 1920, 3), "small": (24, 16, 3)}

COLOR_TEMP, GAMMA, CONTRAST = 3700.0, 2.0, 50.0
BLACK_LEVEL, WHITE_LEVEL = 25, 1023
SHARPEN_X32 = 32  # u8_sat(sharpen_strength * 32) with sharpen_strength = 1.0


def _f(v) -> np.float32:
    return np.float32(v)


# Halide evaluates these scalar expressions of its Params in f32 at run time; the same f32 arithmetic
# here, kept as Python floats holding the f32 values (a numpy scalar on the left of an Expr operator
# would try to broadcast it).
ALPHA = float((_f(1) / _f(COLOR_TEMP) - _f(1) / _f(3200)) / (_f(1) / _f(7000) - _f(1) / _f(3200)))
ONE_MINUS_ALPHA = float(_f(1) - _f(ALPHA))
INV_RANGE = float(_f(1) / _f(WHITE_LEVEL - BLACK_LEVEL))
CURVE_B = float(_f(2) - np.power(_f(2), _f(CONTRAST) / _f(100)))
CURVE_A = float(_f(2) - _f(2) * _f(CURVE_B))
INV_GAMMA = float(_f(1) / _f(GAMMA))


def avg(a, b, t, wider):
    """Average of two values of unsigned type t, rounding up, computed in the wider type."""
    return cast(t, (cast(wider, a) + b + 1) / 2)


def absd(a, b):
    return hmax(a, b) - hmin(a, b)


def build(size: str = "full") -> Pipeline:
    x, y, c = Var("x"), Var("y"), Var("c")
    raw = Input("input", u16, 2)
    matrix_3200 = Input("matrix_3200", f32, 2)  # [4, 3]: column 3 is the offset
    matrix_7000 = Input("matrix_7000", f32, 2)

    def F(name):
        return Func(name)

    shifted = F("shifted")
    shifted[x, y] = raw[x + 16, y + 12]

    # hot pixel suppression
    denoised = F("denoised")
    a = hmax(shifted[x - 2, y], shifted[x + 2, y], shifted[x, y - 2], shifted[x, y + 2])
    denoised[x, y] = clamp(shifted[x, y], 0, a)

    deinterleaved = F("deinterleaved")
    deinterleaved[x, y, c] = select(c == 0, denoised[2 * x, 2 * y],
                                    c == 1, denoised[2 * x + 1, 2 * y],
                                    c == 2, denoised[2 * x, 2 * y + 1],
                                    denoised[2 * x + 1, 2 * y + 1])

    # demosaic
    def avg16(p, q):
        return avg(p, q, u16, u32)

    g_gr, r_r, b_b, g_gb = F("g_gr"), F("r_r"), F("b_b"), F("g_gb")
    g_gr[x, y] = deinterleaved[x, y, 0]
    r_r[x, y] = deinterleaved[x, y, 1]
    b_b[x, y] = deinterleaved[x, y, 2]
    g_gb[x, y] = deinterleaved[x, y, 3]

    g_r, g_b = F("g_r"), F("g_b")
    gv_r = avg16(g_gb[x, y - 1], g_gb[x, y])
    gvd_r = absd(g_gb[x, y - 1], g_gb[x, y])
    gh_r = avg16(g_gr[x + 1, y], g_gr[x, y])
    ghd_r = absd(g_gr[x + 1, y], g_gr[x, y])
    g_r[x, y] = select(ghd_r < gvd_r, gh_r, gv_r)

    gv_b = avg16(g_gr[x, y + 1], g_gr[x, y])
    gvd_b = absd(g_gr[x, y + 1], g_gr[x, y])
    gh_b = avg16(g_gb[x - 1, y], g_gb[x, y])
    ghd_b = absd(g_gb[x - 1, y], g_gb[x, y])
    g_b[x, y] = select(ghd_b < gvd_b, gh_b, gv_b)

    r_gr, b_gr, r_gb, b_gb = F("r_gr"), F("b_gr"), F("r_gb"), F("b_gb")
    r_gr[x, y] = g_gr[x, y] - avg16(g_r[x, y], g_r[x - 1, y]) + avg16(r_r[x - 1, y], r_r[x, y])
    b_gr[x, y] = g_gr[x, y] - avg16(g_b[x, y], g_b[x, y - 1]) + avg16(b_b[x, y], b_b[x, y - 1])
    r_gb[x, y] = g_gb[x, y] - avg16(g_r[x, y], g_r[x, y + 1]) + avg16(r_r[x, y], r_r[x, y + 1])
    b_gb[x, y] = g_gb[x, y] - avg16(g_b[x, y], g_b[x + 1, y]) + avg16(b_b[x, y], b_b[x + 1, y])

    r_b, b_r = F("r_b"), F("b_r")
    rp_b = g_b[x, y] - avg16(g_r[x, y], g_r[x - 1, y + 1]) + avg16(r_r[x, y], r_r[x - 1, y + 1])
    rpd_b = absd(r_r[x, y], r_r[x - 1, y + 1])
    rn_b = g_b[x, y] - avg16(g_r[x - 1, y], g_r[x, y + 1]) + avg16(r_r[x - 1, y], r_r[x, y + 1])
    rnd_b = absd(r_r[x - 1, y], r_r[x, y + 1])
    r_b[x, y] = select(rpd_b < rnd_b, rp_b, rn_b)

    bp_r = g_r[x, y] - avg16(g_b[x, y], g_b[x + 1, y - 1]) + avg16(b_b[x, y], b_b[x + 1, y - 1])
    bpd_r = absd(b_b[x, y], b_b[x + 1, y - 1])
    bn_r = g_r[x, y] - avg16(g_b[x + 1, y], g_b[x, y - 1]) + avg16(b_b[x + 1, y], b_b[x, y - 1])
    bnd_r = absd(b_b[x + 1, y], b_b[x, y - 1])
    b_r[x, y] = select(bpd_r < bnd_r, bp_r, bn_r)

    def interleave_x(name, p, q):
        f = F(name)
        f[x, y] = select(x % 2 == 0, p[x / 2, y], q[x / 2, y])
        return f

    def interleave_y(name, p, q):
        f = F(name)
        f[x, y] = select(y % 2 == 0, p[x, y / 2], q[x, y / 2])
        return f

    r = interleave_y("r", interleave_x("r_top", r_gr, r_r), interleave_x("r_bottom", r_b, r_gb))
    g = interleave_y("g", interleave_x("g_top", g_gr, g_r), interleave_x("g_bottom", g_b, g_gb))
    b = interleave_y("b", interleave_x("b_top", b_gr, b_r), interleave_x("b_bottom", b_b, b_gb))
    demosaiced = F("demosaiced")
    demosaiced[x, y, c] = cast(i16, select(c == 0, r[x, y], c == 1, g[x, y], b[x, y]))

    # color correction in Q8.8
    matrix = F("matrix")
    matrix[x, y] = cast(i16, (matrix_3200[x, y] * ALPHA + matrix_7000[x, y] * ONE_MINUS_ALPHA) * 256.0)
    ir_, ig, ib = (cast(i32, demosaiced[x, y, k]) for k in range(3))
    rows = [cast(i16, (matrix[3, k] + matrix[0, k] * ir_ + matrix[1, k] * ig + matrix[2, k] * ib) / 256)
            for k in range(3)]
    corrected = F("corrected")
    corrected[x, y, c] = select(c == 0, rows[0], c == 1, rows[1], rows[2])

    # tone curve (FCam's): a 1024-entry LUT
    curve = F("curve")
    xf = clamp(cast(f32, x - BLACK_LEVEL) * INV_RANGE, 0.0, 1.0)
    gm = pow(xf, INV_GAMMA)
    z = select(gm > 0.5, 1.0 - (CURVE_A * (1.0 - gm) * (1.0 - gm) + CURVE_B * (1.0 - gm)),
               CURVE_A * gm * gm + CURVE_B * gm)
    val = cast(u8, clamp(z * 255.0 + 0.5, 0.0, 255.0))
    curve[x] = select(x <= BLACK_LEVEL, cast(u8, 0), select(x > WHITE_LEVEL, cast(u8, 255), val))
    curved = F("curved")
    curved[x, y, c] = curve[clamp(corrected[x, y, c], 0, 1023)]

    # sharpen: unsharp mask with a 1-2-1 blur in y then x
    def blur121(p, q, s):
        return avg(avg(p, s, u8, u16), q, u8, u16)

    unsharp_y = F("unsharp_y")
    unsharp_y[x, y, c] = blur121(curved[x, y - 1, c], curved[x, y, c], curved[x, y + 1, c])
    unsharp = F("unsharp")
    unsharp[x, y, c] = blur121(unsharp_y[x - 1, y, c], unsharp_y[x, y, c], unsharp_y[x + 1, y, c])
    mask = F("mask")
    mask[x, y, c] = cast(i16, curved[x, y, c]) - cast(i16, unsharp[x, y, c])
    processed = F("processed")
    processed[x, y, c] = cast(u8, clamp(curved[x, y, c] + (mask[x, y, c] * cast(u8, SHARPEN_X32)) / 32, 0, 255))
    return Pipeline([processed], {processed: SIZES[size]}, name="camera_pipe")


def schedule(p: Pipeline, target=None):
    """After Halide's CPU schedule: strips of 32 rows of the output in parallel, every stage of the
    pipeline computed per strip (the raw-resolution and the half-resolution stencils, the demosaic,
    the color correction, the curved image and the vertical sharpening blur), the single-use and the
    pure-load stages inlined, the two LUTs at root.

    Deviations from Halide's schedule, for this backend: no sliding windows (a strip of 32 rows
    recomputes a halo of a few rows), and no explicit SIMD loops: the inner x loops are left whole
    for LLVM's loop vectorizer, which on this select-heavy integer code measured about 3x faster than
    the backend's split-off constant-trip SIMD loops (and compiles faster). The color correction stays
    a stage of its own: inlined into the LUT lookup it made the whole pipeline about 1.8x slower."""
    w, h, _ = p.output_sizes["processed"]
    strip = min(32, max(1, h // 2))
    s = ScheduleBuilder(p, target)
    s.root("processed", tiles=[{"x": w, "y": strip, "c": 3}], parallel=True)
    for f in ("unsharp", "mask", "shifted", "g_gr", "r_r", "b_b", "g_gb"):
        s.inline(f)
    for f in ("unsharp_y", "curved", "corrected", "demosaiced", "r", "g", "b", "r_top", "r_bottom", "g_top",
              "g_bottom", "b_top", "b_bottom", "r_gr", "b_gr", "r_gb", "b_gb", "r_b", "b_r", "g_r", "g_b",
              "deinterleaved", "denoised"):
        s.compute_at(f, "processed", level=0)
    s.root("matrix")
    s.root("curve")
    return s.build()
