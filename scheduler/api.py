"""`autoschedule`: a pipeline and a target in, a searched Schedule out."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ir.loopnest import LoopNest
from ir.target import get_target

from .cost import load_model
from .search import BeamSearch, SearchConfig, SearchResult, SearchStats
from .space import SearchError

ALGORITHMS = ("greedy", "beam", "hierarchical", "dropout")
MODES = ("one-shot", "top-k", "autotune")


@dataclass
class Schedule:
    """A searched schedule: the LoopNest, what the model predicts for it, and how the search went."""

    pipeline: object
    loopnest: LoopNest
    predicted_cost: float
    target: object  # the ir.target Target searched for
    stats: SearchStats
    measured_runtime: float | None = None  # seconds, when a mode benchmarked it

    @property
    def text(self) -> str:
        return self.loopnest.to_str(self.pipeline)

    def __str__(self) -> str:
        return self.text

    def compile(self, **kw):
        """The compiled kernel (backends.compile), for the target it was searched for."""
        import backends

        return backends.compile(self.pipeline, self.loopnest, self.target, **kw)


def autoschedule(pipeline, target="host", model="champion", algorithm: str = "beam", beam_size: int = 32,
                 passes: int = 5, seed: int = 0, *, mode: str = "one-shot", k: int = 5, dropout: float = 100.0,
                 tracking: str | None = None, rounds: int = 2, samples: int = 16, partial: dict | None = None,
                 progress=None) -> Schedule:
    """Search a schedule for `pipeline` on `target`.

    model: "champion" (models:/schedlab-<target>@champion, or the analytical model while none is
    registered), "analytical", "random[:seed]", any MLflow model URI or checkpoint path, or a cost model.
    algorithm: greedy (beam 1), beam (coarse-to-fine passes), hierarchical (beam with hierarchical sampling
    and the freezing pre-pass), dropout (greedy with random dropout, `dropout` % fully greedy).
    mode: one-shot; top-k (compile and benchmark the k best, keep the fastest measured); autotune
    (`rounds` of `samples` dropout samples, benchmarked, the model fine-tuned on them; never worse than
    the beam result). partial: {Func name: ir.builder.FuncDecision} the search must follow."""
    if algorithm not in ALGORITHMS:
        raise SearchError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    if mode not in MODES:
        raise SearchError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    tgt = get_target(target)
    if tgt.kind != "cpu":
        raise SearchError(f"the scheduler searches CPU schedules; {tgt.name} is a {tgt.kind} target")
    cost_model = load_model(model, tgt, tracking)
    config = search_config(algorithm, beam_size, passes, seed, dropout)
    result = BeamSearch(pipeline, tgt, cost_model, config, progress, fixed=partial).run()
    schedule = _schedule(pipeline, tgt, result, algorithm, cost_model.name)
    if mode == "top-k":
        from .modes import top_k

        return top_k(schedule, result, k)
    if mode == "autotune":
        from .modes import autotune

        return autotune(schedule, cost_model, config, rounds=rounds, samples=samples, progress=progress,
                        fixed=partial)
    return schedule


def search_config(algorithm: str, beam_size: int, passes: int, seed: int, dropout: float) -> SearchConfig:
    if algorithm == "greedy":
        return SearchConfig(beam_size=1, passes=1, seed=seed)
    if algorithm == "dropout":
        return SearchConfig(beam_size=1, passes=1, seed=seed, dropout=dropout if dropout < 100 else 1.0)
    return SearchConfig(beam_size=beam_size, passes=passes, seed=seed, dropout=dropout,
                        hierarchical=algorithm == "hierarchical", freeze=algorithm == "hierarchical")


def _schedule(pipeline, tgt, result: SearchResult, algorithm: str, model: str) -> Schedule:
    best = result.best
    return Schedule(pipeline, best.tree, best.cost, tgt, replace(result.stats, algorithm=algorithm, model=model))
