"""The Backend role (MetaSchedule's Builder + Runner for one code generator): build a `Kernel` from a
(pipeline, LoopNest, target), and run it under a `Protocol` into a `Measurement`. Backends live in a
registry by name; adding one is one class and one `@register_backend(name)` line."""

from __future__ import annotations

import importlib
import importlib.util
from abc import ABC, abstractmethod
from typing import Callable

from .kernel import CompileError, Kernel, Measurement, Protocol
from ir.status import Status


class Backend(ABC):
    """A code generator and its runner. `build` raises ScheduleError (invalid LoopNest) or CompileError
    (status compile_error or timeout); `run` never raises for a failing kernel, it returns its status."""

    name: str = ""  # set by register_backend
    target_kinds: frozenset[str] = frozenset({"cpu"})  # the ir.target kinds it builds for

    @abstractmethod
    def build(self, pipeline, loopnest, target, *, timeout: float | None = 600.0, worker=None,
              isolate: bool = True) -> Kernel:
        """Validate the schedule for `target` (an ir.target.Target), generate code and compile it (in the worker
        process with `timeout` unless isolate=False)."""

    def run(self, kernel: Kernel, inputs, protocol: Protocol | None = None, *, expected=None, worker=None,
            isolate: bool = True, data_key: str | None = None) -> Measurement:
        """Check `kernel` against `expected` and time it under `protocol`, in the worker process (which keeps
        the inputs and expected outputs under `data_key`, when given, for the next kernel of the same data)."""
        from .timing import measure_kernel

        return measure_kernel(kernel, inputs, protocol, expected, worker, isolate, data_key=data_key)

    def check_target(self, target) -> None:
        """A one-line CompileError unless this backend builds for `target`'s kind."""
        if target.kind not in self.target_kinds:
            raise CompileError(f"the {self.name} backend compiles for {', '.join(sorted(self.target_kinds))} "
                               f"targets; {target.name} is a {target.kind} target")


_BACKENDS: dict[str, Backend] = {}
# backends registered when first asked for: name -> (module that registers it, the package it needs, the extra)
_LAZY: dict[str, tuple[str, str, str]] = {"halide": ("backends.halide", "halide", "halide"),
                                          "cuda": ("backends.cuda", "numpy", "gpu")}  # NVRTC checked when building


def register_backend(name: str) -> Callable[[type[Backend]], type[Backend]]:
    """Class decorator: `@register_backend("mine") class Mine(Backend): ...` makes backend="mine" work."""

    def deco(cls: type[Backend]) -> type[Backend]:
        cls.name = name
        _BACKENDS[name] = cls()
        return cls

    return deco


def backend_names() -> tuple[str, ...]:
    return tuple(sorted({*_BACKENDS, *_LAZY}))


def get_backend(name: str) -> Backend:
    """The backend registered as `name`; a one-line CompileError listing the names for an unknown one."""
    if name not in _BACKENDS and name in _LAZY:
        module, package, extra = _LAZY[name]
        if importlib.util.find_spec(package) is None:
            raise CompileError(f"the {name} backend needs the {package} package: pip install schedlab[{extra}]")
        importlib.import_module(module)
    if name not in _BACKENDS:
        raise CompileError(f"unknown backend {name!r}; available: {', '.join(backend_names())}")
    return _BACKENDS[name]


def compile_in_worker(what: str, fn: Callable, *args, timeout: float | None, worker=None, isolate: bool = True):
    """fn(*args) in the worker process (or here with isolate=False); every failure, a crash of the process
    included, is a CompileError naming `what` (status timeout when it ran past `timeout`)."""
    if not isolate:
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - a failing compiler is the sample's status
            raise CompileError(f"{what} failed: {type(e).__name__}: {_first_line(e)}") from e
    from .worker import RemoteError, WorkerCrashed, WorkerTimeout, default_worker

    try:
        return (worker or default_worker()).call(fn, *args, timeout=timeout)
    except WorkerTimeout:
        raise CompileError(f"{what} timed out after {timeout:.0f} s", Status.TIMEOUT) from None
    except WorkerCrashed as e:
        raise CompileError(f"{what} aborted the worker process: {e}") from None
    except RemoteError as e:
        raise CompileError(f"{what} failed: {e}") from None


def _first_line(e: BaseException) -> str:
    s = str(e)
    return s.splitlines()[0] if s else ""
