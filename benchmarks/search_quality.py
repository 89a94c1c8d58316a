"""Are searched schedules fast? Every search strategy side by side on the app suite, measured.

Runs `python -m evaluate.apps` on conf/evaluate_strategies.yaml (every app at full size, every row compiled and
measured by one backend, one cost model for every search: greedy, beam 32 x 5, hierarchical, MCTS at beam's
own cost-model evaluations and at its wall-clock per app, mcts-real / top-k / autotune at one measurement
budget, polymage-dp, the expert schedule, Halide's Adams2019 and Mullapudi2016), logs the table and charts to
MLflow, and prints, besides evaluate.apps' table, each strategy against beam per app: runtime(beam) /
runtime(strategy), > 1 where the strategy found the faster schedule.

    python benchmarks/search_quality.py                                   # the whole comparison (hours)
    python benchmarks/search_quality.py apps=blur,unsharp size=small      # any AppsConfig key=value overrides
    python benchmarks/search_quality.py model=models:/schedlab-host@champion
    python benchmarks/search_quality.py merge files=a.csv,b.csv            # runs' apps.csv files as one table

`merge` makes one table, the same comparison against beam and one MLflow run with the charts from the rows of
several runs (apps.csv, or any CSV with app, method, status and speedup columns; evaluate.merged).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIG = ROOT / "conf" / "evaluate_strategies.yaml"
# within 10 %: a tie. The same LoopNest measured six times in a row by the full protocol on the quiet 2-core
# development machine (blur at full size, Halide, ~1 ms) ran 0.80-0.99 ms; a difference under that is noise
TIE = 1.10


def against_beam(rows) -> list[str]:
    """Per app and strategy: runtime(beam) / runtime(strategy) (> 1: the strategy's schedule is faster), then
    the geometric mean and the apps where the strategy won, tied (within TIE) and lost. From the speedups over
    the app's naive row, so rows of several runs compare (the ratio of two speedups over one naive row)."""
    from evaluate.apps import NAIVE, geomean
    from ir.units import format_ratio

    ok = {(r.app, r.method): 1.0 / r.speedup for r in rows if r.status == "ok" and r.speedup > 0}
    apps = list(dict.fromkeys(r.app for r in rows))
    others = [m for m in dict.fromkeys(r.method for r in rows) if m not in ("beam", NAIVE)]
    out = [f"{'runtime(beam) / runtime(strategy)':34s} " + " ".join(f"{a[:11]:>11s}" for a in apps)
           + f" {'geomean':>8s}  won/tied/lost"]
    for m in others:
        ratios = [ok[(a, "beam")] / ok[(a, m)] if (a, "beam") in ok and (a, m) in ok else math.nan for a in apps]
        cells = " ".join(f"{format_ratio(x) if math.isfinite(x) else '-':>11s}" for x in ratios)
        done = [x for x in ratios if math.isfinite(x)]
        won = sum(x > TIE for x in done)
        lost = sum(x < 1 / TIE for x in done)
        g = geomean(done)
        out.append(f"{m:34s} {cells} {format_ratio(g) if math.isfinite(g) else '-':>8s}  "
                   f"{won}/{len(done) - won - lost}/{lost}")
    return out


def main(argv=None) -> int:
    from evaluate.apps import evaluate_apps
    from evaluate.config import AppsConfig
    from ir.config import run_cli
    from ir.progress import echo

    def run(cfg) -> int:
        result = evaluate_apps(cfg, echo)
        print(result.summary())
        print()
        print("\n".join(against_beam(result.rows)))
        return 0

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:
        return merge(argv[1:])
    if not any(a == "--config" or a.startswith("--config=") for a in argv):
        argv = ["--config", str(CONFIG), *argv]
    return run_cli(AppsConfig, run, argv, "benchmarks/search_quality.py", __doc__.splitlines()[0],
                   default_config=str(CONFIG))


def merge(argv: list[str]) -> int:
    """`merge files=...`: the rows of several runs as one table, against beam, and one MLflow run."""
    from evaluate.merged import MergeConfig, log_merged, read_rows, table
    from ir.config import run_cli

    def run(cfg) -> int:
        rows = read_rows(cfg.files)
        print("\n".join(table(rows)))
        print()
        print("\n".join(against_beam(rows)))
        print(f"MLflow run {log_merged(cfg, rows)}")
        return 0

    return run_cli(MergeConfig, run, argv, "benchmarks/search_quality.py merge",
                   "Several runs' apps.csv rows as one table and one MLflow run.")


if __name__ == "__main__":
    sys.exit(main())
