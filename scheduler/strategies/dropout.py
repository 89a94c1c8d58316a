"""Random dropout (adams2019 §4.3): greedy with each kept state dropped at random, `dropout` % the chance
of a fully greedy run (100 means 1 here, as before: dropout without dropping is greedy)."""

from __future__ import annotations

from ..search import SearchConfig
from ..strategy import StrategyConfig, register_strategy
from .beam import Beam


@register_strategy("dropout")
class Dropout(Beam):
    def search_config(self, c: StrategyConfig) -> SearchConfig:
        return SearchConfig(beam_size=1, passes=1, seed=c.seed, dropout=c.dropout if c.dropout < 100 else 1.0)
