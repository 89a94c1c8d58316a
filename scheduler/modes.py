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


def measure_loopnest_results(pipeline, loopnests, target, inputs=None, expected=None, backend: str = "numba",
                             measurement: str = "interleaved", timeout: float | None = None):
    """The Measurements (status, best and median runtimes, spread) of schedules of one pipeline, each checked
    against the interpreter, with the full protocol: all built first, then timed together in rounds
    (backends.run_interleaved: the measuring searches compare these runtimes with each other, and schedules timed
    one after another each see another state of the machine), or, with measurement="sequential", one after
    another through backends.measure_many. `timeout`: seconds a measurement may take in the worker (the full
    protocol's 60 s unless given; naive schedules of the big apps run 10 s a time)."""
    from backends import MeasureInput, build, measure_many, run_interleaved
    from backends.protocols import get_protocol

    if inputs is None or expected is None:
        inputs, expected = reference(pipeline)
    if measurement == "sequential":
        return measure_many([MeasureInput(pipeline, ln, inputs, expected) for ln in loopnests], target,
                            backend=backend, protocol=get_protocol("full", timeout))
    if measurement != "interleaved":
        raise ValueError(f"measurement must be interleaved or sequential, got {measurement!r}")
    builts = [build(pipeline, ln, target, backend=backend) for ln in loopnests]
    return run_interleaved(builts, inputs, get_protocol("full", timeout), expected=expected)


def measure_loopnests(pipeline, loopnests, target, inputs=None, expected=None, backend: str = "numba") -> list[float]:
    """Best runtimes (seconds) of schedules of one pipeline (measure_loopnest_results); inf for a schedule that
    fails (its status says why)."""
    return best_runtimes(measure_loopnest_results(pipeline, loopnests, target, inputs, expected, backend))


def best_runtimes(measurements) -> list[float]:
    """Each Measurement's best runtime (seconds); inf for one that failed."""
    return [float(m.min_s) if m.ok else math.inf for m in measurements]


def measure_loopnest(pipeline, loopnest, target, inputs=None, expected=None, backend: str = "numba") -> float:
    """Best runtime (seconds) of one schedule, checked against the interpreter; inf when it fails."""
    return measure_loopnests(pipeline, [loopnest], target, inputs, expected, backend)[0]
