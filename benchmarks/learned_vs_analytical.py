"""Does the learned cost model schedule real pipelines better than the analytical one? Side by side in one run.

For each app at its size: schedlab's beam search under each `--models` entry (default: the built-in learned
model and the analytical model, each at the same beam size and passes: by default autoschedule's beam 32 x 5, about
25 minutes for the 17 apps on 2 cores; `--beam-size 8 --passes 2` takes about 9), the naive schedule and the app's
expert schedule, every LoopNest compiled by one backend (default Halide) and measured in one batch per app with the
full protocol, timed together in rounds (scheduler.modes.measure_loopnest_results), each output checked against
the interpreter. Prints runtimes, speedups over naive, the geometric means and, per app, each model's runtime over
the last model's (the reference, analytical by default); last, each column's search time over all apps. A LoopNest
that several columns share is compiled and measured once: a model that picks the reference's schedule shows "same
schedule" and counts as exactly 1 in the geomean, not as two measurements' drift. A failure is a row with its
status, never a missing app.

    python benchmarks/learned_vs_analytical.py --apps blur,unsharp,harris,max_filter,camera_pipe
    python benchmarks/learned_vs_analytical.py --models models:/schedlab-host/4,analytical --tracking-uri ...
    python benchmarks/learned_vs_analytical.py --models analytical:3,analytical --algorithm greedy  # two priors
    python benchmarks/learned_vs_analytical.py --apps all --save measured.jsonl  # keep schedules and runtimes
    python benchmarks/learned_vs_analytical.py --models portfolio=builtin,builtin,analytical  # a column's own search

An entry `ALGORITHM=MODEL` searches that column with another registered strategy than `--algorithm` (e.g.
`portfolio`: beam under the model and under the analytical model, the model picking among both searches' complete
schedules; docs/scheduler.md), at the same beam size and passes.

`--save` writes each app's distinct measured LoopNests with their runtimes (JSON lines), which
benchmarks/app_ranking.py scores any cost model against without compiling or measuring again.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="blur,unsharp,harris,max_filter,camera_pipe,local_laplacian",
                    help="comma-separated apps of generator.apps, or all")
    ap.add_argument("--size", default="full", choices=("small", "full"))
    ap.add_argument("--models", default="builtin,analytical",
                    help="cost models, comma-separated; ratios are over the last one")
    ap.add_argument("--backend", default="halide", help="what every LoopNest is compiled with")
    ap.add_argument("--algorithm", default="beam", choices=("beam", "greedy"), help="the search under every model")
    ap.add_argument("--beam-size", type=int, default=32, help="autoschedule's default (adams2019's 32)")
    ap.add_argument("--passes", type=int, default=5, help="autoschedule's default (adams2019's 5)")
    ap.add_argument("--tracking-uri", default=None)
    ap.add_argument("--measure-timeout", type=float, default=600.0,
                    help="seconds an app's measurement may take in the worker (naive lens_blur runs 11 s a time)")
    ap.add_argument("--save", type=Path, default=None,
                    help="append each app's measured schedules (JSON lines) for benchmarks/app_ranking.py")
    a = ap.parse_args(argv)
    if a.save is not None:
        try:  # before hours of measuring, not after the first app
            a.save.open("a").close()
        except OSError as e:
            ap.error(f"--save: cannot write {a.save}: {e.strerror}")

    from evaluate.apps import geomean
    from generator.apps import app_list, get_app
    from ir.builder import naive_schedule
    from ir.target import get_target
    from scheduler import autoschedule
    from scheduler.cost import load_model
    from scheduler.modes import best_runtimes, measure_loopnest_results, reference

    try:
        apps = app_list(a.apps)
    except ValueError as e:
        ap.error(f"--apps: {e}")
    target = get_target("host")
    models = [m for m in a.models.split(",") if m]  # the columns: MODEL or ALGORITHM=MODEL
    searches = {m: _column_search(ap, m, a.algorithm) for m in models}
    loaded = {m: load_model(spec, target, a.tracking_uri, backend=a.backend, allow_mismatch=True)
              for m, (_, spec) in searches.items()}
    print(f"{len(models)} models: " + "; ".join(f"{m} = {c.name} (learned {c.backend or 'nothing'})"
                                                for m, c in loaded.items()))
    search = f"beam {a.beam_size} x {a.passes}" if a.algorithm == "beam" else "greedy"
    print(f"{search}, every LoopNest compiled by {a.backend}, apps at size {a.size}")
    cols = ["naive", "expert", *models]
    labels = {c: _label(c) for c in cols}
    w = max(18, *(len(labels[c]) for c in cols))  # a column as wide as its header
    print(f"{'app':16s} " + " ".join(f"{labels[c]:>{w}s}" for c in cols) + "   " +
          " ".join(f"{labels[m][:14] + '/' + labels[models[-1]][:8]:>24s}" for m in models[:-1]))
    speedups: dict[str, list[float]] = {c: [] for c in cols}
    ratios: dict[str, list[float]] = {m: [] for m in models[:-1]}
    searched = {m: SearchTotal() for m in models}
    t0 = time.time()
    for name in apps:
        app = get_app(name)
        p = app.build(a.size)
        lns = [naive_schedule(p), app.schedule(p, target)]
        for m in models:
            s = autoschedule(p, target, model=loaded[m], algorithm=searches[m][0], beam_size=a.beam_size,
                             passes=a.passes, backend=a.backend, allow_mismatch=True)
            lns.append(s.loopnest)
            searched[m].add(s.stats)
        inputs, expected = reference(p)
        # a LoopNest two columns share is measured once: its ratio is exactly 1, not two runs' drift
        first: dict[str, int] = {}  # a LoopNest's text -> its index among the distinct ones
        which = [first.setdefault(ln.dumps(), len(first)) for ln in lns]
        distinct = [lns[which.index(k)] for k in range(len(first))]
        measured = measure_loopnest_results(p, distinct, target, inputs, expected, backend=a.backend,
                                            timeout=a.measure_timeout)
        results = [measured[k] for k in which]
        runtimes = best_runtimes(results)
        same = [m for m in models[:-1] if which[cols.index(m)] == which[-1]]
        failures = [f"{c}: {m.status}" + (f" ({m.error.splitlines()[0][:160]})" if m.error else "")
                    for c, m in zip(cols, results) if not m.ok]
        if a.save is not None:
            _save(a, name, cols, which, distinct, measured)
        naive = runtimes[0]
        for c, t in zip(cols, runtimes):
            if math.isfinite(t) and math.isfinite(naive):
                speedups[c].append(naive / t)
        for m in models[:-1]:
            t, ref = runtimes[cols.index(m)], runtimes[-1]
            if math.isfinite(t) and math.isfinite(ref):
                ratios[m].append(ref / t)
        print(f"{name:16s} " + " ".join(f"{_cell(t, naive):>{w}s}" for t in runtimes) + "   " +
              " ".join(f"{_ratio(runtimes[-1], runtimes[cols.index(m)], m in same):>24s}" for m in models[:-1]),
              flush=True)
        for line in failures:
            print(f"  {name} {line}", flush=True)
    print(f"{'geomean':16s} " + " ".join(f"{geomean(speedups[c]):>{w - 1}.2f}x" for c in cols) + "   " +
          " ".join(f"{geomean(ratios[m]):>23.3f}x" for m in models[:-1]))
    print(f"(speedup over naive; a ratio > 1 means that model's schedule ran faster than {models[-1]}'s); "
          f"{time.time() - t0:.0f} s")
    print("search: " + "; ".join(f"{labels[m]} {searched[m]}" for m in models))
    return 0


@dataclass
class SearchTotal:
    """One column's search effort over the apps: what a wider beam or a slower model costs next to what it wins."""
    seconds: float = 0.0
    states: int = 0

    def add(self, stats) -> None:
        self.seconds += stats.seconds
        self.states += stats.states_evaluated

    def __str__(self) -> str:
        from ir.units import format_seconds

        return (f"{format_seconds(self.seconds)}, {self.states} states "
                f"({format_seconds(self.seconds / max(1, self.states))}/state)")


def _column_search(ap: argparse.ArgumentParser, entry: str, default: str) -> tuple[str, str]:
    """(search strategy, cost model spec) of a --models entry: MODEL, or ALGORITHM=MODEL for another strategy."""
    from scheduler.strategy import strategy_names

    algorithm, sep, spec = entry.partition("=")
    if not sep:
        return default, entry
    if algorithm not in strategy_names() or not spec:
        ap.error(f"--models: {entry!r}: write ALGORITHM=MODEL with ALGORITHM one of {', '.join(strategy_names())}")
    return algorithm, spec


def _label(entry: str) -> str:
    """A column's header: a `learned:` model directory shortened to its last component, so that two columns of one
    long path (`learned:/tmp/x/m`, `portfolio=learned:/tmp/x/m`) stay told apart and the table narrow."""
    head, sep, path = entry.partition("learned:")
    return f"{head}{sep}{Path(path).name}" if sep and "/" in path else entry


def _save(a: argparse.Namespace, app: str, cols: list[str], which: list[int], distinct, measured) -> None:
    """One JSON line per app appended to `a.save`: its size, backend and search, and each distinct LoopNest with the
    columns that chose it and its best runtime (null when its measurement failed)."""
    schedules = [{"columns": [c for c, k in zip(cols, which) if k == i], "loopnest": ln.dumps(),
                  "runtime_s": float(m.min_s) if m.ok else None, "status": m.status}
                 for i, (ln, m) in enumerate(zip(distinct, measured))]
    row = {"app": app, "size": a.size, "backend": a.backend, "algorithm": a.algorithm, "beam_size": a.beam_size,
           "passes": a.passes, "schedules": schedules}
    with a.save.open("a") as f:
        f.write(json.dumps(row) + "\n")


def _cell(t: float, naive: float) -> str:
    from ir.units import format_seconds

    if not math.isfinite(t):
        return "failed"
    return f"{format_seconds(t)} {naive / t:.2f}x" if math.isfinite(naive) else format_seconds(t)


def _ratio(reference: float, t: float, same: bool = False) -> str:
    if same:
        return "same schedule"
    return f"{reference / t:.3f}x" if math.isfinite(t) and math.isfinite(reference) else "-"


if __name__ == "__main__":
    sys.exit(main())
