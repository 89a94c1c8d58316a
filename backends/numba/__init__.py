"""The numba backend: a (pipeline, LoopNest) lowered to a Python kernel (codegen) and JIT-compiled by
numba in the worker process, cached on disk by content (compiler). The reference backend every other
one is compared with."""

from __future__ import annotations

from ..base import Backend, compile_in_worker, register_backend
from ..kernel import CompileError, Kernel


@register_backend("numba")
class NumbaBackend(Backend):
    target_kinds = frozenset({"cpu"})

    def build(self, pipeline, loopnest, target, *, timeout: float | None = 600.0, worker=None,
              isolate: bool = True) -> Kernel:
        import time

        from ir.errors import ScheduleError
        from ir.plan import Plan

        from .codegen import generate
        from .compiler import NumbaKernel, compile_here, write_source

        plan = Plan(pipeline.dag, loopnest, target)
        try:
            src = generate(plan)
        except ScheduleError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in code generation is this sample's status, not a dead job
            raise CompileError(f"code generation failed: {type(e).__name__}: {e}") from e
        path = write_source(src)
        t0 = time.perf_counter()
        compile_in_worker(f"numba compilation of {path.name}", compile_here, str(path), src.name, timeout=timeout,
                          worker=worker, isolate=isolate)
        return NumbaKernel(pipeline, loopnest, target, src, path, time.perf_counter() - t0)
