"""PolyMage's DP fusion with its tile-size model (jangda2020 §3-5) as a search strategy: no learned model.
The DP's groups become a plain LoopNest through ScheduleBuilder, so every backend compiles it: each group
output at root in the model's tiles (outer tiles parallel, innermost vectorized), its members computed at
level 0 of the output's loops (inside each tile), pointwise Funcs inlined (the model is in polymage_model)."""

from __future__ import annotations

import time

from ir.builder import FuncDecision, ScheduleBuilder, StageSpec
from ir.loopnest import LoopNest
from ir.plan import Plan

from ..search import Scored, SearchResult, SearchStats
from ..space import State
from ..strategy import SearchStrategy, register_strategy
from .polymage_model import Grouping, dp_grouping


def polymage_schedule(pipeline, target, grouping: Grouping | None = None,
                      fixed: dict[str, FuncDecision] | None = None) -> tuple[LoopNest, Grouping]:
    """The LoopNest of the DP's grouping (computed here unless given); `fixed` (autoschedule's partial=)
    decisions override the grouping's for their Funcs."""
    b = ScheduleBuilder(pipeline, target)
    b.decisions.update(fixed or {})
    g = grouping or dp_grouping(pipeline.dag, b.target)
    options: dict[str, list[FuncDecision]] = {}
    for gc in g.groups:
        out = b.dag.node(gc.output)
        x = out.dims[0]
        lanes = b.target.natural_vector_size(out.type)
        tiles = {d: k for d, k in gc.tiles.items()}
        if tiles.get(x, 0) >= lanes:  # whole vectors along x
            tiles[x] -= tiles[x] % lanes
        vec = x if tiles.get(x, 0) >= lanes else None
        options[gc.output] = [
            FuncDecision("root", specs={0: StageSpec(tiles=[tiles], vectorize=vec, parallel=True)}),
            FuncDecision("root", specs={0: StageSpec(tiles=[tiles], parallel=True)}),
            FuncDecision("root", specs={0: StageSpec(tiles=[tiles])}),
            FuncDecision("root", specs={0: StageSpec()}),
        ]
        for m in sorted(gc.members - {gc.output}):
            mx = b.dag.node(m).dims[0]
            options[m] = [FuncDecision("at", gc.output, 0, 0, specs={0: StageSpec(vectorize=mx)}),
                          FuncDecision("at", gc.output, 0, 0, specs={0: StageSpec()}),
                          FuncDecision("root", specs={0: StageSpec()})]
    for f in g.inlined - set(b.decisions):
        b.inline(f)
    tries: dict[str, int] = {}

    def decide(func: str, tree) -> FuncDecision | None:
        k = tries.get(func, 0)
        tries[func] = k + 1
        opts = options.get(func, [])
        return opts[k] if k < len(opts) else None

    return b.build(decide, attempts=4), g


@register_strategy("polymage-dp")
class PolyMageDP(SearchStrategy):
    """jangda2020's DP grouping and tile sizes; the model given is not used (the DP's cost is the result's
    cost)."""

    def finish(self) -> SearchResult:
        t0 = time.perf_counter()
        s = self.space
        tree, g = polymage_schedule(s.pipeline, s.target, fixed=s.options.frozen)
        state = State(tree, Plan(s.dag, tree, s.target), {}, num_decisions=s.total_decisions,
                      inlined=g.inlined)
        best = Scored(state, g.cost)
        stats = SearchStats(states_evaluated=g.states, seconds=time.perf_counter() - t0, enumerate_s=0.0,
                            featurize_s=0.0, model_s=0.0, passes=1, algorithm=self.name)
        return SearchResult(best, [best], stats)
