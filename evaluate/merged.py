"""One table from app-suite results measured in several runs: a comparison that took several sessions, or runs
whose MLflow store is gone but whose rows were kept as CSV files (apps.csv, or any file with the columns
app, method, status and speedup). Speedups are over each app's own naive row, so rows of different runs are
comparable per app; the merged run gets the same table, geomeans and charts as one evaluate.apps run.

    python benchmarks/search_quality.py merge files=docs/results/a.csv,docs/results/b.csv
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .apps import EXPERT, NAIVE, Geomean, geomean, metric_key
from .config import EvaluateError

COLUMNS = ("app", "method", "status", "speedup")


@dataclass(frozen=True)
class MergedRow:
    app: str
    method: str
    status: str  # ok, or why the row has no runtime
    speedup: float  # runtime(naive) / runtime, both from the same run; NaN unless ok
    source: str  # the file the row came from


@dataclass
class MergeConfig:
    """`files`: CSV files of measured rows, each app in one file only; the merged run is logged to MLflow."""

    files: list[str] = field(default_factory=list)
    tracking_uri: str | None = None
    experiment: str = "schedlab-evaluate-apps"
    run_name: str = "strategies-merged"


def read_rows(paths: list[str]) -> list[MergedRow]:
    """The rows of every file, in file order; one-line errors for a missing file or column, or an app that two
    files both measured (which run's naive row would its speedups be over?)."""
    if not paths:
        raise EvaluateError("merge: give files=a.csv,b.csv (apps.csv files of evaluate.apps runs)")
    rows: list[MergedRow] = []
    owner: dict[str, str] = {}
    for path in paths:
        p = Path(path)
        if not p.is_file():
            raise EvaluateError(f"merge: no file {path}")
        with p.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise EvaluateError(f"merge: {path} has no column {missing[0]} (needs {', '.join(COLUMNS)})")
            mine = [MergedRow(d["app"], d["method"], d["status"], float(d["speedup"] or "nan"), path)
                    for d in reader]
        for app in dict.fromkeys(r.app for r in mine):
            if app in owner:
                raise EvaluateError(f"merge: app {app} is in both {owner[app]} and {path}; keep it in one file")
            owner[app] = path
        rows += mine
    return rows


def merged_geomeans(rows: list[MergedRow]) -> list[Geomean]:
    """Per method but naive, in first-seen order: the geomean of its ok speedups and over how many apps."""
    names = list(dict.fromkeys(r.method for r in rows if r.method != NAIVE))
    return [Geomean(m, geomean([r.speedup for r in rows if r.method == m and r.status == "ok"]),
                    sum(r.method == m and r.status == "ok" and r.speedup > 0 for r in rows)) for m in names]


def table(rows: list[MergedRow]) -> list[str]:
    """Apps down, methods across: speedups over naive (a row's status where it has none), then geomeans."""
    apps = list(dict.fromkeys(r.app for r in rows))
    names = list(dict.fromkeys(r.method for r in rows))
    cell = {(r.app, r.method): r.status[:10] if r.status != "ok" else f"{r.speedup:.2f}" if r.speedup > 0
            else "no naive" for r in rows}  # an ok row of an app whose naive row failed has no speedup
    width = max(11, *(len(m) for m in names))
    out = [f"{'app':24s} " + " ".join(f"{m:>{width}s}" for m in names)]
    out += [f"{a:24s} " + " ".join(f"{cell.get((a, m), '-'):>{width}s}" for m in names) for a in apps]
    g = {x.method: x for x in merged_geomeans(rows)}
    out.append(f"{'geomean':24s} " + " ".join(
        f"{'1.00' if m == NAIVE else f'{g[m].speedup:.2f}':>{width}s}" for m in names))
    naive_ok = sum(r.method == NAIVE and r.status == "ok" for r in rows)
    out.append(f"{'apps':24s} " + " ".join(
        f"{str(naive_ok) if m == NAIVE else str(g[m].apps):>{width}s}" for m in names))
    return out


def log_merged(cfg: MergeConfig, rows: list[MergedRow]) -> str:
    """A run with the merged rows (merged.csv), per-method geomean metrics and evaluate.apps' two charts;
    returns its id."""
    from train.plots import log_figures

    from .plots import geomean_bars, speedup_bars, tracked_run

    apps = list(dict.fromkeys(r.app for r in rows))
    sources = list(dict.fromkeys(r.source for r in rows))
    means = [g for g in merged_geomeans(rows) if g.method != EXPERT]
    speed = {(r.app, r.method): r.speedup if r.status == "ok" else math.nan for r in rows}
    matrix = [[speed.get((a, g.method), math.nan) for g in means] for a in apps]
    expert = [speed.get((a, EXPERT), math.nan) for a in apps]
    expert_geomean = geomean(expert)
    about = f"{len(apps)} apps merged from {len(sources)} files"
    extra = {"apps_measured": apps, "sources": sources}
    with tracked_run(cfg.tracking_uri, cfg.experiment, cfg.run_name, cfg, extra,
                     description=f"{about}: {', '.join(sources)}. Speedups are over each app's naive row of "
                                 "its own run.") as run:
        run.log_metrics({metric_key("geomean_speedup/" + g.method): g.speedup  # evaluate.apps' names
                         for g in merged_geomeans(rows) if math.isfinite(g.speedup)})
        text = io.StringIO()
        w = csv.writer(text)
        w.writerow([*COLUMNS, "source"])
        w.writerows([(r.app, r.method, r.status, r.speedup, r.source) for r in rows])
        run.client.log_text(run.run_id, text.getvalue(), "merged.csv")
        reference = [*expert, expert_geomean]
        log_figures(run.run_id, {
            "speedups": speedup_bars(apps, [g.method for g in means], np.array(matrix, np.float64),
                                     [g.speedup for g in means], about, reference=np.array(reference)),
            "geomeans": geomean_bars(means, np.array(reference), about)}, tracking=run.tracking_uri)
        return run.run_id
