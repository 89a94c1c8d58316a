"""Local data generation: the job's batches (generator.batch) planned, compiled, measured and written on
this host, without Ray and without a cluster (DESIGN §3.7; halide-autoschedulers.md §2).

    spec = BatchSpec(seeds=(0, 1, 2), schedules_per_pipeline=16)
    summary = generate_batch(spec, "data")     # data/target=host/batch-r0-p<seed>-<hash>.parquet, one per seed

It runs the job's functions in one process: the same BatchKey per pipeline seed, the same file name, the same
sampler (plan_batch: one beam-search schedule and random-dropout schedules under the sampling model, by
default the job's round-0 model `random:<schedule_seed>`; locally by default with the naive and simple
baselines first and random schedules filling small search spaces) and the same rows. A local run and a job
over the same configuration therefore write the same files, and either resumes the other; a batch on disk
is reported, not redone (overwrite=True replaces it atomically). A failed compile or measurement is a row
with its status; a pipeline that cannot be generated is skipped, counted, and written by no file (a rerun
tries it again).

    python -m generator.datagen seeds=0:8 schedules_per_pipeline=16 out=DIR [key=value ...]   # --help: every key
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from backends.protocols import PROTOCOLS, QUICK, ProtocolName, get_protocol  # noqa: F401 - re-exported: the named protocols
from ir.errors import SchedlabError, first_line
from backends.measuring import measuring_machine
from ir.progress import ProgressSetting
from ir.units import format_seconds

from .batch import (SMALL_OUTPUT, BatchPlan, BatchSpec, SamplingModel, batch_rows, derived_seed, get_baseline,
                    plan_batch, prepare_pipeline, write_rows)
from .random_pipeline import DEFAULT_MOTIF_KINDS, MixWeights

__all__ = ["PROTOCOLS", "QUICK", "BatchSpec", "BatchSummary", "RunSummary", "derived_seed", "generate_batch",
           "prepare_pipeline", "sample_schedules"]


Progress = Callable[[int, int, str], None]  # (schedules done, schedules planned, what just happened)


@dataclass
class BatchSummary:
    """One batch: one pipeline seed's file (None when its pipeline could not be generated)."""

    batch_id: str
    path: Path | None
    pipelines: int  # pipelines measured (0 or 1)
    schedules: int  # rows written
    ok: int
    failed_by_status: dict[str, int] = field(default_factory=dict)  # rows by status, + featurize_error (no row)
    seconds: float = 0.0
    pipelines_skipped: int = 0  # generation failed: no rows
    reused: bool = False  # the batch was already written; nothing was measured
    errors: list[str] = field(default_factory=list)  # one line per skipped pipeline / unwritable schedule

    def __str__(self) -> str:
        failed = ", ".join(f"{k} {v}" for k, v in sorted(self.failed_by_status.items())) or "none failed"
        skipped = f", {self.pipelines_skipped} pipelines skipped" if self.pipelines_skipped else ""
        how = "already written" if self.reused else format_seconds(self.seconds)
        return (f"batch {self.batch_id}: {self.pipelines} pipelines, {self.schedules} schedules, {self.ok} ok "
                f"({failed}){skipped} -> {self.path} [{how}]")


@dataclass
class RunSummary:
    """The batches of one generate_batch call, in seed order, with their totals."""

    batches: list[BatchSummary] = field(default_factory=list)

    @property
    def paths(self) -> list[Path]:
        return [b.path for b in self.batches if b.path is not None]

    @property
    def batch_ids(self) -> list[str]:
        return [b.batch_id for b in self.batches]

    @property
    def pipelines(self) -> int:
        return sum(b.pipelines for b in self.batches)

    @property
    def pipelines_skipped(self) -> int:
        return sum(b.pipelines_skipped for b in self.batches)

    @property
    def schedules(self) -> int:
        return sum(b.schedules for b in self.batches)

    @property
    def ok(self) -> int:
        return sum(b.ok for b in self.batches)

    @property
    def failed_by_status(self) -> dict[str, int]:
        total = collections.Counter()
        for b in self.batches:
            total.update(b.failed_by_status)
        return dict(total)

    @property
    def reused(self) -> bool:
        """Every batch was already written: nothing was measured."""
        return all(b.reused for b in self.batches)

    @property
    def errors(self) -> list[str]:
        return [e for b in self.batches for e in b.errors]

    @property
    def seconds(self) -> float:
        return sum(b.seconds for b in self.batches)

    def __str__(self) -> str:
        failed = ", ".join(f"{k} {v}" for k, v in sorted(self.failed_by_status.items())) or "none failed"
        skipped = f", {self.pipelines_skipped} pipelines skipped" if self.pipelines_skipped else ""
        return (f"{len(self.batches)} batches ({sum(b.reused for b in self.batches)} already written), "
                f"{self.pipelines} pipelines, {self.schedules} schedules, {self.ok} ok ({failed}){skipped}")


def sample_schedules(pipeline, spec: BatchSpec, seed: int,
                     model: SamplingModel | None = None) -> list[tuple[str, object]]:
    """The (sampler, LoopNest) pairs that the one sampler (generator.batch.plan_batch) plans for the pipeline of
    `seed` under `spec`, in order; `pipeline` must be that seed's pipeline."""
    plan = plan_batch(spec.key(seed), model or SamplingModel(spec.random_model))
    if plan.pipeline.fingerprint != pipeline.fingerprint:
        raise ValueError(f"the pipeline given is not the random pipeline of seed {seed} under this spec")
    return [(s.sampler, s.loopnest) for s in plan.samples]


def _measure_plan(plan: BatchPlan, spec: BatchSpec, target, worker, tick) -> list:
    """A Measurement per planned sample, in order; a failure is a Measurement with its status."""
    import backends

    p, inputs, expected = plan.pipeline, plan.inputs, plan.expected
    protocol = get_protocol(spec.protocol, timeout=spec.benchmark_timeout)  # as generator.job measures
    if spec.measurement == "interleaved":
        builts = [backends.build(p, s.loopnest, target, backend=spec.backend, timeout=spec.compile_timeout,
                                 worker=worker) for s in plan.samples]
        out = backends.run_interleaved(builts, inputs, protocol, expected=expected, worker=worker,
                                       data_key=plan.key.batch_id, seed=plan.key.seed)
        for s, m in zip(plan.samples, out):
            tick(f"seed {plan.key.seed} {s.sampler}: {m.status}" + (f" {format_seconds(m.min_s)}" if m.ok else ""))
        return out
    out = []
    for s in plan.samples:
        name, loopnest = s.sampler, s.loopnest
        built = backends.build(p, loopnest, target, backend=spec.backend, timeout=spec.compile_timeout, worker=worker)
        m = backends.run(built, inputs, protocol, expected=expected, worker=worker, data_key=plan.key.batch_id)
        out.append(m)
        tick(f"seed {plan.key.seed} {name}: {m.status}" + (f" {format_seconds(m.min_s)}" if m.ok else ""))
    return out


def generate_batch(spec: BatchSpec, root: Path | str, worker=None, progress: Progress | None = None,
                   overwrite: bool = False, model: SamplingModel | None = None) -> RunSummary:
    """Plan, measure and write the batch of every seed of `spec` (one file each, as generator.job writes them);
    a batch already on disk is reported, not redone, unless `overwrite` (then it is replaced atomically).
    `model` samples the schedules (default: the job's round-0 model, random:<schedule_seed>)."""
    from featurize.dataset import batch_path

    tgt = _target(spec.target, spec.backend)
    model = model or SamplingModel(spec.random_model)
    planned = len(spec.seeds) * spec.schedules_per_pipeline
    done = 0

    def tick(note: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, planned, note)

    own = worker is None
    if own:
        from backends.worker import Worker

        worker = Worker()
    run = RunSummary()
    try:
        for key in spec.keys():
            t0 = time.perf_counter()
            path = batch_path(root, tgt.name, key.batch_id)
            if path.exists() and not overwrite:
                run.batches.append(_summary_of_file(key.batch_id, path))
                continue
            try:
                plan = plan_batch(key, model)
            except Exception as e:  # noqa: BLE001 - a broken random pipeline is skipped and counted
                planned -= spec.schedules_per_pipeline
                run.batches.append(BatchSummary(key.batch_id, None, 0, 0, 0, pipelines_skipped=1, errors=[
                    f"seed {key.seed}: pipeline failed: {type(e).__name__}: {first_line(e)}"]))
                if progress is not None:
                    progress(done, planned, f"seed {key.seed}: pipeline skipped")
                continue
            planned -= spec.schedules_per_pipeline - len(plan.samples) - len(plan.errors)
            for _ in plan.errors:
                tick(f"seed {key.seed}: featurize_error")
            measurements = _measure_plan(plan, spec, tgt, worker, tick)
            path = write_rows(root, tgt.name, key, batch_rows(plan, measurements), overwrite, measuring_machine())
            status = collections.Counter(m.status for m in measurements)
            failed = {k: v for k, v in status.items() if k != "ok"}
            if plan.errors:
                failed["featurize_error"] = len(plan.errors)
            run.batches.append(BatchSummary(key.batch_id, path, 1, len(measurements), status["ok"], failed,
                                            time.perf_counter() - t0, 0, False, list(plan.errors)))
    finally:
        if own:
            worker.close()
    return run


def _target(name: str, backend: str):
    """The target of a spec, refused up front (one line) when the spec's backend does not build for its kind,
    rather than filling a batch with compile errors."""
    import backends
    from ir.target import get_target

    tgt = get_target(name)
    backends.get_backend(backend).check_target(tgt)
    return tgt


def _summary_of_file(batch_id: str, path: Path) -> BatchSummary:
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=["pipeline_id", "status"])
    status = collections.Counter(t.column("status").to_pylist())
    return BatchSummary(batch_id, path, len(set(t.column("pipeline_id").to_pylist())), t.num_rows, status["ok"],
                        {k: v for k, v in status.items() if k != "ok"}, reused=True)


# -- command line -------------------------------------------------------------------------------------

PROG = "python -m generator.datagen"
DESCRIPTION = ("Generates the job's batches on this host, without Ray: one Parquet file per pipeline seed, the job's "
               "file names and sampler, so a local run and the job resume each other. Give the seeds "
               "(seeds=0:64); every other key has a default. A bad key or value stops with one line naming "
               "what to fix (exit status 2).")


@dataclass(frozen=True)
class DatagenConfig:
    """python -m generator.datagen: the keys the job's config (generator/job/config.py) shares have its names."""

    seeds: str = ""  # pipeline seeds, one batch each: A:B (B exclusive), A,B,C or A
    schedules_per_pipeline: int = 16  # distinct schedules per pipeline
    out: str = "data"  # dataset root: batches go to <out>/target=<name>/batch-<id>.parquet
    max_stages: int = 6  # most stages of a random pipeline, input and output included (>= 2)
    output_size: tuple[int, int, int] = SMALL_OUTPUT  # W,H,C of the random pipelines' outputs (the largest with
    #   naive_runtime)
    naive_runtime: tuple[float, float] | None = None  # LO,HI seconds: size each pipeline so its estimated naive
    #   runtime is a log-uniform draw from [LO, HI] (generator.sizing); none: output_size as given
    target: str = "host"  # host, or a conf/targets/<name>.yaml target; the dataset partition
    protocol: ProtocolName = "full-ordered"  # backends.PROTOCOLS, as the job's (full until 2026-12-05: protocol=full
    #   names the batches written before)
    measurement: Literal["sequential", "interleaved"] = "sequential"  # generator.batch.MEASUREMENTS (the job's:
    #   interleaved; sequential keeps the names of the batches written before)
    seed: int = 0  # the job's seed: seeds the dropout draws and the round-0 model random:<seed>
    round: int = 0  # the job round the batches belong to (part of their names)
    beam_size: int = 8  # beam width of the beam-search sample
    passes: int = 2  # coarse-to-fine passes of the beam-search sample
    dropout: float = 1.0  # % chance that a dropout sample is the fully greedy schedule
    baselines: tuple[str, ...] = ("naive", "simple")  # generator.batch.BASELINES planned first ('': none; the job's: none)
    random_fill: bool = True  # random schedules when beam + dropout find fewer distinct ones than asked (the job's: false)
    contrasts: int = 0  # one-decision contrasts of the beam sample (generator.contrast), planned after it
    contrast_kinds: tuple[str, ...] = ("serial", "inline", "scalar", "rolled")  # their kinds, in turn
    #   (generator.contrast.KINDS: serial, inline, compute, scalar, rolled)
    rivals: tuple[str, ...] = ()  # cost models by registered name whose beam picks are planned after the beam sample
    model: str | None = None  # sampling model: random:<seed> or a model URI (none: random:<seed>, the job's round 0)
    markov: bool = False  # draw stage kinds from the GPU variant's Markov transition matrix (generator.random_pipeline)
    mix_weights: MixWeights = "indices"  # channel mixes' weights: from the channel indices or an
    #   input (generator.random_pipeline.MIX_WEIGHTS)
    motifs: float = 0.0  # chance of an app-like motif (of motif_kinds) per stage slot (random_pipeline.MOTIFS)
    motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS  # what a motif slot draws from
    #   (random_pipeline.MOTIFS); the default keeps the batch names
    check_outputs: bool = True  # every schedule's output against the reference interpreter
    backend: str = "numba"  # the registered backend that compiles and measures (numba, halide)
    overwrite: bool = False  # regenerate batches that are already written
    progress: ProgressSetting = "auto"  # auto: a bar on a terminal, a line per schedule elsewhere; bar | lines | false

    def __post_init__(self):
        self.seed_list  # noqa: B018 - a one-line error for a bad seeds value, now
        for name in ("schedules_per_pipeline", "beam_size", "passes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_stages < 2:
            raise ValueError(f"max_stages counts the input and output stages; it must be >= 2, got {self.max_stages}")
        if len(self.output_size) != 3 or min(self.output_size) < 1:
            raise ValueError(f"output_size must be W,H,C (three positive ints), got {self.output_size}")
        from .sizing import check_naive_runtime

        object.__setattr__(self, "naive_runtime", check_naive_runtime(self.naive_runtime))
        if not 0 < self.dropout <= 100:
            raise ValueError(f"dropout must be a percentage in (0, 100], got {self.dropout}")
        for name in self.baselines:
            get_baseline(name)
        from .batch import check_rivals
        from .random_pipeline import check_mix_weights, check_motif_kinds, check_motifs

        check_mix_weights(self.mix_weights)  # here, so that a bad value is one line before any work (BatchSpec
        object.__setattr__(self, "motifs", check_motifs(self.motifs))  # checks them again)
        object.__setattr__(self, "motif_kinds", check_motif_kinds(self.motif_kinds))
        object.__setattr__(self, "rivals", check_rivals(self.rivals))

    @property
    def seed_list(self) -> tuple[int, ...]:
        """The pipeline seeds `seeds` names."""
        text = self.seeds.strip()
        if not text:
            raise ValueError("give the pipeline seeds: seeds=A:B (B exclusive), A,B,C or A")
        try:
            if ":" in text:
                a, b = (int(v) for v in text.split(":"))
                seeds = tuple(range(a, b))
            else:
                seeds = tuple(int(v) for v in text.split(","))
        except ValueError:
            raise ValueError(f"seeds must be A:B, A,B,C or A (ints), got {text!r}") from None
        if not seeds:
            raise ValueError(f"seeds {text!r} select no seed")
        return seeds


def main(argv=None) -> int:
    from ir.config import run_cli

    return run_cli(DatagenConfig, _run, argv, PROG, DESCRIPTION)


def _run(a: DatagenConfig) -> int:
    from ir.config import ConfigError

    out = Path(a.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out={a.out} is not a directory")
    _target(a.target, a.backend)  # a backend that cannot build for the target is one line, before any work
    seeds = a.seed_list
    spec = BatchSpec(seeds=seeds, schedules_per_pipeline=a.schedules_per_pipeline, max_stages=a.max_stages,
                     output_size=a.output_size, target=a.target, protocol=a.protocol, schedule_seed=a.seed,
                     markov=a.markov, mix_weights=a.mix_weights, check_outputs=a.check_outputs, round=a.round,
                     beam_size=a.beam_size, passes=a.passes, dropout=a.dropout, baselines=a.baselines,
                     random_fill=a.random_fill, backend=a.backend, naive_runtime=a.naive_runtime,
                     contrasts=a.contrasts, contrast_kinds=a.contrast_kinds, measurement=a.measurement,
                     rivals=a.rivals, motifs=a.motifs, motif_kinds=a.motif_kinds)
    model = SamplingModel(a.model or spec.random_model)
    try:
        model.cost_model(_target(a.target, a.backend))  # a model that cannot load is one error, not a failure per seed
    except SchedlabError as e:
        raise ConfigError(f"model: {first_line(e)}") from None
    from backends.worker import Worker
    from ir.progress import Progress as Display

    worker = Worker()
    bar = Display(len(seeds) * a.schedules_per_pipeline, "schedule", a.progress)
    run, t0 = RunSummary(), time.perf_counter()
    last, last_planned = 0, a.schedules_per_pipeline  # the current batch's schedules done and planned, as last reported

    def progress(done, planned, note):
        nonlocal last, last_planned
        bar.add_total(planned - last_planned)
        bar.update(done - last, note)
        last, last_planned = done, planned

    try:
        for seed in spec.seeds:  # one batch per seed, as generator.job writes them
            last, last_planned = 0, a.schedules_per_pipeline
            s = generate_batch(replace(spec, seeds=(seed,)), out, worker, progress, a.overwrite, model)
            if s.reused:
                bar.add_total(s.schedules - a.schedules_per_pipeline)
                bar.update(s.schedules, f"seed {seed}: already written")
            for b in s.batches:
                run.batches.append(b)
                bar.write(str(b), sys.stdout)
                for e in b.errors:
                    bar.write(f"  {e}", sys.stdout)
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted: {len(run.batches)} of {len(spec.seeds)} batches done in {a.out}", file=sys.stderr)
        return 130
    except (SchedlabError, OSError) as e:
        bar.close()
        print(f"{PROG}: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    finally:
        worker.close()
    bar.close()
    totals = collections.Counter({"ok": run.ok, **run.failed_by_status})
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(totals.items()) if v)
    print(f"{len(run.batches)} batches ({sum(b.reused for b in run.batches)} already written), "
          f"{run.pipelines} pipelines ({run.pipelines_skipped} skipped), {run.schedules} schedules: "
          f"{statuses or 'none'}; yield {100.0 * run.ok / max(1, run.schedules):.1f}% in "
          f"{format_seconds(time.perf_counter() - t0)} -> {a.out}")
    return 0 if run.ok else 1


if __name__ == "__main__":
    sys.exit(main())
