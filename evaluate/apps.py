"""`evaluate_apps(cfg)`: the app suite scheduled by the searches and by baselines, every schedule compiled,
checked against the reference interpreter and benchmarked; speedups over the naive schedule per app and
their geometric mean per method (adams2019 §6.2), logged to an MLflow run.

    python -m evaluate.apps [--config conf/evaluate_apps.yaml] apps=blur,unsharp size=full model=champion

Methods, one row per (app, method):
  naive                  every Func at root, serial (ir.builder.naive_schedule): the denominator
  expert                 the app's hand-written schedule, for apps that have one
  random                 the median runtime of `random_schedules` random schedules (ir.sampling)
  greedy-random-weights  greedy search with the hybrid network's random weights (adams2019's first round)
  greedy, beam, hierarchical   the scheduler's searches under the chosen model
A row's status is backends' (ok, compile_error, runtime_error, crash, timeout, wrong_output,
invalid_schedule) or search_error (building the schedule raised): a failure is a row, never a dead run.
"""

from __future__ import annotations

import csv
import io
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from typing import Literal

import numpy as np

from .config import AppsConfig, EvaluateError, run_command

PROG = "python -m evaluate.apps"
DESCRIPTION = ("Schedules the app suite with the searches and the baselines, measures every schedule and logs the "
               "speedups over the naive schedule to MLflow.")
NAIVE = "naive"
RANDOM_WEIGHTS = "greedy-random-weights"
TABLE_CSV = "apps.csv"
TABLE_JSON = "apps_table.json"


@dataclass(frozen=True)
class Method:
    """A way to get an app's schedule: a fixed baseline, random schedules, or a search under a cost model."""

    name: str  # the table's label, unique per app
    kind: Literal["naive", "expert", "random", "search"]
    model: object = None  # search: a scheduler.cost.CostModel
    algorithm: str = ""  # search: greedy | beam | hierarchical


@dataclass(frozen=True)
class AppRow:
    app: str
    method: str
    model: str  # the cost model that searched ('' for fixed and random schedules)
    status: str  # ok, a backends status, or search_error
    runtime_s: float  # best measured time of one run (the median over schedules for random); NaN unless ok
    speedup: float  # naive runtime / runtime; NaN unless both are ok
    search_s: float  # seconds spent getting the schedule(s): the search, for searches
    note: str = ""  # the failure's first line, or how many random schedules ran


@dataclass(frozen=True)
class Geomean:
    method: str
    speedup: float  # geometric mean of the speedups over naive of the apps where the method ran
    apps: int  # how many apps that is


@dataclass
class AppsResult:
    run_id: str
    experiment_id: str
    tracking_uri: str
    model: str  # the cost model the searches used, as resolved (champion may be the analytical model)
    rows: list[AppRow]
    geomeans: list[Geomean]
    seconds: float

    def table(self) -> str:
        return "\n".join([HEADER, *map(format_row, self.rows)])

    def summary(self) -> str:
        apps = len({r.app for r in self.rows})
        return "\n".join([
            f"geometric mean speedup over naive ({apps} apps, searches with {self.model or 'no model'}):",
            *(f"  {g.method:24s} {ratio(g.speedup):>7s}x  over {g.apps} apps" for g in self.geomeans),
            f"{len(self.rows)} rows in {self.seconds:.0f}s, {sum(r.status != 'ok' for r in self.rows)} failed",
            f"MLflow run {self.run_id} (experiment {self.experiment_id}) in {self.tracking_uri}",
            f"open: mlflow ui --backend-store-uri {self.tracking_uri}",
        ])


HEADER = f"{'app':24s} {'method':24s} {'status':16s} {'runtime':>12s} {'speedup':>8s} {'search':>8s}  note"


def format_row(r: AppRow) -> str:
    runtime = f"{r.runtime_s * 1e3:9.4g} ms" if math.isfinite(r.runtime_s) else f"{'-':>12s}"
    speedup = f"{ratio(r.speedup):>7s}x" if math.isfinite(r.speedup) else f"{'-':>8s}"
    return f"{r.app:24s} {r.method:24s} {r.status:16s} {runtime} {speedup} {r.search_s:7.2f}s  {r.note}"


def ratio(x: float) -> str:
    """A speedup to read: two decimals, or two significant digits below 0.1 (a 1000x slowdown is not 0.00)."""
    return f"{x:.2f}" if x >= 0.1 or not math.isfinite(x) else f"{x:.2g}"


# --- methods -------------------------------------------------------------------------------------------------


def methods(cfg: AppsConfig, model) -> list[Method]:
    """What `cfg` asks for, naive first (every speedup needs it); `model` is the loaded scheduler CostModel."""
    from ir.target import get_target
    from scheduler.cost import load_model

    out = [Method(NAIVE, "naive")]
    if "expert" in cfg.baselines:
        out.append(Method("expert", "expert"))
    if "random" in cfg.baselines:
        out.append(Method("random", "random"))
    if "random_weights" in cfg.baselines:
        out.append(Method(RANDOM_WEIGHTS, "search", load_model(f"random:{cfg.seed}", get_target(cfg.target)),
                          "greedy"))
    out += [Method(a, "search", model, a) for a in cfg.algorithms]
    return out


def _schedules(method: Method, app, pipeline, target, cfg: AppsConfig) -> list:
    """The LoopNest(s) `method` gives for `pipeline`; [] when it does not apply (no expert schedule)."""
    from ir.builder import naive_schedule
    from ir.sampling import random_schedule
    from scheduler import autoschedule

    if method.kind == "naive":
        return [naive_schedule(pipeline)]
    if method.kind == "expert":
        return [app.schedule(pipeline, target)] if app.schedule is not None else []
    if method.kind == "random":
        return [random_schedule(pipeline, cfg.seed + i, target)[0] for i in range(cfg.random_schedules)]
    return [autoschedule(pipeline, target, model=method.model, algorithm=method.algorithm, beam_size=cfg.beam_size,
                         passes=cfg.passes, seed=cfg.seed).loopnest]


# --- measuring -----------------------------------------------------------------------------------------------


def measure_app(app, cfg: AppsConfig, methods: list[Method], tick: Callable[[str], None] | None = None,
                ) -> list[AppRow]:
    """One row per method that applies to `app` at `cfg.size`, each schedule checked and timed; speedups over
    the naive row. `tick(method name)` after each method (progress)."""
    import backends
    from generator.datagen import PROTOCOLS
    from ir.target import get_target
    from scheduler.modes import reference

    target = get_target(cfg.target)
    pipeline = app.build(cfg.size)
    inputs, expected = reference(pipeline)
    rows = []
    for m in methods:
        t0 = time.perf_counter()
        try:
            loopnests = _schedules(m, app, pipeline, target, cfg)
        except Exception as e:  # noqa: BLE001 - a search or schedule that fails is this row's status
            rows.append(_row(app.name, m, "search_error", [], time.perf_counter() - t0, _first_line(e)))
            loopnests = None
        search_s = time.perf_counter() - t0
        if loopnests:
            ms = [backends.compile_and_measure(pipeline, ln, inputs, target, PROTOCOLS[cfg.protocol],
                                               expected=expected) for ln in loopnests]
            rows.append(_measured_row(app.name, m, ms, search_s))
        if tick is not None:
            tick(m.name)
    return with_speedups(rows)


def _measured_row(app: str, method: Method, ms: list, search_s: float) -> AppRow:
    """Ok if any schedule ran correctly (runtime: the median of those that did), else the commonest failure."""
    ok = [m.min_s for m in ms if m.ok]
    failed = Counter(m.status for m in ms if not m.ok)
    if method.kind == "random":
        note = f"{len(ok)}/{len(ms)} ok" + "".join(f", {n} {s}" for s, n in failed.most_common())
    else:
        note = next((_first_line(m.error) for m in ms if not m.ok), "")
    status = "ok" if ok else failed.most_common(1)[0][0]
    return _row(app, method, status, ok, search_s, note)


def _row(app: str, method: Method, status: str, runtimes: list[float], search_s: float, note: str) -> AppRow:
    model = getattr(method.model, "name", str(method.model)) if method.kind == "search" else ""
    runtime = float(np.median(runtimes)) if runtimes else math.nan
    return AppRow(app, method.name, model, status, runtime, math.nan, search_s, note)


def with_speedups(rows: list[AppRow]) -> list[AppRow]:
    """Each ok row's speedup over the naive row of its app (NaN when either failed)."""
    naive = {r.app: r.runtime_s for r in rows if r.method == NAIVE and r.status == "ok"}
    return [replace(r, speedup=naive[r.app] / r.runtime_s) if r.status == "ok" and r.app in naive else r
            for r in rows]


def geomeans(rows: list[AppRow]) -> list[Geomean]:
    """Per method but naive, in first-seen order: the geometric mean over the apps where it ran correctly (so
    methods may be averaged over different apps; `apps` says how many)."""
    names = list(dict.fromkeys(r.method for r in rows if r.method != NAIVE))
    out = []
    for name in names:
        s = [r.speedup for r in rows if r.method == name and math.isfinite(r.speedup) and r.speedup > 0]
        out.append(Geomean(name, math.exp(float(np.mean(np.log(s)))) if s else math.nan, len(s)))
    return out


def _first_line(e) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# --- the command ---------------------------------------------------------------------------------------------


def app_names(cfg: AppsConfig) -> list[str]:
    from generator.apps import APPS

    unknown = [a for a in cfg.apps if a not in APPS]
    if unknown:
        raise EvaluateError(f"unknown app {unknown[0]!r}; apps: {', '.join(APPS)}")
    return list(cfg.apps or APPS)


def evaluate_apps(cfg: AppsConfig, echo: Callable[[str], None] | None = None) -> AppsResult:
    """Measure every (app, method) of `cfg` into an MLflow run; `echo` gets the table line by line as each app
    finishes. Raises SchedlabError subclasses for bad input (unknown app, model or target)."""
    from tqdm import tqdm

    from generator.apps import get_app
    from ir.target import get_target
    from scheduler.cost import load_model
    from train.run import _quiet

    from .plots import tracked_run

    _quiet()
    t0 = time.time()
    names = app_names(cfg)
    target = get_target(cfg.target)
    if target.kind != "cpu":
        raise EvaluateError(f"target={cfg.target} is a {target.kind} target; the app suite is measured on CPU "
                            "targets (numba)")
    model = load_model(cfg.model, target, cfg.tracking_uri) if cfg.algorithms else None
    ms = methods(cfg, model)
    echo = echo or (lambda line: None)
    rows: list[AppRow] = []
    extra = {"model_resolved": getattr(model, "name", ""), "apps_measured": names}
    with tracked_run(cfg.tracking_uri, cfg.experiment, cfg.run_name, cfg, extra) as run, \
            tqdm(total=len(names) * len(ms), desc="apps", unit="schedule", disable=not cfg.progress,
                 file=sys.stderr) as bar:
        echo(HEADER)
        for name in names:
            bar.set_postfix_str(name)
            app_rows = measure_app(get_app(name), cfg, ms, tick=lambda _: bar.update(1))
            rows += app_rows
            for r in app_rows:
                echo(format_row(r))
            run.log_metrics({f"speedup_{r.app}_{r.method}": r.speedup for r in app_rows})
            run.client.log_text(run.run_id, table_csv(rows), TABLE_CSV)  # so far: an interrupted run keeps it
        result = AppsResult(run.run_id, run.experiment_id, run.tracking_uri, extra["model_resolved"], rows,
                            geomeans(rows), 0.0)
        _log_results(run, result, names, cfg)
    result.seconds = time.time() - t0
    return result


def _log_results(run, result: AppsResult, names: list[str], cfg: AppsConfig) -> None:
    from train.plots import log_figures

    from .plots import speedup_bars

    run.log_metrics({f"geomean_speedup_{g.method}": g.speedup for g in result.geomeans})
    run.client.log_table(run.run_id, {f.name: [getattr(r, f.name) for r in result.rows] for f in fields(AppRow)},
                         TABLE_JSON)
    shown = [g.method for g in result.geomeans]
    by_key = {(r.app, r.method): r.speedup for r in result.rows}
    matrix = np.array([[by_key.get((a, m), math.nan) for m in shown] for a in names]).reshape(len(names), len(shown))
    title = f"{cfg.size} apps on {cfg.target}; searches with {result.model or 'no model'}"
    log_figures(run.run_id, {"speedups": speedup_bars(names, shown, matrix, [g.speedup for g in result.geomeans],
                                                      title)}, tracking=run.tracking_uri)


def table_csv(rows: list[AppRow]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=[f.name for f in fields(AppRow)], lineterminator="\n")
    w.writeheader()
    w.writerows(asdict(r) for r in rows)
    return out.getvalue()


def main(argv=None) -> int:
    from tqdm import tqdm

    def echo(line: str) -> None:
        tqdm.write(line, file=sys.stdout)
        sys.stdout.flush()

    return run_command(PROG, DESCRIPTION, AppsConfig, "conf/evaluate_apps.yaml",
                       lambda cfg: evaluate_apps(cfg, echo), argv)


if __name__ == "__main__":
    sys.exit(main())
