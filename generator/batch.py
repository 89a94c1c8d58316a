"""One batch of data generation, shared by the local runner (generator.datagen) and the Ray job
(generator.job): its key and file name, the one sampler that plans its schedules, and its rows.

A batch is one random pipeline and the schedules the sampling model proposes for it (adams2019 §5: one
beam-search schedule, then random-dropout greedy schedules, distinct by fingerprint; optionally baseline
schedules first, and random schedules (ir.sampling) filling what a small search space leaves short). It is
named by a hash of everything that decides its pipeline and its schedules except
the model (`BatchKey.batch_id`), so a local run and a job over the same configuration write the same
files, and either one resumes the other. Nothing here needs Ray.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ir.errors import SchedlabError

from .random_pipeline import DEFAULT_MOTIF_KINDS, check_mix_weights, check_motif_kinds, check_motifs, random_pipeline

__all__ = ["BASELINES", "BaselineError", "BatchKey", "BatchPlan", "BatchSpec", "PlannedSample", "SamplingModel",
           "batch_rows", "derived_seed", "get_baseline", "plan_batch", "prepare_pipeline", "register_baseline",
           "write_rows", "MEASUREMENTS"]

DRAWS_PER_SAMPLE = 4  # dropout draws tried per wanted sample before a small space gives fewer samples
# How a batch's schedules are timed: "sequential", each under the protocol in turn (the datasets of 2026-11), or
# "interleaved", all of a pipeline's in rounds of one sample each (backends.run_interleaved), so that every schedule
# sees the same states of the machine and their order repeats from run to run (docs/generator.md)
MEASUREMENTS = ("sequential", "interleaved")

# 64 x 48 x 3 outputs: every stage is a few thousand points, so a schedule compiles in ~1-2 s and runs in
# micro- to milliseconds, while tiling, vectorization and parallelism still change runtimes by 10-1000x.
SMALL_OUTPUT = (64, 48, 3)


class BaselineError(SchedlabError):
    """An unknown baseline schedule name; the message lists the registered ones."""


# -- baselines: fixed schedules a batch may start with ----------------------------------------------------

Baseline = Callable[[object, object], object]  # (pipeline, target) -> ir.LoopNest
BASELINES: dict[str, Baseline] = {}


def register_baseline(name: str):
    """Decorator: `@register_baseline("naive") def naive(pipeline, target) -> LoopNest`."""

    def add(fn: Baseline) -> Baseline:
        BASELINES[name] = fn
        return fn

    return add


def get_baseline(name: str) -> Baseline:
    try:
        return BASELINES[name]
    except KeyError:
        raise BaselineError(f"unknown baseline {name!r}; registered: {', '.join(sorted(BASELINES))}") from None


@register_baseline("naive")
def _naive(pipeline, target):
    from ir.builder import naive_schedule

    return naive_schedule(pipeline)


@register_baseline("simple")
def _simple(pipeline, target):
    from ir.builder import simple_schedule

    return simple_schedule(pipeline, target)


# -- the key and the spec ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchKey:
    target: str  # the config's target name ("host" resolves on each node)
    round: int
    seed: int  # random pipeline seed
    schedules: int
    max_stages: int
    output_size: tuple[int, int, int]
    markov: bool
    beam_size: int
    passes: int
    dropout: float
    job_seed: int  # seeds the dropout draws
    protocol: str
    check_outputs: bool
    backend: str = "numba"  # numba | halide
    baselines: tuple[str, ...] = ()  # BASELINES planned before the beam sample
    random_fill: bool = False  # random schedules after the dropout draws, up to `schedules`
    naive_runtime: tuple[float, float] = ()  # (lo, hi) s: output_size is the largest, scaled (generator.sizing)
    contrasts: int = 0  # one-decision contrasts of the beam sample (generator.contrast) planned after it
    contrast_kinds: tuple[str, ...] = ()  # the kinds of those contrasts, in turn (): generator.contrast.DECISIONS
    measurement: str = "sequential"  # MEASUREMENTS: how a batch's schedules are timed (part of what a label means)
    mix_weights: str = "indices"  # generator.random_pipeline.MIX_WEIGHTS: where its channel mixes get their weights
    rivals: tuple[str, ...] = ()  # cost models (registered names) whose beam picks are planned after the beam sample
    motifs: float = 0.0  # chance of an app-like motif (of motif_kinds) per stage slot (generator.random_pipeline)
    motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS  # random_pipeline.MOTIFS a motif slot draws from

    @property
    def batch_id(self) -> str:
        fields = asdict(self)
        for name in ("baselines", "random_fill", "naive_runtime", "contrasts", "contrast_kinds", "rivals", "motifs"):
            if not fields[name]:
                del fields[name]  # batches written before these options existed keep their names
        if fields["measurement"] == "sequential":
            del fields["measurement"]
        if fields["mix_weights"] == "indices":
            del fields["mix_weights"]
        if tuple(fields["motif_kinds"]) == DEFAULT_MOTIF_KINDS or not self.motifs:
            del fields["motif_kinds"]  # the kinds before conv_layer existed, or no motif drawn at all
        blob = json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
        return f"r{self.round}-p{self.seed}-{hashlib.sha256(blob).hexdigest()[:12]}"

    @property
    def pipeline_size(self) -> tuple[int, int, int]:
        """The output size of this batch's pipeline: output_size, or with naive_runtime the size that puts its
        estimated naive runtime on the seed's draw (generator.sizing)."""
        if not self.naive_runtime:
            return self.output_size
        from .sizing import sized_output

        return sized_output(self.seed, self.max_stages, self.output_size, self.naive_runtime, self.markov,
                            self.mix_weights, self.motifs, self.motif_kinds)


@dataclass(frozen=True)
class BatchSpec:
    """Batches of several pipeline seeds under one sampling configuration: one BatchKey per seed. The
    defaults are the job's (JobConfig) except two that local generation, without a trained model, has
    always had: the naive and simple baselines, and random schedules filling small search spaces (tiny
    test pipelines have only a handful of beam/dropout schedules). `of_job` maps a job's config exactly."""

    seeds: tuple[int, ...]  # random pipeline seeds: one batch each
    schedules_per_pipeline: int = 16
    max_stages: int = 6
    output_size: tuple[int, int, int] = SMALL_OUTPUT
    target: str = "host"  # ir.target name; the dataset partition uses the resolved target's name
    protocol: str = "quick"  # a name of backends.protocols.PROTOCOLS
    schedule_seed: int = 0  # the job's `seed`: seeds the dropout draws (BatchKey.job_seed)
    markov: bool = False
    check_outputs: bool = True  # compare every schedule's outputs with ir.interpret
    compile_timeout: float = 600.0  # seconds per compilation (adams2019 §5: a 10-minute kill); not in the key
    round: int = 0
    beam_size: int = 8
    passes: int = 2
    dropout: float = 1.0  # % chance that a dropout sample is the fully greedy schedule
    baselines: tuple[str, ...] = ("naive", "simple")  # BASELINES planned first
    backend: str = "numba"
    benchmark_timeout: float = 60.0  # seconds per measurement, output check included; not in the key
    random_fill: bool = True  # random schedules after the dropout draws, up to schedules_per_pipeline
    naive_runtime: tuple[float, float] | None = None  # (lo, hi) s: size each pipeline (generator.sizing)
    contrasts: int = 0  # one-decision contrasts of the beam sample, planned right after it (generator.contrast)
    contrast_kinds: tuple[str, ...] = ()  # their kinds, in turn (generator.contrast.KINDS); (): DECISIONS
    measurement: str = "sequential"  # MEASUREMENTS: one schedule after another, or a pipeline's schedules in rounds
    mix_weights: str = "indices"  # generator.random_pipeline.MIX_WEIGHTS: channel mixes' weights from indices or inputs
    rivals: tuple[str, ...] = ()  # cost models whose beam picks are planned after the beam sample (check_rivals)
    motifs: float = 0.0  # chance of an app-like motif (of motif_kinds) per stage slot (random_pipeline.MOTIFS)
    motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS  # what a motif slot draws from
    #   (random_pipeline.MOTIFS); the default keeps the batch names

    def __post_init__(self):
        from backends.protocols import get_protocol

        from .sizing import check_naive_runtime

        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        object.__setattr__(self, "output_size", tuple(int(v) for v in self.output_size))
        object.__setattr__(self, "baselines", tuple(self.baselines))
        object.__setattr__(self, "naive_runtime", check_naive_runtime(self.naive_runtime))
        if not self.seeds:
            raise ValueError("a batch needs at least one pipeline seed")
        if self.schedules_per_pipeline < 1:
            raise ValueError(f"schedules_per_pipeline must be >= 1, got {self.schedules_per_pipeline}")
        check_contrasts(self.contrasts, self.schedules_per_pipeline)
        object.__setattr__(self, "contrast_kinds", normal_contrast_kinds(self.contrast_kinds))
        get_protocol(self.protocol)  # a ProtocolError (a ValueError) listing the names
        if self.measurement not in MEASUREMENTS:
            raise ValueError(f"measurement must be one of {', '.join(MEASUREMENTS)}, got {self.measurement!r}")
        check_mix_weights(self.mix_weights)
        object.__setattr__(self, "motifs", check_motifs(self.motifs))
        object.__setattr__(self, "motif_kinds", check_motif_kinds(self.motif_kinds))
        if len(self.output_size) != 3 or min(self.output_size) < 1:
            raise ValueError(f"output_size must be three positive ints, got {self.output_size}")
        for name in self.baselines:
            get_baseline(name)
        object.__setattr__(self, "rivals", check_rivals(self.rivals))

    @classmethod
    def of_job(cls, cfg, round_: int) -> BatchSpec:
        """The batches of round `round_` of a job (generator.job.JobConfig)."""
        return cls(seeds=tuple(cfg.pipeline_seeds(round_)), schedules_per_pipeline=cfg.schedules_per_pipeline,
                   max_stages=cfg.max_stages, output_size=tuple(cfg.output_size), target=cfg.target,
                   protocol=cfg.protocol, schedule_seed=cfg.seed, markov=cfg.markov, check_outputs=cfg.check_outputs,
                   compile_timeout=cfg.compile_timeout, round=round_, beam_size=cfg.beam_size, passes=cfg.passes,
                   dropout=cfg.dropout, baselines=tuple(cfg.baselines), backend=cfg.backend,
                   benchmark_timeout=cfg.benchmark_timeout, random_fill=cfg.random_fill,
                   naive_runtime=cfg.naive_runtime, contrasts=cfg.contrasts, contrast_kinds=tuple(cfg.contrast_kinds),
                   measurement=cfg.measurement, mix_weights=cfg.mix_weights, rivals=tuple(cfg.rivals),
                   motifs=cfg.motifs, motif_kinds=tuple(cfg.motif_kinds))

    def key(self, seed: int) -> BatchKey:
        return BatchKey(self.target, self.round, int(seed), self.schedules_per_pipeline, self.max_stages,
                        self.output_size, self.markov, self.beam_size, self.passes, self.dropout, self.schedule_seed,
                        self.protocol, self.check_outputs, self.backend, self.baselines, self.random_fill,
                        self.naive_runtime or (), self.contrasts, self.contrast_kinds, self.measurement,
                        self.mix_weights, self.rivals, self.motifs, self.motif_kinds)

    def keys(self) -> tuple[BatchKey, ...]:
        return tuple(self.key(s) for s in self.seeds)

    @property
    def batch_ids(self) -> tuple[str, ...]:
        return tuple(k.batch_id for k in self.keys())

    @property
    def random_model(self) -> str:
        """The model of round 0: the hybrid network at random weights, seeded as the job seeds it."""
        return f"random:{self.schedule_seed}"


# -- the pipeline of a seed -------------------------------------------------------------------------------


def derived_seed(*parts: int) -> int:
    """A 63-bit seed from integers, the same in every process (unlike hash())."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little") >> 1


def prepare_pipeline(seed: int, max_stages: int, output_size: tuple[int, int, int], markov: bool = False,
                     check_outputs: bool = True, mix_weights: str = "indices", motifs: float = 0.0,
                     motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS):
    """(pipeline, inputs, expected outputs or None) of one seed; raises when the pipeline cannot be made."""
    import numpy as np

    import ir

    p = random_pipeline(seed, max_stages, output_size, markov, mix_weights, motifs, motif_kinds)
    inputs = p.random_inputs(seed)
    if not check_outputs:
        return p, inputs, None
    with np.errstate(all="ignore"):  # NaN and inf are legitimate values of random programs
        return p, inputs, ir.interpret(p, inputs)


# -- the one sampler --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingModel:
    """The model a round samples with: random weights (`random:<seed>`) or a registered version, whose
    network travels to the job's tasks through Ray's object store (workers never open the MLflow store)."""

    name: str  # recorded per sample as model_version
    network: object | None = None  # the trained network; None: load `name` (random:<seed>, models:/...)

    def cost_model(self, target):
        from scheduler.cost import LearnedModel, load_model

        if self.network is None:
            return load_model(self.name, target)
        return LearnedModel(self.network, name=self.name)


def normal_contrast_kinds(kinds) -> tuple[str, ...]:
    """Contrast kinds as batch keys hold them: () for the default order (generator.contrast.DECISIONS), so that
    batches written before the option existed keep their names; a one-line ValueError for an unknown kind."""
    from .contrast import DECISIONS, check_kinds

    kinds = tuple(kinds)
    if not kinds:
        return ()
    kinds = check_kinds(kinds)
    return () if kinds == DECISIONS else kinds


def check_rivals(rivals) -> tuple[str, ...]:
    """Rival sampling models as batch keys hold them: registered cost model names (`analytical[:N]`,
    `builtin[:name]`, `learned:<model directory or checkpoint file>`), loaded where the batch is planned, so no
    MLflow URI (a local path must exist on every node); a one-line ValueError otherwise."""
    from featurize.dataset import RIVAL_SEPARATOR
    from scheduler.cost import COST_MODELS

    rivals = tuple(str(r) for r in rivals)
    for r in rivals:
        name, _, arg = r.partition(":")
        if (name not in COST_MODELS or (name == "learned" and (not arg or arg.startswith(("models:", "runs:"))))
                or RIVAL_SEPARATOR in r):
            raise ValueError(f"rivals must be registered cost model names such as analytical, analytical:7, "
                             f"builtin:host-halide or learned:<model directory> (a rival is loaded on the node that "
                             f"plans, without the MLflow store), got {r!r}")
    if len(set(rivals)) != len(rivals):
        raise ValueError(f"rivals must be distinct, got {list(rivals)}")
    return rivals


def check_contrasts(contrasts: int, schedules: int) -> None:
    """One line when `contrasts` cannot fit next to the beam sample in `schedules` per pipeline."""
    if not 0 <= contrasts < schedules:
        raise ValueError(f"contrasts must be in [0, schedules_per_pipeline - 1] (room for the beam sample they come "
                         f"from), got {contrasts} with schedules_per_pipeline {schedules}")


@dataclass
class PlannedSample:
    sampler: str  # a baseline name | beam | beam-<rival>[|<rival>...] | contrast-<serial|inline|scalar|rolled> | dropout | random
    loopnest: object  # ir.LoopNest
    features: object  # featurize.Features
    predicted: float  # the sampling model's cost (nan for a baseline or a random schedule)


@dataclass
class BatchPlan:
    key: BatchKey
    pipeline: object
    inputs: dict
    expected: dict | None  # reference interpreter outputs (check_outputs)
    samples: list[PlannedSample]
    model: str
    node_id: str = ""
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # schedules lost to a featurizer failure


def register_tiles_for(backend: str) -> bool:
    """Whether a batch's searches offer reductions register tiles (scheduler.tilings.register_tilings): not when
    numba compiles the batch. Its code generator writes out each unrolled copy with its own SIMD loop, and numba
    compiled register-tiled random pipelines 2-3x slower (4 s -> 8-10 s a schedule); compiling already bounds its
    samples per core-hour, and `make demo`'s data generation ran 3x slower with them (docs/scheduler.md). Halide
    and the llvm backend compile them in a fraction of a second."""
    return backend != "numba"


def plan_batch(key: BatchKey, model: SamplingModel) -> BatchPlan:
    """The pipeline of `key.seed`, its reference outputs, and up to `key.schedules` distinct schedules:
    the key's baselines, one beam-search schedule, up to `key.contrasts` one-decision contrasts of it,
    random-dropout schedules under `model`, then (with `key.random_fill`) random schedules until there are
    `key.schedules` or the draws run out."""
    from ir.collector import fewer_collections

    with fewer_collections():  # sizing, interpretation, searches and featurization: one collection per ~50k
        return _plan_batch(key, model)  # allocations, not per 700 (1.22x a batch's planning time)


def _plan_batch(key: BatchKey, model: SamplingModel) -> BatchPlan:
    from featurize import featurize
    from featurize.dataset import RIVAL_SEPARATOR
    from ir.sampling import random_schedule
    from ir.target import get_target
    from scheduler import autoschedule
    from scheduler.api import dropout_schedules
    from scheduler.cost import load_model

    from .contrast import DECISIONS, one_decision_contrasts

    t0 = time.perf_counter()
    tgt = get_target(key.target)
    p, inputs, expected = prepare_pipeline(key.seed, key.max_stages, key.pipeline_size, key.markov, key.check_outputs,
                                           key.mix_weights, key.motifs, key.motif_kinds)
    cost = model.cost_model(tgt)
    plan = BatchPlan(key, p, inputs, expected, [], model.name)
    seen: set[str] = set()

    def full() -> bool:
        return len(plan.samples) + len(plan.errors) >= key.schedules

    def add(sampler: str, loopnest, predicted: float = math.nan) -> None:
        fp = loopnest.fingerprint
        if fp in seen or full():
            return
        seen.add(fp)
        try:
            features = featurize(p, loopnest, tgt)
        except Exception as e:  # noqa: BLE001 - a featurizer bug loses this schedule, not the batch
            plan.errors.append(f"seed {key.seed} {sampler} {fp}: featurize failed: {type(e).__name__}: {e}")
            return
        plan.samples.append(PlannedSample(sampler, loopnest, features,
                                          float(predicted) if math.isfinite(predicted) else math.nan))

    for name in key.baselines:
        add(name, get_baseline(name)(p, tgt))
    tiles = register_tiles_for(key.backend)
    s = autoschedule(p, tgt, model=cost, algorithm="beam", beam_size=key.beam_size, passes=key.passes,
                     seed=derived_seed(key.job_seed, key.seed, 0), register_tiles=tiles)
    add("beam", s.loopnest, s.predicted_cost)
    for rival in key.rivals:  # another model's pick next to the sampler's: the pair a search comparison turns on
        r = autoschedule(p, tgt, model=load_model(rival, tgt, backend=key.backend), algorithm="beam",
                         beam_size=key.beam_size, passes=key.passes, seed=derived_seed(key.job_seed, key.seed, 0),
                         register_tiles=tiles)
        earlier = next((x for x in plan.samples if x.loopnest.fingerprint == r.loopnest.fingerprint), None)
        if earlier is None:
            add(f"beam-{rival}", r.loopnest)
        elif earlier.sampler.startswith("beam-"):  # an earlier rival's pick: one row names both pickers
            earlier.sampler += f"{RIVAL_SEPARATOR}{rival}"
    if key.contrasts:
        for c in one_decision_contrasts(p, s.loopnest, tgt, key.contrasts, key.contrast_kinds or DECISIONS):
            add(f"contrast-{c.decision}", c.loopnest)
    # the walks share one search space: what autoschedule(algorithm="dropout") gives for each seed, ~1.8x sooner
    walks = dropout_schedules(p, tgt, cost, (derived_seed(key.job_seed, key.seed, draw)
                                             for draw in range(1, DRAWS_PER_SAMPLE * key.schedules + 1)),
                              key.dropout, register_tiles=tiles)
    while not full() and (s := next(walks, None)) is not None:
        add("dropout", s.loopnest, s.predicted_cost)
    for draw in range(8 * key.schedules + 16 if key.random_fill else 0):
        if full():
            break
        try:
            loopnest, _ = random_schedule(p, derived_seed(key.job_seed, key.seed, draw, 1), tgt)
        except SchedlabError:
            continue  # the builder ran out of attempts on this draw: take the next
        add("random", loopnest)
    plan.seconds = time.perf_counter() - t0
    return plan


# -- rows and files ---------------------------------------------------------------------------------------


def batch_rows(plan: BatchPlan, measurements: list) -> list:
    """The dataset rows (featurize.dataset.Sample) of a plan's samples and their Measurements, in order."""
    from featurize.dataset import Sample

    return [Sample.build(plan.pipeline, s.loopnest, s.features, m, round=plan.key.round, model_version=plan.model,
                         sampler=s.sampler, backend=plan.key.backend) for s, m in zip(plan.samples, measurements)]


def write_rows(root: Path | str, target: str, key: BatchKey, rows: list, overwrite: bool = False,
               machine: str = "") -> Path | None:
    """Write a batch's rows atomically as batch-<key.batch_id>.parquet under `root`'s partition of the
    resolved `target`; no rows, no file (a rerun tries the batch again). An existing file is kept unless
    `overwrite`: then the new file is written under a private root and renamed over it, so a reader sees
    the old file or the new one. `machine`: which machine measured the rows (featurize.dataset.write_batch)."""
    from featurize.dataset import batch_path, write_batch

    if not rows:
        return None
    path = batch_path(root, target, key.batch_id)
    if not (overwrite and path.exists()):
        return write_batch(root, target, key.batch_id, rows, machine=machine)
    staging = path.parent / f".overwrite-{key.batch_id}-{os.getpid()}"
    try:
        os.replace(write_batch(staging, target, key.batch_id, rows, machine=machine), path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path
