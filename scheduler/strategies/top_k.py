"""Top-k (adams2019 §6): search with the model, measure the k cheapest distinct schedules the search ended
with, keep the fastest measured."""

from __future__ import annotations

import dataclasses
import math

from ..search import SearchResult
from ..space import SearchError, State
from ..strategy import Measured, SearchStrategy, get_strategy, register_strategy


@register_strategy("top-k")
class TopK(SearchStrategy):
    measures = True

    def initialize(self, space, model, config) -> None:
        if config.k < 1:
            raise SearchError(f"k must be at least 1, got {config.k}")
        super().initialize(space, model, config)
        self.base = get_strategy(config.base)()
        self.base.initialize(space, model, config)
        self.result: SearchResult | None = None
        self.measured: dict[int, float] = {}  # id(state) -> seconds

    def generate_candidates(self) -> list[State]:
        if self.result is not None:
            return []
        self.result = self.base.finish()
        return [s.state for s in self.result.finals[:self.config.k]]

    def notify(self, measured: list[Measured]) -> None:
        self.measured.update((id(s), t) for s, t in measured)

    def finish(self) -> SearchResult:
        if self.result is None:
            self.generate_candidates()
        timed = [(self.measured.get(id(s.state), math.inf), s) for s in self.result.finals[:self.config.k]]
        best_time, best = min(timed, key=lambda x: (x[0], x[1].cost))
        if not math.isfinite(best_time):
            raise SearchError(f"none of the {len(timed)} best schedules of {self.space.pipeline.name!r} compiled "
                              "and ran correctly")
        stats = dataclasses.replace(self.result.stats, measured={s.tree.fingerprint: t for t, s in timed})
        return dataclasses.replace(self.result, best=best, stats=stats, runtime=best_time)
