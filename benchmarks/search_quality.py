"""Are searched schedules fast? Measured runtimes of schedules from each cost model, side by side.

For each app (full size): the naive schedule, greedy with random weights (adams2019's first data round),
beam search with the analytical model, and beam search with each learned model given (`--model URI`,
repeatable: a registered model, a run's model, a checkpoint), the app's expert schedule where it has one,
and each one's speedup over naive; then geometric means. Every kernel is checked against the
interpreter before it is timed. The measuring is evaluate.apps' (`python -m evaluate.apps` runs one model
against more baselines and logs the table to MLflow); this script only chooses the methods and prints.

    python benchmarks/search_quality.py --apps unsharp,harris,blur,iir_blur --beam-size 8 --passes 2
    python benchmarks/search_quality.py --strategies polymage-dp,mcts   # more registered strategies, side by side
    python benchmarks/search_quality.py --model models:/schedlab-host@champion --tracking-uri sqlite:///…/mlflow.db
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluate.apps import HEADER, Method, app_names, format_row, geomeans, measure_app
from evaluate.config import AppsConfig, EvaluateError
from generator.apps import get_app
from ir.units import format_ratio
from ir.target import get_target
from scheduler.cost import load_model


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()  # MLflow's and Lightning's chatter off, as in every command
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="unsharp,harris,blur,iir_blur,max_filter,hist_eq")
    ap.add_argument("--size", default="full", choices=("small", "full"))
    ap.add_argument("--model", action="append", default=[], help="a learned model to compare (repeatable)")
    ap.add_argument("--tracking-uri", default=None, help="MLflow tracking URI (default: the embedded SQLite store)")
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--strategies", default="polymage-dp",
                    help="more registered strategies, comma-separated, each under the analytical model (a strategy "
                         "that needs no model, as polymage-dp, ignores it)")
    args = ap.parse_args(argv)
    cfg = AppsConfig(apps=tuple(a for a in args.apps.split(",") if a), size=args.size, beam_size=args.beam_size,
                     passes=args.passes, tracking_uri=args.tracking_uri, progress=False)
    try:
        names = app_names(cfg)
    except EvaluateError as e:
        ap.error(str(e))
    tgt = get_target("host")
    methods = [Method("naive", "naive"),
               Method("greedy random", "search", load_model("random:0", tgt), "greedy"),
               Method("beam analytical", "search", load_model("analytical", tgt), "beam"),
               *(Method(f"beam {uri}", "search", load_model(uri, tgt, args.tracking_uri), "beam") for uri in args.model),
               *(Method(f"{a} analytical", "search", load_model("analytical", tgt), a)
                 for a in args.strategies.split(",") if a),
               Method("expert", "expert")]
    print(HEADER)
    rows = []
    for name in names:
        rows += measure_app(get_app(name), cfg, methods)
        print("\n".join(format_row(r) for r in rows if r.app == name), flush=True)
    print("\ngeometric mean speedup over naive:")
    for g in geomeans(rows):
        print(f"  {g.method:30s} {format_ratio(g.speedup):>6s}x  over {g.apps} apps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
