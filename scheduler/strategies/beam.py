"""Beam search (adams2019 §3.2) with coarse-to-fine passes: the model-only strategy the others build on.
It wraps scheduler.search.BeamSearch, which holds the search engine and its bookkeeping."""

from __future__ import annotations

from ..search import BeamSearch, SearchConfig, SearchResult
from ..strategy import SearchStrategy, StrategyConfig, register_strategy


@register_strategy("beam")
class Beam(SearchStrategy):
    """Beam `beam_size`, `passes` coarse-to-fine passes; no measurements."""

    def search_config(self, c: StrategyConfig) -> SearchConfig:
        return SearchConfig(beam_size=c.beam_size, passes=c.passes, seed=c.seed, dropout=c.dropout)

    def finish(self) -> SearchResult:
        s = self.space
        return BeamSearch(s.pipeline, s.target, self.model, self.search_config(self.config), self.config.progress,
                          options=s.options).run()
