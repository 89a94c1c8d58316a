"""One measurement path for every caller (MetaSchedule's Builder/Runner): `build` a (pipeline, LoopNest) into a
`BuildResult`, `run` it into a `Measurement`, or `measure_many` a batch. Nothing here raises for a failing
sample — its status says what went wrong (ir.status); only a wrong name (backend, protocol) raises."""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ir.collector import fewer_collections
from ir.errors import ScheduleError

from .base import Backend, get_backend
from .kernel import CompileError, DeviceMissing, Kernel, Measurement, Protocol
from .protocols import get_protocol
from ir.status import Status


@dataclass
class BuildResult:
    """A built kernel, or why there is none."""

    kernel: Kernel | None  # None unless status is ok
    status: str  # ok, invalid_schedule, compile_error or timeout
    error: str = ""
    compile_s: float = math.nan

    @property
    def ok(self) -> bool:
        return self.status == Status.OK


def portable(kernel: Kernel) -> Kernel:
    """A copy of a built kernel without its pipeline and LoopNest: plain data whose spec names the compiled code in
    the node's kernel cache (every spec is, since a measuring worker process receives it pickled). A compile task
    hands it back so that the benchmarker of the same node reattaches them (`reattached`) instead of building the
    schedule again to find its cached code (llvm: a Plan and the IR generated anew, ~0.05 s a schedule)."""
    k = copy.copy(kernel)
    k.pipeline = k.loopnest = None
    if getattr(k, "_run", None) is not None:  # a loaded runner is process-local (machine code, threads)
        k._run = None
    return k


def reattached(kernel: Kernel, pipeline, loopnest) -> BuildResult:
    """The BuildResult of a `portable` kernel on the node that compiled it, with its pipeline and LoopNest back."""
    k = copy.copy(kernel)
    k.pipeline, k.loopnest = pipeline, loopnest
    return BuildResult(k, Status.OK, "", k.compile_s)


@dataclass(frozen=True)
class MeasureInput:
    """One sample to measure: a schedule of a pipeline, the inputs it runs on and, to check it, the outputs
    it must produce (ir.interpret's)."""

    pipeline: Any
    loopnest: Any
    inputs: Any
    expected: Any = None


def build(pipeline, loopnest, target="host", *, backend: str = "numba", timeout: float | None = 600.0,
          worker=None) -> BuildResult:
    """Compile one schedule with `backend`; a failure is the BuildResult's status."""
    from ir.target import get_target

    b, tgt = get_backend(backend), get_target(target)
    t0 = time.perf_counter()
    try:
        b.check_target(tgt)
        with fewer_collections():  # a Plan and generated code: millions of short-lived objects (ir.collector)
            k = b.build(pipeline, loopnest, tgt, timeout=timeout, worker=worker)
    except ScheduleError as e:
        return BuildResult(None, Status.INVALID_SCHEDULE, str(e), time.perf_counter() - t0)
    except CompileError as e:
        return BuildResult(None, e.status, str(e), time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - a backend bug is this sample's status, not a dead batch
        return BuildResult(None, Status.COMPILE_ERROR, f"{type(e).__name__}: {e}", time.perf_counter() - t0)
    return BuildResult(k, Status.OK, "", k.compile_s)


def run(built: BuildResult, inputs, protocol: Protocol | str | None = "full", *, expected=None,
        worker=None, data_key: str | None = None) -> Measurement:
    """Check and time a built kernel under `protocol` (a Protocol or its name); a failed build is returned
    as a Measurement of its status. `data_key` names the inputs and expected outputs (e.g. a batch id): the
    worker process keeps them, and the next kernel measured on the same data does not send them again."""
    protocol = get_protocol(protocol) if protocol is not None else None
    if built.kernel is None:
        return Measurement(built.status, error=built.error)
    try:
        return get_backend(built.kernel.backend).run(built.kernel, inputs, protocol, expected=expected, worker=worker,
                                                     data_key=data_key)
    except DeviceMissing as e:
        return Measurement(Status.NO_GPU, compile_s=built.compile_s, error=str(e))


def run_interleaved(builts: Sequence[BuildResult], inputs, protocol: Protocol | str | None = "full", *, expected=None,
                    worker=None, data_key: str | None = None, seed: int = 0) -> list[Measurement]:
    """`run` of each built schedule of one pipeline, timed together in rounds so that their order repeats
    (timing.time_interleaved): a pipeline's schedules are labels for their order, and schedules measured one after
    another each see a different state of the machine. The builds may come from several backends (evaluate times an
    app's llvm and Halide schedules together) as long as all of them time on the host's clock (the shared
    `Backend.run`); otherwise, or when a kernel kills the measuring process, each is `run` one at a time by the
    backend that built it. Failed builds are returned as their status."""
    protocol = get_protocol(protocol) if protocol is not None else None
    out: list[Measurement | None] = [None if b.kernel is not None else Measurement(b.status, error=b.error)
                                     for b in builts]
    kernels = [b.kernel for b in builts if b.kernel is not None]
    if kernels:
        try:
            timed = iter(_interleaved(kernels, inputs, protocol, expected, worker, data_key, seed))
        except DeviceMissing as e:
            timed = iter(Measurement(Status.NO_GPU, compile_s=k.compile_s, error=str(e)) for k in kernels)
        out = [m if m is not None else next(timed) for m in out]
    return out  # type: ignore[return-value]


def _interleaved(kernels: list[Kernel], inputs, protocol, expected, worker, data_key, seed) -> list[Measurement]:
    from .timing import measure_kernels_interleaved

    ms = None
    if all(type(get_backend(k.backend)).run is Backend.run for k in kernels):
        ms = measure_kernels_interleaved(kernels, inputs, protocol, expected, worker, data_key=data_key, seed=seed)
    if ms is None:
        ms = [get_backend(k.backend).run(k, inputs, protocol, expected=expected, worker=worker, data_key=data_key)
              for k in kernels]
    return ms


def measure_many(items: Sequence[MeasureInput], target="host", *, backend: str = "numba",
                 protocol: Protocol | str = "full", compile_timeout: float | None = 600.0, worker=None,
                 progress: Callable[[int, Measurement], None] | None = None) -> list[Measurement]:
    """run(build(item)) for each item, in order, one at a time (measurements must not disturb each other);
    `progress(index, measurement)` after each."""
    get_backend(backend)  # a wrong name is the caller's error, raised before any work
    protocol = get_protocol(protocol)
    out = []
    for i, it in enumerate(items):
        built = build(it.pipeline, it.loopnest, target, backend=backend, timeout=compile_timeout, worker=worker)
        m = run(built, it.inputs, protocol, expected=it.expected, worker=worker)
        out.append(m)
        if progress is not None:
            progress(i, m)
    return out


def measuring_machine() -> str:
    """The line every batch file records about what measured it: the machine (ir.target.machine_description()) and
    the malloc setting of its measurement workers (backends.worker.ALLOCATORS), since labels measured under glibc's
    adaptive thresholds and under pinned ones do not rank schedules alike (camera_pipe: 42 against 17 ms)."""
    from ir.target import machine_description

    from .worker import allocator_description

    return f"{machine_description()}; {allocator_description()}"
