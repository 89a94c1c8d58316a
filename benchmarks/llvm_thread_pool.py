"""What does running an llvm kernel's parallel stages cost? The native spinning pool against the Python
ThreadPoolExecutor the llvm backend used before, side by side in one process.

1. Dispatch: one parallel stage of 2 chunks whose function does nothing, run many times back to back: microseconds
   a stage (p50, p90, p99) for each pool, and the same after the pool's threads went to sleep (a 5 ms pause).
2. Kernels: schedules of random pipelines of a committed dataset (default datasets/random-host-llvm, the job's
   default distribution), compiled by llvm; each kernel's two runners (one per pool) are timed in interleaved rounds,
   runners in a fresh random order every round, on the same buffers. Per kernel the ratio of the best times
   (executor / native), their geometric mean and spread, and the runtime share the executor's dispatch took. Each
   pool's rounds are split in two halves: how well the halves' orders of a pipeline's schedules agree (all pairs)
   says whether the pool changes how reproducible a label is. Outputs are checked against the interpreter first.

    python benchmarks/llvm_thread_pool.py                                  # 6 pipelines x 16 schedules, ~3 min
    python benchmarks/llvm_thread_pool.py --pipelines 2 --schedules 4 --rounds 6   # a quick look

Run it with nothing else on the machine and read the ratios, not the last digit.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NOOP_IR = """
define void @noop(ptr %args, i64 %lo, i64 %hi) {
  ret void
}
"""

_ENGINES: list = []


def percentiles(us: np.ndarray) -> str:
    p50, p90, p99 = np.percentile(us, [50, 90, 99])
    return f"p50 {p50:7.2f}  p90 {p90:7.2f}  p99 {p99:7.2f}  mean {us.mean():7.2f}"


def dispatch(stages: int) -> None:
    """Microseconds per parallel stage of a function that does nothing, for each pool."""
    import llvmlite.binding as llvm

    from backends.llvm.compiler import STAGE, _executor, _threads, parse_module, target_machine
    from backends.llvm.threadpool import native_pool

    threads = _threads()
    if threads < 2:
        print("one core: parallel stages run on the calling thread, no pool to compare")
        return
    e = llvm.create_mcjit_compiler(parse_module(NOOP_IR), target_machine())
    e.finalize_object()
    _ENGINES.append(e)  # an engine owns the shared target machine: freeing it would free that too
    address = e.get_function_address("noop")
    fn = STAGE(address)
    args = (ctypes.c_void_p * 1)(0)
    native, executor = native_pool(threads), _executor()
    bounds = [0, 1, 2]
    runs = {"native": lambda: native.run(address, args, 2, 2, fn),
            "executor": lambda: list(executor.map(lambda k: fn(args, bounds[k], bounds[k + 1]), range(2)))}
    print(f"dispatch: one parallel stage of 2 chunks, a function that does nothing; {threads} threads; microseconds")
    for name, run in runs.items():
        for _ in range(1000):
            run()
        hot = np.empty(stages)
        for i in range(stages):
            t0 = time.perf_counter()
            run()
            hot[i] = time.perf_counter() - t0
        cold = np.empty(50)
        for i in range(len(cold)):
            time.sleep(0.005)
            t0 = time.perf_counter()
            run()
            cold[i] = time.perf_counter() - t0
        print(f"  {name:9s} back to back  {percentiles(hot * 1e6)}")
        print(f"  {name:9s} after 5 ms    {percentiles(cold * 1e6)}")


def load_schedules(data: Path, pipelines: int, schedules: int, seed: int):
    """[(pipeline id, Pipeline, [LoopNest, ...])] of `pipelines` pipelines of the dataset, `schedules` ok ones each."""
    import polars as pl

    from ir.loopnest import LoopNest
    from ir.pipeline import Pipeline

    df = (pl.scan_parquet(str(data / "target=*" / "*.parquet"), hive_partitioning=False)
          .filter(pl.col("status") == "ok").select(["pipeline_id", "schedule_id", "pipeline_json", "schedule_json"])
          .unique(["pipeline_id", "schedule_id"]).sort(["pipeline_id", "schedule_id"]).collect())
    ids = sorted(set(df["pipeline_id"].to_list()))
    if not ids:
        sys.exit(f"llvm_thread_pool: no ok samples in {data}")
    random.Random(seed).shuffle(ids)
    out = []
    for pid in ids[:pipelines]:
        rows = df.filter(pl.col("pipeline_id") == pid)
        p = Pipeline.from_json(json.loads(rows["pipeline_json"][0]))
        out.append((pid, p, [LoopNest.loads(s) for s in rows["schedule_json"].to_list()[:schedules]]))
    return out


def runners(kernel, kind: str):
    """The kernel's runner with parallel stages on pool `kind` (SCHEDLAB_LLVM_POOL while it is made)."""
    keep = os.environ.get("SCHEDLAB_LLVM_POOL")
    os.environ["SCHEDLAB_LLVM_POOL"] = kind
    try:
        return kernel.spec.runner()
    finally:
        if keep is None:
            del os.environ["SCHEDLAB_LLVM_POOL"]
        else:
            os.environ["SCHEDLAB_LLVM_POOL"] = keep


def kernels(blocks, rounds: int, seed: int) -> None:
    import backends
    from backends.timing import _worker_args, compare_outputs
    from backends.kernel import aligned_empty
    from ir.interpret import interpret
    from train.metrics import ranking_metrics

    rng = random.Random(seed)
    ratios, shares = [], []
    halves_of = {"native": [], "executor": []}  # per pool: (first half's best, second half's) of each pipeline
    print(f"\nkernels: {len(blocks)} pipelines, each kernel's two runners timed in {rounds} interleaved rounds")
    print(f"{'pipeline':18s} {'schedules':>9s} {'native ms (median)':>19s} {'executor / native':>28s}")
    for pid, p, loopnests in blocks:
        inputs = p.random_inputs(0)
        expected = interpret(p, inputs)
        built = [backends.compile(p, ln, backend="llvm") for ln in loopnests]
        bound, meta, types, _ = _worker_args(built[0], inputs, None, None)
        outputs = {n: aligned_empty(size, dtype) for n, (size, dtype, _) in meta.items()}
        timed = []  # (kernel index, pool, runner)
        for i, k in enumerate(built):
            for kind in ("native", "executor"):
                run = runners(k, kind)
                run(bound, outputs)
                shaped = {n: outputs[n].reshape(shape, order="F") for n, (_, _, shape) in meta.items()}
                why = compare_outputs(types, shaped, expected)
                if why is not None:
                    sys.exit(f"llvm_thread_pool: {pid} schedule {i} under the {kind} pool: wrong output: {why}")
                timed.append((i, kind, run))
        halves = {(i, kind, h): math.inf for i, kind, _ in timed for h in (0, 1)}
        for r in range(rounds):
            rng.shuffle(timed)
            for i, kind, run in timed:
                t0 = time.perf_counter()
                run(bound, outputs)
                t = time.perf_counter() - t0
                key = (i, kind, 2 * r // rounds)
                halves[key] = min(halves[key], t)
        best = {(i, kind): min(halves[(i, kind, 0)], halves[(i, kind, 1)]) for i, kind, _ in timed}
        n = len(built)
        rs = [best[(i, "executor")] / best[(i, "native")] for i in range(n)]
        ratios += rs
        parallel = [sum(1 for s in k.spec.source.stages if s.tasks > 1) for k in built]
        shares += [(best[(i, "executor")] - best[(i, "native")]) / best[(i, "executor")] for i in range(n)]
        for kind, groups in halves_of.items():
            groups.append((np.array([halves[(i, kind, 0)] for i in range(n)]),
                           np.array([halves[(i, kind, 1)] for i in range(n)])))
        med = np.median([best[(i, "native")] for i in range(n)]) * 1e3
        g = math.exp(np.mean(np.log(rs)))
        print(f"{pid:18s} {n:9d} {med:19.2f} {g:9.3f}x geomean ({min(rs):.3f}-{max(rs):.3f}); "
              f"{np.median(parallel):.0f} parallel stages (median)", flush=True)
    g = math.exp(np.mean(np.log(ratios)))
    print(f"\nall {len(ratios)} kernels: executor / native {g:.3f}x geomean, median {np.median(ratios):.3f}x, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}x; the executor's extra time: median "
          f"{100 * np.median(shares):.1f} % of its runtime, p90 {100 * np.percentile(shares, 90):.1f} %")
    pairs = sum(len(a) * (len(a) - 1) // 2 for a, _ in halves_of["native"])
    for kind, groups in halves_of.items():
        print(f"{kind:9s}: the two halves of its rounds order {ranking_metrics(groups).pairwise_accuracy:.3f} of "
              f"{pairs} pairs of schedules alike")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / "datasets" / "random-host-llvm"))
    ap.add_argument("--pipelines", type=int, default=6)
    ap.add_argument("--schedules", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--stages", type=int, default=20000, help="back-to-back dispatches timed per pool")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from backends import measuring_machine

    print(f"machine: {measuring_machine()}")
    dispatch(a.stages)
    if a.pipelines > 0:
        kernels(load_schedules(Path(a.data), a.pipelines, a.schedules, a.seed), a.rounds, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
