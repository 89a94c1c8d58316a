"""Backends: lowering a (pipeline, LoopNest) to running code, and measuring it (DESIGN §3.4).

    kernel = backends.compile(pipeline, loopnest, target="host")          # raises on failure
    outputs = kernel(inputs)                       # dict of output arrays
    m = backends.measure(kernel, inputs, expected=ir.interpret(pipeline, inputs))
    ms = backends.measure_many([MeasureInput(pipeline, ln, inputs, expected)], protocol="quick")  # never raises

Each backend (numba, halide, ...) is a registered `Backend` (base.py); every backend's outputs equal
`ir.interpret`: bit-exact for integers, tight tolerance for floats.
"""

from __future__ import annotations

from ir.errors import ScheduleError

from . import llvm as _llvm  # noqa: F401 - registers the llvm backend (llvmlite is imported when it builds)
from . import numba as _numba  # noqa: F401 - registers the numba backend (halide, cuda register when first asked for)
from .base import Backend, backend_names, get_backend, register_backend
from .kernel import CompileError, DeviceMissing, Kernel, Measurement, Protocol
from .measuring import (BuildResult, MeasureInput, build, measure_many, measuring_machine, portable, reattached, run,
                        run_interleaved)
from .protocols import PROTOCOLS, get_protocol
from ir.status import STATUSES, Status

__all__ = ["compile", "measure", "Kernel", "Measurement", "Protocol", "CompileError", "DeviceMissing", "ScheduleError",
           "STATUSES", "Status", "PROTOCOLS", "get_protocol", "Backend", "register_backend", "get_backend",
           "backend_names", "BuildResult", "MeasureInput", "build", "run", "run_interleaved", "measure_many",
           "compile_and_measure", "measuring_machine", "portable", "reattached"]


def compile(pipeline, loopnest, target="host", *, backend: str = "numba", timeout: float | None = 600.0,
            isolate: bool = True, worker=None) -> Kernel:
    """Validate the schedule, generate code and compile it with `backend` (in a worker process with a
    timeout unless isolate=False). Raises ScheduleError for an invalid LoopNest and CompileError (status
    compile_error or timeout) when compilation fails or the backend does not build for `target`."""
    from ir.collector import fewer_collections
    from ir.target import get_target

    b, tgt = get_backend(backend), get_target(target)
    b.check_target(tgt)
    with fewer_collections():  # a Plan and generated code: millions of short-lived objects
        return b.build(pipeline, loopnest, tgt, timeout=timeout, worker=worker, isolate=isolate)


def measure(kernel: Kernel, inputs, protocol: Protocol | str | None = None, *, expected=None, worker=None,
            isolate: bool = True) -> Measurement:
    """Benchmark `kernel` on `inputs` under `protocol` (a Protocol or its name; default full) with the backend
    that built it; with `expected` outputs, a mismatch is status wrong_output and nothing is timed."""
    protocol = get_protocol(protocol) if protocol is not None else None
    return get_backend(kernel.backend).run(kernel, inputs, protocol, expected=expected, worker=worker,
                                           isolate=isolate)


def compile_and_measure(pipeline, loopnest, inputs, target="host", protocol: Protocol | str = "full", *,
                        expected=None, compile_timeout: float = 600.0, worker=None) -> Measurement:
    """One sample, every failure a status: measure_many of one item."""
    return measure_many([MeasureInput(pipeline, loopnest, inputs, expected)], target, protocol=protocol,
                        compile_timeout=compile_timeout, worker=worker)[0]
