"""`autoschedule`: a pipeline and a target in, a searched Schedule out."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ir.collector import fewer_collections
from ir.loopnest import LoopNest
from ir.target import get_target

from .cost import load_model
from .search import SearchResult, SearchStats, dropout_walks
from .space import SearchError, SpaceOptions, make_space
from .strategy import StrategyConfig, get_strategy, strategy_names

ALGORITHMS = tuple(strategy_names())  # the registered strategies (scheduler/strategies/), at import
MODES = ("one-shot", "top-k", "autotune")  # mode= is kept for one release: mode="top-k" is algorithm="top-k"


@dataclass
class Schedule:
    """A searched schedule: the LoopNest, what the model predicts for it, and how the search went."""

    pipeline: object
    loopnest: LoopNest
    predicted_cost: float
    target: object  # the ir.target Target searched for
    stats: SearchStats
    measured_runtime: float | None = None  # seconds, when a strategy measured it in the loop
    backend: str = "numba"  # what it compiles with, and whose runtimes the cost model was checked to know

    @property
    def text(self) -> str:
        return self.loopnest.to_str(self.pipeline)

    def __str__(self) -> str:
        return self.text

    def compile(self, **kw):
        """The compiled kernel (backends.compile), for the target it was searched for."""
        import backends

        return backends.compile(self.pipeline, self.loopnest, self.target, **{"backend": self.backend, **kw})


def autoschedule(pipeline, target="host", model="champion", algorithm: str = "beam", beam_size: int = 32,
                 passes: int = 5, seed: int = 0, *, mode: str = "one-shot", k: int = 5, dropout: float = 100.0,
                 tracking: str | None = None, rounds: int = 2, samples: int = 16, partial: dict | None = None,
                 progress=None, backend: str | None = None, allow_mismatch: bool = False, budget: int = 2000,
                 budget_seconds: float = 0.0, trees: int = 4, exploration: float = 0.5, rollout: str = "greedy",
                 measurements: int = 8, derivation: str = "incremental", register_tiles: bool = True,
                 register_tile_dims: int = 2, register_tile_vectors: int = 4, enclosing_levels: bool = True,
                 guides: tuple[str, ...] = ("analytical",), guide_margin: float = 1.05) -> Schedule:
    """Search a schedule for `pipeline` on `target`, to be compiled with `backend` (None: the backend whose
    runtimes the model learned, numba for a model that learned none).

    model: "champion" (models:/schedlab-<target>@champion; while none is registered, schedlab's built-in model
    of the target and backend, else the analytical model), a registered cost model ("builtin", "analytical",
    "random[:seed]", "learned:<uri>", ...), any MLflow
    model URI or checkpoint path, or a CostModel. A model that learned another target's runtimes, or another
    backend's than a `backend` given, is refused unless allow_mismatch=True.
    algorithm: a registered SearchStrategy (scheduler.strategy): greedy (beam 1), beam (coarse-to-fine
    passes), hierarchical (beam with hierarchical sampling and the freezing pre-pass), dropout (greedy with
    random dropout, `dropout` % fully greedy), top-k (measure the k best of a beam search, keep the fastest),
    autotune (`rounds` of `samples` dropout samples, measured, the model updated on them; never worse than
    the beam result), mcts (`trees` Monte Carlo trees, `budget` cost-model evaluations and/or `budget_seconds`,
    UCT constant `exploration`, `rollout` greedy or random), mcts-real (MCTS, then `measurements` of its best
    leaves measured, the runtimes backed up the tree), portfolio (beam under the model and under each cost model of
    `guides`; the model keeps the cheapest of all their complete schedules, a guide's only when predicted
    `guide_margin` times cheaper than its own).
    mode: deprecated, kept for one release: mode="top-k" / "autotune" runs that strategy
    starting from `algorithm`. partial: {Func name: ir.builder.FuncDecision} the search must follow.
    derivation: "incremental" (each child's plan and features derived from its parent's, a tiling sibling's
    features from its first sibling's plan), "extend" (every child planned from its parent's plan), "fresh" (each
    derived from scratch: the slow reference) or "checked" (tiling siblings derived both ways and compared); all give
    the same schedules (benchmarks and checks). register_tiles: offer
    reductions register tiles (scheduler.tilings.register_tilings); False searches the space without them.
    register_tile_dims: 2 (register tiles unrolled along up to two dimensions besides the vector's) or 1.
    register_tile_vectors: 4 (register tiles up to four native vectors wide), 2 or 1.
    enclosing_levels: offer computing a Func at the levels of other Funcs' loops that enclose all its readers
    (adams2019's compute_in_tiles); False searches the space without them.
    guides: portfolio's other cost models, named as `model` is (default the analytical model). guide_margin: a
    guide's schedule replaces the model's own only when the model predicts it this many times cheaper (>= 1.0)."""
    if mode not in MODES:
        raise SearchError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)} (or algorithm=top-k/autotune)")
    base = "beam"
    if mode != "one-shot":
        base, algorithm = algorithm, mode
    strategy = get_strategy(algorithm)()
    tgt = get_target(target)
    space = make_space(pipeline, tgt, SpaceOptions(frozen=dict(partial or {}), derivation=derivation,
                                                   register_tiles=register_tiles,
                                                   register_tile_dims=register_tile_dims,
                                                   register_tile_vectors=register_tile_vectors,
                                                   enclosing_levels=enclosing_levels))
    cost_model = load_model(model, tgt, tracking, backend=backend, allow_mismatch=allow_mismatch)
    backend = backend or getattr(cost_model, "backend", None) or "numba"
    config = StrategyConfig(beam_size=beam_size, passes=passes, seed=seed, dropout=dropout, k=k, rounds=rounds,
                            samples=samples, base=base, progress=progress, budget=budget,
                            budget_seconds=budget_seconds, trees=trees, exploration=exploration, rollout=rollout,
                            measurements=measurements, guides=tuple(guides), guide_margin=guide_margin)
    get_strategy(base)
    with fewer_collections():
        strategy.initialize(space, cost_model, config)
        reference = None
        while candidates := strategy.generate_candidates():
            from .modes import measure_loopnests
            from .modes import reference as compute_reference

            reference = reference or compute_reference(pipeline)
            runtimes = measure_loopnests(pipeline, [s.tree for s in candidates], tgt, *reference, backend=backend)
            strategy.notify(list(zip(candidates, runtimes)))
        result = strategy.finish()
    return _schedule(pipeline, tgt, result, algorithm if mode == "one-shot" else base, cost_model.name, backend)


def dropout_schedules(pipeline, target="host", model="champion", seeds=range(1), dropout: float = 1.0, *,
                      register_tiles: bool = True, backend: str | None = None, allow_mismatch: bool = False):
    """What autoschedule(algorithm="dropout", seed=s, ...) returns for each seed s, lazily, faster: the walks
    share one search space, which replays the states earlier walks realized (their common greedy prefix). The data
    generator's dropout samples (generator.batch.plan_batch, which runs them inside fewer_collections())."""
    tgt = get_target(target)
    cost_model = load_model(model, tgt, None, backend=backend, allow_mismatch=allow_mismatch)
    backend = backend or getattr(cost_model, "backend", None) or "numba"
    options = SpaceOptions(register_tiles=register_tiles)
    for result in dropout_walks(pipeline, tgt, cost_model, seeds, dropout if dropout < 100 else 1.0, options):
        yield _schedule(pipeline, tgt, result, "dropout", cost_model.name, backend)


def _schedule(pipeline, tgt, result: SearchResult, algorithm: str, model: str, backend: str) -> Schedule:
    best = result.best
    return Schedule(pipeline, best.tree, best.cost, tgt, replace(result.stats, algorithm=algorithm, model=model),
                    result.runtime, backend)


__all__ = ["ALGORITHMS", "MODES", "Schedule", "autoschedule", "dropout_schedules", "strategy_names"]
