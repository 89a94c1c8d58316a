"""Halide's GPU autoschedulers on a schedlab pipeline, for a CUDA target: the GPU reference schedlab's own GPU
schedules are compared with (anderson2021 §8). Search and code generation only: Halide emits PTX (not CUDA C)
and needs a driver to run it, so on a machine without a GPU this is where it stops.

    s = autoschedule_gpu(p, "Anderson2021", "h100")   # or backends.halide.autoschedule(p, "Anderson2021", "h100")
    s.schedule_source                                  # gpu_blocks / gpu_threads directives
    s.ptx                                              # what Halide would load on the GPU

Halide 21's newest CUDA capability is 8.6, so sm_90 targets get sm_86 PTX (forward-compatible by driver JIT;
ptxas assembles it for sm_90, which `ptxas_check` does where ptxas is installed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

from ..kernel import CompileError

GPU_SCHEDULERS = {  # plugin -> parameters that make it schedule for the GPU (besides parallelism = SMs)
    "Anderson2021": {},
    "Mullapudi2016": {"experimental_gpu_schedule": "1"},
    "Li2018": {},
}
HALIDE_CAPABILITIES = (30, 32, 35, 50, 61, 70, 75, 80, 86)  # Halide 21's CUDACapability features


@dataclass(frozen=True)
class GpuAnchorSchedule:
    scheduler: str
    target: str  # schedlab target name
    halide_target: str
    params: tuple[tuple[str, str], ...]
    schedule_source: str
    search_seconds: float
    ptx: str
    pipeline: object

    @property
    def ptx_arch(self) -> str:
        m = re.search(r"^\.target\s+(sm_\d+)", self.ptx, re.M)
        return m.group(1) if m else ""

    @property
    def kernels(self) -> int:
        """GPU kernels in the PTX (0: the scheduler left everything on the host)."""
        return len(re.findall(r"^\.(?:visible\s+)?\.entry\s", self.ptx, re.M))

    def compile(self, **_):
        raise CompileError(f"{self.scheduler}'s schedule for {self.target} runs on a GPU through Halide's CUDA runtime; "
                           "schedlab measures it only on a machine with one")


def halide_cuda_target(target) -> str:
    """The Halide target string for a schedlab CUDA target (capability capped at Halide's newest, 8.6)."""
    cc = int(float(target.compute_capability) * 10)
    cap = max((c for c in HALIDE_CAPABILITIES if c <= cc), default=HALIDE_CAPABILITIES[0])
    from .compiler import halide_host_target

    return f"{halide_host_target().to_string()}-cuda-cuda_capability_{cap}"


def autoschedule_gpu(pipeline, scheduler: str, target="h100", params: dict[str, str] | None = None, *,
                     timeout: float | None = 600.0, worker=None, isolate: bool = True) -> GpuAnchorSchedule:
    """Run Halide's GPU `scheduler` on `pipeline` for a CUDA target (in the worker process), and emit its PTX."""
    import json

    from ir.target import get_target

    from ..base import compile_in_worker
    from .autoschedule import PARAMS

    tgt = get_target(target)
    if tgt.kind != "cuda":
        raise CompileError(f"{target}: GPU autoscheduling needs a cuda target (h100, a100, ...)")
    if scheduler not in GPU_SCHEDULERS:
        raise CompileError(f"{scheduler} does not schedule for GPUs; choose one of {', '.join(GPU_SCHEDULERS)}")
    given = {"parallelism": str(tgt.sm_count)} | GPU_SCHEDULERS[scheduler] | dict(params or {})
    bad = [k for k in given if k not in PARAMS[scheduler]]
    if bad:
        raise CompileError(f"{scheduler} has no parameter {bad[0]!r}; its parameters are {', '.join(PARAMS[scheduler])}")
    ptarget = halide_cuda_target(tgt)
    args = (json.dumps(pipeline.to_json(), sort_keys=True), scheduler, tuple(sorted(given.items())), ptarget)
    source, search_s, ptx = compile_in_worker(f"{scheduler} for {tgt.name}", _search_gpu_here, *args,
                                              timeout=timeout, worker=worker, isolate=isolate)
    return GpuAnchorSchedule(scheduler, tgt.name, ptarget, args[2], source, search_s, ptx, pipeline)


def _search_gpu_here(pipeline_json: str, scheduler: str, params: tuple, halide_target: str) -> tuple[str, float, str]:
    import json

    import halide as hl

    from ir.pipeline import Pipeline

    from .autoschedule import run_autoscheduler
    from .translate import translate

    p = Pipeline.from_json(json.loads(pipeline_json))
    hp = translate(p)
    hpipe = hp.pipeline()
    t = hl.Target(halide_target)
    source, search_s = run_autoscheduler(hpipe, scheduler, dict(params), t)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "k.ptx")
        args = [hp.params[n] for n in hp.params]
        hpipe.compile_to({hl.OutputFileType.device_code: out}, args, "k", t)
        ptx = open(out).read() if os.path.exists(out) else ""
    return source, search_s, ptx


def loopnest_ptx(pipeline, loopnest, target="h100", *, timeout: float | None = 600.0, worker=None,
                 isolate: bool = True) -> str:
    """The PTX Halide generates for a schedlab GPU LoopNest (gpu_blocks / gpu_threads, shared-memory tiles), for
    comparing Halide's lowering of the same schedule with backends.cuda's; generated in the worker process."""
    import json

    from ir.plan import Plan
    from ir.target import get_target

    from ..base import compile_in_worker

    tgt = get_target(target)
    Plan(pipeline.dag, loopnest, tgt)  # ScheduleError before any compile
    return compile_in_worker("Halide CUDA code generation", _ptx_here, json.dumps(pipeline.to_json(), sort_keys=True),
                             loopnest.dumps(), tgt, timeout=timeout, worker=worker, isolate=isolate)


def _ptx_here(pipeline_json: str, loopnest_json: str, target) -> str:
    import json

    import halide as hl

    from ir.loopnest import LoopNest
    from ir.pipeline import Pipeline
    from ir.plan import Plan

    from .schedule import apply
    from .translate import translate

    p = Pipeline.from_json(json.loads(pipeline_json))
    hp = translate(p)
    apply(hp, Plan(p.dag, LoopNest.loads(loopnest_json), target))
    hpipe = hp.pipeline()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "k.ptx")
        hpipe.compile_to({hl.OutputFileType.device_code: out}, [hp.params[n] for n in hp.params], "k",
                         hl.Target(halide_cuda_target(target)))
        return open(out).read() if os.path.exists(out) else ""


def measure_anchor(anchor: GpuAnchorSchedule, inputs: dict, protocol, expected=None, *, worker=None):
    """Time Halide's GPU schedule on this machine's GPU (NOT RUN HERE: no GPU): JIT-compiled for the CUDA target,
    inputs copied to the device once, outputs checked against `expected` once, then realize + device_sync timed
    under `protocol` in the worker process. A Measurement, never raised; no_gpu where there is none."""
    import json

    from ir.status import Status

    from ..cuda.runner import gpu_missing
    from ..kernel import Measurement
    from ..worker import RemoteError, WorkerCrashed, WorkerTimeout, default_worker

    why = gpu_missing()
    if why is not None:
        return Measurement(Status.NO_GPU, error=why)
    p = anchor.pipeline
    flat = {k: v.ravel(order="F") for k, v in inputs.items()}
    args = (json.dumps(p.to_json(), sort_keys=True), anchor.scheduler, anchor.params, anchor.halide_target, flat,
            protocol, expected)
    try:
        return (worker or default_worker()).call(_measure_anchor_here, *args, timeout=protocol.timeout)
    except WorkerTimeout as e:
        return Measurement(Status.TIMEOUT, error=str(e))
    except WorkerCrashed as e:
        return Measurement(Status.CRASH, error=str(e))
    except RemoteError as e:
        return Measurement(Status.RUNTIME_ERROR, error=str(e))


def _measure_anchor_here(pipeline_json, scheduler, params, halide_target, inputs, protocol, expected):
    import json

    import halide as hl
    import numpy as np

    from ir.pipeline import Pipeline
    from ir.status import Status

    from ..kernel import Measurement
    from ..timing import compare_outputs, time_callable
    from .autoschedule import run_autoscheduler
    from .translate import translate

    p = Pipeline.from_json(json.loads(pipeline_json))
    hp = translate(p)
    hpipe = hp.pipeline()
    t = hl.Target(halide_target)
    run_autoscheduler(hpipe, scheduler, dict(params), t)
    try:
        hpipe.compile_jit(t)
    except Exception as e:  # noqa: BLE001
        return Measurement(Status.COMPILE_ERROR, error=f"{type(e).__name__}: {e}")
    for name, param in hp.params.items():
        region = p.input_regions[name]
        buf = hl.Buffer(inputs[name].reshape(tuple(reversed([e for _, e in region]))))
        buf.set_min([lo for lo, _ in region])
        param.set(buf)
    shapes = {o: p.output_sizes[o] for o in hp.outputs}
    arrays = {o: np.empty(tuple(reversed(s)), dtype=p.dag.node(o).type.dtype) for o, s in shapes.items()}
    bufs = [hl.Buffer(a) for a in arrays.values()]
    target_bufs = bufs if len(bufs) > 1 else bufs[0]

    def once():
        hpipe.realize(target_bufs, t)
        for b in bufs:
            b.device_sync()

    try:
        once()
        for b in bufs:
            b.copy_to_host()
    except Exception as e:  # noqa: BLE001
        return Measurement(Status.RUNTIME_ERROR, error=f"{type(e).__name__}: {e}")
    if expected is not None:
        got = {o: a.reshape(-1).reshape(shapes[o], order="F") for o, a in arrays.items()}
        why = compare_outputs({o.name: o.type for o in p.outputs}, got, expected)
        if why is not None:
            return Measurement(Status.WRONG_OUTPUT, error=why)
    best, med, spread, samples, iters = time_callable(once, protocol)
    return Measurement(Status.OK, best, med, spread, samples, iters)


def ptxas_check(ptx: str, arch: str = "sm_90", timeout: float = 120.0) -> str | None:
    """ptxas's resource report for Halide's PTX on `arch`, or None where ptxas is not installed; a CompileError
    when it does not assemble."""
    ptxas = shutil.which("ptxas") or (os.path.join(os.path.dirname(shutil.which("nvcc")), "ptxas")
                                      if shutil.which("nvcc") else None)
    if ptxas is None or not os.path.exists(ptxas):
        return None
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        open(src, "w").write(ptx)
        t0 = time.perf_counter()
        r = subprocess.run([ptxas, f"-arch={arch}", "-v", src, "-o", os.path.join(d, "k.cubin")], capture_output=True,
                           text=True, timeout=timeout)
    if r.returncode != 0:
        raise CompileError(f"ptxas ({arch}) rejected Halide's PTX: {r.stderr.strip().splitlines()[0] if r.stderr else ''}")
    return r.stderr + f"\n(ptxas {time.perf_counter() - t0:.2f} s)"
