"""The job's Ray work: planning and compiling are parallel CPU tasks; measuring is one actor per node that
runs one measurement at a time (the papers benchmark sequentially so that runs do not disturb each other),
and with `quiet_measurement` alone on its node: planning and compiling pause while it times (.quiet). A
measurement is one sample (`measure`, measurement=sequential) or the samples of a batch compiled on the node,
timed together in rounds (`measure_block`, measurement=interleaved).

Compiled code lands in the node's on-disk kernel cache, and a compile task hands back its kernel as plain data
naming that code (backends.portable), which the benchmarker of the same node reattaches to the batch's pipeline
and LoopNest instead of building the schedule again; a sample measured on another node (its benchmarker died) is
built there. Every compile
and measurement runs in a backends worker process with a timeout: a crash or a hang of generated code
is a Measurement status. A Ray worker process that dies is retried by Ray (`max_retries`) and then
reported to the driver, which records the sample as `worker_died`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import ray

from backends.kernel import Measurement
from generator.batch import BatchKey, BatchPlan, SamplingModel, plan_batch

from .quiet import maybe


@dataclass(frozen=True)
class CompileOutcome:
    status: str  # ok, or the Measurement status of the failure
    error: str = ""
    compile_s: float = float("nan")
    node_id: str = ""
    kernel: object = None  # backends.portable(kernel) when ok: the node's benchmarker reattaches it, not rebuilds it


@ray.remote
def plan_task(key: BatchKey, model: SamplingModel, quiet: bool = False) -> BatchPlan:
    with maybe(quiet, "shared"):  # search is CPU work: never beside a measurement
        plan = plan_batch(key, model)
    plan.node_id = ray.get_runtime_context().get_node_id()
    return plan


@ray.remote
def compile_task(plan_ref: list, index: int, compile_timeout: float, fault: str = "",
                 quiet: bool = False) -> CompileOutcome:
    """Compile one sample into this node's kernel cache; `fault` "die" kills this Ray worker (testing).
    `plan_ref` is [the BatchPlan's ObjectRef], wrapped so that Ray does not resolve it before the task starts:
    the plan is fetched and unpickled inside the quiet lock, never beside a measurement (unwrapped, that was
    0.2-0.6 s of CPU a compile task spent beside a running measurement on a 2-core node)."""
    from backends import build, portable

    if fault == "die":
        os._exit(3)
    node = ray.get_runtime_context().get_node_id()
    with maybe(quiet, "shared"):
        plan: BatchPlan = ray.get(plan_ref[0])
        s = plan.samples[index]
        b = build(plan.pipeline, s.loopnest, plan.key.target, backend=plan.key.backend, timeout=compile_timeout)
    return CompileOutcome(b.status, b.error, b.compile_s if b.ok else float("nan"), node_id=node,
                          kernel=portable(b.kernel) if b.ok else None)


@ray.remote(max_concurrency=1)
class Benchmarker:
    """One per node; Ray runs its calls one at a time, in the order they were submitted."""

    def __init__(self):
        from backends.worker import Worker

        self.worker = Worker()

    def measure(self, plan: BatchPlan, index: int, protocol, compile_timeout: float, fault: str = "",
                quiet: bool = False, kernel=None) -> Measurement:
        """Reattach the compile task's kernel (or build it here), then time it; with `quiet`, the timing runs with no
        planning or compiling on the node (generator.job.quiet)."""
        import time

        from backends import run

        t0 = time.perf_counter()
        built = self.load(plan, index, compile_timeout, fault, kernel)
        inputs = {n: np.array(a) for n, a in plan.inputs.items()}  # Ray hands out read-only views
        t1 = time.perf_counter()
        with maybe(quiet, "exclusive"):
            t2 = time.perf_counter()
            m = run(built, inputs, protocol, expected=plan.expected, worker=self.worker, data_key=plan.key.batch_id)
        m.wait_s = t2 - t1
        m.measure_s = time.perf_counter() - t0 - m.wait_s
        return m

    def measure_block(self, plan: BatchPlan, indices: list[int], protocol, compile_timeout: float,
                      faults: tuple[str, ...] = (), quiet: bool = False, kernels: tuple = ()) -> list[Measurement]:
        """Samples `indices` of one batch, timed together in rounds (backends.run_interleaved) in one quiet spell of
        the node; a kernel that crashes or hangs the block sends them back to one-at-a-time measurement, which gives
        it its status. Each Measurement carries an equal share of the block's load and wait seconds."""
        import time

        from backends import run_interleaved

        t0 = time.perf_counter()
        builts = [self.load(plan, i, compile_timeout, faults[k] if k < len(faults) else "",
                            kernels[k] if k < len(kernels) else None) for k, i in enumerate(indices)]
        inputs = {n: np.array(a) for n, a in plan.inputs.items()}  # Ray hands out read-only views
        t1 = time.perf_counter()
        with maybe(quiet, "exclusive"):
            t2 = time.perf_counter()
            ms = run_interleaved(builts, inputs, protocol, expected=plan.expected, worker=self.worker,
                                 data_key=plan.key.batch_id, seed=plan.key.seed)
        wait, spent = t2 - t1, time.perf_counter() - t0 - (t2 - t1)
        for m in ms:
            m.wait_s, m.measure_s = wait / len(ms), spent / len(ms)
        return ms

    def load(self, plan: BatchPlan, index: int, compile_timeout: float, fault: str = "", kernel=None):
        """The BuildResult of sample `index`: the `portable` kernel this node's compile task handed back, or else
        built here (loaded from the node's kernel cache, or compiled again); with `fault` crash or hang, its runner
        replaced by a misbehaving one (testing)."""
        from backends import build, reattached

        s = plan.samples[index]
        if kernel is not None:
            built = reattached(kernel, plan.pipeline, s.loopnest)
        else:
            built = build(plan.pipeline, s.loopnest, plan.key.target, backend=plan.key.backend,
                          timeout=compile_timeout, worker=self.worker)
        if fault in ("crash", "hang") and built.kernel is not None:
            built.kernel.spec = FaultyKernel(fault)
        return built

    def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()


@dataclass(frozen=True)
class FaultyKernel:
    """Stands in for a kernel's runner in the measurement worker: it aborts the process or never returns,
    as miscompiled code does (config key `faults`)."""

    kind: str

    def runner(self):
        def run(inputs, outputs):
            if self.kind == "crash":
                os.abort()
            import time

            time.sleep(10**6)

        return run


