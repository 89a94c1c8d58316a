"""Hierarchical sampling with the freezing pre-pass (anderson2021 §3-4, §6.5): beam search that scores
floor(log2 n) random members of each structural-hash bucket of children."""

from __future__ import annotations

from ..search import SearchConfig
from ..strategy import StrategyConfig, register_strategy
from .beam import Beam


@register_strategy("hierarchical")
class Hierarchical(Beam):
    def search_config(self, c: StrategyConfig) -> SearchConfig:
        return SearchConfig(beam_size=c.beam_size, passes=c.passes, seed=c.seed, dropout=c.dropout,
                            hierarchical=True, freeze=True)
