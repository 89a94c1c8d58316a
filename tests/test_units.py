"""ir.units.format_seconds: every summary's durations, in s / ms / µs chosen by magnitude."""

from __future__ import annotations

import math

import pytest

from ir.units import format_runtime_ratio, format_seconds


@pytest.mark.parametrize("seconds, text", [
    (0.001154, "1.15 ms"), (1.154e-6, "1.15 µs"), (2.5, "2.50 s"), (0.0123, "12.3 ms"), (4.5e-6, "4.50 µs"),
    (123.4, "123 s"), (3725.0, "3725 s"),
    # at the boundaries: 1 s and 1 ms are the larger unit; just below them, the smaller one ...
    (1.0, "1.00 s"), (1e-3, "1.00 ms"), (1e-6, "1.00 µs"), (0.998, "998 ms"), (0.000998, "998 µs"),
    # ... unless it rounds to 1000 of it: 0.9996 s is "1.00 s", not "1000 ms"
    (0.9996, "1.00 s"), (0.0009996, "1.00 ms"), (9.996e-3, "10.0 ms"), (99.96e-3, "100 ms"),
    (2.5e-9, "0.00250 µs"),  # below µs, still µs (no ns unit)
    (-0.002, "-2.00 ms"), (0.0, "0 s"), (math.inf, "inf s"), (math.nan, "-"),
])
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


def test_digits():
    assert format_seconds(0.0011544, digits=2) == "1.2 ms" and format_seconds(0.0011544, digits=4) == "1.154 ms"


def test_runtime_ratio_names_what_it_divides_and_who_is_faster():
    assert format_runtime_ratio("numba", "Halide", 0.34) == "runtime numba / Halide 0.34 (numba 2.94× faster)"
    assert format_runtime_ratio("numba", "Halide", 2.5) == "runtime numba / Halide 2.50 (Halide 2.50× faster)"
    assert format_runtime_ratio("a", "b", 1.0) == "runtime a / b 1.00 (as fast)"
    assert format_runtime_ratio("a", "b", 0.004) == "runtime a / b 0.004 (a 250× faster)"
    assert format_runtime_ratio("a", "b", math.nan) == "runtime a / b nan"
