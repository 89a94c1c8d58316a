"""The llvm backend: a CPU (pipeline, LoopNest) lowered straight to LLVM IR with llvmlite (irgen), optimized and
compiled to an object file by LLVM in the worker process, cached on disk by content (compiler). No Python
typing or lowering in between: the compile cost of numba's type inference and parfor (docs/backends.md) is gone,
and so is the Python in the loop of parallel levels (a thread pool calls the compiled task function)."""

from __future__ import annotations

import time

from ir.errors import ScheduleError

from ..base import Backend, compile_in_worker, register_backend
from ..kernel import CompileError, Kernel


class LlvmKernel(Kernel):
    def __init__(self, pipeline, loopnest, target, spec, compile_s: float):
        super().__init__(pipeline, loopnest, target, "llvm", compile_s,
                         {"path": spec.path, "stages": [(s.function, s.tasks) for s in spec.source.stages]})
        self.spec = spec
        self._run = None

    def run(self, inputs, outputs) -> None:
        if self._run is None:
            self._run = self.spec.runner()
        self._run(inputs, outputs)


@register_backend("llvm")
class LlvmBackend(Backend):
    target_kinds = frozenset({"cpu"})

    def build(self, pipeline, loopnest, target, *, timeout: float | None = 600.0, worker=None,
              isolate: bool = True) -> Kernel:
        from ir.plan import Plan

        from .compiler import LlvmSpec, compile_here, object_path
        from .irgen import generate

        plan = Plan(pipeline.dag, loopnest, target)
        t0 = time.perf_counter()
        try:
            src = generate(plan)
        except ScheduleError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in code generation is this sample's status
            raise CompileError(f"LLVM code generation failed: {type(e).__name__}: {e}") from e
        path = object_path(src)
        compile_in_worker(f"LLVM compilation of {path.name}", compile_here, src.ir, str(path), timeout=timeout,
                          worker=worker, isolate=isolate)
        return LlvmKernel(pipeline, loopnest, target, LlvmSpec(str(path), src), time.perf_counter() - t0)
