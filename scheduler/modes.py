"""Measuring for the strategies that measure in the loop (scheduler/strategies/top_k.py, autotune.py):
the reference outputs every measured schedule is checked against, and one schedule's runtime."""

from __future__ import annotations

import math

import numpy as np


def reference(pipeline) -> tuple[dict, dict]:
    """(inputs, the interpreter's outputs) every benchmarked schedule of `pipeline` is checked against."""
    import ir

    inputs = pipeline.random_inputs(0)
    with np.errstate(all="ignore"):  # NaN and inf are legitimate values of random programs
        return inputs, ir.interpret(pipeline, inputs)


def measure_loopnest(pipeline, loopnest, target, inputs=None, expected=None) -> float:
    """Best runtime (seconds) of a schedule, checked against the interpreter; inf when it fails."""
    import backends

    if inputs is None or expected is None:
        inputs, expected = reference(pipeline)
    m = backends.compile_and_measure(pipeline, loopnest, inputs, target, expected=expected)
    if m.status != "ok":
        return math.inf
    return float(m.min_s)
