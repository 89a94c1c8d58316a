"""The shortcuts of incremental featurization (featurize.schedule) against fresh featurization, on schedules built to
reach them: a footprint per task remembered from a plan where nothing was computed inside the stage's levels must not
serve a child that computes a producer there (its loops are the parent's, the region read during a task is not).

h = in * 2;  g = h(x-1, y) + h(x+1, y);  f = g(x, y-1) + g(x, y+1) + h(x, y);  f is 64 x 32 f32, tiled 16 x 8.
"""

from __future__ import annotations

import numpy as np
import pytest

from featurize.schedule import SCHEDULE_FEATURES, _Memo, schedule_features
from ir import Func, Input, LoopNest, Pipeline, Var, f32
from ir.builder import FuncDecision, ScheduleBuilder, StageSpec
from ir.plan import Plan
from ir.target import get_target
from scheduler.space import make_space

from .search_walk import pipeline_from_spec, sampled_search_children

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


def test_feature_array_items_read_and_written_in_c_are_numpys():
    """featurize.schedule's array helpers (compiled: numpy's C API on the arrays' own items) answer what numpy's
    indexing, copies and casts give, for the arrays they read in place and for those they hand back to numpy."""
    from featurize import schedule as fs

    rng = np.random.default_rng(7)
    a = rng.uniform(0, 1e9, len(SCHEDULE_FEATURES)).astype(np.float32)
    readonly = a.copy()
    readonly.flags.writeable = False
    idx = fs._WS_ITEMS
    others = (a[::-1], a.astype(">f4"), a.astype(np.float64), readonly)  # strided, byte-swapped, float64: numpy's path
    for arr in (a, *others):
        assert fs._float32_items(arr, idx) == arr[list(idx)].tolist()
    values = [fs._as_float32(x) for x in rng.uniform(0, 1e12, len(idx)).tolist()]
    for arr in (a, a[::-1], readonly):
        before = arr.copy()
        out = fs._float32_with_items(arr, idx, values)
        expected = arr.copy()
        expected[list(idx)] = values
        assert out.dtype == np.float32 and np.array_equal(out, expected) and np.array_equal(arr, before)
        assert out is not arr
    # rounding to float32 as numpy's cast does, at ties, past 2**24, near and beyond float32's largest value
    big = float(np.finfo(np.float32).max)
    for x in (0.0, 1.0, 16777217.0, 16777219.0, 0.1, 1e-45, big, big * (1 + 2 ** -25), 3.5e38, 1e300, -1e300,
              *rng.uniform(0, 2 ** 60, 200).tolist()):
        with np.errstate(over="ignore"):
            assert fs._as_float32(x) == float(np.array([x]).astype(np.float32)[0]), x
    floats = rng.uniform(-1e30, 1e30, len(SCHEDULE_FEATURES)).tolist()
    out = fs._float64(floats)
    assert out.dtype == np.float64 and out.tolist() == floats and out.flags.c_contiguous


def test_stage_features_stacked_for_a_batch_are_numpys_array_of_them():
    """stack_stage_features (compiled: the float32 rows copied in C) gives np.array of the nested lists: the same
    values, shape and dtype, float64 where one row is, and numpy's own error where the rows differ in width."""
    from featurize.schedule import stack_stage_features

    rng = np.random.default_rng(3)
    keys = (("f", 0), ("g", 0), ("g", 1))
    feats = [{k: rng.uniform(0, 1e6, len(SCHEDULE_FEATURES)).astype(np.float32) for k in keys} for _ in range(6)]

    def reference():
        return np.array([[f[k] for k in keys] for f in feats])

    out = stack_stage_features(feats, keys)
    assert out.dtype == np.float32 and out.shape == (6, 3, len(SCHEDULE_FEATURES))
    assert np.array_equal(out, reference())
    assert np.array_equal(stack_stage_features(feats, keys[1:]), np.array([[f[k] for k in keys[1:]] for f in feats]))
    feats[4][("g", 0)] = feats[4][("g", 0)][::-1]  # a strided view: copied by numpy
    assert np.array_equal(stack_stage_features(feats, keys), reference())
    feats[2][("g", 1)] = feats[2][("g", 1)].astype(np.float64)
    out = stack_stage_features(feats, keys)
    assert out.dtype == np.float64 and np.array_equal(out, reference())
    feats[2][("g", 1)] = np.zeros(len(SCHEDULE_FEATURES) - 1, np.float32)
    with pytest.raises(ValueError):
        stack_stage_features(feats, keys)
    assert stack_stage_features([], keys).shape == (0,)


def test_a_stages_loads_are_shared_across_inlined_sets_that_differ_only_where_it_does_not_read():
    """_loads memoizes a stage's loads on the inlined Funcs it reads through, not on the whole inlined set: inlining
    a Func the stage never reads gives the same entry, equal to a fresh DAG's; one it reads gives others."""
    from featurize.schedule import _loads

    def build():
        inp = Input("inp", f32, 2)
        h, g, e, f = Func("h"), Func("g"), Func("e"), Func("f")
        h[x, y] = inp[x, y] * 2
        g[x, y] = h[x - 1, y] + h[x + 1, y]
        e[x, y] = inp[x, y + 1] + 1
        f[x, y] = g[x, y - 1] + g[x, y + 1] + e[x, y]
        return Pipeline([f], {f: (64, 32)})

    dag = build().dag
    g, f = dag.node("g").stages[0], dag.node("f").stages[0]
    through_h = _loads(dag, frozenset({"h"}), g)
    assert [(p, n) for p, _, n in through_h] == [("inp", 2)]  # two taps of h, each one load of inp
    assert _loads(dag, frozenset({"h", "e"}), g) is through_h  # g does not read e
    fresh = build().dag
    assert _loads(fresh, frozenset({"h", "e"}), fresh.node("g").stages[0]) == through_h
    assert sorted((p, n) for p, _, n in _loads(dag, frozenset({"h"}), f)) == [("e", 1), ("g", 2)]
    assert sorted((p, n) for p, _, n in _loads(dag, frozenset({"h", "e"}), f)) == [("g", 2), ("inp", 1)]


@pytest.mark.parametrize("spec", ["camera_pipe", "local_laplacian", "random:2"])
def test_features_from_the_search_wide_memos_equal_those_of_an_empty_memo(spec):
    """A search keeps what featurization derives in one memo per DAG (featurize.schedule._Memo): footprints and the
    regions one SIMD vector reads by the identity of the forms they derive from, loads per point by value, task
    footprints. Every child of a search walk, featurized with what other states left there, has
    exactly the features a featurizer starting from an empty memo gives its tree."""
    p = pipeline_from_spec(spec)
    space = make_space(p, TARGET)
    memo = p.dag.analysis("featurize.memo", _Memo)
    checked = 0
    for c in sampled_search_children(space, spec, 1):
        p.dag._analyses["featurize.memo"] = _Memo()
        try:
            want = schedule_features(Plan(p.dag, c.tree, space.target, complete=False), space.target, c.pending)
        finally:
            p.dag._analyses["featurize.memo"] = memo
        assert want.keys() == c.features.keys()
        for k, v in want.items():
            assert np.array_equal(c.features[k], v), (spec, c.num_decisions, k, np.flatnonzero(c.features[k] != v))
        checked += 1
    assert checked > 100 and memo.vectors, (checked, len(memo.vectors))
