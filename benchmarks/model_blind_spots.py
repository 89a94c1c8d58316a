"""Where does a cost model prefer its own beam schedule to the expert schedule, and which terms make it?

For each app: beam search (beam 8 x 2 by default) under each `--models` entry, then every model's predicted
cost of the expert schedule and of each beam schedule. When the expert schedule runs faster than the beam
schedules (measured: docs/results/learned-vs-analytical-*.txt) but a model predicts it slower, the gap is the
model's, not the search's: the search found what the model asked for. For an analytical model (any prior:
`analytical`, `analytical:1`) it also lists the Appendix B terms (train.analytical, summed over stages) that add most to the expert's predicted cost over the
beam's: the model's blind spots, by name. Predictions only; nothing is compiled or measured.

    python benchmarks/model_blind_spots.py --apps matmul,conv_layer,interpolate
    python benchmarks/model_blind_spots.py --models analytical:1,analytical     # two analytical priors
    python benchmarks/model_blind_spots.py --models analytical,models:/schedlab-host/1 --tracking-uri ...
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="matmul,conv_layer,max_filter,nl_means,interpolate")
    ap.add_argument("--models", default="analytical", help="cost models, comma-separated")
    ap.add_argument("--size", default="full", choices=("small", "full"))
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--top", type=int, default=3, help="terms listed per app")
    ap.add_argument("--tracking-uri", default=None)
    a = ap.parse_args(argv)

    from featurize import featurize
    from generator.apps import app_list, get_app
    from ir.target import get_target
    from scheduler import autoschedule
    from scheduler.cost import load_model
    from train.analytical import analytical_term_costs
    from train.model import TERMS

    try:
        apps = app_list(a.apps)
    except ValueError as e:
        ap.error(f"--apps: {e}")

    target = get_target("host")
    specs = [m for m in a.models.split(",") if m]
    models = {m: load_model(m, target, a.tracking_uri, allow_mismatch=True) for m in specs}
    t0 = time.time()
    print(f"beam {a.beam_size} x {a.passes} under each model; each model's predicted cost of the expert schedule over "
          f"its own beam schedule's (> 1: the model thinks the expert schedule is slower)")
    for name in apps:
        app = get_app(name)
        p = app.build(a.size)
        lns = {"expert": app.schedule(p, target)}
        for m, model in models.items():
            lns[f"beam[{m}]"] = autoschedule(p, target, model=model, algorithm="beam", beam_size=a.beam_size,
                                             passes=a.passes, allow_mismatch=True).loopnest
        feats = {k: featurize(p, ln, target) for k, ln in lns.items()}
        cost = {(k, m): float(model.predict(f.pipeline, f.schedule[None]).total[0])
                for k, f in feats.items() for m, model in models.items()}
        cells = [f"{m} {cost[('expert', m)] / cost[(f'beam[{m}]', m)]:.2f}" for m in models]
        print(f"{name:16s} expert / own beam, predicted: " + "; ".join(cells), flush=True)
        for m, model in models.items():  # every analytical prior asked for: its terms, by name
            prior = getattr(model, "prior", None)
            if prior is None:
                continue
            e, b = feats["expert"], feats[f"beam[{m}]"]
            extra = (analytical_term_costs(e.pipeline, e.schedule, target.cores, prior)
                     - analytical_term_costs(b.pipeline, b.schedule, target.cores, prior))
            order = np.argsort(-extra)[:a.top]
            print(f"{'':16s} {m}, expert over beam[{m}] by term: " +
                  ", ".join(f"{TERMS[i]} {extra[i] * 1e3:+.2f} ms" for i in order) +
                  f" (total {(cost[('expert', m)] - cost[(f'beam[{m}]', m)]) * 1e3:+.2f} ms)", flush=True)
    print(f"({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
