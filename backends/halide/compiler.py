"""Compiling a (pipeline, LoopNest) with Halide, in the worker process like every backend.

The Kernel's `spec` is a small picklable `HalideSpec` (the pipeline as JSON, the LoopNest as JSON):
the worker rebuilds the Halide Funcs from it, applies the schedule and compiles it to an object file in the
node's cache (backends.halide.aot), which any process on the node loads and runs on the flat Fortran-order
arrays the harness passes. A pipeline scheduled by one of Halide's autoschedulers is compiled the same way,
by the process that searched: the process that measures it loads the object and never searches again (it
used to JIT-compile, so a measuring process other than the searching one ran the whole search again inside
its measurement's timeout: local_laplacian's Adams2019 timed out so). Halide buffers list dimensions innermost
first, which is Fortran order, so a flat array viewed with its shape reversed (C order) is a Halide
buffer indexed [x, y, ...]; `set_min` places it at its region.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..base import compile_in_worker
from ..kernel import CompileError, Kernel


@dataclass(frozen=True)
class HalideSpec:
    """What a worker process needs to rebuild and run a Halide kernel: the pipeline, and either a
    LoopNest or the name and parameters of a Halide autoscheduler."""

    pipeline_json: str
    loopnest_json: str = ""
    strict_float: bool = True  # IEEE results, as numba and the interpreter compute them
    autoscheduler: str = ""  # "Adams2019" | "Mullapudi2016" | "Li2018" instead of a LoopNest
    autoscheduler_params: tuple[tuple[str, str], ...] = ()

    @cached_property
    def key(self) -> tuple:
        return (self.pipeline_json, self.loopnest_json, self.strict_float, self.autoscheduler,
                self.autoscheduler_params)

    def runner(self):
        """run(inputs, outputs) over the node's object file of this spec (backends.halide.aot)."""
        from .aot import runner

        return runner(self)


def host_target(strict_float: bool = True):
    import halide as hl

    t = hl.get_host_target()
    return t.with_feature(hl.TargetFeature.StrictFloat) if strict_float else t


def compile_here(spec: HalideSpec) -> float:
    """Compile in this process to an object file in the node's cache (loaded by whichever process runs it) and
    return the compile seconds."""
    from .aot import compile_object

    return compile_object(spec)


class HalideKernel(Kernel):
    def __init__(self, pipeline, loopnest, target, spec: HalideSpec, compile_s: float):
        super().__init__(pipeline, loopnest, target, "halide", compile_s, {"strict_float": spec.strict_float})
        self.spec = spec
        self._run = None

    def run(self, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
        if self._run is None:
            try:
                self._run = self.spec.runner()
            except Exception as e:
                raise CompileError(f"Halide failed to compile: {type(e).__name__}: "
                                   f"{str(e).splitlines()[0] if str(e) else ''}") from e
        self._run(inputs, outputs)


def compile_halide(pipeline, loopnest, tgt, *, timeout: float | None, isolate: bool, worker=None,
                   strict_float: bool = True) -> HalideKernel:
    """Validate, then translate and JIT-compile in the worker (or here with isolate=False)."""
    import json

    from ir.plan import Plan

    Plan(pipeline.dag, loopnest, tgt)  # ScheduleError before any compile
    spec = HalideSpec(json.dumps(pipeline.to_json(), sort_keys=True), loopnest.dumps(), strict_float)
    t0 = time.perf_counter()
    compile_in_worker("Halide compilation", compile_here, spec, timeout=timeout, worker=worker, isolate=isolate)
    return HalideKernel(pipeline, loopnest, tgt, spec, time.perf_counter() - t0)

