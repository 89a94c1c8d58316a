"""Durations as people read them: one helper, so every summary prints times the same way.

    format_seconds(0.001154) -> "1.15 ms"      format_seconds(1.154e-6) -> "1.15 µs"

The unit is chosen by magnitude (s from 1 s up, ms from 1 ms, µs below), with three significant digits;
a value that rounds up to the next unit's 1000 is printed in that unit ("1.00 s", not "1e+03 ms").
"""

from __future__ import annotations

import math

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"))


def format_seconds(seconds: float, digits: int = 3) -> str:
    """`seconds` with a unit of s, ms or µs chosen by its magnitude, to `digits` significant digits;
    "-" for NaN (a failed measurement), "inf s" for infinity, "0 s" for zero."""
    if math.isnan(seconds):
        return "-"
    if math.isinf(seconds):
        return f"{'-' if seconds < 0 else ''}inf s"
    if seconds == 0:
        return "0 s"
    size = abs(seconds)
    for scale, unit in _UNITS:
        if size >= scale * (1 - 0.5 * 10 ** -digits) or unit == "µs":  # 0.9996 ms rounds to 1.00 ms
            value = seconds / scale
            return f"{_significant(value, digits)} {unit}"
    raise AssertionError("unreachable")


def _significant(value: float, digits: int) -> str:
    """`value` to `digits` significant digits, fixed-point (1.15, 11.5, 115, 1150)."""
    magnitude = math.floor(math.log10(abs(value))) if value else 0
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:.{decimals}f}"
    if decimals and len(text.replace("-", "").replace(".", "").lstrip("0")) > digits:
        text = f"{value:.{decimals - 1}f}"  # 9.995 rounded up to 10.00: one decimal fewer
    return text


def format_runtime_ratio(numerator: str, denominator: str, ratio: float) -> str:
    """A runtime ratio named by what it divides, with who is faster spelled out:
    format_runtime_ratio("numba", "Halide", 0.34) -> "runtime numba / Halide 0.34 (numba 2.94× faster)"."""
    head = f"runtime {numerator} / {denominator} {format_ratio(ratio)}"
    if not math.isfinite(ratio) or ratio <= 0:
        return head
    if ratio == 1:
        return f"{head} (as fast)"
    faster, factor = (denominator, ratio) if ratio > 1 else (numerator, 1 / ratio)
    return f"{head} ({faster} {factor:.2f}× faster)" if factor < 10 else f"{head} ({faster} {factor:.0f}× faster)"


def format_ratio(x: float) -> str:
    """A ratio to read: two decimals, or two significant digits below 0.1 (a 1000x slowdown is not 0.00)."""
    return f"{x:.2f}" if x >= 0.1 or not math.isfinite(x) else f"{x:.2g}"
