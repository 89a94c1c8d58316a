"""Search modes beyond one-shot (adams2019 §6, anderson2021 §8): benchmark the k best candidates, or
autotune — rounds of dropout sampling, benchmarking and fine-tuning the model on what was measured."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np

from .search import BeamSearch, SearchConfig, SearchResult
from .space import SearchError, State

FINE_TUNE_STEPS = 50
FINE_TUNE_LR = 1e-3


def reference(pipeline) -> tuple[dict, dict]:
    """(inputs, the interpreter's outputs) every benchmarked schedule of `pipeline` is checked against."""
    import ir

    inputs = pipeline.random_inputs(0)
    with np.errstate(all="ignore"):  # NaN and inf are legitimate values of random programs
        return inputs, ir.interpret(pipeline, inputs)


def measure_loopnest(pipeline, loopnest, target, inputs=None, expected=None) -> float:
    """Best runtime (seconds) of a schedule, checked against the interpreter; inf when it fails."""
    from backends import MeasureInput, measure_many

    if inputs is None or expected is None:
        inputs, expected = reference(pipeline)
    (m,) = measure_many([MeasureInput(pipeline, loopnest, inputs, expected)], target, protocol="full")
    if m.status != "ok":
        return math.inf
    return float(m.min_s)


def top_k(schedule, result: SearchResult, k: int):
    """Compile and benchmark the k cheapest distinct schedules the search ended with; keep the fastest."""
    if k < 1:
        raise SearchError(f"k must be at least 1, got {k}")
    p, tgt = schedule.pipeline, schedule.target
    inputs, expected = reference(p)
    timed = [(measure_loopnest(p, s.tree, tgt, inputs, expected), s) for s in result.finals[:k]]
    best_time, best = min(timed, key=lambda x: (x[0], x[1].cost))
    if not math.isfinite(best_time):
        raise SearchError(f"none of the {len(timed)} best schedules of {p.name!r} compiled and ran correctly")
    stats = dataclasses.replace(schedule.stats, measured={s.tree.fingerprint: t for t, s in timed})
    return dataclasses.replace(schedule, loopnest=best.tree, predicted_cost=best.cost, stats=stats,
                               measured_runtime=best_time)


def autotune(schedule, cost_model, config: SearchConfig, rounds: int = 2, samples: int = 16, progress=None,
             fixed: dict | None = None):
    """Benchmark the beam result, then `rounds` of `samples` dropout samples; after each round a learned
    model (a copy: the caller's is untouched) is fine-tuned on everything measured (relative throughput,
    adams2019 §4.2); the analytical model samples unchanged. Returns the fastest measured schedule, so
    never one slower than the beam result. `fixed` (the partial schedule) binds the samples too;
    `progress` is the search's callback, passed to each sample's search."""
    from .cost import LearnedModel

    if rounds < 1 or samples < 1:
        raise SearchError(f"autotune needs rounds >= 1 and samples >= 1, got {rounds} and {samples}")
    p, tgt = schedule.pipeline, schedule.target
    inputs, expected = reference(p)
    tunable = isinstance(cost_model, LearnedModel)  # the analytical model has nothing to fine-tune
    model = LearnedModel(copy.deepcopy(cost_model.network), cost_model.name) if tunable else cost_model
    measured: dict[str, tuple[float, State | None]] = {}
    beam_time = measure_loopnest(p, schedule.loopnest, tgt, inputs, expected)
    measured[schedule.loopnest.fingerprint] = (beam_time, None)
    best_time, best_tree, best_cost = beam_time, schedule.loopnest, schedule.predicted_cost
    evaluated = schedule.stats.states_evaluated
    for r in range(rounds):
        for i in range(samples):
            cfg = SearchConfig(beam_size=1, passes=1, seed=config.seed * 100003 + r * 1009 + i, dropout=1.0)
            res = BeamSearch(p, tgt, model, cfg, progress, fixed=fixed).run()
            evaluated += res.stats.states_evaluated
            s = res.best
            if s.tree.fingerprint in measured:
                continue
            t = measure_loopnest(p, s.tree, tgt, inputs, expected)
            measured[s.tree.fingerprint] = (t, s)
            if t < best_time:
                best_time, best_tree, best_cost = t, s.tree, s.cost
        if tunable:
            _fine_tune(model, p.dag, [(s, t) for t, s in measured.values()
                                     if s is not None and math.isfinite(t)])
    stats = dataclasses.replace(schedule.stats, states_evaluated=evaluated,
                                measured={k: t for k, (t, _) in measured.items()})
    return dataclasses.replace(schedule, loopnest=best_tree, predicted_cost=best_cost, stats=stats,
                               measured_runtime=best_time)


def _fine_tune(model, dag, samples: list[tuple[State, float]]) -> None:
    """A few Adam steps on the relative-throughput loss over the schedules measured so far."""
    if len(samples) < 2:
        return
    import torch

    from train.loss import relative_throughput_loss

    from .cost import stage_keys

    keys = stage_keys(dag, samples[0][0])
    rows = [(s, t) for s, t in samples if stage_keys(dag, s) == keys]
    if len(rows) < 2:
        return
    net = model.network
    algo = model.pipeline_inputs(dag, keys)[0]
    sched = torch.as_tensor(np.stack([np.stack([s.features[k] for k in keys]) for s, _ in rows]))
    runtimes = torch.as_tensor([t for _, t in rows], dtype=torch.float32)
    opt = torch.optim.Adam(net.parameters(), lr=FINE_TUNE_LR)
    net.train()
    for _ in range(FINE_TUNE_STEPS):
        opt.zero_grad()
        loss = relative_throughput_loss(net(algo, sched), runtimes)
        loss.backward()
        opt.step()
    net.eval()
    model.forget_embeddings()
