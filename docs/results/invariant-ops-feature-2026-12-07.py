"""Issue 18 experiment (stop 88): does a feature for the arithmetic invariant along a stage's innermost loop help order
held-out schedules?

Stop 59 found that generated channel mixes compute a weight from (r, c) that LLVM hoists out of a loop vectorized along
x or y but computes in every lane along c, and that no feature says so. This counts, per stage and schedule, the
operations of the stage's definition (value and stored coordinates; Consts and Vars left out) whose operands do not
depend on its innermost loop (the vectorized one, else the innermost loop of more than one iteration), those that do,
and the same for loads; adds them (log1p, and the invariant share) to the trees of gbdt-ranker-2026-12-06.py, and
trains both with and without them on the same split (15 leaves, 300 rounds, RankNet on summed stage costs).

    python docs/results/invariant-ops-feature-2026-12-07.py                                       # the seven Halide datasets
    DATA=datasets/random-host-llvm-epyc BACKEND=llvm python docs/results/invariant-ops-feature-2026-12-07.py

Output: docs/results/invariant-ops-feature-2026-12-07.txt.
"""
import importlib.util, json, sys, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import numpy as np, polars as pl
spec = importlib.util.spec_from_file_location("g", ROOT / "docs/results/gbdt-ranker-2026-12-06.py")
g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
import lightgbm as lgb
from ir.expr import Const, Var, RVar, Call, walk
from ir.dag import _names_in
from ir.loopnest import LoopNest
from ir.pipeline import Pipeline
from ir.plan import Plan
from ir.target import get_target
from train.data import DataConfig, TrainingData

SKIP = (Const, Var, RVar)
tgt = get_target("host")

def stage_counts(stage, j):
    """(invariant ops, varying ops, invariant loads, varying loads) along loop j of the stage."""
    if j is None:
        return (0, 0, 0, 0)
    v = stage.loop[j].name
    memo = {}
    inv = var = linv = lvar = 0
    for part in (stage.value, *stage.lhs):
        for n in walk(part):
            if isinstance(n, SKIP) or type(n).__name__ == "Param":
                continue
            dep = v in _names_in(n, memo)
            if isinstance(n, Call):
                if dep: lvar += 1
                else: linv += 1
            elif dep: var += 1
            else: inv += 1
    return (inv, var, linv, lvar)

def sample_rows(pjson, sjson, stages, cache):
    p = cache.get(pjson)
    if p is None:
        p = cache[pjson] = Pipeline.from_json(json.loads(pjson))
    dag = p.dag
    plan = Plan(dag, LoopNest.loads(sjson), tgt, complete=True)
    out = {}
    for name, fp in plan.funcs.items():
        if fp.inlined:
            continue
        for ch in fp.chains:
            lvl = ch.levels[-1]
            n = lvl.node
            j = n.vectorized_loop if n.vectorized_loop >= 0 else next((k for k in reversed(lvl.order) if n.size[k] > 1), None)
            ext = n.size[j] if j is not None else 1
            out[(name, ch.stage.index)] = stage_counts(ch.stage, j) + (ext, int(n.vectorized_loop >= 0))
    return [out.get(s, (0, 0, 0, 0, 1, 0)) for s in stages]

def main():
    import os; g.DATA = os.environ.get("DATA", g.DATA)
    cfg = DataConfig(path=g.DATA, target="host", backend=os.environ.get("BACKEND", "halide"), max_spread=0.25, min_schedules=8,
                     val_fraction=0.2, seed=0, batch_size=10_000)
    data = TrainingData.load(cfg)
    files = [f for r in g.DATA.split(",") for f in sorted(Path(ROOT, r).glob("target=host/batch-*.parquet"))]
    df = pl.concat([pl.read_parquet(f, columns=["pipeline_id", "schedule_id", "pipeline_json", "schedule_json",
                                                "stage_func", "stage_index"]) for f in files])
    df = df.unique(subset=["pipeline_id", "schedule_id"], keep="first")
    lut = {(r[0], r[1]): (r[2], r[3], list(zip(r[4], r[5]))) for r in df.iter_rows()}
    t0 = time.time(); cache = {}
    def extra(batches):
        out = []
        for b in batches:
            for sid in b.schedule_ids:
                pj, sj, stages = lut[(b.pipeline_id, sid)]
                out.extend(sample_rows(pj, sj, stages, cache))
        return np.asarray(out, dtype=float)
    et, ev = extra(data.train), extra(data.val)
    print(f"extra features in {time.time() - t0:.0f} s: {et.shape} {ev.shape}", flush=True)
    xt, bt, st, yt = g.rows(data.train)
    xv, bv, sv, yv = g.rows(data.val)
    def aug(x, e):
        inv, var, linv, lvar, ext, vec = e.T
        frac = inv / np.maximum(inv + var, 1)
        return np.concatenate([x, np.log1p(e[:, :4]), frac[:, None]], 1)
    xta, xva = aug(xt, et), aug(xv, ev)
    print("invariant fraction (train rows): mean", float((et[:,0]/np.maximum(et[:,0]+et[:,1],1)).mean()))
    g.metrics(np.zeros(len(bv)), bv, sv, yv, "analytical (val)")
    objective = g.ranknet(st, yt)
    for label, (a, b) in (("base", (xt, xv)), ("+invariant", (xta, xva))):
        params = dict(g.RANKER_PARAMS)
        booster = lgb.Booster(params, lgb.Dataset(a, init_score=bt, free_raw_data=False))
        for r in range(1, 301):
            booster.update(fobj=objective)
            if r % 50 == 0:
                print(f"-- {label} round {r}", flush=True)
                g.metrics(booster.predict(b), bv, sv, yv, f"{label} (val)")

if __name__ == "__main__":
    main()
