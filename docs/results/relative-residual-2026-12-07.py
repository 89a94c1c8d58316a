"""Issue 18 experiment (stop 89): does the residual network, like stop 88's trees, order held-out schedules better when
its schedule head also sees each stage's features relative to the pipeline's naive schedule?

Trains two residual models (the built-in model's settings: prior 7, normalized trunk inputs, pairwise_rank loss,
Adam lr 1e-3, 40 epochs, batches of <= 64 schedules of one pipeline, the best epoch by validation pairwise accuracy)
on the built-in model's data and split (seven Halide datasets, max_spread 0.25, val 0.2 by pipeline hash):
- base: the residual model as it ships;
- naive-relative: its schedule head (head2) reads [log1p f, log1p f - log1p f_naive] per stage, where f_naive are the
  stage's features in the pipeline's naive schedule (ir.builder.naive_schedule, featurized for this host): a fixed
  reference per pipeline, computable before a search. Everything else is the same, seeds included.

    python docs/results/relative-residual-2026-12-07.py                 # ~25 minutes on 2 cores
    SEEDS=0,1 EPOCHS=40 python docs/results/relative-residual-2026-12-07.py

Output: docs/results/relative-residual-2026-12-07.txt.
"""
import json, os, sys, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import numpy as np, polars as pl, torch
from torch import nn
import torch.nn.functional as F
from featurize import featurize
from ir.builder import naive_schedule
from ir.pipeline import Pipeline
from train.data import DataConfig, TrainingData
from train.loss import get_loss
from train.metrics import ranking_metrics
from train.model import ModelConfig, ResidualCostModel, build_model, _check_inputs, _standardized

DATA = ("datasets/random-host-halide,datasets/random-host-halide-contrasts,datasets/random-host-halide-avx2,"
        "datasets/random-host-halide-rivals,datasets/random-host-halide-motifs,datasets/random-host-halide-conv,"
        "datasets/random-host-halide-dwmax")
CONFIG = dict(kind="residual", num_cores=2, prior=7, residual_range=1.0, trunk_inputs="normalized", embedding=24,
              hidden=64, algorithm_embedding=8)


class NaiveRelativeResidual(ResidualCostModel):
    """The residual model whose schedule head reads each stage's log1p features and their difference from the
    pipeline's naive schedule's (`self.reference`, [S, 41], set per pipeline before scoring)."""

    def __init__(self, config):
        super().__init__(config)
        self.head2 = nn.Linear(2 * self.head2.in_features, config.embedding)
        self.reference = None

    def trunk_output(self, pipeline_features, schedule_features, pipeline_embedding=None):
        _check_inputs(pipeline_features, schedule_features)
        emb = self.embed_pipeline(pipeline_features) if pipeline_embedding is None else pipeline_embedding
        x = torch.log1p(schedule_features.clamp_min(0))
        ref = torch.log1p(self.reference.clamp_min(0))
        sched = F.relu(self.head2(torch.cat([x, x - ref.expand_as(x)], -1)))
        emb, sched = _standardized(emb), _standardized(sched)
        return self.trunk(torch.cat([emb.expand(sched.shape[0], -1, -1), sched], dim=-1))


def references(batches, lut) -> dict[str, torch.Tensor]:
    out = {}
    for b in batches:
        if b.pipeline_id in out:
            continue
        pj, stages = lut[b.pipeline_id]
        p = Pipeline.from_json(json.loads(pj))
        f = featurize(p, naive_schedule(p), "host")
        by = dict(zip(f.stages, f.schedule))
        ref = np.stack([by.get(s, np.zeros(f.schedule.shape[1])) for s in stages]).astype(np.float32)
        assert ref.shape == tuple(b.schedule_features.shape[1:]), (ref.shape, b.schedule_features.shape)
        out[b.pipeline_id] = torch.from_numpy(ref)
    return out


def evaluate(model, batches, refs):
    groups: dict[str, list] = {}
    with torch.no_grad():
        for b in batches:
            if refs is not None:
                model.reference = refs[b.pipeline_id]
            pred = model(b.pipeline_features, b.schedule_features).double().numpy()
            groups.setdefault(b.pipeline_id, []).append((pred, b.runtimes.double().numpy()))
    return ranking_metrics([(np.concatenate([p for p, _ in g]), np.concatenate([t for _, t in g]))
                            for g in groups.values()])


def line(label, m):
    return (f"{label:34s} pairwise {m.pairwise_accuracy:.4f} top1 {m.top1_score:.4f} top5 {m.top5_score:.4f} "
            f"tau {m.kendall_tau:.4f} ord1.3 {m.ordering_rate_1_3:.4f}")


def train(kind, data, refs, seed, epochs):
    cfg = ModelConfig.from_dict(CONFIG)
    if kind == "base":
        model = build_model(cfg, seed=seed)
    else:
        torch.manual_seed(seed)
        model = NaiveRelativeResidual(cfg)
        model.reset_parameters(torch.Generator().manual_seed(seed))
    loss_fn = get_loss("pairwise_rank")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(seed)
    best = (-1.0, None, -1)
    m0 = evaluate(model, data.val, refs)
    print(line(f"{kind} s{seed} untrained", m0), flush=True)
    for epoch in range(epochs):
        model.train()
        for i in rng.permutation(len(data.train)):
            b = data.train[i]
            if refs is not None:
                model.reference = refs[b.pipeline_id]
            pred = model(b.pipeline_features, b.schedule_features)
            loss = loss_fn(pred, b.runtimes.to(pred.dtype))
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        m = evaluate(model, data.val, refs)
        if m.pairwise_accuracy > best[0]:
            best = (m.pairwise_accuracy, m, epoch)
        if epoch % 10 == 9:
            print(line(f"{kind} s{seed} epoch {epoch}", m), flush=True)
    print(line(f"{kind} s{seed} best (epoch {best[2]})", best[1]), flush=True)
    return best[1]


def main():
    torch.set_num_threads(1)
    seeds = [int(s) for s in os.environ.get("SEEDS", "0").split(",")]
    epochs = int(os.environ.get("EPOCHS", "40"))
    cfg = DataConfig(path=DATA, target="host", backend="halide", max_spread=0.25, min_schedules=8, val_fraction=0.2,
                     seed=0, batch_size=64)
    data = TrainingData.load(cfg)
    files = [f for r in DATA.split(",") for f in sorted(Path(ROOT, r).glob("target=host/batch-*.parquet"))]
    df = pl.concat([pl.read_parquet(f, columns=["pipeline_id", "pipeline_json", "stage_func", "stage_index"])
                    for f in files]).unique(subset=["pipeline_id"], keep="first")
    lut = {r[0]: (r[1], list(zip(r[2], r[3]))) for r in df.iter_rows()}
    t0 = time.time()
    refs = references(list(data.train) + list(data.val), lut)
    print(f"naive references of {len(refs)} pipelines in {time.time() - t0:.0f} s", flush=True)
    for seed in seeds:
        for kind in ("base", "naive-relative"):
            t0 = time.time()
            train(kind, data, None if kind == "base" else refs, seed, epochs)
            print(f"  ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
