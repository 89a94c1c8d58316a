"""python -m scheduler [--config conf/scheduler.yaml] app=NAME | random=SEED [key=value ...]

Searches a schedule for an app of the suite (app=unsharp) or a random pipeline (random=7) with a cost
model and prints it as loops, with the model's predicted cost score and the search statistics;
halide_schedule=true also prints it as Halide scheduling directives, and measure=true benchmarks it next
to the naive schedule and, for an app, the app's expert schedule. Every key below can be given as
key=value, e.g. `python -m scheduler app=unsharp algorithm=beam model=analytical measure=true`. A bad
key or value stops with one line naming what to fix (exit status 2).
"""

# It lives in generator, the layer that owns the app suite and random pipelines (the scheduler below may
# not import them); `python -m scheduler` runs it (scheduler/__main__.py).

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Literal

from ir.config import ConfigError
from ir.errors import first_line
from ir.units import format_seconds

PROG = "python -m scheduler"


@dataclass(frozen=True)
class SchedulerConfig:
    app: str | None = None  # an app of the suite (python -m generator.apps lists them); give app or random
    random: int | None = None  # seed of a random pipeline (generator.random_pipeline); give app or random
    size: Literal["small", "full"] = "full"  # app size: full (the benchmark's, as evaluate.apps) or small (quick)
    max_stages: int = 12  # most stages of a random pipeline, input and output included (>= 2)
    target: str = "host"  # host, or a conf/targets/<name>.yaml target
    model: str = "champion"  # champion (analytical until one is registered), analytical, random[:seed], an
    #   MLflow model URI or a checkpoint file
    tracking_uri: str | None = None  # MLflow tracking URI (none: $MLFLOW_TRACKING_URI, else the per-user store)
    algorithm: str = "beam"  # a registered search strategy (scheduler.strategy): greedy, beam, top-k, autotune, ...
    beam_size: int = 32  # beam width of beam, hierarchical and the searches top-k and autotune start from
    passes: int = 5  # coarse-to-fine passes of beam and hierarchical
    seed: int = 0  # seeds the search's random choices (dropout, sampling)
    dropout: float = 100.0  # % chance of a fully greedy run (algorithm=dropout, autotune's samples)
    backend: str | None = None  # what compiles and measures the schedule (numba, halide); none: the backend whose
    #   runtimes the model learned (numba for the analytical model)
    allow_mismatch: bool = False  # use a model that learned another target's or backend's runtimes
    k: int = 5  # schedules benchmarked by algorithm=top-k
    rounds: int = 2  # rounds of algorithm=autotune
    samples: int = 16  # dropout samples per autotune round
    guides: tuple[str, ...] = ("analytical",)  # algorithm=portfolio / portfolio-greedy: the other cost models
    #   searched under, whose complete schedules the model also judges
    guide_margin: float = 1.05  # portfolio: a guide's schedule wins only when the model predicts it this much cheaper
    measure: bool = False  # benchmark the schedule, the naive one and (for an app) the expert one
    halide_schedule: bool = False  # also print the schedule as Halide scheduling directives (C++)

    def __post_init__(self):
        for name in ("beam_size", "passes", "k", "rounds", "samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_stages < 2:
            raise ValueError(f"max_stages counts the input and output stages; it must be >= 2, got {self.max_stages}")
        if not 0 <= self.dropout <= 100:
            raise ValueError(f"dropout must be a percentage in [0, 100], got {self.dropout}")
        from scheduler.strategy import get_strategy

        get_strategy(self.algorithm)  # a one-line error listing the registered strategies


def main(argv=None) -> int:
    from ir.config import doc_body, run_cli

    return run_cli(SchedulerConfig, _run, argv, PROG, doc_body(__doc__), default_config="conf/scheduler.yaml")


def _run(cfg: SchedulerConfig) -> int:
    pipeline = pipeline_of(cfg)
    from scheduler.api import autoschedule

    try:  # run_cli prints a champion fallback as one warning line
        s = autoschedule(pipeline, cfg.target, model=cfg.model, algorithm=cfg.algorithm, beam_size=cfg.beam_size,
                         passes=cfg.passes, seed=cfg.seed, k=cfg.k, dropout=cfg.dropout, tracking=cfg.tracking_uri,
                         rounds=cfg.rounds, samples=cfg.samples, progress=_progress, backend=cfg.backend,
                         allow_mismatch=cfg.allow_mismatch, guides=cfg.guides, guide_margin=cfg.guide_margin)
    except ValueError as e:  # a value the search itself refuses
        raise ConfigError(first_line(e)) from None
    print(s.text)
    # the models predict a runtime-like cost on their own scale (the analytical one: rough nanoseconds;
    # a learned one: whatever its loss fit), so it ranks schedules but is not a time
    print(f"\npredicted cost score: {s.predicted_cost:.4g} (relative, lower is better; not a time)")
    print(f"search: {s.stats}")
    if cfg.halide_schedule:
        from ir.printing import to_halide_schedule

        print("\nHalide schedule:")
        print(to_halide_schedule(s.loopnest, pipeline))
    if s.measured_runtime is not None:
        print(f"measured in the search ({cfg.algorithm}): {format_seconds(s.measured_runtime)}, best of "
              f"{len(s.stats.measured)} benchmarked")
    if cfg.measure:
        for line in measure_lines(cfg, pipeline, s):
            print(line)
    return 0


def pipeline_of(cfg: SchedulerConfig):
    """The pipeline `cfg` names: exactly one of app= and random=."""
    if (cfg.app is None) == (cfg.random is None):
        raise ConfigError("give exactly one of app=NAME (an app of the suite) or random=SEED (a random pipeline)")
    if cfg.app is not None:
        from .apps import APPS

        if cfg.app not in APPS:
            raise ConfigError(f"unknown app {cfg.app!r}; choose one of {', '.join(sorted(APPS))}")
        return APPS[cfg.app].build(cfg.size)
    from .random_pipeline import generate

    return generate(cfg.random, cfg.max_stages).pipeline


def measure_lines(cfg: SchedulerConfig, pipeline, s) -> list[str]:
    """The searched schedule benchmarked (unless the search already did), next to the naive schedule and,
    for an app that has one, its expert schedule, in one batch (one reference run, one protocol)."""
    from ir.builder import naive_schedule
    from scheduler.modes import measure_loopnests

    from .apps import APPS

    expert_of = APPS[cfg.app].schedule if cfg.app is not None else None
    expert = expert_of(pipeline, s.target) if expert_of is not None else None
    loopnests = [naive_schedule(pipeline)] + ([expert] if expert is not None else [])
    if s.measured_runtime is None:
        loopnests.insert(0, s.loopnest)
    times = measure_loopnests(pipeline, loopnests, s.target, backend=s.backend)
    t = s.measured_runtime if s.measured_runtime is not None else times.pop(0)
    naive, *rest = times
    lines = [f"measured ({cfg.algorithm}, {s.backend}): {format_seconds(t)}",
             f"naive schedule:  {format_seconds(naive)}   speedup of {cfg.algorithm} over naive: {_speedup(naive, t)}"]
    if rest:
        lines.append(f"expert schedule: {format_seconds(rest[0])}   speedup of {cfg.algorithm} over expert: "
                     f"{_speedup(rest[0], t)}")
    elif cfg.app is not None:
        lines.append(f"expert schedule: none ({cfg.app} has no hand-written schedule)")
    return lines


def _speedup(baseline: float, t: float) -> str:
    """baseline / t, as evaluate.apps prints speedups; '-' when either failed to run (inf)."""
    from ir.units import format_ratio

    return f"{format_ratio(baseline / t)}x" if math.isfinite(baseline) and math.isfinite(t) and t > 0 else "-"


_shown = None  # the search pass being shown (ir.progress.Progress), per process


def _progress(pass_index: int, decisions: int, total: int, states: int) -> None:
    """The search's decisions, pass by pass: a bar on a terminal; in a log a line per decision, at most one a
    second (a pass's first and last always)."""
    global _shown
    from ir.progress import Progress

    label = "pre-pass" if pass_index < 0 else f"pass {pass_index + 1}"
    if _shown is None or _shown.desc != label or decisions < _shown.n:
        if _shown is not None:
            _shown.close()
        _shown = Progress(total, "decision", desc=label, min_interval=1.0)
    _shown.set(decisions, f"{states} states evaluated")
    if decisions == total:
        _shown.close()
        _shown = None


if __name__ == "__main__":
    sys.exit(main())
