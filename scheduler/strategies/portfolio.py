"""Portfolio: beam search under the model and under each guide model (the analytical model by default); the model
then judges every complete schedule those searches ended with and keeps the cheapest.

Why: a learned model ranks complete schedules better than it steers beam search through partial ones. On
interpolate the built-in model predicts the analytical model's beam schedule at 122 ms and its own at 168 ms (the
measured order too), yet its own beam, up to 32 x 5, never reaches that schedule: the partial states that lead
there look expensive to it and are pruned. A guide's search walks other partial states; the model only has to
rank the ends, which it does well. The result is never worse than beam's by the model's own prediction, and it
costs one more search per guide. portfolio-greedy does the same with greedy searches (beam 1, one pass).

A guide's end replaces the model's own best only when the model predicts it `guide_margin` times cheaper (default
1.05): closer predictions are ties the model cannot order. Of the five greedy schedules the built-in model changed
on the 17 apps, the three predicted 1.12-1.54x cheaper measured 1.5-4.3x faster; the two predicted 1.003x and
1.01x cheaper (matmul, depthwise_separable_conv) measured 0.71-1.12x (docs/results/portfolio-greedy-2026-11-29.txt).
"""

from __future__ import annotations

import dataclasses
import time

from ..cost import load_model, timed_score
from ..search import BeamSearch, Scored, SearchResult, _distinct
from ..space import SearchError, Timing
from ..strategy import register_strategy
from .beam import Beam
from .greedy import Greedy


@register_strategy("portfolio")
class Portfolio(Beam):
    """Beam `beam_size` x `passes` under the model and under each of `guides`; the model picks among all finals."""

    def initialize(self, space, model, config) -> None:
        super().initialize(space, model, config)
        if not config.guides:
            raise SearchError("portfolio needs at least one guide cost model (guides=['analytical'])")
        if not config.guide_margin >= 1.0:
            raise SearchError(f"guide_margin is how much cheaper a guide's schedule must be predicted to replace the "
                              f"model's own; it must be >= 1.0 (1.0: the cheapest end wins), got {config.guide_margin}")
        # a guide that is the model itself would repeat its search
        self.guides = [load_model(g, space.target, allow_mismatch=True) for g in config.guides]
        self.guides = [g for g in self.guides if g.name != model.name]

    def finish(self) -> SearchResult:
        s, cfg = self.space, self.search_config(self.config)
        own = BeamSearch(s.pipeline, s.target, self.model, cfg, self.config.progress, options=s.options).run()
        finals, stats, led_finals = list(own.finals), own.stats, []
        for guide in self.guides:
            led = BeamSearch(s.pipeline, s.target, guide, cfg, self.config.progress, options=s.options).run()
            timing = Timing()
            t0 = time.perf_counter()
            states = [x.state for x in led.finals]
            costs, stages = timed_score(self.model, s.dag, states, timing)
            led_finals += [Scored(st, float(c), sc) for st, c, sc in zip(states, costs, stages)]
            g = led.stats
            stats = dataclasses.replace(
                stats, states_evaluated=stats.states_evaluated + g.states_evaluated,
                seconds=stats.seconds + g.seconds + time.perf_counter() - t0,
                enumerate_s=stats.enumerate_s + g.enumerate_s, featurize_s=stats.featurize_s + g.featurize_s,
                model_s=stats.model_s + g.model_s + timing.model_s, replayed=stats.replayed + g.replayed,
                retiled=stats.retiled + g.retiled)
        best = own.best
        led_best = min(led_finals, key=lambda x: (x.cost, x.state.order), default=None)
        if led_best is not None and led_best.cost * self.config.guide_margin < best.cost:
            best = led_best
        finals = _distinct(finals + led_finals)
        return SearchResult(best, finals, dataclasses.replace(stats, algorithm=self.name, model=self.model.name))


@register_strategy("portfolio-greedy")
class PortfolioGreedy(Portfolio):
    """Greedy (beam 1, one pass) under the model and under each of `guides`; the model picks among their ends."""

    search_config = Greedy.search_config
