"""Greedy search: beam search with a beam of 1 and one pass (adams2019 §3.2)."""

from __future__ import annotations

from ..search import SearchConfig
from ..strategy import StrategyConfig, register_strategy
from .beam import Beam


@register_strategy("greedy")
class Greedy(Beam):
    def search_config(self, c: StrategyConfig) -> SearchConfig:
        return SearchConfig(beam_size=1, passes=1, seed=c.seed)
