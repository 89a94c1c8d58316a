"""Issue 18 experiment (stop 85): does another learner order held-out pipelines better than the residual network?

TenSet's strongest classical baseline is a gradient-boosted tree model over per-statement features whose predictions
are summed per program. This trains one (LightGBM) the same way on schedlab's data: a stage's cost is its analytical
cost (prior 7, in ns) times exp(g(row)), g the trees' output, a schedule's cost the sum over its stages, and the loss
RankNet's pairwise logistic loss on log costs within each pipeline (the built-in model's `pairwise_rank`). The
gradient of a stage row is its schedule's gradient times the stage's share of the schedule's cost. Rows: the 41
schedule features, the 27 analytical charges, the stage's op histogram summed by row and by type, the stage's and the
schedule's analytical cost, the stage's share and index, log1p'd. The split is the built-in model's own (its training
run's data, val_fraction 0.2 by pipeline hash; fingerprint 9855e9337e84734d).

    pip install lightgbm   # not a schedlab dependency
    python docs/results/gbdt-ranker-2026-12-06.py            # ~4 minutes on 2 cores
    python docs/results/gbdt-ranker-2026-12-06.py --within   # held out by schedule instead (see below)

`--within` asks where the held-out figure is lost: it holds out a quarter of each pipeline's schedules (every fourth
by schedule id) instead of whole pipelines, training on the rest of every pipeline. If the model orders unseen
schedules of pipelines it has seen much better than schedules of unseen pipelines, what it lacks is transfer across
pipelines (more or more varied pipelines, better pipeline features), not schedule features.

Output: docs/results/gbdt-ranker-2026-12-06.txt.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import lightgbm as lgb  # noqa: E402
import numpy as np  # noqa: E402

from train.analytical import analytical_charges_ns  # noqa: E402
from train.data import DataConfig, TrainingData  # noqa: E402
from train.metrics import ranking_metrics  # noqa: E402

DATA = ",".join(f"datasets/random-host-halide{s}" for s in ("", "-contrasts", "-avx2", "-rivals", "-motifs", "-conv",
                                                            "-dwmax"))
# the trees of the first setting below (15 leaves), which later experiments on these rows reuse
RANKER_PARAMS = dict(objective="none", num_leaves=15, learning_rate=0.1, min_data_in_leaf=50,
                     min_sum_hessian_in_leaf=0.0, feature_fraction=0.8, bagging_fraction=0.8, bagging_freq=1,
                     lambda_l2=1.0, verbose=-1, num_threads=2, seed=0)


def rows(batches):
    """(row features [R, F], log analytical stage cost [R], schedule index of each row [R], runtimes per pipeline)."""
    feats, base, sched, runtimes, offset = [], [], [], [], 0
    for b in batches:
        pf, sf = b.pipeline_features.numpy(), b.schedule_features.numpy().astype(np.float64)
        n, s, _ = sf.shape
        charges = analytical_charges_ns(pf, sf, 2)  # [n, s, 27]
        stage = charges.sum(-1)
        total = stage.sum(-1, keepdims=True)
        ops = np.clip(pf, 0, None)
        algo = np.concatenate([np.log1p(ops.sum(2)), np.log1p(ops.sum(1))], 1)  # [s, 47]
        f = np.concatenate([np.log1p(np.clip(sf, 0, None)), np.log1p(np.clip(charges, 0, None)),
                            np.broadcast_to(algo[None], (n, s, algo.shape[1])), np.log1p(stage)[..., None],
                            np.log1p(np.broadcast_to(total, (n, s)))[..., None],
                            (stage / np.maximum(total, 1e-30))[..., None],
                            np.broadcast_to(np.arange(s, dtype=float)[None, :, None], (n, s, 1))], -1)
        feats.append(f.reshape(n * s, -1))
        base.append(np.log(np.maximum(stage, 1e-3)).reshape(-1))
        sched.append(np.repeat(np.arange(n) + offset, s))
        runtimes.append(b.runtimes.numpy())
        offset += n
    return np.concatenate(feats), np.concatenate(base), np.concatenate(sched), runtimes


def ranknet(sched, runtimes):
    """LightGBM objective: RankNet pairs on log schedule costs, passed to each stage row by its share of the cost."""
    n = int(sched.max()) + 1

    def objective(raw, _dataset):
        e = np.exp(raw)  # raw includes the init score (log analytical cost)
        cost = np.bincount(sched, weights=e, minlength=n)
        score = np.log(cost)
        g, h, off = np.zeros(n), np.zeros(n), 0
        for rt in runtimes:
            k = len(rt)
            sc = score[off:off + k]
            slower = (rt[:, None] > rt[None, :]).astype(float)
            p = 1 / (1 + np.exp(sc[:, None] - sc[None, :]))  # sigmoid(-(s_i - s_j)) for i measured slower
            g[off:off + k] = -(slower * p).sum(1) + (slower * p).sum(0)
            w = slower * p * (1 - p)
            h[off:off + k] = w.sum(1) + w.sum(0)
            off += k
        share = e / cost[sched]
        return g[sched] * share, np.maximum(h[sched] * share, 1e-9)

    return objective


def metrics(raw, base, sched, runtimes, name):
    cost = np.bincount(sched, weights=np.exp(raw + base), minlength=int(sched.max()) + 1)
    groups, off = [], 0
    for rt in runtimes:
        groups.append((cost[off:off + len(rt)], rt))
        off += len(rt)
    m = ranking_metrics(groups)
    print(f"{name:28s} pairwise {m.pairwise_accuracy:.4f} top1 {m.top1_score:.4f} top5 {m.top5_score:.4f} "
          f"tau {m.kendall_tau:.4f} ord1.3 {m.ordering_rate_1_3:.4f}", flush=True)


def within_pipelines(batches):
    """(training batches, held-out batches): every fourth schedule of each pipeline held out, the rest trained on."""
    from dataclasses import replace

    train, held = [], []
    for b in batches:
        keep = np.arange(len(b)) % 4 != 3
        for side, mask in ((train, keep), (held, ~keep)):
            idx = np.flatnonzero(mask)
            side.append(replace(b, schedule_features=b.schedule_features[idx], runtimes=b.runtimes[idx],
                                schedule_ids=[b.schedule_ids[i] for i in idx]))
    return train, held


def main() -> None:
    within = "--within" in sys.argv
    cfg = DataConfig(path=DATA, target="host", backend="halide", max_spread=0.25, min_schedules=8,
                     val_fraction=0.0 if within else 0.2, seed=0, batch_size=10_000)
    data = TrainingData.load(cfg)
    print(data.stats, flush=True)
    train, val = within_pipelines(data.train) if within else (data.train, data.val)
    print("held out:", "every fourth schedule of each pipeline" if within else "whole pipelines, by hash (val 0.2)")
    xt, bt, st, yt = rows(train)
    xv, bv, sv, yv = rows(val)
    print(f"rows: train {xt.shape}, validation {xv.shape}")
    metrics(np.zeros(len(bv)), bv, sv, yv, "analytical (val)")
    metrics(np.zeros(len(bt)), bt, st, yt, "analytical (train)")
    objective = ranknet(st, yt)
    for leaves, min_leaf, rounds in ((15, 50, 600), (63, 200, 400)):
        params = dict(objective="none", num_leaves=leaves, learning_rate=0.1, min_data_in_leaf=min_leaf,
                      min_sum_hessian_in_leaf=0.0, feature_fraction=0.8, bagging_fraction=0.8, bagging_freq=1,
                      lambda_l2=1.0, verbose=-1, num_threads=2, seed=0)
        booster, t0 = lgb.Booster(params, lgb.Dataset(xt, init_score=bt, free_raw_data=False)), time.time()
        for r in range(1, rounds + 1):
            booster.update(fobj=objective)
            if r % 100 == 0:
                print(f"-- {leaves} leaves, >= {min_leaf} rows a leaf, round {r} ({time.time() - t0:.0f} s)")
                metrics(booster.predict(xv), bv, sv, yv, "gbdt (val)")
                metrics(booster.predict(xt), bt, st, yt, "gbdt (train)")


if __name__ == "__main__":
    main()
