"""Compiling a (pipeline, LoopNest) with Halide, in the worker process like every backend.

The Kernel's `spec` is a small picklable `HalideSpec` (the pipeline as JSON, the LoopNest as JSON):
the worker rebuilds the Halide Funcs from it, applies the schedule and compiles it to an object file in the
node's cache (backends.halide.aot), which any process on the node loads and runs on the flat Fortran-order
arrays the harness passes. Halide's autoschedulers' pipelines are JIT-compiled once per process. Halide buffers list dimensions innermost
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
from .diagnostics import planned_warnings_filtered

_compiled: dict[tuple, _Compiled] = {}


@dataclass
class _Compiled:
    pipeline: object  # hl.Pipeline
    params: dict  # input name -> (hl.ImageParam, region)
    outputs: tuple[tuple[str, tuple[int, ...]], ...]
    compile_s: float
    schedule_source: str = ""  # what an autoscheduler chose (C++ text)
    search_s: float = 0.0  # seconds the autoscheduler took


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

    def build(self) -> _Compiled:
        """Translate, schedule and JIT-compile (once per process)."""
        c = _compiled.get(self.key)
        if c is None:
            c = _compiled[self.key] = self._build()
        return c

    def _build(self) -> _Compiled:
        import json

        from ir.pipeline import Pipeline

        from .translate import translate

        p = Pipeline.from_json(json.loads(self.pipeline_json))
        hp = translate(p)
        source, search_s = "", 0.0
        if self.autoscheduler:
            from .autoschedule import run_autoscheduler

            hpipe = hp.pipeline()
            source, search_s = run_autoscheduler(hpipe, self.autoscheduler, dict(self.autoscheduler_params),
                                                 host_target(self.strict_float))
        else:
            from ir.loopnest import LoopNest
            from ir.plan import Plan

            from .schedule import apply

            apply(hp, Plan(p.dag, LoopNest.loads(self.loopnest_json)))
            hpipe = hp.pipeline()
        t0 = time.perf_counter()
        with planned_warnings_filtered():
            hpipe.compile_jit(host_target(self.strict_float))
        params = {n: (hp.params[n], p.input_regions[n]) for n in hp.params}
        outs = tuple((o, p.output_sizes[o]) for o in hp.outputs)
        return _Compiled(hpipe, params, outs, time.perf_counter() - t0, source, search_s)

    def runner(self):
        if not self.autoscheduler:  # an object file from the node's cache (backends.halide.aot)
            from .aot import runner

            return runner(self)
        import halide as hl

        c = self.build()

        def run(inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
            for name, (param, region) in c.params.items():
                buf = hl.Buffer(_view(inputs[name], tuple(e for _, e in region)))
                buf.set_min([lo for lo, _ in region])
                param.set(buf)
            bufs = [hl.Buffer(_view(outputs[o], size)) for o, size in c.outputs]
            c.pipeline.realize(bufs if len(bufs) > 1 else bufs[0])

        return run


def host_target(strict_float: bool = True):
    import halide as hl

    t = hl.get_host_target()
    return t.with_feature(hl.TargetFeature.StrictFloat) if strict_float else t


def _view(flat: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A flat Fortran-order array as the C-order array Halide reads as [x, y, ...] (no copy)."""
    v = flat.reshape(tuple(reversed(shape)))
    if not v.flags.c_contiguous:  # pragma: no cover - the harness passes contiguous arrays
        raise CompileError("the Halide backend needs contiguous arrays")
    return v


def compile_here(spec: HalideSpec) -> float:
    """Compile in this process — a LoopNest to an object file in the node's cache (loaded by whichever process
    runs it), an autoscheduled pipeline by JIT — and return the compile seconds."""
    if not spec.autoscheduler:
        from .aot import compile_object

        return compile_object(spec)
    return spec.build().compile_s


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

