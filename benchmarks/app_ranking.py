"""How well does each cost model order the measured schedules of the real apps? Scores only; nothing is compiled.

The random pipelines a model is cross-validated on (evaluate.compare) do not decide everything search on the apps
depends on: scaling the analytical model's compute terms by 1/8 to 1 moved held-out pairwise accuracy by under
0.005 there (docs/train.md, "Prior 7"). This scores models on schedules of the 17 apps measured at full size, the
schedules search actually chooses between: each app's naive, expert and beam schedules under several models, kept
by `benchmarks/learned_vs_analytical.py --save FILE` with their best runtimes. Per model, over the apps (one group
each): train.metrics' pairwise accuracy, pairwise on pairs >= 1.1x apart, top-1 (the measured runtime of the
schedule the model predicts fastest, over the fastest measured), Kendall tau and ordering@1.3x; per app, which
schedule each model predicts fastest and how far it is from the fastest measured. A handful of schedules per app
is a small sample: read a difference of one or two pairs as noise.

    python benchmarks/learned_vs_analytical.py --models builtin,analytical:3,analytical:6,analytical \\
        --apps all --save measured.jsonl
    python benchmarks/app_ranking.py measured.jsonl --models analytical:6,analytical,builtin
    python benchmarks/app_ranking.py docs/results/measured-apps-halide-2026-12-03.jsonl.gz   # 76 kept schedules
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@dataclass(frozen=True)
class MeasuredSchedule:
    columns: tuple[str, ...]  # the columns of learned_vs_analytical that chose it (naive, expert, a model's beam)
    loopnest: str  # LoopNest.dumps()
    runtime_s: float  # best measured runtime; inf when its measurement failed


@dataclass(frozen=True)
class MeasuredApp:
    app: str
    size: str
    backend: str
    schedules: tuple[MeasuredSchedule, ...]


def load_measured(path: Path) -> list[MeasuredApp]:
    """The apps `learned_vs_analytical.py --save` wrote, one JSON line each (gzipped when the name ends in .gz); the
    last line of an app wins."""
    apps: dict[str, MeasuredApp] = {}
    try:
        lines = (gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()).splitlines()
    except OSError as e:
        raise SystemExit(f"app_ranking: cannot read {path}: {e.strerror}; write it with "
                         f"benchmarks/learned_vs_analytical.py --save {path}")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            scheds = tuple(MeasuredSchedule(tuple(s["columns"]), s["loopnest"],
                                            math.inf if s["runtime_s"] is None else float(s["runtime_s"]))
                           for s in row["schedules"])
            apps[row["app"]] = MeasuredApp(row["app"], row["size"], row["backend"], scheds)
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"app_ranking: {path}:{n} is not a line learned_vs_analytical.py --save writes ({e})")
    if not apps:
        raise SystemExit(f"app_ranking: {path} holds no apps")
    return list(apps.values())


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measured", type=Path, help="JSON lines from benchmarks/learned_vs_analytical.py --save")
    ap.add_argument("--models", default="analytical:6,analytical,builtin", help="cost models, comma-separated")
    ap.add_argument("--tracking-uri", default=None)
    a = ap.parse_args(argv)

    from featurize import featurize
    from generator.apps import get_app
    from ir.loopnest import LoopNest
    from ir.target import get_target
    from scheduler.cost import load_model
    from train.metrics import pairwise_accuracy_apart, ranking_metrics

    measured = load_measured(a.measured)
    target = get_target("host")
    models = {m: load_model(m, target, a.tracking_uri, allow_mismatch=True) for m in a.models.split(",") if m}
    preds: dict[str, list[np.ndarray]] = {m: [] for m in models}
    truths: list[np.ndarray] = []
    print(f"{len(measured)} apps from {a.measured} ({measured[0].backend}, size {measured[0].size}), "
          f"{sum(len(x.schedules) for x in measured)} measured schedules")
    print(f"{'app':24s} {'n':>2s} " + " ".join(f"{m[:22]:>22s}" for m in models) +
          "   (the schedule each model predicts fastest: its columns, measured / fastest measured)")
    for x in measured:
        p = get_app(x.app).build(x.size)
        feats = [featurize(p, LoopNest.loads(s.loopnest), target) for s in x.schedules]
        true = np.array([s.runtime_s for s in x.schedules])
        truths.append(true)
        cells = []
        for m, model in models.items():
            pred = np.array([float(model.predict(f.pipeline, f.schedule[None]).total[0]) for f in feats])
            preds[m].append(pred)
            pick = int(np.argmin(pred))
            cells.append(f"{'+'.join(x.schedules[pick].columns)[:14]} {true[pick] / true.min():.2f}x")
        print(f"{x.app:24s} {len(true):2d} " + " ".join(f"{c:>22s}" for c in cells), flush=True)
    print(f"\n{'model':24s} {'pairwise':>9s} {'>=1.1x':>7s} {'top-1':>6s} {'tau':>6s} {'ord@1.3':>8s} "
          f"{'pick/fastest geomean':>21s}")
    for m in models:
        groups = list(zip(preds[m], truths))
        r = ranking_metrics(groups)
        regret = [t[int(np.argmin(q))] / t.min() for q, t in groups if np.isfinite(t.min())]
        print(f"{m[:24]:24s} {r.pairwise_accuracy:9.3f} {pairwise_accuracy_apart(groups):7.3f} "
              f"{r.top1_score:6.3f} {r.kendall_tau:6.3f} {r.ordering_rate_1_3:8.3f} "
              f"{math.exp(np.mean(np.log(regret))):20.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
