"""The job's driver: rounds of batches through Ray, one Parquet file per batch, training between rounds.

For each round: the sampling model (random weights in round 0, then the version trained after the
previous round, or the newest registered one), the round's batches not yet on disk, and a bounded
window of batches in flight: plan (a task) -> compile each sample (tasks, on the planning node) ->
measure (that node's benchmarker, one at a time) -> the batch's rows, written atomically by the driver
under the batch's deterministic name. After the round, a model is trained on everything written so far
and registered; `<out>/job/target=<name>/round-<r>.json` records it, so a rerun resumes at the first
unwritten batch with the same models. Everything that can fail per sample is a status row.
"""

from __future__ import annotations

import collections
import json
import logging
import math
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from backends.kernel import Measurement
from generator.batch import BatchKey, BatchPlan, BatchSpec, SamplingModel, batch_rows, write_rows
from ir.errors import SchedlabError, first_line
from ir.progress import Progress, ProgressSetting
from ir.status import WORKER_DIED
from ir.units import format_seconds

from .config import JobConfig
from .tracking import JobRun

GPU_BACKENDS = ("cuda",)  # backends whose benchmarks need a whole GPU each


def benchmarker_resources(backend: str, benchmark_cpus: float) -> dict:
    """Ray resources of a node's Benchmarker actor: for a GPU backend one whole GPU (Ray then places one timing
    actor per GPU, so measurements on a GPU never overlap); compiles and CPU checks stay CPU tasks."""
    return {"num_cpus": benchmark_cpus, "num_gpus": 1 if backend in GPU_BACKENDS else 0}


class JobError(SchedlabError):
    """A job that cannot start or go on as configured; the message names what to fix."""


@dataclass
class RoundModel:
    round: int
    model: str  # what sampled the round's next round: models:/schedlab-<t>/<v>, or why there is none
    detail: str = ""  # validation metrics, champion


@dataclass
class JobSummary:
    out: Path
    tracking: str
    target: str
    cpus: float
    batches_planned: int = 0
    batches_written: int = 0
    batches_existing: int = 0
    pipelines_failed: int = 0
    samples_written: int = 0
    samples_existing: int = 0
    status: collections.Counter = field(default_factory=collections.Counter)  # of the samples written
    measured: collections.Counter = field(default_factory=collections.Counter)  # of every sample measured
    models: list[RoundModel] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    plan_s: float = 0.0  # seconds planning (search), summed over batches
    compile_s: float = 0.0  # seconds in compile tasks, summed over samples
    measure_s: float = 0.0  # seconds in the benchmarkers (kernel load or rebuild, timing, output check), summed
    wait_s: float = 0.0  # seconds the benchmarkers waited for a quiet node (quiet_measurement), summed
    remeasured: int = 0  # samples whose benchmarker died, measured again on a live node
    nodes: list = field(default_factory=list)  # .nodes.NodeReport of every node the job checked and used
    run: str = ""  # the job's MLflow run: its name and id
    measurement: str = ""  # how batches were timed (generator.batch.MEASUREMENTS)

    @property
    def unwritten(self) -> int:
        """Samples measured whose batch was not written (the job was interrupted before it finished)."""
        return max(0, sum(self.measured.values()) - sum(self.status.values()))

    @property
    def samples_per_core_hour(self) -> float:
        """Valid (ok) samples per hour per CPU of the cluster."""
        return self.status["ok"] / max(self.seconds, 1e-9) * 3600 / max(self.cpus, 1)

    def lines(self) -> list[str]:
        ok = self.status["ok"]
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(self.status.items(), key=lambda kv: (-kv[1], kv[0])))
        per_hour = self.samples_written / max(self.seconds, 1e-9) * 3600 / max(self.cpus, 1)
        head = "interrupted" if self.interrupted else "done"
        out = [
            (f"data generation {head} in {format_seconds(self.seconds)}: {self.batches_written} batches written, "
             f"{self.batches_existing} already there, {self.pipelines_failed} pipelines failed "
             f"(of {self.batches_planned} planned)"),
            (f"samples: {self.samples_written} written ({self.samples_existing} already there); yield "
             f"{100.0 * ok / max(1, self.samples_written):.1f}% ok; by status: {statuses or 'none'}"
             + (f"; {self.remeasured} measured again after their benchmarker died" if self.remeasured else "")
             + (f"; {self.unwritten} measured in batches left unfinished, not written (a rerun measures them "
                "again)" if self.unwritten else "")),
            (f"throughput: {per_hour:.0f} samples per hour per core ({self.samples_per_core_hour:.0f} valid; "
             f"{self.cpus:g} CPUs); task time: planning {format_seconds(self.plan_s)}, compiling {format_seconds(self.compile_s)}, "
             f"measuring {format_seconds(self.measure_s)} ({self.measurement or 'sequential'}; + "
             f"{format_seconds(self.wait_s)} waiting for a quiet node)"),
            f"data: {self.out / ('target=' + self.target)}",
        ]
        out += [f"node {n.describe()}" for n in self.nodes]
        out += [f"model after round {m.round}: {m.model}{(' ' + m.detail) if m.detail else ''}" for m in self.models]
        out += self.dataset_lines()
        if self.run:
            out.append(f"MLflow run {self.run} in {self.tracking} (the rounds' training runs nested under it)")
        out.append(f"open: mlflow ui --backend-store-uri {self.tracking}")
        return out

    def dataset_lines(self) -> list[str]:
        """The whole dataset under `out` as `generator.dataset stats` reports it (this run's and earlier runs'
        batches): runtimes, label spread, sizes."""
        from featurize.dataset import DatasetError
        from featurize.dataset_stats import dataset_stats

        try:
            report = dataset_stats(self.out).report().splitlines()
        except DatasetError:
            return []
        return ["the dataset now (python -m generator.dataset stats):"] + [f"  {line}" for line in report[1:]]


@dataclass
class _Batch:
    key: BatchKey
    plan_ref: object = None
    plan: BatchPlan | None = None
    rows: list = field(default_factory=list)  # Measurement per sample, None until known
    compile_s: list = field(default_factory=list)
    nodes: set = field(default_factory=set)  # the Ray node ids whose benchmarkers measured its samples
    compiles_left: int = 0  # compile tasks not yet returned
    blocks: dict = field(default_factory=dict)  # node id -> (sample, its compile task's portable kernel) compiled
    #   there, to time together (interleaved)

    @property
    def done(self) -> bool:
        return self.plan is not None and all(r is not None for r in self.rows)


class Job:
    def __init__(self, cfg: JobConfig, out: Path, tracking: str, target, cpus: float,
                 progress: Progress | None = None, run_id: str | None = None):
        self.cfg, self.out, self.tracking, self.tgt = cfg, out, tracking, target
        self.run_id = run_id  # the job's MLflow run: each round's training run is nested under it
        self.summary = JobSummary(out, tracking, target.name, cpus, measurement=cfg.measurement)
        self.faults = {(f.seed, f.index): f.kind for f in cfg.fault_list}
        self.benchmarkers: dict[str, object] = {}
        self.measured_again: set = set()  # (batch key, sample index) measured again after a benchmarker died
        self.progress = progress if progress is not None else Progress(None, "sample", False)
        self.window = cfg.in_flight or max(2, int(2 * cpus))

    # -- rounds --------------------------------------------------------------------------------------------

    def run(self) -> JobSummary:
        t0 = time.perf_counter()
        try:
            for r in range(self.cfg.rounds):
                model = self.sampling_model(r)
                self.note(f"round {r}: sampling with {model.name}")
                self.run_round(r, model)
                if self.cfg.train.enabled:
                    self.train_after(r)
        except KeyboardInterrupt:
            self.summary.interrupted = True
        finally:
            self.summary.seconds = time.perf_counter() - t0
        return self.summary

    def sampling_model(self, r: int) -> SamplingModel:
        from train.registry import load_cost_model, newest_version

        random = f"random:{self.cfg.seed}"
        if r == 0:
            first = self.cfg.first_sampler
            name = random if first == "random" else first
        else:
            marker = self.marker(r - 1)
            uri = json.loads(marker.read_text())["model"] if marker.exists() else newest_version(self.tgt.name,
                                                                                                self.tracking)
            name = uri if uri is not None and uri.startswith("models:/") else random
        if name.startswith("models:/"):  # loaded here (workers never open the MLflow store); travels in ray.put
            return SamplingModel(name, load_cost_model(name, self.tracking))
        return SamplingModel(name)  # random weights or an analytical prior, built where it samples

    def marker(self, r: int) -> Path:
        return self.out / "job" / f"target={self.tgt.name}" / f"round-{r}.json"

    def train_after(self, r: int) -> None:
        """Train on everything written so far and register a new version; a round whose model is already
        recorded is not trained again. Too little data is a note, not a failure: the next round samples
        with the newest model there is."""
        from train.config import TrainConfig
        from train.run import train

        marker = self.marker(r)
        if marker.exists():
            m = json.loads(marker.read_text())
            self.summary.models.append(RoundModel(r, m["model"], "(trained before)"))
            return
        t = self.cfg.train
        cfg = TrainConfig(data=str(self.out), target=self.cfg.target, model=t.model, loss=t.loss, epochs=t.epochs,
                          lr=t.lr, weight_decay=t.weight_decay, min_schedules=t.min_schedules,
                          max_spread=t.max_spread, val_fraction=t.val_fraction, seed=self.cfg.seed + r,
                          tracking_uri=self.tracking,
                          experiment=t.experiment, run_name=f"train-{self.tgt.name}-round{r}", promote=t.promote,
                          promotion=t.promotion, progress=False, checkpoint_dir=str(self.out / "job" / "checkpoints"))
        self.note(f"round {r}: training on {self.out}")
        try:
            result = train(cfg, parent_run_id=self.run_id)
        except SchedlabError as e:
            self.summary.models.append(RoundModel(r, "none trained", f"({str(e).splitlines()[0]})"))
            self.note(f"round {r}: not trained: {e}")
            return
        reg = result.registered
        v = result.val
        detail = (f"(validation pairwise {v['val_pairwise_accuracy']:.3f}, top-1 {v['val_top1_score']:.3f}, "
                  f"{result.samples} samples{', champion' if reg.promoted else ''}; "
                  f"{result.promotion.reason.split(' on the same')[0] if result.promotion else ''})")
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_suffix(".tmp")
        tmp.write_text(json.dumps({"model": reg.model_uri, "run_id": result.run_id, "tracking": self.tracking,
                                   "val": v}, indent=1))
        os.replace(tmp, marker)
        self.summary.models.append(RoundModel(r, reg.model_uri, detail))
        self.note(f"round {r}: registered {reg.model_uri} {detail}")

    # -- one round -----------------------------------------------------------------------------------------

    def run_round(self, r: int, model: SamplingModel) -> None:
        import ray

        from featurize.dataset import batch_path

        c = self.cfg
        model_ref = ray.put(model)
        todo = collections.deque()
        for key in BatchSpec.of_job(c, r).keys():
            self.summary.batches_planned += 1
            path = batch_path(self.out, self.tgt.name, key.batch_id)
            if path.exists():
                self.existing(path)
            else:
                todo.append(key)
        pending: dict = {}
        active = 0
        while todo or pending:
            while todo and active < self.window:
                b = _Batch(todo.popleft())
                b.plan_ref = self.submit_plan(b.key, model_ref)
                pending[b.plan_ref] = ("plan", b, -1, None)
                active += 1
            ready, _ = ray.wait(list(pending), num_returns=1)
            kind, b, i, extra = pending.pop(ready[0])
            finished = getattr(self, f"on_{kind}")(ready[0], b, i, extra, pending)
            if finished:
                active -= 1

    def submit_plan(self, key: BatchKey, model_ref):
        from .tasks import plan_task

        return plan_task.options(num_cpus=1, max_retries=self.cfg.max_retries).remote(key, model_ref,
                                                                                    self.cfg.quiet_measurement)

    def on_plan(self, ref, b: _Batch, _i, _extra, pending) -> bool:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .tasks import compile_task

        try:
            b.plan = ray.get(ref)
        except (ray.exceptions.RayError, SchedlabError) as e:
            self.summary.pipelines_failed += 1
            why = first_line(e, last=True)
            self.summary.errors.append(f"seed {b.key.seed}: pipeline failed: {why}")
            self.advance(self.cfg.schedules_per_pipeline, f"seed {b.key.seed}: pipeline failed")
            self.note(f"seed {b.key.seed}: pipeline failed: {why}")
            return True
        n = len(b.plan.samples)
        self.summary.errors += b.plan.errors
        self.summary.plan_s += b.plan.seconds
        self.shrink(self.cfg.schedules_per_pipeline - n)
        b.rows, b.compile_s = [None] * n, [math.nan] * n
        b.compiles_left = n
        if n == 0:
            return self.finish(b)
        where = NodeAffinitySchedulingStrategy(b.plan.node_id, soft=True)
        for i in range(n):
            fault = self.faults.get((b.key.seed, i), "")
            cref = compile_task.options(num_cpus=1, max_retries=self.cfg.max_retries, scheduling_strategy=where).remote(
                [b.plan_ref], i, self.cfg.compile_timeout, "die" if fault == "die" else "", self.cfg.quiet_measurement)
            pending[cref] = ("compile", b, i, None)
        return False

    def on_compile(self, ref, b: _Batch, i: int, _extra, pending) -> bool:
        import ray

        from backends.protocols import get_protocol

        b.compiles_left -= 1
        try:
            outcome = ray.get(ref)
        except ray.exceptions.RayError as e:
            done = self.record(b, i, Measurement(WORKER_DIED, error=f"compile task: {first_line(e, last=True)} "
                                                 f"(tried {self.cfg.max_retries + 1} times)"))
            return self.submit_blocks(b, pending) or done
        b.compile_s[i] = outcome.compile_s
        if math.isfinite(outcome.compile_s):
            self.summary.compile_s += outcome.compile_s
        if outcome.status != "ok":
            done = self.record(b, i, Measurement(outcome.status, error=outcome.error, compile_s=outcome.compile_s))
            return self.submit_blocks(b, pending) or done
        # the benchmarker of outcome.node_id, the node that compiled it, reattaches outcome.kernel
        if self.cfg.measurement == "interleaved":
            b.blocks.setdefault(outcome.node_id, []).append((i, outcome.kernel))
            return self.submit_blocks(b, pending)
        fault = self.faults.get((b.key.seed, i), "")
        mref = self.benchmarker(outcome.node_id).measure.remote(
            b.plan_ref, i, get_protocol(self.cfg.protocol, self.cfg.benchmark_timeout), self.cfg.compile_timeout,
            fault if fault != "die" else "", self.cfg.quiet_measurement, outcome.kernel)
        pending[mref] = ("measure", b, i, outcome.node_id)
        return False

    def submit_blocks(self, b: _Batch, pending) -> bool:
        """Once every compile of a batch has returned, one interleaved measurement per node of the samples compiled
        there (the node's kernel cache has them). Returns False: the batch waits for those measurements."""
        from backends.protocols import get_protocol

        if b.compiles_left > 0 or not b.blocks:
            return False
        protocol = get_protocol(self.cfg.protocol, self.cfg.benchmark_timeout)
        for node, samples in b.blocks.items():
            indices, kernels = zip(*sorted(samples, key=lambda s: s[0]))
            indices = list(indices)
            faults = tuple(f if (f := self.faults.get((b.key.seed, i), "")) != "die" else "" for i in indices)
            mref = self.benchmarker(node).measure_block.remote(b.plan_ref, indices, protocol, self.cfg.compile_timeout,
                                                               faults, self.cfg.quiet_measurement, kernels)
            pending[mref] = ("measure_block", b, -1, (node, indices))
        b.blocks = {}
        return False

    def on_measure_block(self, ref, b: _Batch, _i, extra, pending) -> bool:
        import ray

        node, indices = extra
        try:
            ms = ray.get(ref)
        except ray.exceptions.RayError as e:
            self.benchmarkers.pop(node, None)  # a fresh actor for what comes next
            finished = False
            for i in indices:
                if not self.measure_again(b, i, node, pending):
                    finished = self.record(b, i, Measurement(WORKER_DIED, error=f"benchmarker: "
                                                             f"{first_line(e, last=True)}")) or finished
            return finished
        b.nodes.add(node)
        finished = False
        for i, m in zip(indices, ms):
            finished = self.measured(b, i, m) or finished
        return finished

    def measured(self, b: _Batch, i: int, m: Measurement) -> bool:
        m.compile_s = b.compile_s[i]  # the compile task's time, not the cache load before measuring
        if math.isfinite(m.measure_s):
            self.summary.measure_s += m.measure_s
        if math.isfinite(m.wait_s):
            self.summary.wait_s += m.wait_s
        return self.record(b, i, m)

    def on_measure(self, ref, b: _Batch, i: int, node: str, pending) -> bool:
        import ray

        try:
            m = ray.get(ref)
        except ray.exceptions.RayError as e:
            self.benchmarkers.pop(node, None)  # a fresh actor for what comes next
            if self.measure_again(b, i, node, pending):
                return False
            m = Measurement(WORKER_DIED, error=f"benchmarker: {first_line(e, last=True)}")
        else:
            b.nodes.add(node)
        return self.measured(b, i, m)

    def measure_again(self, b: _Batch, i: int, dead: str, pending) -> bool:
        """Once per sample, measure it on a live node after its benchmarker died (with its node, or alone): the
        kernel is compiled again there (numba's cache is per node). Another node is preferred; the same node
        gets a fresh benchmarker if it is alive. False when the sample was already measured again or no node is
        left: it is then a worker_died row."""
        import ray

        from backends.protocols import get_protocol

        if (b.key, i) in self.measured_again:
            return False
        alive = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        nodes = [n for n in alive if n != dead] or [n for n in alive if n == dead]
        if not nodes:
            return False
        self.measured_again.add((b.key, i))
        self.summary.remeasured += 1
        node = nodes[(b.key.seed + i) % len(nodes)]
        # the plan itself, not plan_ref: its object may have lived on the dead node
        mref = self.benchmarker(node).measure.remote(
            ray.put(b.plan), i, get_protocol(self.cfg.protocol, self.cfg.benchmark_timeout), self.cfg.compile_timeout,
            "", self.cfg.quiet_measurement)
        pending[mref] = ("measure", b, i, node)
        self.note(f"seed {b.key.seed} sample {i}: its benchmarker died; measuring it again on node {node[:8]}")
        return True

    def record(self, b: _Batch, i: int, m: Measurement) -> bool:
        b.rows[i] = m
        self.summary.measured[m.status] += 1
        self.advance(1, f"seed {b.key.seed} {b.plan.samples[i].sampler}: {m.status}")
        return self.finish(b) if b.done else False

    def finish(self, b: _Batch) -> bool:
        """Write the batch's rows atomically; returns True (the batch left the window)."""
        p = b.plan
        rows = batch_rows(p, b.rows)
        if write_rows(self.out, self.tgt.name, b.key, rows, machine=self.machine_of(b.nodes)) is not None:
            self.summary.batches_written += 1
            self.summary.samples_written += len(rows)
            self.summary.status.update(m.status for m in b.rows)
        ok = sum(m.ok for m in b.rows)
        self.note(f"batch {b.key.batch_id}: {len(rows)} samples, {ok} ok, planned in {format_seconds(p.seconds)}")
        return True

    def machine_of(self, nodes: set) -> str:
        """The machine description(s) of the nodes that measured a batch, distinct, joined by " | " ("" unknown)."""
        known = {n.node_id: n.machine for n in self.summary.nodes}
        return " | ".join(sorted({known[n] for n in nodes if known.get(n)}))

    def benchmarker(self, node: str):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .tasks import Benchmarker

        actor = self.benchmarkers.get(node)
        if actor is None:
            actor = Benchmarker.options(
                **benchmarker_resources(self.cfg.backend, self.cfg.benchmark_cpus),
                max_restarts=self.cfg.max_retries, max_task_retries=self.cfg.max_retries,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
            self.benchmarkers[node] = actor
        return actor

    def existing(self, path: Path) -> None:
        import pyarrow.parquet as pq

        n = pq.read_metadata(path).num_rows
        self.summary.batches_existing += 1
        self.summary.samples_existing += n
        self.shrink(self.cfg.schedules_per_pipeline - n)
        self.advance(n, f"{path.name} already written")

    # -- progress ------------------------------------------------------------------------------------------

    def advance(self, n: int, what: str) -> None:
        s = self.summary.measured
        self.progress.update(n, f"{what} (ok {s['ok']}, failed {sum(s.values()) - s['ok']})")

    def shrink(self, n: int) -> None:
        self.progress.add_total(-n)

    def note(self, line: str) -> None:
        self.progress.write(line)


# -- starting ------------------------------------------------------------------------------------------------

def in_ray_job() -> bool:
    """Whether this process is the entrypoint of `ray job submit` (its cwd is a temporary copy)."""
    return "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ


def resolve_paths(cfg: JobConfig) -> tuple[Path, str]:
    """Absolute output directory and tracking URI; under `ray job submit` relative ones would land in the
    job's temporary working directory and vanish with it, so they are refused."""
    from train.registry import tracking_uri

    out = Path(cfg.out).expanduser()
    if in_ray_job():
        if not out.is_absolute():
            raise JobError(f"out={cfg.out} is relative: under ray job submit the working directory is a temporary "
                           "copy; give an absolute path")
        t = cfg.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")  # None: the per-user store, absolute
        if t is not None and (t.startswith("sqlite:///") and not t.startswith("sqlite:////")
                              or "://" not in t and not Path(t).is_absolute()):
            raise JobError("tracking_uri must be absolute under ray job submit (sqlite:////abs/mlflow.db, an http:// "
                           "server, or leave it out for the per-user store)")
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise JobError(f"out={cfg.out} is not a directory")
    return out, tracking_uri(cfg.tracking_uri)


def connect(cfg: JobConfig) -> float:
    """Join the cluster (`ray job submit`, RAY_ADDRESS or ray_address) or start a local one; returns its CPUs."""
    import ray

    address = cfg.ray_address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=True)
    else:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # no token file in the user's home for a private cluster
        # WARNING: "Started a local Ray instance." says nothing to a user who asked for no cluster
        ray.init(address="local", num_cpus=cfg.num_cpus, include_dashboard=False, log_to_driver=True,
                 logging_level=logging.WARNING)
    return float(ray.cluster_resources().get("CPU", 1.0))


def run_job(cfg: JobConfig, progress: ProgressSetting | None = None) -> JobSummary:
    """Run the whole job as configured (`progress` instead of cfg.progress when given); SchedlabError for what
    the user must fix."""
    import ray

    from ir.target import get_target

    import backends

    tgt = get_target(cfg.target)
    try:
        backends.get_backend(cfg.backend).check_target(tgt)  # the backend says which target kinds it builds for
    except SchedlabError as e:
        raise JobError(str(e)) from None
    out, tracking = resolve_paths(cfg)
    out.mkdir(parents=True, exist_ok=True)
    cpus = connect(cfg)
    total = cfg.rounds * cfg.pipelines_per_round * cfg.schedules_per_pipeline
    bar = Progress(total, "sample", cfg.progress if progress is None else progress)
    # `ray job stop` sends SIGTERM: end like Ctrl-C. SIGINT is set too: a process started with SIGINT ignored
    # (by nohup, or under a test runner's workers) would otherwise be deaf to Ctrl-C
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    run = None
    try:
        nodes = _checked_nodes(cfg)
        run = JobRun.start(cfg, out, tracking, tgt.name)
        job = Job(cfg, out, tracking, tgt, cpus, bar, run.run_id)
        job.summary.nodes = nodes
        summary = job.run()
        summary.run = f"{run.finish(summary)} ({run.run_id})"
        return summary
    except BaseException:
        if run is not None:
            run.fail()
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        bar.close()
        ray.shutdown()


def _checked_nodes(cfg: JobConfig) -> list:
    """Every node's report, or JobError naming the node that lacks a package or runs other code (.nodes)."""
    from .nodes import NodeError, check_nodes

    try:
        return check_nodes(cfg.backend, prune_bytes=None if cfg.kernel_cache_gb is None
                           else int(cfg.kernel_cache_gb * 1e9))
    except NodeError as e:
        raise JobError(str(e)) from None


def _interrupt(signum, frame):
    raise KeyboardInterrupt
