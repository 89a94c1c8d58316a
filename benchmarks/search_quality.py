"""Are searched schedules fast? Measured runtimes of schedules from each cost model, side by side.

For each app (full size): the naive schedule, greedy with random weights (adams2019's first data round),
beam search with the analytical model, and beam search with each learned model given (`--model URI`,
repeatable: a registered model, a run's model, a checkpoint), the app's expert schedule where it has one,
and each one's speedup over naive; then geometric means. Every kernel is checked against the
interpreter before it is timed.

    python benchmarks/search_quality.py --apps unsharp,harris,blur,iir_blur --beam-size 8 --passes 2
    python benchmarks/search_quality.py --model models:/schedlab-host@champion --tracking sqlite:///…/mlflow.db
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from generator.apps import APPS, get_app
from ir.builder import naive_schedule
from ir.target import get_target
from scheduler import autoschedule
from scheduler.cost import load_model
from scheduler.modes import measure_loopnest, reference


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="unsharp,harris,blur,iir_blur,max_filter,hist_eq")
    ap.add_argument("--size", default="full", choices=("small", "full"))
    ap.add_argument("--model", action="append", default=[], help="a learned model to compare (repeatable)")
    ap.add_argument("--tracking", default=None)
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args(argv)
    apps = [a for a in args.apps.split(",") if a]
    unknown = [a for a in apps if a not in APPS]
    if unknown:
        ap.error(f"unknown app(s) {', '.join(unknown)}; apps: {', '.join(APPS)}")
    tgt = get_target("host")
    learned = [(uri, load_model(uri, tgt, args.tracking)) for uri in args.model]
    columns = ["naive", "greedy random", "beam analytical"] + [f"beam {u}" for u, _ in learned] + ["expert"]
    speedups: dict[str, list[float]] = {c: [] for c in columns[1:]}
    print(f"{'app':18s}" + "".join(f"{c[:22]:>24s}" for c in columns))
    for name in apps:
        app = get_app(name)
        p = app.build(args.size)
        inputs, expected = reference(p)
        beam = {"beam_size": args.beam_size, "passes": args.passes}
        schedules = {"naive": naive_schedule(p),
                     "greedy random": autoschedule(p, model="random:0", algorithm="greedy").loopnest,
                     "beam analytical": autoschedule(p, model="analytical", **beam).loopnest}
        for uri, model in learned:
            schedules[f"beam {uri}"] = autoschedule(p, model=model, **beam).loopnest
        if app.schedule is not None:
            schedules["expert"] = app.schedule(p, tgt)
        times = {k: measure_loopnest(p, ln, tgt, inputs, expected) for k, ln in schedules.items()}
        row = f"{name:18s}"
        for c in columns:
            t = times.get(c)
            if t is None:
                row += f"{'-':>24s}"
                continue
            s = times["naive"] / t if math.isfinite(t) else 0.0
            if c != "naive" and s > 0:
                speedups[c].append(s)
            row += f"{t * 1e3:>13.3f} ms {s:>5.2f}x" if c != "naive" else f"{t * 1e3:>21.3f} ms"
        print(row, flush=True)
    print("\ngeometric mean speedup over naive:")
    for c, v in speedups.items():
        if v:
            print(f"  {c:30s} {math.exp(np.mean(np.log(v))):6.2f}x  over {len(v)} apps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
