"""The shortcuts of incremental featurization (featurize.schedule) against fresh featurization, on schedules built to
reach them: a footprint per task remembered from a plan where nothing was computed inside the stage's levels must not
serve a child that computes a producer there (its loops are the parent's, the region read during a task is not).

h = in * 2;  g = h(x-1, y) + h(x+1, y);  f = g(x, y-1) + g(x, y+1) + h(x, y);  f is 64 x 32 f32, tiled 16 x 8.
"""

from __future__ import annotations

import numpy as np

from featurize.schedule import SCHEDULE_FEATURES, schedule_features
from ir import Func, Input, LoopNest, Pipeline, Var, f32
from ir.builder import FuncDecision, ScheduleBuilder, StageSpec
from ir.plan import Plan
from ir.target import get_target

x, y = Var("x"), Var("y")
TARGET = get_target("i9-7960x")
TASK_BYTES = SCHEDULE_FEATURES.index("unique_bytes_read_per_task")


def pipeline():
    inp = Input("inp", f32, 2)
    h, g, f = Func("h"), Func("g"), Func("f")
    h[x, y] = inp[x, y] * 2
    g[x, y] = h[x - 1, y] + h[x + 1, y]
    f[x, y] = g[x, y - 1] + g[x, y + 1] + h[x, y]
    return Pipeline([f], {f: (64, 32)})


def test_a_task_footprint_is_not_reused_once_a_producer_is_computed_inside_the_task():
    p = pipeline()
    b = ScheduleBuilder(p, TARGET)
    tiled = FuncDecision("root", specs={0: StageSpec(tiles=[{"x": 16, "y": 8}], vectorize="x", vector_width=8,
                                                     parallel=True)})
    tree_f = b.place(LoopNest(), "f", tiled, frozenset())
    plan_f = Plan.extend(Plan(p.dag, LoopNest(), TARGET, complete=False), tree_f)
    feats_f = schedule_features(plan_f, TARGET)
    # f alone: h read during one task is f's own 16 x 8 tile of it
    assert feats_f[("f", 0)][TASK_BYTES] == 16 * 10 * 4 + 16 * 8 * 4

    at_tile = FuncDecision("at", consumer="f", level=0, specs={0: StageSpec(vectorize="x", vector_width=8)})
    tree_g = b.place(tree_f, "g", at_tile, frozenset(), plan=plan_f)
    plan_g = Plan.extend(plan_f, tree_g)
    assert plan_g.level(plan_g.funcs["f"].chains[0].head).loops is plan_f.level(tree_f.children[0]).loops
    incremental = schedule_features(plan_g, TARGET, parent=feats_f)
    fresh = schedule_features(Plan(p.dag, tree_g, TARGET, complete=False), TARGET)
    assert incremental.keys() == fresh.keys()
    for k, v in fresh.items():
        assert incremental[k].dtype == v.dtype and np.array_equal(incremental[k], v), k
    # g computed in the task: it reads h over 18 x 10 there, which covers f's own 16 x 8
    assert incremental[("f", 0)][TASK_BYTES] == 18 * 10 * 4
