"""Autotune (adams2019 §6, anderson2021 §8): measure the base search's result, then `rounds` of `samples`
dropout samples; after each round the cost model (a copy: the caller's is untouched) is updated on
everything measured. Never returns a schedule slower than the base result."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np

from ..cost import stage_keys
from ..search import BeamSearch, Scored, SearchConfig, SearchResult
from ..space import SearchError, State
from ..strategy import Measured, SearchStrategy, get_strategy, register_strategy


@register_strategy("autotune")
class Autotune(SearchStrategy):
    measures = True

    def initialize(self, space, model, config) -> None:
        if config.rounds < 1 or config.samples < 1:
            raise SearchError(f"autotune needs rounds >= 1 and samples >= 1, got {config.rounds} and {config.samples}")
        super().initialize(space, model, config)
        self.model = copy.deepcopy(model)  # update() fine-tunes this copy
        self.base = get_strategy(config.base)()
        self.base.initialize(space, self.model, config)
        self.result: SearchResult | None = None
        self.round = -1  # -1: the base result is being measured
        self.evaluated = 0
        self.measured: dict[str, tuple[float, Scored]] = {}  # fingerprint -> (seconds, the scored state)
        self.pending: dict[int, Scored] = {}  # id(state) -> what generate_candidates handed out

    def generate_candidates(self) -> list[State]:
        c = self.config
        if self.result is None:
            self.result = self.base.finish()
            self.evaluated = self.result.stats.states_evaluated
            batch = [self.result.best]
        else:
            self.round += 1
            if self.round >= c.rounds:
                return []
            batch, seen = [], set(self.measured)
            for i in range(c.samples):
                cfg = SearchConfig(beam_size=1, passes=1, seed=c.seed * 100003 + self.round * 1009 + i, dropout=1.0)
                res = BeamSearch(self.space.pipeline, self.space.target, self.model, cfg, c.progress,
                                 options=self.space.options).run()
                self.evaluated += res.stats.states_evaluated
                if res.best.tree.fingerprint not in seen:
                    seen.add(res.best.tree.fingerprint)
                    batch.append(res.best)
        self.pending = {id(s.state): s for s in batch}
        return [s.state for s in batch]

    def notify(self, measured: list[Measured]) -> None:
        for s, t in measured:
            self.measured[s.tree.fingerprint] = (t, self.pending[id(s)])
        if self.round >= 0:
            self._update()

    def _update(self) -> None:
        """The model learns every finite runtime measured so far (the base result's included)."""
        dag = self.space.dag
        rows = [(s.state, t) for t, s in self.measured.values() if math.isfinite(t)]
        if len(rows) < 2:
            return
        keys = stage_keys(dag, rows[0][0])
        rows = [(s, t) for s, t in rows if stage_keys(dag, s) == keys]
        sched = np.stack([np.stack([s.features[k] for k in keys]) for s, _ in rows])
        self.model.update(self.model.pipeline_features(dag, keys), sched, np.array([t for _, t in rows]))

    def finish(self) -> SearchResult:
        if self.result is None:  # nothing was measured: the base result
            self.result = self.base.finish()
            self.evaluated = self.result.stats.states_evaluated
        base = self.result
        best = base.best
        best_time = self.measured.get(best.tree.fingerprint, (math.inf, best))[0]
        for t, s in self.measured.values():
            if t < best_time:
                best_time, best = t, s
        stats = dataclasses.replace(base.stats, states_evaluated=self.evaluated,
                                    measured={k: t for k, (t, _) in self.measured.items()})
        return dataclasses.replace(base, best=best, stats=stats, runtime=best_time)
