"""Issue 18 experiment (stop 88): does the ranker order held-out schedules better when it sees each stage's schedule
features relative to a reference of the same pipeline?

Trains stop 85's gradient-boosted ranker (gbdt-ranker-2026-12-06.py: RankNet on summed stage costs, 15 leaves, the
built-in model's split) three ways on the same rows:
- base: its own columns;
- + mean-relative: each stage's log1p features minus their mean over the pipeline's schedules in the dataset
  (transductive: it depends on which schedules are scored together, so search could not use it as is);
- + naive-relative: each stage's log1p features minus those of the pipeline's naive schedule
  (ir.builder.naive_schedule, featurized for this host), and the naive schedule's own: a fixed reference per
  pipeline, computable before a search.

    python docs/results/relative-features-2026-12-07.py                                       # the seven Halide datasets
    DATA=datasets/random-host-llvm-epyc BACKEND=llvm python docs/results/relative-features-2026-12-07.py

Output: docs/results/relative-features-2026-12-07.txt (~8 minutes each on 2 cores).
"""
import importlib.util, json, os, sys, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import numpy as np, polars as pl
spec = importlib.util.spec_from_file_location("g", ROOT / "docs/results/gbdt-ranker-2026-12-06.py")
g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
import lightgbm as lgb
from featurize import featurize
from ir.builder import naive_schedule
from ir.pipeline import Pipeline
from train.data import DataConfig, TrainingData

def log1p(x):
    return np.log1p(np.clip(x.astype(np.float64), 0, None))

def mean_rel(batches):
    out = []
    for b in batches:
        sf = log1p(b.schedule_features.numpy())
        out.append((sf - sf.mean(0, keepdims=True)).reshape(-1, sf.shape[-1]))
    return np.concatenate(out)

def naive_rel(batches, lut):
    out = []
    for b in batches:
        pj, stages = lut[b.pipeline_id]
        p = Pipeline.from_json(json.loads(pj))
        f = featurize(p, naive_schedule(p), "host")
        by = dict(zip(f.stages, f.schedule))
        ref = log1p(np.stack([by.get(s, np.zeros(f.schedule.shape[1])) for s in stages]))  # [s, 41]
        sf = log1p(b.schedule_features.numpy())
        out.append(np.concatenate([sf - ref[None], np.broadcast_to(ref[None], sf.shape)], -1).reshape(-1, 2 * sf.shape[-1]))
    return np.concatenate(out)

def main():
    g.DATA = os.environ.get("DATA", g.DATA)
    cfg = DataConfig(path=g.DATA, target="host", backend=os.environ.get("BACKEND", "halide"), max_spread=0.25,
                     min_schedules=8, val_fraction=0.2, seed=0, batch_size=10_000)
    data = TrainingData.load(cfg)
    files = [f for r in g.DATA.split(",") for f in sorted(Path(ROOT, r).glob("target=host/batch-*.parquet"))]
    df = pl.concat([pl.read_parquet(f, columns=["pipeline_id", "pipeline_json", "stage_func", "stage_index"])
                    for f in files]).unique(subset=["pipeline_id"], keep="first")
    lut = {r[0]: (r[1], list(zip(r[2], r[3]))) for r in df.iter_rows()}
    xt, bt, st, yt = g.rows(data.train)
    xv, bv, sv, yv = g.rows(data.val)
    t0 = time.time()
    nt, nv = naive_rel(data.train, lut), naive_rel(data.val, lut)
    print(f"naive references in {time.time() - t0:.0f} s", flush=True)
    g.metrics(np.zeros(len(bv)), bv, sv, yv, "analytical (val)")
    objective = g.ranknet(st, yt)
    variants = [("base", xt, xv),
                ("+mean-relative", np.concatenate([xt, mean_rel(data.train)], 1), np.concatenate([xv, mean_rel(data.val)], 1)),
                ("+naive-relative", np.concatenate([xt, nt], 1), np.concatenate([xv, nv], 1))]
    for label, a, b in variants:
        params = dict(g.RANKER_PARAMS)
        booster = lgb.Booster(params, lgb.Dataset(a, init_score=bt, free_raw_data=False))
        for r in range(1, 601):
            booster.update(fobj=objective)
            if r % 100 == 0:
                g.metrics(booster.predict(b), bv, sv, yv, f"{label} r{r} (val)")

if __name__ == "__main__":
    main()
