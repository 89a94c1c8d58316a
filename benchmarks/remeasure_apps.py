"""Measure kept app schedules again, several times: how much of a model-vs-model ratio on the apps is the machine's.

`benchmarks/learned_vs_analytical.py --save FILE` keeps every app's schedules (naive, expert, each model's beam pick)
with one measurement each. Searches are deterministic, so a second run of that benchmark measures the same
schedules again; on the shared 2-core VM the same lens_blur schedule measured 0.84 s in one run and 1.15 s in a
later one, which moves a 17-app geomean by 2 %. This compiles each app's kept schedules once (the kernel cache keeps
them) and measures them `--repeats` times, each repeat a batch timed together in rounds as the benchmark does
(scheduler.modes.measure_loopnest_results, full protocol, outputs checked); only the chosen columns' schedules are
measured, not the naive and expert ones. Per app and per model column it prints
the median over the repeats of the ratio (the last column's runtime over the model's: > 1 means the model's pick ran
faster) with its lowest and highest repeat, then the geomean of the medians and the geomean of each repeat. A
column that kept the last column's own schedule is exactly 1.

    python benchmarks/remeasure_apps.py measured.jsonl --repeats 3
    python benchmarks/remeasure_apps.py docs/results/measured-apps-beam-32x5-2026-12-05.jsonl.gz \\
        --columns builtin,analytical --apps max_filter,lens_blur --save remeasured.jsonl

`--save` appends each app's measured schedules with all their repeats' runtimes (JSON lines: the --save format of
learned_vs_analytical.py plus `runtimes_s`), so app_ranking.py can read the file too (it uses `runtime_s`, here the
median).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measured", type=Path, help="a file of learned_vs_analytical.py --save (.jsonl or .jsonl.gz)")
    ap.add_argument("--repeats", type=int, default=3, help="measurements of each app's batch of schedules")
    ap.add_argument("--columns", default=None,
                    help="model columns, comma-separated; ratios are over the last one (default: the file's)")
    ap.add_argument("--apps", default=None, help="comma-separated apps of the file (default: all of them)")
    ap.add_argument("--measure-timeout", type=float, default=600.0,
                    help="seconds an app's measurement may take in the worker (naive lens_blur runs 11 s a time)")
    ap.add_argument("--save", type=Path, default=None, help="append each app's schedules with every repeat's runtime")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error(f"--repeats must be at least 1, got {a.repeats}")
    if a.save is not None:
        try:
            a.save.open("a").close()
        except OSError as e:
            ap.error(f"--save: cannot write {a.save}: {e.strerror}")

    from app_ranking import load_measured

    from evaluate.apps import geomean
    from generator.apps import get_app
    from ir.loopnest import LoopNest
    from ir.target import get_target
    from scheduler.modes import best_runtimes, measure_loopnest_results, reference

    apps = load_measured(a.measured)
    if a.apps is not None:
        wanted = [x for x in a.apps.split(",") if x]
        unknown = sorted(set(wanted) - {m.app for m in apps})
        if unknown:
            ap.error(f"--apps: {', '.join(unknown)} not in {a.measured} (it has {', '.join(m.app for m in apps)})")
        apps = [m for m in apps if m.app in wanted]
    kept = [c for m in apps for s in m.schedules for c in s.columns]
    file_columns = [c for c in dict.fromkeys(kept) if c not in ("naive", "expert")]
    columns = [c for c in a.columns.split(",") if c] if a.columns else file_columns
    missing = sorted(set(columns) - set(kept))
    if len(columns) < 2 or missing:
        ap.error(f"--columns: give two or more of the file's model columns ({', '.join(file_columns)})"
                 + (f"; {', '.join(missing)} is not one" if missing else ""))
    reference_column = columns[-1]
    target = get_target("host")
    print(f"{len(apps)} apps of {a.measured}, each batch measured {a.repeats} times; ratios: {reference_column}'s "
          f"runtime over each column's (> 1: that column's pick ran faster), median [lowest, highest repeat]")
    width = max(24, *(len(c) + 8 for c in columns[:-1]))
    print(f"{'app':26s}" + "".join(f"{c:>{width}s}" for c in columns[:-1]))
    medians: dict[str, list[float]] = {c: [] for c in columns[:-1]}
    per_repeat: dict[str, list[list[float]]] = {c: [[] for _ in range(a.repeats)] for c in columns[:-1]}
    t0 = time.time()
    for m in apps:
        where = {c: next((i for i, s in enumerate(m.schedules) if c in s.columns), None) for c in columns}
        if any(i is None for i in where.values()):
            print(f"{m.app:26s} (does not keep every column's schedule; skipped)", flush=True)
            continue
        p = get_app(m.app).build(m.size)
        inputs, expected = reference(p)
        chosen = sorted(set(where.values()))  # only the columns' schedules: naive lens_blur alone runs 13 s a time
        loopnests = [LoopNest.loads(m.schedules[i].loopnest) for i in chosen]
        runs, failures = [], []
        for k in range(a.repeats):
            measured = measure_loopnest_results(p, loopnests, target, inputs, expected, backend=m.backend,
                                                timeout=a.measure_timeout)
            runs.append({i: t for i, t in zip(chosen, best_runtimes(measured))})
            failures += [f"  {m.app} repeat {k + 1}, {'/'.join(m.schedules[i].columns)}: {x.status}"
                         + (f" ({x.error.splitlines()[0][:160]})" if x.error else "")
                         for i, x in zip(chosen, measured) if not x.ok]
        cells = []
        for c in columns[:-1]:
            i, r = where[c], where[reference_column]
            ratios = [run[r] / run[i] for run in runs if math.isfinite(run[i]) and math.isfinite(run[r])]
            if i == r:
                cells.append("same schedule")
                medians[c].append(1.0)
                for k in range(a.repeats):
                    per_repeat[c][k].append(1.0)
            elif len(ratios) == a.repeats:
                med = statistics.median(ratios)
                medians[c].append(med)
                for k, x in enumerate(ratios):
                    per_repeat[c][k].append(x)
                cells.append(f"{med:.3f}x [{min(ratios):.2f}, {max(ratios):.2f}]")
            else:
                cells.append("failed")
        print(f"{m.app:26s}" + "".join(f"{x:>{width}s}" for x in cells), flush=True)
        for line in failures:
            print(line, flush=True)
        if a.save is not None:
            _save(a.save, m, runs)
    counted = {len(medians[c]) for c in columns[:-1]}
    if counted != {len(apps)}:  # a failed app (or one that kept not every column) is left out of the geomeans
        print(f"(geomeans over the apps measured in every repeat: {', '.join(map(str, sorted(counted)))} of {len(apps)})")
    print(f"{'geomean of medians':26s}" + "".join(f"{geomean(medians[c]):>{width - 1}.3f}x" for c in columns[:-1]))
    for k in range(a.repeats):
        print(f"{'geomean, repeat ' + str(k + 1):26s}" +
              "".join(f"{geomean(per_repeat[c][k]):>{width - 1}.3f}x" for c in columns[:-1]))
    print(f"({time.time() - t0:.0f} s)")
    return 0


def _save(path: Path, m, runs: list[dict[int, float]]) -> None:
    """The app's measured schedules (those of the chosen columns) with every repeat's runtime."""
    schedules = []
    for i, s in enumerate(m.schedules):
        if i not in runs[0]:
            continue
        times = [run[i] for run in runs]
        ok = [t for t in times if math.isfinite(t)]
        schedules.append({"columns": list(s.columns), "loopnest": s.loopnest,
                          "runtime_s": statistics.median(ok) if len(ok) == len(times) else None,
                          "runtimes_s": [t if math.isfinite(t) else None for t in times]})
    row = {"app": m.app, "size": m.size, "backend": m.backend, "repeats": len(runs), "schedules": schedules}
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
