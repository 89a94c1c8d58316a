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


# each x86 feature Halide may detect, and the /proc/cpuinfo flags the kernel must report before code may use it
_X86_FEATURE_FLAGS = {
    "SSE41": ("sse4_1",), "AVX": ("avx",), "AVX2": ("avx2",), "FMA": ("fma",), "FMA4": ("fma4",),
    "F16C": ("f16c",), "AVXVNNI": ("avx_vnni",), "AVX512": ("avx512f",),
    "AVX512_KNL": ("avx512f", "avx512er", "avx512pf"),
    "AVX512_Skylake": ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"),
    "AVX512_Cannonlake": ("avx512f", "avx512ifma", "avx512vbmi"),
    "AVX512_Zen4": ("avx512f", "avx512_bf16", "avx512_vnni", "avx512_vbmi2", "avx512_bitalg", "avx512_vpopcntdq"),
    "AVX512_Zen5": ("avx512f", "avx512_bf16", "avx512_vp2intersect"),
    "AVX512_SapphireRapids": ("avx512f", "avx512_fp16", "avx512_bf16"),
    "AVX10_1": ("avx10",), "X86APX": ("apx",),
}


def halide_host_target():
    """Halide's host target without the x86 features the operating system does not report.

    Why: Halide reads CPUID, and under some hypervisors CPUID advertises AVX-512 (Halide: `avx512_zen4`) that the
    guest kernel has not enabled (no `avx512f` in /proc/cpuinfo); the kernels then die with SIGILL (seen on an
    "AMD EPYC" VM). The flags the kernel reports are what code may use, as for ir.target's vector width."""
    import halide as hl

    from ir.target import _cpu_flags

    t = hl.get_host_target()
    flags = _cpu_flags()
    if t.arch != hl.TargetArch.X86 or not flags:
        return t
    for name, need in _X86_FEATURE_FLAGS.items():
        feature = getattr(hl.TargetFeature, name, None)
        if feature is not None and t.has_feature(feature) and not all(f in flags for f in need):
            t = t.without_feature(feature)
    return t


def host_target(strict_float: bool = True):
    import halide as hl

    t = halide_host_target()
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

