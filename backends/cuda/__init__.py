"""The CUDA backend: GPU LoopNests lowered to CUDA C (codegen), compile-checked by NVRTC for sm_80 and sm_90
with ptxas's resource report (nvrtc), executed on the CPU from the same text for correctness (emulate), and
launched through CuPy where a GPU is present (runner).

Building needs no GPU: NVRTC (pip) compiles, g++ builds the emulation. Measuring needs one; without it,
`measure` is a one-line error and `check` runs the emulation against the interpreter instead. An emulated run
is a correctness check, never a GPU measurement.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ir.errors import SchedlabError, ScheduleError
from ir.status import Status

from ..base import Backend, compile_in_worker, register_backend
from ..kernel import CompileError, DeviceMissing, Kernel, Measurement
from . import emulate, nvrtc, runner
from .codegen import CudaSource, generate
from .nvrtc import ARCHS, KernelResources


@dataclass(frozen=True)
class CudaBuild:
    """What building in the worker produced: NVRTC's resources per kernel and arch, and the emulation library."""

    resources: tuple[KernelResources, ...]
    nvrtc_s: float
    emulation: str  # path of the plain g++ build
    nvrtc: bool  # False when NVRTC is not installed here (the emulation still ran)


def build_in_worker(src: CudaSource, archs: tuple[str, ...], require_nvrtc: bool) -> CudaBuild:
    resources: list[KernelResources] = []
    seconds = 0.0
    have = nvrtc.available() is None
    if not have and require_nvrtc:
        raise CompileError(nvrtc.available())
    if have:
        for arch in archs:
            _, r = nvrtc.compile_cuda(src.source, src.name, arch)
            resources.extend(r.resources)
            seconds += r.seconds
    so = emulate.build(src, "plain")
    return CudaBuild(tuple(resources), seconds, str(so), have)


def check_resources(target, resources) -> None:
    """A kernel over the target's registers per thread is an invalid schedule (ptxas would spill or fail)."""
    for r in resources:
        if r.registers > target.registers_per_thread:
            raise ScheduleError(f"{r.kernel}: {r.registers} registers per thread on {r.arch}, more than "
                                f"{target.name}'s registers_per_thread {target.registers_per_thread}")


class CudaKernel(Kernel):
    def __init__(self, pipeline, loopnest, target, source: CudaSource, built: CudaBuild, compile_s: float):
        super().__init__(pipeline, loopnest, target, "cuda", compile_s,
                         {"kernels": list(source.kernels), "launches": [(l.kernel, l.grid, l.block) for l in source.launches],
                          "resources": [r.__dict__ for r in built.resources], "nvrtc": built.nvrtc})
        self.source = source
        self.built = built
        self.spec = runner.CupySpec(source)

    def run(self, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
        why = runner.gpu_missing()
        if why is not None:
            raise DeviceMissing(why)
        self.spec.runner()(inputs, outputs)

    def emulate(self, inputs, racecheck: bool = False) -> dict[str, np.ndarray]:
        """Outputs of the CPU emulation of this kernel's CUDA text, here (tests and debugging; not timed)."""
        so = emulate.build(self.source, "racecheck" if racecheck else "plain")
        bound = self.bind_inputs((inputs,), {}) if isinstance(inputs, dict) else self.bind_inputs(tuple(inputs), {})
        out, count, first = emulate.run_checked(emulate.EmulatedProgram(str(so), self.source), bound, _meta(self.pipeline))
        if count:
            raise SchedlabError(f"racecheck: {count} races; first: {first}")
        return out


@register_backend("cuda")
class CudaBackend(Backend):
    target_kinds = frozenset({"cuda"})

    def build(self, pipeline, loopnest, target, *, timeout: float | None = 600.0, worker=None,
              isolate: bool = True, archs: tuple[str, ...] = ARCHS, require_nvrtc: bool = True) -> Kernel:
        from ir.plan import Plan

        self.check_target(target)
        plan = Plan(pipeline.dag, loopnest, target)
        try:
            src = generate(plan)
        except ScheduleError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug in code generation is this sample's status
            raise CompileError(f"CUDA code generation failed: {type(e).__name__}: {e}") from e
        t0 = time.perf_counter()
        built = compile_in_worker("CUDA compilation", build_in_worker, src, tuple(archs), require_nvrtc,
                                  timeout=timeout, worker=worker, isolate=isolate)
        check_resources(target, built.resources)
        return CudaKernel(pipeline, loopnest, target, src, built, time.perf_counter() - t0)

    def run(self, kernel, inputs, protocol=None, *, expected=None, worker=None, isolate: bool = True,
            data_key: str | None = None) -> Measurement:
        why = runner.gpu_missing()
        if why is not None:
            raise DeviceMissing(why)
        return runner.measure_on_gpu(kernel, inputs, protocol, expected, worker, isolate, data_key)


@dataclass
class EmulationCheck:
    """One (pipeline, GPU LoopNest) checked without a GPU: the status, why, and what NVRTC reported."""

    status: str
    error: str = ""
    races: int = 0
    resources: tuple[KernelResources, ...] = ()
    kernels: int = 0


def check(pipeline, loopnest, target="h100", inputs=None, expected=None, *, seed: int = 0, racecheck: bool = True,
          worker=None, timeout: float = 300.0, require_nvrtc: bool = True) -> EmulationCheck:
    """Build a GPU schedule (NVRTC for sm_80/sm_90 + g++), run its CUDA text on the CPU (plain and racecheck
    builds) in the worker process and compare with the interpreter; every failure is a status, never raised."""
    from ir import interpret
    from ir.target import get_target

    from ..timing import compare_outputs
    from ..worker import RemoteError, WorkerCrashed, WorkerTimeout, default_worker

    if inputs is None:
        inputs = pipeline.random_inputs(seed)
    if expected is None:
        expected = interpret(pipeline, inputs)
    t = get_target(target)
    try:
        k = CudaBackend().build(pipeline, loopnest, t, timeout=timeout, worker=worker, require_nvrtc=require_nvrtc)
    except ScheduleError as e:
        return EmulationCheck(Status.INVALID_SCHEDULE, str(e))
    except CompileError as e:
        return EmulationCheck(e.status, str(e))
    bound = k.bind_inputs((inputs,), {})
    meta = _meta(pipeline)
    w = worker or default_worker()
    races = 0
    for mode in ("plain", "racecheck") if racecheck else ("plain",):
        try:
            so = k.built.emulation if mode == "plain" else w.call(emulate.build, k.source, mode, timeout=timeout)
            out, count, first = w.call(emulate.run_checked, emulate.EmulatedProgram(str(so), k.source), bound, meta,
                                       timeout=timeout)
        except WorkerTimeout as e:
            return EmulationCheck(Status.TIMEOUT, f"{mode} emulation: {e}", resources=k.built.resources)
        except WorkerCrashed as e:
            return EmulationCheck(Status.CRASH, f"{mode} emulation: {e}", resources=k.built.resources)
        except RemoteError as e:
            return EmulationCheck(Status.RUNTIME_ERROR, f"{mode} emulation: {e}", resources=k.built.resources)
        why = compare_outputs({o.name: o.type for o in pipeline.outputs}, out, expected)
        if why is not None:
            return EmulationCheck(Status.WRONG_OUTPUT, f"{mode} emulation: {why}", races, k.built.resources,
                                  len(k.source.kernels))
        if count:
            return EmulationCheck(Status.WRONG_OUTPUT, f"racecheck: {count} races; first: {first}", count,
                                  k.built.resources, len(k.source.kernels))
    return EmulationCheck(Status.OK, "", 0, k.built.resources, len(k.source.kernels))


def _meta(pipeline) -> dict:
    return {o.name: (int(np.prod(pipeline.output_sizes[o.name])), o.type.dtype, pipeline.output_sizes[o.name])
            for o in pipeline.outputs}
