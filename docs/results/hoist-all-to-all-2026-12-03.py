# Run from the repository root: python docs/results/hoist-all-to-all-2026-12-03.py (2026-12-03, stop 59; output in the .txt beside it)
"""Hypothesis test: pipeline 26c4616995c5fbae's c-vectorized schedules are slow because s15_all_to_all's weight
(r + 2c) mod 5 - 2 is computed per lane along c but hoisted along x. Time the fastest (x/y-vectorized) and a slow
(c-vectorized) schedule with llvm, on the pipeline as generated and with the weight's c replaced by 0."""
import glob, json, copy, sys
import polars as pl
from ir.pipeline import Pipeline
from ir.loopnest import LoopNest
from backends import compile as build_kernel
from backends.timing import measure_kernels_interleaved
from backends.protocols import get_protocol

pid = "26c4616995c5fbae"
fs = sorted(glob.glob('datasets/random-host-llvm-epyc/**/*.parquet', recursive=True))
meta = pl.concat([pl.read_parquet(f, columns=['pipeline_id', 'schedule_id', 'runtime_s', 'pipeline_json', 'schedule_json'])
                  for f in fs]).filter(pl.col('pipeline_id') == pid).sort('runtime_s')
pj = json.loads(meta['pipeline_json'][0])
rows = list(meta.iter_rows(named=True))
fast, slow = rows[0], rows[2]

def drop_c_in_weight(obj):
    """In s15_all_to_all's update, replace var c inside `mod` expressions by const 0 (weight invariant along c)."""
    def walk(e, in_mod=False):
        if isinstance(e, list):
            if len(e) >= 2 and e[0] == "var" and e[1] == "c" and in_mod:
                return ["const", 0, "i32"]
            mod = in_mod or (len(e) >= 2 and e[0] == "bin" and e[1] == "mod")
            return [walk(x, mod) for x in e]
        return e
    obj = copy.deepcopy(obj)
    for f in obj["funcs"]:
        if f["name"] == "s15_all_to_all":
            f["definitions"][1]["value"] = walk(f["definitions"][1]["value"])
            print("update now:", json.dumps(f["definitions"][1]["value"])[:400])
    return obj

for label, p_obj in (("as generated", pj), ("weight invariant along c", drop_c_in_weight(pj))):
    p = Pipeline.from_json(p_obj)
    inputs = p.random_inputs(0)
    ks = [build_kernel(p, LoopNest.loads(r['schedule_json']), "host", backend="llvm") for r in (fast, slow)]
    ms = measure_kernels_interleaved(ks, inputs, get_protocol("full"))
    print(label, [f"{m.min_s * 1e3:.2f} ms ({m.status})" for m in ms], "dataset:", fast['runtime_s'] * 1e3, slow['runtime_s'] * 1e3)
