"""Backends: lowering a (pipeline, LoopNest) to running code, and measuring it (DESIGN §3.4).

    kernel = backends.compile(pipeline, loopnest, target="host")
    outputs = kernel(inputs)                       # dict of output arrays
    m = backends.measure(kernel, inputs, expected=ir.interpret(pipeline, inputs))

Every backend's outputs equal `ir.interpret`: bit-exact for integers, tight tolerance for floats.
"""

from __future__ import annotations

import time

from ir.errors import ScheduleError

from .kernel import STATUSES, CompileError, Kernel, Measurement, Protocol

__all__ = ["compile", "measure", "Kernel", "Measurement", "Protocol", "CompileError", "ScheduleError",
           "STATUSES", "compile_and_measure"]

BACKENDS = ("numba", "halide")


def compile(pipeline, loopnest, target="host", *, backend: str = "numba", timeout: float | None = 600.0,
            isolate: bool = True, worker=None) -> Kernel:
    """Validate the schedule, generate code and compile it (in a worker process with a timeout unless
    isolate=False). Raises ScheduleError for an invalid LoopNest and CompileError (status
    compile_error or timeout) when compilation fails."""
    from ir.plan import Plan
    from ir.target import get_target

    if backend not in BACKENDS:
        raise CompileError(f"unknown backend {backend!r}; available: {', '.join(BACKENDS)}")
    tgt = get_target(target)
    if backend == "halide":
        return _compile_halide(pipeline, loopnest, tgt, timeout, isolate, worker)
    if tgt.kind != "cpu":
        raise CompileError(f"the numba backend compiles for CPU targets; {tgt.name} is a {tgt.kind} target")
    plan = Plan(pipeline.dag, loopnest, tgt)
    from .numba.codegen import generate
    from .numba.compiler import NumbaKernel, compile_here, write_source

    try:
        src = generate(plan)
    except ScheduleError:
        raise
    except Exception as e:  # noqa: BLE001 - a bug in code generation is this sample's status, not a dead job
        raise CompileError(f"code generation failed: {type(e).__name__}: {e}") from e
    path = write_source(src)
    t0 = time.perf_counter()
    if isolate:
        from .worker import RemoteError, WorkerCrashed, WorkerTimeout, default_worker

        w = worker or default_worker()
        try:
            w.call(compile_here, str(path), src.name, timeout=timeout)
        except WorkerTimeout:
            raise CompileError(f"compilation of {path.name} timed out after {timeout:.0f} s", "timeout") from None
        except WorkerCrashed as e:
            raise CompileError(f"the compiler crashed on {path.name}: {e}") from None
        except RemoteError as e:
            raise CompileError(f"numba failed to compile {path.name}: {e}") from None
    else:
        try:
            compile_here(str(path), src.name)
        except Exception as e:  # noqa: BLE001
            raise CompileError(f"numba failed to compile {path.name}: {type(e).__name__}: "
                               f"{str(e).splitlines()[0] if str(e) else ''}") from e
    return NumbaKernel(pipeline, loopnest, tgt, src, path, time.perf_counter() - t0)


def _compile_halide(pipeline, loopnest, tgt, timeout, isolate, worker) -> Kernel:
    if tgt.kind != "cpu":
        raise CompileError(f"the halide backend compiles for the host CPU; {tgt.name} is a {tgt.kind} target")
    try:
        from .halide import compile_halide
    except ImportError as e:
        raise CompileError(f"the halide backend needs the halide extra (pip install schedlab[halide]): {e}") from None
    return compile_halide(pipeline, loopnest, tgt, timeout=timeout, isolate=isolate, worker=worker)


def measure(kernel: Kernel, inputs, protocol: Protocol | None = None, *, expected=None, worker=None,
            isolate: bool = True) -> Measurement:
    """Benchmark `kernel` on `inputs` under `protocol`; with `expected` outputs, a mismatch is status
    wrong_output and nothing is timed."""
    from .timing import measure_kernel

    return measure_kernel(kernel, inputs, protocol, expected, worker, isolate)


def compile_and_measure(pipeline, loopnest, inputs, target="host", protocol: Protocol | None = None, *,
                        expected=None, compile_timeout: float = 600.0, worker=None) -> Measurement:
    """One sample of the data generator: every failure becomes a status, nothing raises."""
    try:
        k = compile(pipeline, loopnest, target, timeout=compile_timeout, worker=worker)
    except ScheduleError as e:
        return Measurement("invalid_schedule", error=str(e))
    except CompileError as e:
        return Measurement(e.status, error=str(e))
    return measure(k, inputs, protocol, expected=expected, worker=worker)
