"""Which apps does the portfolio strategy schedule differently from beam (--greedy: portfolio-greedy from greedy)?

For each app: beam and portfolio (beam under the model and under its guides, the model picking among all their
complete schedules) with the same model, beam size, passes and seed; the model's predicted cost of each pick,
whether they are the same LoopNest, and both search times. Predictions only: measure the apps it lists as
different with `python -m evaluate.apps ... "algorithms=[beam,portfolio]" apps=[...]`.

    python benchmarks/portfolio_picks.py                                  # 17 apps, full size, built-in model
    python benchmarks/portfolio_picks.py --apps interpolate,harris --model models:/schedlab-host@champion
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    from generator.apps import APPS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=",".join(APPS), help="comma-separated apps (default: all)")
    ap.add_argument("--size", default="full", choices=("small", "full"))
    ap.add_argument("--model", default="builtin", help="the cost model that picks (default builtin)")
    ap.add_argument("--guides", default="analytical", help="comma-separated guide cost models")
    ap.add_argument("--margin", type=float, default=1.05,
                    help="guide_margin: a guide's end wins only when predicted this many times cheaper (default 1.05)")
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--greedy", action="store_true", help="greedy against portfolio-greedy instead")
    a = ap.parse_args(argv)

    from generator.apps import app_list, get_app
    from scheduler import autoschedule

    try:
        apps = app_list(a.apps)
    except ValueError as e:
        ap.error(f"--apps: {e}")
    kw = dict(model=a.model, beam_size=a.beam_size, passes=a.passes, seed=a.seed)
    base, portfolio = ("greedy", "portfolio-greedy") if a.greedy else ("beam", "portfolio")
    print(f"{'greedy' if a.greedy else f'beam {a.beam_size} x {a.passes}'} and {portfolio} (guides {a.guides}, "
          f"margin {a.margin:g}) under {a.model}, {a.size} size; predicted cost of each pick")
    print(f"{'app':26s} {base:>12s} {portfolio:>12s}  {'pick':9s}  search {base} / {portfolio}")
    changed = []
    for name in apps:
        p = get_app(name).build(a.size)
        t0 = time.perf_counter()
        beam = autoschedule(p, algorithm=base, **kw)
        t1 = time.perf_counter()
        pf = autoschedule(p, algorithm=portfolio, guides=tuple(g for g in a.guides.split(",") if g),
                          guide_margin=a.margin, **kw)
        t2 = time.perf_counter()
        same = beam.loopnest.fingerprint == pf.loopnest.fingerprint
        if not same:
            changed.append(f"{name} {beam.predicted_cost / pf.predicted_cost:.2f}x")
        print(f"{name:26s} {beam.predicted_cost * 1e3:9.3f} ms {pf.predicted_cost * 1e3:9.3f} ms  "
              f"{'same' if same else 'different'}  {t1 - t0:.1f} s / {t2 - t1:.1f} s", flush=True)
    print(f"{portfolio} picks another schedule on {len(changed)} of {len(apps)} apps"
          + (f" (predicted faster by: {', '.join(changed)})" if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
