"""The search-strategy role (MetaSchedule's SearchStrategy): initialize with the space and the cost model,
generate candidates to measure, be told their measured runtimes, finish with a SearchResult.

    strategy = get_strategy("top-k")()
    strategy.initialize(space, model, StrategyConfig(k=5))
    while candidates := strategy.generate_candidates():
        strategy.notify([(s, measure(s)) for s in candidates])
    result = strategy.finish()

Model-only strategies (beam, greedy, hierarchical, dropout) generate no candidates; top-k and autotune
measure in the loop. Implementations are in scheduler/strategies/, one module each, registered by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from .space import SearchError, SearchSpace, State

Measured = tuple[State, float]  # a candidate and its measured runtime in seconds (inf: failed or wrong)


@dataclass(frozen=True)
class StrategyConfig:
    """What autoschedule passes every strategy; each reads the fields it needs."""

    beam_size: int = 32
    passes: int = 5
    seed: int = 0
    dropout: float = 100.0  # % chance of a fully greedy run (dropout)
    k: int = 5  # top-k: schedules measured
    rounds: int = 2  # autotune: rounds of sampling, measuring and fine-tuning
    samples: int = 16  # autotune: dropout samples per round
    base: str = "beam"  # top-k / autotune: the model-only strategy whose result they start from
    budget: int = 2000  # mcts: cost-model evaluations (states scored)
    budget_seconds: float = 0.0  # mcts: wall-clock limit as well, 0 for none
    trees: int = 4  # mcts: the ensemble's trees
    exploration: float = 0.5  # mcts: UCT's exploration constant (values are in (0, 1])
    rollout: str = "greedy"  # mcts: "greedy" (the model's cheapest child each step) or "random"
    measurements: int = 8  # mcts-real: leaves compiled and measured
    guides: tuple[str, ...] = ("analytical",)  # portfolio: the other cost models whose beam finals the model judges
    guide_margin: float = 1.05  # portfolio: a guide's end replaces the model's own only when predicted this much cheaper
    progress: object = field(default=None, compare=False)  # the search's callback (pass, decisions, total, evaluated)


class SearchStrategy(ABC):
    """One search algorithm. Bookkeeping (costs, penalties, visit counts, measurements) lives here or in the
    search engine it drives, never on the immutable States."""

    name: str = "strategy"
    measures: bool = False  # whether generate_candidates ever returns states to measure

    def initialize(self, space: SearchSpace, model, config: StrategyConfig) -> None:
        """The space (pipeline, target, the partial schedule in space.options.frozen), the cost model, the config."""
        self.space, self.model, self.config = space, model, config

    def generate_candidates(self) -> list[State]:
        """Complete states to measure next; [] when the strategy needs no (more) measurements."""
        return []

    def notify(self, measured: list[Measured]) -> None:
        """The measured runtimes of the last candidates."""

    @abstractmethod
    def finish(self):
        """The scheduler.search.SearchResult: the best state, the distinct finals, stats (measured runtimes in
        stats.measured, the best one's in result.runtime for measuring strategies)."""


STRATEGIES: dict[str, type[SearchStrategy]] = {}


def register_strategy(name: str):
    """Class decorator: `@register_strategy("toy") class Toy(SearchStrategy): ...` makes
    `autoschedule(..., algorithm="toy")` use it."""
    def deco(cls):
        STRATEGIES[name] = cls
        cls.name = name
        return cls
    return deco


def get_strategy(name: str) -> type[SearchStrategy]:
    """The strategy class registered as `name`; one line listing the registered names otherwise."""
    _load_builtin()
    cls = STRATEGIES.get(name)
    if cls is None:
        raise SearchError(f"unknown algorithm {name!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    return cls


def strategy_names() -> list[str]:
    _load_builtin()
    return sorted(STRATEGIES)


def _load_builtin() -> None:
    from . import strategies  # noqa: F401  (registers beam, greedy, hierarchical, dropout, top-k, autotune)
