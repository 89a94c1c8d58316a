"""schedlab against Halide's own autoschedulers, everything compiled by Halide, side by side in one run.

For each app: the naive and expert schedules and schedlab's greedy and beam searches (under `--model`),
each measured under numba and, the same LoopNest, under Halide; and Halide's Adams2019 and Mullapudi2016
autoschedulers (parallelism = the host's cores). Every kernel is checked against the interpreter before it
is timed. Prints the comparison per app (speedups over naive@halide, the numba/Halide runtime ratio of
each LoopNest) and the geometric means. The measuring and the MLflow run are `python -m evaluate.apps`'s
(this command is that with these methods, halide=true); the full table is in the run's apps.csv.

    python benchmarks/vs_halide.py --apps blur,unsharp,harris,max_filter --beam-size 8 --passes 2
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluate.apps import HALIDE, VS_HALIDE, evaluate_apps
from evaluate.config import AppsConfig
from ir.errors import SchedlabError
from ir.units import format_ratio

LOOPNESTS = ("naive", "expert", "greedy", "beam")  # measured under both backends


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()  # MLflow's and Lightning's chatter off, as in every command
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="blur,unsharp,harris,max_filter")
    ap.add_argument("--size", default="full", choices=("small", "full"))
    ap.add_argument("--model", default="analytical", help="the cost model of schedlab's searches")
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--tracking-uri", default=None, help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else the per-user store)")
    args = ap.parse_args(argv)
    try:
        cfg = AppsConfig(apps=tuple(a for a in args.apps.split(",") if a), size=args.size, model=args.model,
                         algorithms=("greedy", "beam"), baselines=("expert",), beam_size=args.beam_size,
                         passes=args.passes, halide=True, tracking_uri=args.tracking_uri, run_name="vs_halide",
                         progress=False)
        result = evaluate_apps(cfg)
    except (SchedlabError, ValueError) as e:
        ap.error(str(e).splitlines()[0])
    runtime = {(r.app, r.method): r.runtime_s for r in result.rows if r.status == "ok"}
    same = {(r.app, r.method): r.speedup_same_backend for r in result.rows}
    failed = [r for r in result.rows if r.status != "ok"]
    apps = list(dict.fromkeys(r.app for r in result.rows))

    print(f"speedup over naive@halide, all compiled by Halide (searches with {result.model}):")
    print(f"{'app':14s} {'naive@halide':>13s} " + " ".join(f"{m.removesuffix(HALIDE):>13s}" for m in VS_HALIDE))
    for a in apps:
        naive = runtime.get((a, "naive" + HALIDE), math.nan)
        print(f"{a:14s} {naive * 1e3:10.3f} ms " + " ".join(_x(same.get((a, m), math.nan), 13) for m in VS_HALIDE))
    geo = {g.method: g for g in result.geomeans}
    print(f"{'geomean':14s} {'':13s} " + " ".join(
        _x(geo[m].speedup_same_backend if m in geo else math.nan, 13) for m in VS_HALIDE))

    print("\nruntime(numba) / runtime(Halide), same LoopNest (> 1: Halide runs it faster):")
    print(f"{'app':14s} " + " ".join(f"{m:>9s}" for m in LOOPNESTS))
    ratios = {(r.app, r.method): r.numba_over_halide for r in result.rows}
    for a in apps:
        print(f"{a:14s} " + " ".join(_x(ratios.get((a, m + HALIDE), math.nan), 9) for m in LOOPNESTS))

    print()
    print("\n".join(result.halide.lines()))
    for r in failed:
        print(f"failed: {r.app} {r.method}: {r.status} {r.note}")
    print(f"{len(result.rows)} rows in {result.seconds:.0f}s; table: apps.csv of MLflow run {result.run_id} "
          f"in {result.tracking_uri}")
    return 0


def _x(value: float, width: int) -> str:
    return f"{format_ratio(value):>{width - 1}s}x" if math.isfinite(value) else f"{'-':>{width}s}"


if __name__ == "__main__":
    sys.exit(main())
