"""One batch of the job: a random pipeline and the schedules the sampling model proposes for it.

A batch is named by a hash of everything that decides its pipeline and its schedules except the model
(`BatchKey.batch_id`), so a rerun of the job finds the batches it already wrote, whichever model version
the rerun samples with. Sampling follows adams2019 §5: one beam-search schedule and random-dropout
greedy schedules under the round's model, distinct by fingerprint. Planning needs no Ray: a task calls
`plan_batch`, and so can a test.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field

from generator.datagen import derived_seed, prepare_pipeline

DRAWS_PER_SAMPLE = 4  # dropout draws tried per wanted sample before a small space gives fewer samples


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

    @property
    def batch_id(self) -> str:
        blob = json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()
        return f"r{self.round}-p{self.seed}-{hashlib.sha256(blob).hexdigest()[:12]}"


@dataclass(frozen=True)
class SamplingModel:
    """The model a round samples with: random weights (`random:<seed>`) or a registered version, whose
    network travels to the tasks through Ray's object store (workers never open the MLflow store)."""

    name: str  # recorded per sample as model_version
    network: object | None = None  # a train.model.CostNetwork; None for random weights

    def cost_model(self, target):
        from scheduler.cost import LearnedModel, load_model

        if self.network is None:
            return load_model(self.name, target)
        return LearnedModel(self.network, name=self.name)


@dataclass
class PlannedSample:
    sampler: str  # beam | dropout
    loopnest: object  # ir.LoopNest
    features: object  # featurize.Features
    predicted: float  # the sampling model's cost


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


def plan_batch(key: BatchKey, model: SamplingModel) -> BatchPlan:
    """The pipeline of `key.seed`, its reference outputs, and up to `key.schedules` distinct schedules."""
    from featurize import featurize
    from ir.target import get_target
    from scheduler import autoschedule

    t0 = time.perf_counter()
    tgt = get_target(key.target)
    p, inputs, expected = prepare_pipeline(key.seed, key.max_stages, key.output_size, key.markov, key.check_outputs)
    cost = model.cost_model(tgt)
    plan = BatchPlan(key, p, inputs, expected, [], model.name)
    seen: set[str] = set()

    def add(sampler: str, schedule) -> None:
        fp = schedule.loopnest.fingerprint
        if fp in seen:
            return
        seen.add(fp)
        try:
            features = featurize(p, schedule.loopnest, tgt)
        except Exception as e:  # noqa: BLE001 - a featurizer bug loses this schedule, not the batch
            plan.errors.append(f"seed {key.seed} {sampler} {fp}: featurize failed: {type(e).__name__}: {e}")
            return
        cost_ = schedule.predicted_cost
        plan.samples.append(PlannedSample(sampler, schedule.loopnest, features,
                                          float(cost_) if math.isfinite(cost_) else math.nan))

    add("beam", autoschedule(p, tgt, model=cost, algorithm="beam", beam_size=key.beam_size, passes=key.passes,
                             seed=derived_seed(key.job_seed, key.seed, 0)))
    for draw in range(1, DRAWS_PER_SAMPLE * key.schedules + 1):
        if len(plan.samples) + len(plan.errors) >= key.schedules:
            break
        add("dropout", autoschedule(p, tgt, model=cost, algorithm="dropout", dropout=key.dropout,
                                    seed=derived_seed(key.job_seed, key.seed, draw)))
    plan.seconds = time.perf_counter() - t0
    return plan
