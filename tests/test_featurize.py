"""Features: hand-derived values on the three-stage example of adams2019 §3, and invariants over random
pipelines x random schedules.

h(x, y) = in(x, y) * 2;  g = h(x-1, y) + h(x+1, y);  f = g(x, y-1) + g(x, y+1);  f is 64 x 32 f32.
Regions at root: f 64 x 32 (2048 points, 8192 bytes), g 64 x 34 (2176, 8704), h 66 x 34 (2244, 8976).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from featurize import SCHEMA, featurize
from featurize.algorithm import access_classes
from featurize.schema import PIPELINE_ROWS, SCHEDULE_FEATURES
from ir import Func, Input, Pipeline, RDom, Var, f32
from ir.builder import ScheduleBuilder, naive_schedule
from ir.dag import TYPE_BUCKETS
from ir.sampling import random_loopnest

from .fuzz_pipelines import random_test_pipeline

x, y = Var("x"), Var("y")
TARGET = "i9-7960x"  # 16 cores, AVX-512: natural f32 vector 16


def three_stage():
    inp = Input("inp", f32, 2)
    h, g, f = Func("h"), Func("g"), Func("f")
    h[x, y] = inp[x, y] * 2
    g[x, y] = h[x - 1, y] + h[x + 1, y]
    f[x, y] = g[x, y - 1] + g[x, y + 1]
    return Pipeline([f], {f: (64, 32)})


def feats(p, ln):
    F = featurize(p, ln, TARGET)
    return {k[0]: F.by_name(*k) for k in F.stages}


def check(d: dict, **expected):
    for name, value in expected.items():
        assert d[name] == value, (name, d[name], value)


def schedule(p, g="root", h="root", f_tiled=True):
    s = ScheduleBuilder(p, TARGET)
    if f_tiled:
        s.root("f", tiles=[{"x": 16, "y": 8}], vectorize="x", vector_width=8, parallel=True)
    else:
        s.root("f")
    for name, where in (("g", g), ("h", h)):
        if where == "root":
            s.root(name)
        elif where == "inline":
            s.inline(name)
        else:
            s.compute_at(name, *where, vectorize="x", vector_width=8)
    return s.build()


def test_everything_at_root():
    p = three_stage()
    d = feats(p, naive_schedule(p))
    check(d["f"], num_realizations=1, num_productions=1, points_computed_total=2048, points_computed_minimum=2048,
          inner_parallelism=1, outer_parallelism=1, bytes_at_production=8192, bytes_at_realization=8192,
          num_vectors=0, num_scalars=2048, vector_size=1, working_set=0, working_set_at_root=25872,
          innermost_loop_extent=2048, inlined_calls=0)
    check(d["g"], points_computed_total=2176, bytes_at_production=8704, num_scalars=2176,
          points_computed_minimum=2176, bytes_at_root=8704, innermost_bytes_at_root=256)
    check(d["h"], points_computed_total=2244, bytes_at_production=8976, num_scalars=2244,
          points_computed_minimum=2244)
    # f reads g at root: 64 x 34 points; one "tile" (the whole innermost loop) reads all of it
    check(d["f"], unique_bytes_read_per_realization=8704, unique_lines_read_per_realization=34,
          allocation_bytes_read_per_realization=8704, scalar_loads_per_scalar=2)


def test_tiled_parallel_vectorized_output():
    p = three_stage()
    d = feats(p, schedule(p))
    check(d["f"], num_realizations=1, num_productions=1, points_computed_total=2048,
          inner_parallelism=16, outer_parallelism=1,  # 4 x 4 tiles of 16 x 8
          bytes_at_production=8192, bytes_at_task=16 * 8 * 4, innermost_bytes_at_task=16 * 4,
          vector_size=8, native_vector_size=16, num_vectors=256, num_scalars=0,
          vector_loads_per_vector=2, scalar_loads_per_vector=0,
          unique_bytes_read_per_vector=3 * 8 * 4, unique_lines_read_per_vector=3,  # rows y-1..y+1 of g
          unique_bytes_read_per_task=16 * 10 * 4, unique_lines_read_per_task=10)  # g stored at root
    check(d["g"], inner_parallelism=1, num_scalars=2176, working_set_at_task=0)


def test_producer_fused_at_the_tiles_of_its_consumer():
    p = three_stage()
    d = feats(p, schedule(p, g=("f", 0)))
    check(d["g"], num_realizations=16, num_productions=16,  # once per tile of f
          points_computed_per_realization=16 * 10, points_computed_total=2560,  # 2 redundant rows per tile
          points_computed_minimum=2176, inner_parallelism=1, outer_parallelism=16,
          bytes_at_production=640, bytes_at_realization=640, bytes_at_task=640,
          num_vectors=320, num_scalars=0, working_set_at_realization=640)
    # f's realization reads g's whole allocation, nested inside it; f's tile allocates g
    check(d["f"], working_set=640, unique_bytes_read_per_realization=640, working_set_at_root=8192 + 640 + 8976,
          unique_bytes_read_per_task=18 * 10 * 4)  # looks through g (computed in the task) to h at root


def test_inlined_producers():
    p = three_stage()
    d = feats(p, schedule(p, g="inline", h="inline", f_tiled=False))
    check(d["f"], points_computed_total=2048, num_scalars=2048, working_set_at_root=8192)
    check(d["g"], inlined_calls=2 * 2048, num_scalars=2 * 2048, num_realizations=0, num_productions=0,
          bytes_at_production=0, points_computed_total=0, points_computed_minimum=2176, bytes_at_root=8704)
    check(d["h"], inlined_calls=4 * 2048, num_scalars=4 * 2048, points_computed_minimum=2244)
    # f loads through the inlined Funcs: four loads of the input per point
    check(d["f"], scalar_loads_per_scalar=4, unique_bytes_read_per_realization=66 * 34 * 4)


def test_sliding_window_computes_each_row_once():
    p = three_stage()
    s = ScheduleBuilder(p, TARGET)
    s.root("f", tiles=[{"x": 64, "y": 1}])
    s.compute_at("g", "f", level=0, store_level=-1)
    s.root("h")
    d = feats(p, s.build())
    check(d["g"], num_realizations=1, num_productions=32, points_computed_per_realization=2176,
          points_computed_total=2176, bytes_at_realization=8704, bytes_at_production=64 * 3 * 4)


def test_consecutive_realizations_share_their_rows():
    """g computed per row of f reads h's rows y-1..y+1 (66 x 3 points, 792 bytes, 3 lines) at each of its 32
    realizations, and the row before read two of them: what is new per realization is h's whole region under the
    row loop (66 x 34 points, 8976 bytes, 34 lines) over its 32 iterations. f, realized once, reads nothing twice."""
    p = three_stage()
    s = ScheduleBuilder(p, TARGET)
    s.root("f", tiles=[{"x": 64, "y": 1}])
    s.compute_at("g", "f", level=0)
    s.root("h")
    d = feats(p, s.build())
    check(d["g"], num_realizations=32, unique_bytes_read_per_realization=66 * 3 * 4,
          new_bytes_read_per_realization=66 * 34 * 4 / 32, unique_lines_read_per_realization=3,
          new_lines_read_per_realization=34 / 32)
    check(d["f"], num_realizations=1, unique_bytes_read_per_realization=64 * 3 * 4,
          new_bytes_read_per_realization=64 * 3 * 4, new_lines_read_per_realization=3)


def test_unrolling_amortizes_loop_invariant_loads():
    inp, w = Input("inp", f32, 2), Input("w", f32, 1)
    f = Func("f")
    f[x, y] = inp[x, y] * w[y]
    p = Pipeline([f], {f: (64, 16)})
    s = ScheduleBuilder(p, TARGET)
    s.root("f", tiles=[{"x": 16, "y": 4}], vectorize="x", vector_width=16, unroll={"y": 4})
    d = feats(p, s.build())["f"]
    check(d, unrolled_loop_extent=4, vector_loads_per_vector=1, scalar_loads_per_vector=1)  # w[y]: broadcast
    s = ScheduleBuilder(p, TARGET)
    s.root("f", tiles=[{"x": 16, "y": 4}], vectorize="x", vector_width=16, unroll={"y": 4})
    inp2 = Input("inp", f32, 2)
    g = Func("g")
    g[x, y] = inp2[x, y] * inp2[0, 0]  # a load invariant in both loops
    q = Pipeline([g], {g: (64, 16)})
    s = ScheduleBuilder(q, TARGET)
    s.root("g", tiles=[{"x": 16, "y": 4}], vectorize="x", vector_width=16, unroll={"y": 4})
    check(feats(q, s.build())["g"], scalar_loads_per_vector=0.25, vector_loads_per_vector=1)


def test_update_stages_load_themselves():
    inp = Input("inp", f32, 1)
    f = Func("f")
    f[x] = 0.0
    r = RDom((0, 3), name="r")
    f[x] += inp[x + r]
    p = Pipeline([f], {f: (32,)})
    F = featurize(p, naive_schedule(p), TARGET)
    assert F.stages == [("f", 0), ("f", 1)]
    upd = F.by_name("f", 1)
    check(upd, points_computed_total=96, innermost_loop_extent=96, innermost_pure_loop_extent=32,
          scalar_loads_per_scalar=2)  # the input and f itself


# -- algorithm features ---------------------------------------------------------------------------


def test_access_classes_follow_halide():
    one, zero = 1, 0
    assert access_classes(((one, zero), (zero, one))) == dict(pointwise=True, transpose=True, broadcast=True,
                                                               slice=True)
    assert access_classes(((zero, one), (one, zero)))["transpose"] and not \
        access_classes(((zero, one), (one, zero)))["pointwise"]
    slice_ = access_classes(((one,), (zero,)))  # g(x, 3) read by a 1-D stage: a slice of g
    assert slice_["slice"] and not slice_["transpose"] and not slice_["broadcast"]
    assert not any(access_classes(((one, zero),)).values())  # g(x) read by a 2-D stage: none of the four
    assert not any(access_classes(((None, zero), (zero, one))).values())


def test_pipeline_features_count_ops_and_accesses():
    p = three_stage()
    F = featurize(p, naive_schedule(p), TARGET)
    g = F.pipeline[F.stages.index(("g", 0))]
    row, col = {n: i for i, n in enumerate(PIPELINE_ROWS)}, {n: i for i, n in enumerate(TYPE_BUCKETS)}
    assert F.pipeline.shape == (3, 40, 7) and F.pipeline.dtype == np.float32
    assert g[row["Add"], col["Float"]] == 1  # h(..) + h(..)
    assert g[row["Add"], col["UInt32"]] == 1 and g[row["Sub"], col["UInt32"]] == 1  # x + 1, x - 1
    assert g[row["FuncCall"], col["Float"]] == 2
    assert g[row["pointwise_LoadFunc"], col["Float"]] == 2  # offsets do not change the Jacobian
    assert g[row["pointwise_Store"], col["Float"]] == 1
    h = F.pipeline[F.stages.index(("h", 0))]
    assert h[row["ImageCall"], col["Float"]] == 1 and h[row["pointwise_LoadImage"], col["Float"]] == 1


# -- invariants -----------------------------------------------------------------------------------

ALLOWED_FOR_INLINED = {"inlined_calls", "num_vectors", "num_scalars", "vector_size", "native_vector_size",
                       "innermost_pure_loop_extent", "inner_parallelism", "outer_parallelism", "bytes_at_root",
                       "points_computed_minimum", "working_set_at_root"}


@pytest.mark.parametrize("seed", range(200))
def test_invariants_on_random_pairs(seed):
    p = random_test_pipeline(seed)
    F = featurize(p, random_loopnest(p, seed * 13 + 1), TARGET)
    assert F.schedule.dtype == np.float32 and F.schedule.shape == (len(F.stages), SCHEMA.num_schedule_features)
    assert np.isfinite(F.schedule).all() and (F.schedule >= 0).all()
    assert np.isfinite(F.pipeline).all() and (F.pipeline >= 0).all()
    for i, (func, s) in enumerate(F.stages):
        d = dict(zip(SCHEDULE_FEATURES, F.schedule[i].tolist()))
        if F.inlined[i]:
            assert d["inlined_calls"] > 0
            assert all(d[k] == 0 for k in SCHEDULE_FEATURES if k not in ALLOWED_FOR_INLINED), (func, d)
        else:
            assert d["inlined_calls"] == 0
            assert d["points_computed_total"] >= d["points_computed_minimum"] > 0, (func, d)
            assert d["num_realizations"] >= 1 and d["num_productions"] >= d["num_realizations"]
            assert math.isclose(d["points_computed_total"],
                                d["num_realizations"] * d["points_computed_per_realization"], rel_tol=1e-5)
            assert d["bytes_at_realization"] >= d["bytes_at_production"] > 0
            assert d["working_set_at_root"] >= d["working_set_at_realization"] >= d["working_set"]
            # what the previous realization did not read: never more than a realization reads, all of it if one
            assert d["new_bytes_read_per_realization"] <= d["unique_bytes_read_per_realization"]
            assert d["new_lines_read_per_realization"] <= d["unique_lines_read_per_realization"]
            if d["num_realizations"] == 1:
                assert d["new_bytes_read_per_realization"] == d["unique_bytes_read_per_realization"]


def test_partial_schedules_featurize_only_scheduled_stages():
    p = three_stage()
    full = schedule(p, g=("f", 0))
    partial = full.replace(children=tuple(c for c in full.children if c.func != "h"),
                           store_at=tuple(f for f in full.store_at if f != "h"))
    F = featurize(p, partial, TARGET)
    assert [s for s, _ in F.stages] == ["f", "g"]
    g = F.by_name("g")
    # h is not scheduled: its loads are assumed dense, its lines counted in the best layout
    check(g, vector_loads_per_vector=2, unique_lines_read_per_vector=1)
    # a root Func whose parallel split is still to come is assumed split for the machine
    h_only = naive_schedule(p)
    F = featurize(p, h_only, TARGET, pending_parallel={"f"})
    check(F.by_name("f"), inner_parallelism=128, bytes_at_task=512)


# -- incremental planning and featurization (search successors) -----------------------------------


def replay(p, decisions):
    """The partial schedules a search passes through: one more Func decided at each step, outputs first."""
    from ir import LoopNest

    b = ScheduleBuilder(p)
    tree, inlined = LoopNest(), set()
    for node in p.dag.nodes:
        tree = b._apply(tree, node, decisions[node.name], inlined)
        yield tree


@pytest.mark.parametrize("seed", range(60))
def test_extended_plans_and_incremental_features_equal_fresh_ones(seed):
    from featurize.schedule import schedule_features
    from ir.plan import Plan
    from ir.sampling import random_schedule
    from ir.target import get_target

    tgt = get_target(TARGET)
    p = random_test_pipeline(seed)
    _, decisions = random_schedule(p, seed)
    plan, feats = Plan(p.dag, __import__("ir").LoopNest(), complete=False), {}
    for tree in replay(p, decisions):
        fresh = Plan(p.dag, tree, complete=False)
        plan = Plan.extend(plan, tree)
        for name, fp in fresh.funcs.items():
            ep = plan.funcs[name]
            assert ep.inlined == fp.inlined
            if not fp.inlined:
                assert (repr(ep.region), ep.extents, ep.storage_extents, ep.strides) == \
                       (repr(fp.region), fp.extents, fp.storage_extents, fp.strides)
                for n, _ in tree.nodes():
                    assert repr(plan.region_at(name, n)) == repr(fresh.region_at(name, n))
        full = schedule_features(fresh, tgt)
        feats = schedule_features(plan, tgt, parent=feats)
        assert full.keys() == feats.keys()
        for k in full:
            assert np.array_equal(full[k], feats[k]), k


def _levels(plan):
    return sorted((key, lvl.order, [(lp.name, lp.count, lp.tile, lp.tail, repr(lp.base), repr(lp.ext), repr(lp.count_form))
                                    for lp in lvl.loops])
                  for key, lvl in ((plan.keys[i], lvl) for i, lvl in plan.levels.items()))


@pytest.mark.parametrize("pipeline", ["unsharp", "harris", "iir_blur", "max_filter", "random:1", "random:2"])
def test_chains_remembered_by_value_equal_fresh_ones(pipeline):
    """Plan.extend takes a stage's loops from the search-wide chain memo when its region forms and level shapes
    recur on another tree (ir.plan.dag_chain_memo); every level of every searched state must equal a fresh plan's
    all the same. The states: all children of a few states per step of a search, down to complete schedules."""
    from ir.plan import Plan, dag_chain_memo
    from scheduler.space import make_space

    from .search_walk import pipeline_from_spec, sampled_search_children

    p = pipeline_from_spec(pipeline)
    space = make_space(p, TARGET)
    checked = 0
    for c in sampled_search_children(space, pipeline, 3):
        assert _levels(c.plan) == _levels(Plan(p.dag, c.tree, complete=False))
        checked += 1
    assert checked > 20 and len(dag_chain_memo(p.dag)) > 0


def test_access_classes_remembered_by_value_equal_a_fresh_classification():
    """access_classes answers from its memo what _access_classes computes, for Jacobians with ints, Fractions and
    None (equal values share an entry: the classes depend only on the values); rows given as lists are classified
    without the memo."""
    from fractions import Fraction

    from featurize.algorithm import _CLASSES, _access_classes

    one, zero, half = Fraction(1), Fraction(0), Fraction(1, 2)
    jacs = [((one, zero), (zero, one)), ((1, 0), (0, 1)), ((zero, one), (one, zero)), ((one,), (zero,)),
            ((half, zero), (zero, one)), ((None, zero), (zero, one)), ((2, 0, 0), (0, 1, 0)), ()]
    for jac in jacs * 2:
        assert access_classes(jac) == _access_classes(jac)
        assert jac in _CLASSES
    assert access_classes([[one, zero], [zero, one]]) == _access_classes(((one, zero), (zero, one)))
