"""`evaluate_apps(cfg)`: the app suite scheduled by the searches and by baselines, every schedule compiled,
checked against the reference interpreter and benchmarked; speedups over the naive schedule per app and
their geometric mean per method (adams2019 §6.2), logged to an MLflow run: the geometric means as its only
metrics, the rows as a table artifact (apps_table.json, shown as a table by the MLflow UI; apps.csv in full),
and the speedup charts under plots/.

    python -m evaluate.apps [--config conf/evaluate_apps.yaml] apps=blur,unsharp size=full model=champion

Methods, one row per (app, method):
  naive                  every Func at root, serial (ir.builder.naive_schedule): the denominator
  expert                 the app's hand-written schedule, for apps that have one
  random                 the median runtime of `random_schedules` random schedules (ir.sampling)
  greedy-random-weights  greedy search with the hybrid network's random weights (adams2019's first round)
  greedy, beam, ...      each registered search strategy of `algorithms` under the chosen model, within a
                         SearchBudget: mcts_budget cost-model evaluations for mcts/mcts-real, `measurements`
                         schedules measured for top-k, mcts-real and autotune
  mcts=beam-evaluations, mcts=beam-seconds   (mcts_matched) MCTS given beam's own states scored or seconds
                         on the same app: the comparison at equal cost (protuner2020 §5)
The rows are compiled and measured by `backend` (numba or halide). Under Halide (`halide` key: when the halide
package is installed), compiled by Halide on this machine:
  <m>@halide             the same LoopNest as <m> (naive, expert and the searches; not searched again), when
                         backend=numba
  Adams2019@halide, Mullapudi2016@halide   Halide's own autoschedulers (backends.halide.autoschedule)
Every row's speedup is over the naive row; speedup_same_backend is over the naive row of its own backend
(naive@halide for Halide twins), and numba_over_halide is runtime(<m>) / runtime(<m>@halide).
A row's status is backends' (ok, compile_error, runtime_error, crash, timeout, wrong_output,
invalid_schedule) or search_error (building the schedule raised): a failure is a row, never a dead run.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Literal

import numpy as np

from ir.errors import first_line
from ir.status import Status
from ir.units import format_ratio, format_runtime_ratio, format_seconds

from .config import AppsConfig, EvaluateError, run_command

PROG = "python -m evaluate.apps"
DESCRIPTION = ("Schedules the app suite with the searches and the baselines, measures every schedule and logs the "
               "speedups over the naive schedule to MLflow.")
NAIVE = "naive"
EXPERT = "expert"
HALIDE = "@halide"  # the suffix of the methods compiled by Halide
HALIDE_NAIVE = NAIVE + HALIDE
RANDOM_WEIGHTS = "greedy-random-weights"
TABLE_CSV = "apps.csv"
TABLE_JSON = "apps_table.json"


@dataclass(frozen=True)
class SearchBudget:
    """What one search may spend, so that strategies are compared at equal cost (protuner2020 §5 compares MCTS
    with beam at equal cost-model evaluations): cost-model evaluations and seconds for MCTS, schedules measured
    for top-k, mcts-real and autotune. `match` = evaluations | seconds: MCTS takes beam's own figure of the app."""

    evaluations: int = 2000  # mcts, mcts-real: states scored by the cost model
    seconds: float = 0.0  # mcts: wall-clock limit, 0 for none
    measurements: int = 8  # top-k, mcts-real, autotune
    match: Literal["", "evaluations", "seconds"] = ""

    def kwargs(self, algorithm: str) -> dict:
        """autoschedule's keywords for `algorithm` (autotune: its base result then 2 rounds of samples)."""
        if algorithm == "top-k":
            return {"k": self.measurements}
        if algorithm == "autotune":
            return {"rounds": 2, "samples": (self.measurements - 1) // 2}
        if algorithm in ("mcts", "mcts-real"):
            return {"budget": self.evaluations, "budget_seconds": self.seconds, "measurements": self.measurements}
        return {}

    def matched(self, beam: tuple[int, float]) -> SearchBudget:
        """This budget with beam's (states scored, search seconds) of the same app put in."""
        if self.match == "evaluations":
            return replace(self, evaluations=beam[0], seconds=0.0)
        if self.match == "seconds":
            return replace(self, evaluations=10**9, seconds=beam[1])
        return self


@dataclass(frozen=True)
class Method:
    """A way to get an app's schedule: a fixed baseline, random schedules, or a search under a cost model."""

    name: str  # the table's label, unique per app
    kind: Literal["naive", "expert", "random", "search", "halide"]
    model: object = None  # search: a scheduler.cost.CostModel
    algorithm: str = ""  # search: a registered strategy (greedy, beam, mcts, ...); halide: the autoscheduler's name
    budget: SearchBudget | None = None  # search: what the strategy may spend (None: autoschedule's defaults)

    @property
    def has_halide_twin(self) -> bool:
        """Its LoopNest is also compiled by Halide, as `<name>@halide` (not random schedules, not adams2019's
        random-weights round)."""
        return self.kind in ("naive", "expert") or (self.kind == "search" and self.name != RANDOM_WEIGHTS)


@dataclass(frozen=True)
class AppRow:
    app: str
    method: str
    backend: str  # numba or halide: what compiled the schedule
    model: str  # the cost model that searched ('' for fixed and random schedules and Halide's autoschedulers)
    status: str  # ok, a backends status, or search_error
    runtime_s: float  # best measured time of one run (the median over schedules for random); NaN unless ok
    speedup: float  # runtime of the numba naive row / runtime; NaN unless both are ok
    speedup_same_backend: float  # runtime of the naive row of this row's backend / runtime
    numba_over_halide: float  # Halide rows of a schedlab LoopNest: runtime(numba, same LoopNest) / runtime
    search_s: float  # seconds spent getting the schedule(s): the search (for <m>@halide: <m>'s, not repeated)
    note: str = ""  # the failure's first line, or how many random schedules ran
    evaluations: int = 0  # searches: states the cost model scored
    measured: int = 0  # searches that measure (top-k, mcts-real, autotune): schedules measured while searching


@dataclass(frozen=True)
class Geomean:
    method: str
    speedup: float  # geometric mean of the speedups over naive of the apps where the method ran
    apps: int  # how many apps that is
    speedup_same_backend: float = math.nan  # the same of the speedups over naive of its own backend


@dataclass(frozen=True)
class HalideComparison:
    """The two headline ratios of the side-by-side run under Halide (NaN where nothing was comparable)."""

    beam_over_adams2019: float  # geomean over apps of runtime(Adams2019@halide) / runtime(beam@halide)
    beam_apps: int
    numba_over_halide: float  # geomean over (app, LoopNest) pairs of runtime(numba) / runtime(halide)
    pairs: int
    pair_methods: tuple[str, ...]  # the LoopNests compared: naive, expert, greedy, ...
    backend: str = "numba"  # schedlab's backend that compiled the other side of each pair (numba, llvm)

    def lines(self) -> list[str]:
        pairs = ", ".join(self.pair_methods) or "none"
        beam = (f"{format_runtime_ratio('Adams2019@halide', 'beam@halide', self.beam_over_adams2019)}"
                f"  (geomean over {self.beam_apps} apps)")
        numba = (f"{format_runtime_ratio(self.backend, 'Halide', self.numba_over_halide)}, same LoopNest"
                 f"  (geomean over {self.pairs} pairs of {pairs})")
        # no Adams2019 or no beam row: no ratio to state; no pairs under backend=halide: no numba rows
        return [beam] * (self.beam_apps > 0) + [numba] * (self.pairs > 0)


@dataclass
class AppsResult:
    run_id: str
    experiment_id: str
    tracking_uri: str
    model: str  # the cost model the searches used, as resolved (champion may be the analytical model)
    rows: list[AppRow]
    geomeans: list[Geomean]
    seconds: float
    halide: HalideComparison | None = None  # None: not compared under Halide

    def table(self) -> str:
        return "\n".join([HEADER, *map(format_row, self.rows)])

    def summary(self) -> str:
        apps = len({r.app for r in self.rows})
        halide = self.halide.lines() if self.halide else []
        return "\n".join([
            f"geometric mean speedup over naive ({apps} apps, searches with {self.model or 'no model'}):",
            *map(format_geomean, self.geomeans),
            *(["compared under Halide:", *(f"  {line}" for line in halide)] if halide else []),
            f"{len(self.rows)} rows in {format_seconds(self.seconds)}, "
            f"{sum(r.status != 'ok' for r in self.rows)} failed",
            f"MLflow run {self.run_id} (experiment {self.experiment_id}) in {self.tracking_uri}",
            f"open: mlflow ui --backend-store-uri {self.tracking_uri}",
        ])


HEADER = (f"{'app':16s} {'method':22s} {'status':14s} {'runtime':>10s} {'speedup':>8s} {'same-bk':>8s} "
          f"{'t_nb/t_hl':>9s} {'search':>9s} {'evals':>7s} {'meas':>4s}  note")


def format_row(r: AppRow) -> str:
    """speedup: over the naive row; same-bk: over the naive schedule of the row's backend; t_nb/t_hl: runtime of
    the same LoopNest under schedlab's backend (numba or llvm) / under Halide (> 1: Halide faster); evals: states
    the cost model scored;
    meas: schedules the search measured."""
    runtime = format_seconds(r.runtime_s if math.isfinite(r.runtime_s) else math.nan)
    t_nb_hl = format_ratio(r.numba_over_halide) if math.isfinite(r.numba_over_halide) else "-"
    evals = str(r.evaluations) if r.evaluations else "-"
    measured = str(r.measured) if r.measured else "-"
    return (f"{r.app:16s} {r.method:22s} {r.status:14s} {runtime:>10s} {_times(r.speedup, 8)} "
            f"{_times(r.speedup_same_backend, 8)} {t_nb_hl:>9s} {format_seconds(r.search_s):>9s} {evals:>7s} "
            f"{measured:>4s}  {r.note}")


def format_geomean(g: Geomean) -> str:
    same = f"  ({format_ratio(g.speedup_same_backend)}x over {HALIDE_NAIVE})" if g.method.endswith(HALIDE) else ""
    return f"  {g.method:24s} {format_ratio(g.speedup):>7s}x  over {g.apps} apps{same}"


def _times(x: float, width: int) -> str:
    return f"{format_ratio(x):>{width - 1}s}x" if math.isfinite(x) else f"{'-':>{width}s}"




# --- methods -------------------------------------------------------------------------------------------------


def methods(cfg: AppsConfig, model) -> list[Method]:
    """What `cfg` asks for, naive first (every speedup needs it); `model` is the loaded scheduler CostModel."""
    from ir.target import get_target
    from scheduler.cost import load_model

    out = [Method(NAIVE, "naive")]
    if "expert" in cfg.baselines:
        out.append(Method(EXPERT, "expert"))
    if "random" in cfg.baselines:
        out.append(Method("random", "random"))
    if "random_weights" in cfg.baselines:
        out.append(Method(RANDOM_WEIGHTS, "search", load_model(f"random:{cfg.seed}", get_target(cfg.target)),
                          "greedy"))
    budget = SearchBudget(evaluations=cfg.mcts_budget, measurements=cfg.measurements)
    out += [Method(a, "search", model, a, budget) for a in cfg.algorithms]
    out += [Method(f"mcts=beam-{m}", "search", model, "mcts", replace(budget, match=m)) for m in cfg.mcts_matched]
    for spec in cfg.compare_models:  # the same searches under each other model, named <algorithm>:<spec>
        other = load_model(spec, get_target(cfg.target), cfg.tracking_uri)
        out += [Method(f"{a}:{spec}", "search", other, a, budget) for a in cfg.algorithms]
    return out


def _search_kwargs(method: Method, beam: tuple[int, float] | None) -> dict:
    """autoschedule's budget keywords for `method`; `beam`: (states scored, seconds) of this app's beam row."""
    if method.budget is None:
        return {}
    budget = method.budget
    if budget.match:
        if beam is None:
            raise EvaluateError(f"{method.name}: beam's search did not run on this app, so there is no budget to match")
        budget = budget.matched(beam)
    return budget.kwargs(method.algorithm)


def _schedules(method: Method, app, pipeline, target, cfg: AppsConfig,
               beam: tuple[int, float] | None = None) -> tuple[list, object]:
    """The LoopNest(s) `method` gives for `pipeline` ([] when it does not apply: no expert schedule) and, for a
    search, its SearchStats (else None). `beam`: the app's beam (states scored, seconds), for matched budgets."""
    from ir.builder import naive_schedule
    from ir.sampling import random_schedule
    from scheduler import autoschedule

    if method.kind == "naive":
        return [naive_schedule(pipeline)], None
    if method.kind == "expert":
        return ([app.schedule(pipeline, target)] if app.schedule is not None else []), None
    if method.kind == "random":
        return [random_schedule(pipeline, cfg.seed + i, target)[0] for i in range(cfg.random_schedules)], None
    # measuring strategies measure with the rows' backend, whatever backend the model learned
    s = autoschedule(pipeline, target, model=method.model, algorithm=method.algorithm, beam_size=cfg.beam_size,
                     passes=cfg.passes, seed=cfg.seed, backend=cfg.backend, allow_mismatch=True,
                     **_search_kwargs(method, beam))
    return [s.loopnest], s.stats


def halide_installed() -> bool:
    return importlib.util.find_spec("halide") is not None


def use_halide(cfg: AppsConfig) -> bool:
    """Whether `cfg` compares under Halide: halide=auto when the package is installed, halide=true always (an
    EvaluateError without it)."""
    installed = halide_installed()
    if cfg.halide is True and not installed:
        raise EvaluateError("halide=true needs the halide package: pip install schedlab[halide] (or halide=auto)")
    return installed and cfg.halide is not False


def halide_methods(cfg: AppsConfig, methods: list[Method]) -> list[Method]:
    """The rows measured under Halide: each schedlab LoopNest's twin, then Halide's autoschedulers."""
    twins = methods if cfg.backend != "halide" else []  # under backend=halide the rows themselves are Halide's
    return [*(replace(m, name=m.name + HALIDE) for m in twins if m.has_halide_twin),
            *(Method(s + HALIDE, "halide", algorithm=s) for s in cfg.halide_autoschedulers)]


# --- measuring -----------------------------------------------------------------------------------------------


def measure_app(app, cfg: AppsConfig, methods: list[Method], tick: Callable[[str], None] | None = None,
                halide: bool = False, done: list[AppRow] = (),
                on_rows: Callable[[list[AppRow]], None] | None = None) -> list[AppRow]:
    """One row per method that applies to `app` at `cfg.size`, each schedule checked and timed; speedups over
    the naive row. With `halide`, then the rows of `halide_methods`: the same LoopNests (not searched again)
    and Halide's autoschedulers, compiled by Halide. `tick(method name)` after each method (progress).
    `done`: rows of this app measured earlier (a checkpoint), kept instead of measuring their methods again;
    `on_rows(rows so far)` after each method (to save them), or, with cfg.measurement=interleaved, once, after
    the app's schedules were timed together."""
    from backends.protocols import get_protocol
    from ir.target import get_target
    from scheduler.modes import reference

    target = get_target(cfg.target)
    pipeline = app.build(cfg.size)
    inputs, expected = reference(pipeline)
    run = _AppMeasurement(app, cfg, pipeline, target, inputs, expected, get_protocol(cfg.protocol, cfg.measure_timeout),
                          {r.method: r for r in done}, tick or (lambda name: None), on_rows or (lambda rows: None))
    measure = run.interleaved if cfg.measurement == "interleaved" else run.sequential
    return with_speedups(measure(methods, halide_methods(cfg, methods) if halide else []))


@dataclass
class _Found:
    """The LoopNest(s) a method gave (none: no expert schedule), its search's SearchStats and seconds."""

    loopnests: list
    stats: object
    search_s: float


@dataclass
class _AppMeasurement:
    """measure_app's two ways of timing one app's rows: `sequential` (each method's schedules as its search
    ends) and `interleaved` (every schedule of the app built first, then timed together in rounds)."""

    app: object
    cfg: AppsConfig
    pipeline: object
    target: object
    inputs: dict
    expected: dict
    protocol: object
    earlier: dict  # method name -> its row from an earlier process (a checkpoint), kept as it was
    tick: Callable[[str], None]
    on_rows: Callable[[list[AppRow]], None]

    def searched(self, methods: list[Method]):
        """(method, AppRow) for a row kept from `earlier` or a failed search, else (method, _Found), in order: a
        matched budget takes the beam row's (states scored, seconds) of this app, so beam runs first."""
        beam: tuple[int, float] | None = None
        for m in methods:
            if m.name in self.earlier:
                r = self.earlier[m.name]
                if m.algorithm == "beam" and m.budget is not None and not m.budget.match:
                    beam = (r.evaluations, r.search_s)
                yield m, r
                continue
            t0 = time.perf_counter()
            try:
                loopnests, stats = _schedules(m, self.app, self.pipeline, self.target, self.cfg, beam)
            except Exception as e:  # noqa: BLE001 - a search or schedule that fails is this row's status
                yield m, _row(self.app.name, m, "search_error", [], time.perf_counter() - t0, first_line(e),
                              self.cfg.backend)
                continue
            if stats is not None and m.algorithm == "beam" and m.budget is not None and not m.budget.match:
                beam = (stats.states_evaluated, stats.seconds)
            yield m, _Found(loopnests, stats, time.perf_counter() - t0)

    def row(self, m: Method, found: _Found, ms: list, firsts: set[str], backend: str) -> AppRow:
        """The row of `found`'s measurements `ms`; `firsts`: the methods whose rows measured those schedules first
        (a LoopNest another method already produced is not measured again: the same code, its one measurement;
        re-measuring would only show the run-to-run noise as a difference between methods)."""
        row = _measured_row(self.app.name, m, ms, found.search_s, backend)
        firsts = firsts - {m.name}
        if m.kind != "random" and len(firsts) == 1 and not row.note:
            row = replace(row, note=f"same schedule as {firsts.pop()}")
        if found.stats is not None:
            row = replace(row, evaluations=found.stats.states_evaluated, measured=len(found.stats.measured))
        return row

    def twin(self, m: Method, found: _Found) -> tuple[str, tuple] | None:
        """(its Halide twin's name, (LoopNest, search seconds)) for a row whose LoopNest Halide compiles too."""
        if found.loopnests and m.has_halide_twin and self.cfg.backend != "halide":
            return m.name + HALIDE, (found.loopnests[0], found.search_s)
        return None

    def not_measured(self, m: Method) -> AppRow | None:
        """The row of a Halide twin whose LoopNest an earlier process measured and did not keep, else None."""
        first = self.earlier.get(m.name.removesuffix(HALIDE))
        if first is not None and first.status == "ok":
            return _row(self.app.name, m, "not_measured", [], 0.0, "its LoopNest was measured by an earlier process "
                        "(checkpoint) and not kept", "halide")
        return None

    def sequential(self, methods: list[Method], halide_rows: list[Method]) -> list[AppRow]:
        from backends import MeasureInput, measure_many, run

        rows: list[AppRow] = []
        twins: dict[str, tuple] = {}  # method name -> (its LoopNest, its search seconds) for the Halide rows
        measured: dict[str, tuple] = {}  # LoopNest fingerprint -> (its Measurement, the method that measured it)
        for m, got in self.searched(methods):
            if isinstance(got, AppRow):
                rows.append(got)
                if m.name in self.earlier:
                    self.tick(m.name)
                    continue
            elif got.loopnests:
                fresh = list({ln.fingerprint: ln for ln in got.loopnests if ln.fingerprint not in measured}.values())
                if fresh:
                    ms = measure_many([MeasureInput(self.pipeline, ln, self.inputs, self.expected) for ln in fresh],
                                      self.target, backend=self.cfg.backend, protocol=self.protocol)
                    measured.update({ln.fingerprint: (mt, m.name) for ln, mt in zip(fresh, ms)})
                rows.append(self.row(m, got, [measured[ln.fingerprint][0] for ln in got.loopnests],
                                     {measured[ln.fingerprint][1] for ln in got.loopnests}, self.cfg.backend))
                if (t := self.twin(m, got)) is not None:
                    twins[t[0]] = t[1]
            self.on_rows(rows)
            self.tick(m.name)
        for m in halide_rows:
            if m.name in self.earlier:
                rows.append(self.earlier[m.name])
            elif m.kind == "halide" or m.name in twins:  # else no LoopNest (no expert schedule, a failed search)
                built = _halide_build(self.app.name, m, self.pipeline, self.target, twins.get(m.name))
                if isinstance(built, AppRow):
                    rows.append(built)
                else:
                    ms = [run(built[0], self.inputs, self.protocol, expected=self.expected)]
                    rows.append(_measured_row(self.app.name, m, ms, built[1], "halide"))
                self.on_rows(rows)
            elif (row := self.not_measured(m)) is not None:
                rows.append(row)
            self.tick(m.name)
        return rows

    def interleaved(self, methods: list[Method], halide_rows: list[Method]) -> list[AppRow]:
        """Every method searched and every distinct schedule built (by the rows' backend, and by Halide for the
        twins and Halide's autoschedulers), then all of them timed together in rounds (backends.run_interleaved):
        measured one after another, a schedule timed minutes after another sees another machine (its clock, its
        neighbours), and their ratio changes between runs by more than the schedules differ."""
        from backends import build, run_interleaved

        slots: list = []  # an AppRow, or (method, _Found, build keys, backend) to make a row of once measured
        builds: dict[tuple[str, str], object] = {}  # (backend, LoopNest fingerprint or Halide method) -> BuildResult
        firsts: dict[tuple[str, str], str] = {}  # build key -> the method whose row built it first
        twins: dict[str, tuple] = {}

        for m, got in self.searched(methods):
            if isinstance(got, AppRow):
                slots.append(got)
            elif got.loopnests:
                keys = [(self.cfg.backend, ln.fingerprint) for ln in got.loopnests]
                for ln, key in zip(got.loopnests, keys):
                    if key not in builds:
                        builds[key] = build(self.pipeline, ln, self.target, backend=self.cfg.backend)
                        firsts[key] = m.name
                slots.append((m, got, keys, self.cfg.backend))
                if (t := self.twin(m, got)) is not None:
                    twins[t[0]] = t[1]
            self.tick(m.name)
        for m in halide_rows:
            if m.name in self.earlier:
                slots.append(self.earlier[m.name])
            elif m.kind == "halide" or m.name in twins:
                twin = twins.get(m.name)
                key = ("halide", twin[0].fingerprint if twin else m.name)
                if key in builds:  # the LoopNest of an earlier twin: its build, its measurement
                    slots.append((m, _Found([twin[0]], None, twin[1]), [key], "halide"))
                elif isinstance(built := _halide_build(self.app.name, m, self.pipeline, self.target, twin), AppRow):
                    slots.append(built)
                else:
                    builds[key], firsts[key] = built[0], m.name
                    slots.append((m, _Found([twin[0] if twin else None], None, built[1]), [key], "halide"))
            elif (row := self.not_measured(m)) is not None:
                slots.append(row)
            self.tick(m.name)
        keys = list(builds)
        ms = run_interleaved([builds[k] for k in keys], self.inputs, self.protocol, expected=self.expected,
                             seed=self.cfg.seed)
        measured = dict(zip(keys, ms))
        rows = [s if isinstance(s, AppRow) else
                self.row(s[0], s[1], [measured[k] for k in s[2]], {firsts[k] for k in s[2]}, s[3]) for s in slots]
        self.on_rows(rows)
        return rows


def _halide_build(app: str, method: Method, pipeline, target, twin) -> tuple | AppRow:
    """(BuildResult, search seconds) of a LoopNest (`twin`: the LoopNest and its search seconds) or of Halide's
    `method.algorithm` autoscheduler, compiled by Halide; a failed search or compile is the row it makes."""
    import backends

    t0 = time.perf_counter()
    try:
        if twin is not None:
            kernel, search_s = backends.compile(pipeline, twin[0], target, backend="halide"), twin[1]
        else:
            from backends.halide import autoschedule

            anchor = autoschedule(pipeline, method.algorithm, target, params={"parallelism": str(target.cores)})
            kernel, search_s = anchor.compile(), anchor.search_seconds
    except backends.ScheduleError as e:
        return _row(app, method, "invalid_schedule", [], time.perf_counter() - t0, first_line(e), "halide")
    except backends.CompileError as e:
        return _row(app, method, e.status, [], time.perf_counter() - t0, first_line(e), "halide")
    except Exception as e:  # noqa: BLE001 - a translation or plugin failure is this row's status
        return _row(app, method, "search_error" if twin is None else "compile_error", [], time.perf_counter() - t0,
                    first_line(e), "halide")
    return backends.BuildResult(kernel, Status.OK, "", kernel.compile_s), search_s


def _measured_row(app: str, method: Method, ms: list, search_s: float, backend: str) -> AppRow:
    """Ok if any schedule ran correctly (runtime: the median of those that did), else the commonest failure."""
    ok = [m.min_s for m in ms if m.ok]
    failed = Counter(m.status for m in ms if not m.ok)
    if method.kind == "random":
        note = f"{len(ok)}/{len(ms)} ok" + "".join(f", {n} {s}" for s, n in failed.most_common())
    else:
        note = next((first_line(m.error) for m in ms if not m.ok), "")
    status = "ok" if ok else failed.most_common(1)[0][0]
    return _row(app, method, status, ok, search_s, note, backend)


def _row(app: str, method: Method, status: str, runtimes: list[float], search_s: float, note: str,
         backend: str) -> AppRow:
    model = getattr(method.model, "name", str(method.model)) if method.kind == "search" else ""
    runtime = float(np.median(runtimes)) if runtimes else math.nan
    return AppRow(app=app, method=method.name, backend=backend, model=model, status=status, runtime_s=runtime,
                  speedup=math.nan, speedup_same_backend=math.nan, numba_over_halide=math.nan, search_s=search_s,
                  note=note)


def with_speedups(rows: list[AppRow]) -> list[AppRow]:
    """Each ok row's speedup over the naive row of its app (compiled by the rows' backend), over the naive row
    of its own backend, and for a Halide twin of a numba row the numba/Halide runtime ratio (NaN where either row
    failed)."""
    ok = {(r.app, r.method): r.runtime_s for r in rows if r.status == "ok"}
    naive = {(r.app, r.backend): r.method for r in rows if r.method in (NAIVE, HALIDE_NAIVE)}

    def over(app: str, method: str | None, runtime: float) -> float:
        return ok[(app, method)] / runtime if (app, method) in ok else math.nan

    return [replace(r, speedup=over(r.app, NAIVE, r.runtime_s),
                    speedup_same_backend=over(r.app, naive.get((r.app, r.backend)), r.runtime_s),
                    numba_over_halide=over(r.app, r.method.removesuffix(HALIDE), r.runtime_s)
                    if r.backend == "halide" and r.method.endswith(HALIDE) else math.nan)
            if r.status == "ok" else r for r in rows]


def geomeans(rows: list[AppRow]) -> list[Geomean]:
    """Per method but the naive ones, in first-seen order: the geometric mean over the apps where it ran
    correctly (so methods may be averaged over different apps; `apps` says how many)."""
    names = list(dict.fromkeys(r.method for r in rows if r.method not in (NAIVE, HALIDE_NAIVE)))
    return [Geomean(name, geomean([r.speedup for r in rows if r.method == name]),
                    sum(r.method == name and _positive(r.speedup) for r in rows),
                    geomean([r.speedup_same_backend for r in rows if r.method == name])) for name in names]


def halide_comparison(rows: list[AppRow]) -> HalideComparison:
    """The headline ratios: schedlab's beam against Adams2019, both compiled by Halide, per app; and each
    schedlab LoopNest under numba against the same LoopNest under Halide, per (app, method)."""
    ok = {(r.app, r.method): r.runtime_s for r in rows if r.status == "ok"}
    apps = list(dict.fromkeys(r.app for r in rows))
    # schedlab's beam compiled by Halide: its twin, or the row itself when the rows' backend is Halide
    name = "beam" if any(r.method == "beam" and r.backend == "halide" for r in rows) else "beam" + HALIDE
    beam = [ok[(a, "Adams2019" + HALIDE)] / ok[(a, name)] for a in apps
            if (a, "Adams2019" + HALIDE) in ok and (a, name) in ok]
    pairs = [r for r in rows if _positive(r.numba_over_halide)]
    own = next((r.backend for r in rows if r.backend != "halide"), "numba")
    return HalideComparison(geomean(beam), len(beam), geomean([r.numba_over_halide for r in pairs]), len(pairs),
                            tuple(dict.fromkeys(r.method.removesuffix(HALIDE) for r in pairs)), own)


def geomean(values: list[float]) -> float:
    """The geometric mean of the finite positive values (NaN when there are none)."""
    v = [x for x in values if _positive(x)]
    return math.exp(float(np.mean(np.log(v)))) if v else math.nan


def _positive(x: float) -> bool:
    return math.isfinite(x) and x > 0


# --- the command ---------------------------------------------------------------------------------------------


def app_names(cfg: AppsConfig) -> list[str]:
    """The apps to run: `cfg.apps` in order; none, or `all`, is every app."""
    from generator.apps import APPS

    if not cfg.apps or tuple(cfg.apps) == ("all",):
        return list(APPS)
    unknown = [a for a in cfg.apps if a not in APPS]
    if unknown:
        raise EvaluateError(f"unknown app {unknown[0]!r}; apps: all, {', '.join(APPS)}")
    return list(cfg.apps)


def evaluate_apps(cfg: AppsConfig, echo: Callable[[str], None] | None = None) -> AppsResult:
    """Measure every (app, method) of `cfg` into an MLflow run; `echo` gets the table line by line as each app
    finishes. Raises SchedlabError subclasses for bad input (unknown app, model or target)."""
    import backends
    from generator.apps import get_app
    from ir.errors import SchedlabError
    from ir.progress import Progress
    from ir.target import get_target
    from scheduler.cost import load_model
    from scheduler.space import space_class
    from train import lineage
    from train.registry import tracking_uri

    from .plots import tracked_run

    t0 = time.time()
    names = app_names(cfg)
    target = get_target(cfg.target)
    if target.kind == "cuda":  # GPU schedules: expert and Halide's, measured on a GPU (evaluate.gpu_apps)
        from .gpu_apps import evaluate_gpu_apps

        return evaluate_gpu_apps(cfg, names, target, echo)
    try:  # the registered backend and search space of the target's kind say whether it can be run here
        backends.get_backend(cfg.backend).check_target(target)
        if cfg.algorithms:
            space_class(target)
    except SchedlabError as e:
        raise EvaluateError(f"target={cfg.target}: {e}") from None
    halide = use_halide(cfg)
    kept = resumed_rows(cfg, names) if cfg.resume else []
    checkpoint = _checkpoint(cfg, names) if cfg.checkpoint else None
    if checkpoint is not None:
        kept = checkpoint.whole
    model = load_model(cfg.model, target, cfg.tracking_uri) if cfg.algorithms else None
    ms = methods(cfg, model)
    per_app = len(ms) + (len(halide_methods(cfg, ms)) if halide else 0)
    echo = echo or (lambda line: None)
    rows: list[AppRow] = []
    resolved = getattr(model, "name", "")
    version = lineage.resolve_version(resolved, tracking_uri(cfg.tracking_uri)) if model else None
    extra = {"model_resolved": resolved, "model_uri": cfg.model, "model_version": version.uri if version else resolved,
             "apps_measured": names, "halide_compared": halide, "resumed_apps": list(dict.fromkeys(r.app for r in kept))}
    searched = f"searched with {version.link() if version else resolved} (as {cfg.model})" if model else "no search"
    about = (f"The app suite ({', '.join(names)}, {cfg.size} sizes) on {target.name}: {', '.join(cfg.algorithms)} "
             f"{searched}, and the baselines, each schedule compiled, checked and measured.")
    run_name = cfg.run_name or f"apps-{cfg.size}-{version.label if version else lineage.slug(resolved or 'baselines')}"
    with tracked_run(cfg.tracking_uri, cfg.experiment, run_name, cfg, extra, description=about,
                     version=version) as run, \
            Progress(len(names) * per_app, "schedule", cfg.progress, desc="apps") as bar:
        echo(HEADER)
        rows += kept
        done = {r.app for r in kept}
        if kept:
            bar.update(len(done) * per_app, f"{len(done)} apps from {cfg.resume or cfg.checkpoint}")
            for r in kept:
                echo(format_row(r))
            run.client.log_text(run.run_id, table_csv(rows), TABLE_CSV)
        for name in names:
            if name in done:
                continue
            partial = [r for r in checkpoint.partial if r.app == name] if checkpoint is not None else []
            save = (lambda app_rows: checkpoint.save(rows, app_rows)) if checkpoint is not None else None
            app_rows = measure_app(get_app(name), cfg, ms, tick=lambda m, app=name: bar.update(1, f"{app} {m}"),
                                   halide=halide, done=partial, on_rows=save)
            rows += app_rows
            for r in app_rows:
                echo(format_row(r))
            run.client.log_text(run.run_id, table_csv(rows), TABLE_CSV)  # so far: an interrupted run keeps it
            if checkpoint is not None:
                checkpoint.save(rows, [])
        rows = sorted(rows, key=lambda r: names.index(r.app))  # suite order, resumed apps in their place
        result = AppsResult(run.run_id, run.experiment_id, run.tracking_uri, extra["model_resolved"], rows,
                            geomeans(rows), 0.0, halide_comparison(rows) if halide else None)
        _log_results(run, result, names, cfg)
    result.seconds = time.time() - t0
    return result


def _checkpoint(cfg: AppsConfig, names: list[str]):
    from .checkpoint import open_checkpoint

    return open_checkpoint(cfg, measured_settings(cfg), names)


def measured_settings(cfg: AppsConfig) -> dict[str, str]:
    """The keys that decide how rows are measured (all but RESUME_FREE), as MLflow params spell their values."""
    from ir.config import flat_items

    from .plots import _param

    return {k: _param(v) for k, v in flat_items(cfg).items() if k not in RESUME_FREE}


def differing_settings(new: dict[str, str], old: dict[str, str], absent: dict[str, str]) -> list[str]:
    """The keys of `new` whose value differs in `old`; a key `old` lacks is compared with its value in `absent`,
    and is no difference when `absent` lacks it too."""
    return [k for k, v in new.items() if old.get(k, absent.get(k, v)) != v]


def more_keys(differ: list[str]) -> str:
    """' (N keys differ: a, b)' after a one-line settings error that names the first, or ''."""
    return f" ({len(differ)} keys differ: {', '.join(differ)})" if len(differ) > 1 else ""


# keys that only name, show or place a run: a resumed run may change them, not how anything is measured
RESUME_FREE = frozenset({"apps", "run_name", "progress", "resume", "tracking_uri", "experiment", "checkpoint"})


def resumed_rows(cfg: AppsConfig, names: list[str]) -> list[AppRow]:
    """The rows of the apps in `names` that run `cfg.resume` finished (its apps.csv, rewritten after each app),
    after checking that it measured with the same settings as `cfg` (every key but RESUME_FREE)."""
    import tempfile

    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    from train.registry import store_exists, tracking_uri

    uri = tracking_uri(cfg.tracking_uri)
    if not store_exists(uri):
        raise EvaluateError(f"resume={cfg.resume}: there is no MLflow store at {uri}; give its tracking_uri=")
    client = MlflowClient(tracking_uri=uri)
    try:
        old = client.get_run(cfg.resume)
    except MlflowException:
        raise EvaluateError(f"resume={cfg.resume}: no such run in {uri} (the id is on the run's page, or in "
                            "the summary's 'MLflow run' line)") from None
    params = old.data.params
    new = measured_settings(cfg)
    differ = differing_settings(new, params, measured_settings(AppsConfig()))  # keys added since: defaults
    if differ:
        k = differ[0]
        raise EvaluateError(f"resume={cfg.resume}: that run measured with {k}={params.get(k)}, this one with "
                            f"{k}={new[k]}; resume with the same settings" + more_keys(differ))
    with tempfile.TemporaryDirectory() as tmp:
        try:
            text = Path(client.download_artifacts(cfg.resume, TABLE_CSV, tmp)).read_text()
        except (MlflowException, OSError):
            raise EvaluateError(f"resume={cfg.resume}: that run logged no {TABLE_CSV} (it finished no app); "
                                "run without resume=") from None
    return [r for r in rows_from_csv(text) if r.app in names]


def rows_from_csv(text: str) -> list[AppRow]:
    """AppRows back from apps.csv (table_csv's output), each field in its own type."""
    kinds = {f.name: {"str": str, "float": float, "int": int}[f.type] for f in fields(AppRow)}
    return [AppRow(**{k: kinds[k](v) for k, v in d.items() if k in kinds})
            for d in csv.DictReader(io.StringIO(text))]


def _log_results(run, result: AppsResult, names: list[str], cfg: AppsConfig) -> None:
    from train.plots import log_figures

    from .plots import geomean_bars, speedup_bars

    run.log_metrics(headline_metrics(result))
    run.client.log_table(run.run_id, table_view(result.rows), TABLE_JSON)
    model = result.model or "no model"
    # the rows' own backend; under backend=halide Halide's autoschedulers are rows of the same backend too
    numba = [g for g in result.geomeans
             if (cfg.backend == "halide" or not g.method.endswith(HALIDE)) and g.method != EXPERT]
    about = f"{cfg.size} apps on {cfg.target}, compiled by {cfg.backend}, searched with {model}"
    figures = {"speedups": speedup_bars(
        names, [g.method for g in numba], _matrix(result.rows, names, [g.method for g in numba], "speedup"),
        [g.speedup for g in numba], about, reference=_reference(result, names, EXPERT, "speedup")),
        "geomeans": geomean_bars([g for g in result.geomeans if g.method != EXPERT and
                                  (cfg.backend == "halide" or not g.method.endswith(HALIDE))],
                                 _reference(result, names, EXPERT, "speedup"), about)}
    if result.halide is not None and cfg.backend != "halide":
        shown = [g for name in VS_HALIDE for g in result.geomeans if g.method == name]
        figures["vs_halide"] = speedup_bars(
            names, [g.method for g in shown], _matrix(result.rows, names, [g.method for g in shown],
                                                      "speedup_same_backend"),
            [g.speedup_same_backend for g in shown], f"compiled by Halide: {cfg.size} apps on {cfg.target}",
            ylabel=f"speedup (× over {HALIDE_NAIVE})",
            reference=_reference(result, names, EXPERT + HALIDE, "speedup_same_backend"),
            reference_label=EXPERT + HALIDE)
    log_figures(run.run_id, figures, tracking=run.tracking_uri)


# the bars of plots/vs_halide.png, all over naive@halide (expert@halide is the line they are read against)
VS_HALIDE = tuple(m + HALIDE for m in ("beam", "greedy", "Adams2019", "Mullapudi2016"))


def headline_metrics(result: AppsResult) -> dict[str, float]:
    """The run's only metrics, the geometric means (per-app numbers are the table's): geomean_speedup/<method>
    over numba naive, geomean_speedup_same_backend/<method> for Halide rows, and under Halide the two ratios
    halide/beam_over_adams2019 and halide/numba_over_halide."""
    out = {metric_key("geomean_speedup/" + g.method): g.speedup for g in result.geomeans}
    out.update({metric_key("geomean_speedup_same_backend/" + g.method): g.speedup_same_backend
                for g in result.geomeans if g.method.endswith(HALIDE)})
    if result.halide is not None:
        out.update({"halide/beam_over_adams2019": result.halide.beam_over_adams2019,
                    "halide/numba_over_halide": result.halide.numba_over_halide})
    return out


def _reference(result: AppsResult, apps: list[str], method: str, column: str) -> np.ndarray | None:
    """`method`'s speedups per app then its geomean (the chart's reference line), None when it never ran."""
    g = next((g for g in result.geomeans if g.method == method), None)
    if g is None:
        return None
    return np.append(_matrix(result.rows, apps, [method], column)[:, 0],
                     g.speedup if column == "speedup" else g.speedup_same_backend)


def _matrix(rows: list[AppRow], apps: list[str], methods: list[str], column: str) -> np.ndarray:
    by_key = {(r.app, r.method): getattr(r, column) for r in rows}
    return np.array([[by_key.get((a, m), math.nan) for m in methods] for a in apps]).reshape(len(apps), len(methods))


def table_view(rows: list[AppRow]) -> dict[str, list]:
    """apps_table.json, the table the MLflow artifact view shows: what a reader came for first (app, method,
    status, speedup over naive and over the expert schedule, runtime in the column's unit: runtime_ms, or
    runtime_us when the median runtime is below 1 ms), then the rest of the row. Empty cells where a row failed
    or has no expert to compare with."""
    from train.plots import runtime_unit

    expert = {r.app: r.runtime_s for r in rows if r.method == EXPERT and r.status == "ok"}
    scale, unit = runtime_unit(np.array([r.runtime_s for r in rows if r.status == "ok"]))

    def cell(x: float, digits: int = 4) -> float | None:
        return float(f"{x:.{digits}g}") if math.isfinite(x) else None

    return {
        "app": [r.app for r in rows],
        "method": [r.method for r in rows],
        "status": [r.status for r in rows],
        "speedup_over_naive": [cell(r.speedup) for r in rows],
        "speedup_over_expert": [cell(expert[r.app] / r.runtime_s) if r.app in expert and r.status == "ok"
                                else None for r in rows],
        f"runtime_{unit.replace('µ', 'u')}": [cell(r.runtime_s * scale) for r in rows],
        "backend": [r.backend for r in rows],
        "speedup_same_backend": [cell(r.speedup_same_backend) for r in rows],
        "numba_over_halide": [cell(r.numba_over_halide) for r in rows],
        "search_s": [cell(r.search_s, 3) for r in rows],
        "evaluations": [r.evaluations for r in rows],
        "measured": [r.measured for r in rows],
        "model": [r.model for r in rows],
        "note": [r.note for r in rows],
    }


def metric_key(*parts: str) -> str:
    """An MLflow metric name (only alphanumerics and _-. :/ are allowed): geomean_speedup/beam@halide ->
    geomean_speedup/beam_halide, mcts=beam-seconds -> mcts_beam-seconds."""
    import re

    return re.sub(r"[^\w\-. :/]", "_", "_".join(parts))


def table_csv(rows: list[AppRow]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=[f.name for f in fields(AppRow)], lineterminator="\n")
    w.writeheader()
    w.writerows(asdict(r) for r in rows)
    return out.getvalue()


def main(argv=None) -> int:
    from ir.progress import echo

    return run_command(PROG, DESCRIPTION, AppsConfig, "conf/evaluate_apps.yaml",
                       lambda cfg: evaluate_apps(cfg, echo), argv)


if __name__ == "__main__":
    sys.exit(main())
