"""Every pruning rule of the search space (scheduler/space.py, scheduler/tilings.py), one test each.

Each test fails when its rule is removed (checked by disabling the rule and running the test). The rules
are adams2019's (§3.2, Halide's State::generate_children / calculate_cost, generate_tilings; see
reference/halide-autoschedulers.md "Pruning rules"); the constants are pinned to Halide's CPU values."""

from __future__ import annotations

import math

import pytest

from ir import Func, Input, Pipeline, RDom, Var, cast, f32, u8
from ir.builder import StageSpec
from ir.errors import ScheduleError
from ir.plan import UNROLL_LIMIT, Plan
from scheduler import space as space_mod
from scheduler import tilings
from scheduler.space import MAX_INLINED_CALLS, MAX_RECOMPUTE, SearchError, SearchSpace, _is_wrapper

x, y = Var("x"), Var("y")


def stencil(body: str = "arith", size=(64, 64)) -> Pipeline:
    """f (a copy, a cast copy or arithmetic on the input) read by g as a 3x3 stencil: 9 calls per point."""
    inp = Input("inp", f32, 2)
    f, g = Func("f"), Func("g")
    f[x, y] = {"copy": inp[x, y], "cast": cast(f32, cast(u8, inp[x, y])), "arith": inp[x, y] * 2 + 1,
               "two": inp[x, y] + inp[x + 1, y]}[body]
    g[x, y] = sum(f[x + i, y + j] for i in range(-1, 2) for j in range(-1, 2))
    return Pipeline([g], {g: size})


def pointwise_chain() -> Pipeline:
    inp = Input("inp", f32, 2)
    f, g = Func("f"), Func("g")
    f[x, y] = inp[x, y] * 2
    g[x, y] = f[x, y] + 1
    return Pipeline([g], {g: (64, 64)})


def with_update(stencil: bool) -> Pipeline:
    """f with an update definition (a 4-tap RDom sum), read by g pointwise or as a vertical stencil."""
    inp = Input("inp", f32, 2)
    f, g = Func("f"), Func("g")
    r = RDom([(0, 4)])
    f[x, y] = inp[x, y]
    f[x, y] += inp[x + r.x, y]
    g[x, y] = f[x, y - 1] + f[x, y + 1] if stencil else f[x, y] + 1
    return Pipeline([g], {g: (64, 64)})


def first_state(sp: SearchSpace, tiles=None):
    """The state after g (the output) is placed and given its parallel tiling (`tiles`, or the first)."""
    s = sp.initial()
    for s1 in sp.expand(s):
        for s2 in sp.expand(s1):
            if tiles is None or s2.decisions[-1][1].specs[0].tiles == tiles:
                return s2
    raise AssertionError(f"no state with tiles {tiles}")


def candidates(sp: SearchSpace, s, shortcuts=True):
    return [c for c in sp.successors(s, shortcuts) if c.decision is not None]


def inline_of(sp: SearchSpace, s):
    (c,) = [c for c in candidates(sp, s) if c.decision.kind == "inline"]
    Plan.extend(s.plan, c.tree)  # legal: only the pruning rule can turn it down
    return c


# -- calculate_cost rejections ------------------------------------------------------------------


def test_recompute_limit_rejects_inlining_a_3x3_stencil_producer():
    """9 calls per point > 8 x the minimum: Halide's value (10, the paper's, would accept it)."""
    assert MAX_RECOMPUTE == 8
    sp = SearchSpace(stencil("arith"))
    s = first_state(sp)
    assert sp.realize(inline_of(sp, s)) is None
    assert any(sp.realize(c) is not None for c in candidates(sp, s))  # the rest of the space is there


@pytest.mark.parametrize("body,wrapper", [("copy", True), ("cast", True), ("arith", False), ("two", False)])
def test_is_wrapper_reads_the_op_of_tuple_keyed_histograms(body, wrapper):
    p = stencil(body)
    assert _is_wrapper(p.dag.node("f")) is wrapper
    assert not _is_wrapper(p.dag.node("g"))


def test_wrappers_are_exempt_from_the_recompute_limit():
    sp = SearchSpace(stencil("copy"))
    assert sp._wrappers == {"f"}
    s = first_state(sp)
    assert sp.realize(inline_of(sp, s)) is not None


def test_inlined_calls_limit_rejects_256_calls_per_point_even_for_wrappers():
    """A wrapper read at 4 fixed points by each of 1024 points: 1024 inlined calls per point needed."""
    inp = Input("inp", f32, 1)
    f, g = Func("f"), Func("g")
    f[x] = inp[x]
    g[x] = f[0] + f[1] + f[2] + f[3] + x
    sp = SearchSpace(Pipeline([g], {g: (1024,)}))
    assert sp._wrappers == {"f"}
    s = first_state(sp)
    c = inline_of(sp, s)
    assert sp.realize(c) is None
    feats = space_mod.schedule_features(Plan.extend(s.plan, c.tree), sp.target, c.pending, parent=s.features,
                                        parent_pending=s.pending)
    v = feats[("f", 0)]  # 4096 calls for the 4 points f must compute
    assert v[space_mod._INLINED] >= MAX_INLINED_CALLS * max(float(v[space_mod._MINIMUM]), 1.0)


# -- decision 0: what is offered --------------------------------------------------------------------


def test_must_inline_shortcut_offers_a_pointwise_chain_only_inlining():
    sp = SearchSpace(pointwise_chain())
    assert sp._must_inline == {"f"}
    s = first_state(sp)
    assert [c.decision.kind for c in candidates(sp, s)] == ["inline"]
    assert len(candidates(sp, s, shortcuts=False)) > 1  # the full space when the shortcut is off


def test_a_stencil_producer_is_not_a_must_inline():
    """Halide's pointwise: each call reads the caller's own point; f(x + 1, y) is not pointwise."""
    sp = SearchSpace(stencil("arith"))
    assert sp._must_inline == set()
    s = first_state(sp)
    assert {c.decision.kind for c in candidates(sp, s)} >= {"inline", "root", "at"}


def test_only_inlinable_funcs_are_offered_inlining():
    """A Func with an update definition is never inlined (phase 0: inline if it has one stage)."""
    sp = SearchSpace(with_update(stencil=False))
    s = first_state(sp)
    kinds = [c.decision.kind for c in candidates(sp, s, shortcuts=False)]
    assert kinds and "inline" not in kinds
    # not even attempted (the builder would refuse it: _try's None)
    assert None not in sp._place_options(s, sp.dag.node("f"), shortcuts=False)


def test_no_descent_where_the_region_does_not_shrink():
    """g tiled 64x32 then 16x1: the 16x1 tile's single-point level computes what its parent level does. The tilings
    offered depend on the cores and the SIMD width, so the target is fixed: 2 cores, AVX-512 (16 f32 lanes)."""
    from ir.target import CpuTarget

    sp = SearchSpace(stencil("arith"), CpuTarget(name="avx512-2core", cores=2, vector_bytes=64))
    s = first_state(sp, tiles=[{"x": 64, "y": 32}, {"x": 16, "y": 1}])
    chain = s.tree.find_chain("g", 0)
    assert [lvl.size for lvl in chain] == [(1, 2), (4, 32), (1, 1), (16, 1)]
    levels = {c.decision.level for c in candidates(sp, s) if c.decision.kind == "at"}
    assert levels == {0, 1}  # level 2 (the 1x1 level) computes the same 16x3 region as level 1


def two_readers() -> Pipeline:
    """f read by g (a stencil) and by h, the output, which also reads g."""
    inp = Input("inp", f32, 2)
    f, g, h = Func("f"), Func("g"), Func("h")
    f[x, y] = inp[x, y] * 2
    g[x, y] = f[x, y] + f[x + 1, y]
    h[x, y] = g[x, y - 1] + g[x, y + 1] + f[x, y]
    return Pipeline([h], {h: (64, 64)})


def placements_of_f(sp: SearchSpace, g_kind: str):
    """The candidates for f after h (the output, first tiling) and g (`g_kind`: root or at) are placed."""
    s = first_state(sp)
    for s1 in sp.expand(s):
        if s1.decisions[-1][1].kind == g_kind:
            s2 = next(iter(sp.expand(s1)))
            assert s2.decisions[-1][0] == "g" and sp.func_of(s2).name == "f"
            return s2, candidates(sp, s2)
    raise AssertionError(f"no state with g placed {g_kind}")


def test_no_compute_at_a_level_another_reader_runs_outside(monkeypatch):
    """With g at root, every level of g or h leaves a reader of f outside: nothing is offered there (Plan would
    refuse each one). With g inside h, f may go inside h's loops too."""
    sp = SearchSpace(two_readers())
    s, cands = placements_of_f(sp, "root")
    assert not [c for c in cands if c.decision.kind == "at"]
    _, at_h = placements_of_f(sp, "at")
    assert {c.decision.consumer for c in at_h if c.decision.kind == "at"} == {"h"}
    for c in at_h:
        if c.decision.store_level is None:  # (a sliding window may be refused for its own reasons)
            Plan.extend(c.parent.plan, c.tree)

    import scheduler.space as space_module

    monkeypatch.setattr(space_module, "_readers_inside", lambda plan, func, site: True)  # the rule off
    unpruned = [c for c in candidates(SearchSpace(two_readers()), s) if c.decision.kind == "at"]
    assert unpruned
    for c in unpruned:
        with pytest.raises(ScheduleError, match="reads it outside that loop"):
            Plan.extend(s.plan, c.tree)


def vector_pipeline(height: int) -> Pipeline:
    inp = Input("inp", f32, 2)
    f, g = Func("f"), Func("g")
    f[x, y] = inp[x, y] * 2
    g[x, y] = f[x, y - 1] + f[x, y + 1] + f[x - 1, y]
    return Pipeline([g], {g: (64, height)})


def test_outputs_vectorize_only_their_stride_1_dimension():
    sp = SearchSpace(vector_pipeline(64))
    assert {c.decision.specs[0].vectorize for c in candidates(sp, sp.initial())} == {"x"}  # y is 64 wide too
    s = first_state(sp)
    roots = {c.decision.specs[0].vectorize for c in candidates(sp, s) if c.decision.kind == "root"}
    assert roots == {"x", "y"}  # f is not an output


def test_vectorize_only_dimensions_at_least_a_vector_wide():
    sp = SearchSpace(vector_pipeline(4))
    assert sp.target.natural_vector_size(f32) > 6
    s = first_state(sp)
    roots = {c.decision.specs[0].vectorize for c in candidates(sp, s) if c.decision.kind == "root"}
    assert roots == {"x"}  # f's y extent is 6
    assert sp._vector_choices(sp.dag.node("f"), [64, 6]) == ["x"]  # not even attempted


def test_sliding_window_only_over_one_moving_loop():
    sp = SearchSpace(stencil("arith"))
    s = first_state(sp, tiles=[{"x": 32, "y": 32}, {"x": 32, "y": 1}])
    chain = s.tree.find_chain("g", 0)
    slides = {c.decision.level for c in candidates(sp, s) if c.decision.kind == "at"
              and c.decision.store_level is not None}
    assert slides  # some level slides ...
    for level in slides:  # ... and only along a level with a single moving loop
        assert sum(k > 1 for k in chain[level].size) == 1
    assert any(sum(k > 1 for k in chain[level].size) > 1 for level in range(len(chain) - 1))


def test_sliding_window_never_for_funcs_with_updates():
    sp = SearchSpace(with_update(stencil=True))
    s = first_state(sp, tiles=[{"x": 64, "y": 32}, {"x": 64, "y": 1}])
    at = [c for c in candidates(sp, s) if c.decision.kind == "at"]
    assert at and all(c.decision.store_level is None for c in at)


def test_own_tilings_only_for_funcs_with_producers_to_compute_inside():
    """f reads only an input: nothing could be computed inside its tiles, so none are offered."""
    sp = SearchSpace(stencil("arith"))
    assert sp._tileable == {"g"}
    s = first_state(sp)
    at = [c for c in candidates(sp, s) if c.decision.kind == "at"]
    assert at and all(c.decision.specs[0].tiles == [] for c in at)


def test_parallel_tiling_decision_only_for_root_funcs():
    sp = SearchSpace(stencil("arith"))
    s = first_state(sp)
    for child in sp.expand(s):
        kids = sp.successors(child)
        if child.decisions[-1][1].kind == "root":
            assert len(kids) > 1 and all(k.decision.specs[0].tiles for k in kids[:-1])
        else:
            assert [k.decision for k in kids] == [None]


def test_root_funcs_get_at_most_root_tilings_inner_tilings_per_parallel_tiling():
    sp = SearchSpace(stencil("arith", size=(512, 512)))
    s = sp.initial()
    s1 = sp.expand(s)[0]
    kids = sp.successors(s1)
    per_outer: dict = {}
    for k in kids:
        tiles = k.decision.specs[0].tiles
        outer = tuple(sorted(tiles[0].items())) if k.decision.specs[0].parallel else None
        per_outer[outer] = per_outer.get(outer, 0) + 1
    assert max(per_outer.values()) <= 1 + space_mod.ROOT_TILINGS
    assert len(tilings.inner_tilings([512, 256], 0, 16, limit=100)) > space_mod.ROOT_TILINGS  # the cap bites


def test_at_tilings_cap_the_own_tilings_of_a_func_computed_at_a_level():
    inp = Input("inp", f32, 2)
    e, f, g = Func("e"), Func("f"), Func("g")
    e[x, y] = inp[x, y] * 3
    f[x, y] = e[x - 1, y] + e[x + 1, y] + e[x, y + 1]
    g[x, y] = f[x, y - 1] + f[x, y + 1] + f[x + 1, y]
    sp = SearchSpace(Pipeline([g], {g: (256, 256)}))
    assert "f" in sp._tileable
    s = first_state(sp)
    per_level: dict = {}
    for c in candidates(sp, s):
        d = c.decision
        if d.kind == "at" and d.store_level is None:
            key = (d.level, d.specs[0].vectorize)
            per_level[key] = per_level.get(key, 0) + 1
    assert max(per_level.values()) == 1 + space_mod.AT_TILINGS


# -- tilings ----------------------------------------------------------------------------------------


def test_tile_sizes_that_waste_more_than_a_seventh_are_dropped():
    """100 by 64: ceil(100/64) = 2 tiles compute 128 points (28% waste): dropped; 32 (4 tiles, 128) too;
    16 (7 tiles, 112 points, 12%) kept."""
    sizes = tilings._sizes(100, 1, 1)
    assert 16 in sizes and 32 not in sizes and 64 not in sizes and sizes[-1] == 100


def test_trivial_tilings_are_skipped():
    ts = tilings.inner_tilings([4, 4], limit=100)
    assert (4, 4) not in ts and (1, 1) not in ts and ts


def test_too_many_tilings_are_coarsened_to_the_limit():
    full = tilings.inner_tilings([1024, 1024, 64], limit=10 ** 6)
    ts = tilings.inner_tilings([1024, 1024, 64])
    assert len(full) > tilings.MAX_TILINGS >= len(ts) > 0
    assert 2 not in {t[0] for t in ts}  # every other power of two dropped first


def test_vectorized_dimension_keeps_whole_vectors():
    ts = tilings.inner_tilings([64, 48], 0, 16, limit=100)
    assert ts and all(t[0] % 16 == 0 for t in ts)
    ps = tilings.parallel_tilings([48, 40], 4, 0, 16, limit=100)
    assert ps and {p.outer[0] for p in ps} <= {16, 48}


def test_parallel_task_counts_between_cores_and_16_cores():
    ts = tilings.parallel_tilings([4096, 4096], 4, limit=10 ** 6)
    assert ts and all(4 <= t.tasks <= 64 for t in ts)
    assert tilings.parallel_tilings([14], 16, limit=100) == []  # 14 tasks leave 2 of 16 cores idle


def test_parallel_tilings_stop_at_idle_core_wastage_1_2():
    """5 tasks on 4 cores: 2 rounds for 1.25 tasks' work per core (wastage 1.6): dropped; 8 tasks kept."""
    ts = tilings.parallel_tilings([5, 8], 4, limit=100)
    assert ts and all(t.idle_core_wastage <= tilings.MAX_IDLE_WASTAGE == 1.2 for t in ts)
    assert all(t.tasks != 5 for t in ts)


def test_parallel_tilings_keep_the_least_wasteful_few():
    ts = tilings.parallel_tilings([4096, 4096], 4)
    assert len(ts) == tilings.MAX_PARALLEL
    assert [t.idle_core_wastage for t in ts] == sorted(t.idle_core_wastage for t in ts)


def test_unroll_limit_is_halides_cpu_value_and_plan_enforces_it():
    assert UNROLL_LIMIT == 12
    assert tilings.unroll_extents((16, 3, 4), 0) == {1: 3, 2: 4}
    assert tilings.unroll_extents((16, 13), 0) == {}
    p = pointwise_chain()
    from ir.builder import FuncDecision, ScheduleBuilder
    from ir.loopnest import LoopNest
    from ir.target import get_target
    b = ScheduleBuilder(p, get_target("host"))
    for k, ok in ((12, True), (13, False)):
        d = FuncDecision("root", specs={0: StageSpec(tiles=[{"x": 16, "y": k}], vectorize="x", unroll={"y": k})})
        tree = b.place(LoopNest(), "g", d, frozenset())
        if ok:
            Plan(p.dag, tree, get_target("host"), complete=False)
        else:
            with pytest.raises(ScheduleError, match="exceeds 12"):
                Plan(p.dag, tree, get_target("host"), complete=False)


# -- register tiles ---------------------------------------------------------------------------------


def matmul(n: int = 256) -> Pipeline:
    """C = A B through prod, a reduction over k: prod's producers are inputs, so it is not tileable for them."""
    a, b = Input("A", f32, 2), Input("B", f32, 2)
    k = RDom((0, n), name="k")
    prod, c = Func("prod"), Func("C")
    prod[x, y] = 0.0
    prod[x, y] += a[x, k] * b[k, y]
    c[x, y] = prod[x, y]
    return Pipeline([c], {c: (n, n)})


def test_register_tiles_are_one_vector_by_a_few_unrolled_points_of_one_other_dimension():
    ts = tilings.register_tilings([512, 256], 0, 8, vectors=1)
    assert ts == [(8, 4), (8, 8), (8, 12)]
    assert all(tilings.unroll_extents(t, 0) for t in ts)  # the unroll heuristic unrolls every one
    # 20 rows: 8 and 12 would compute 24 (a sixth more, over the seventh _sizes allows); 4 divides them
    assert tilings.register_tilings([16, 20], 0, 16) == [(16, 4)]
    # a dimension of at most UNROLL_LIMIT is unrolled whole (three channels); never the whole region
    assert tilings.register_tilings([64, 5, 3], 0, 16, vectors=1) == [(16, 5, 1), (16, 1, 3)]
    assert tilings.register_tilings([16, 10], 0, 16) == []
    assert tilings.register_tilings([4, 64], 0, 8) == []  # no whole vector fits
    assert tilings.register_tilings([5, 3]) == [(5, 1), (1, 3)]  # without SIMD: unrolled scalars


def test_register_tiles_several_vectors_wide_keep_at_most_16_accumulators():
    """Two or four native vectors by fewer points (matmul's expert: 4 x 8 lanes by 4 columns), marked WideTile so the
    space makes their whole extent one SIMD loop; a width that does not fit, rounds badly or passes MAX_VECTOR lanes
    is not offered, and vectors=1 is the space before."""
    ts = tilings.register_tilings([512, 256], 0, 8)
    wide = [t for t in ts if isinstance(t, tilings.WideTile)]
    assert wide == [(16, 4), (16, 8), (32, 2), (32, 4)]
    assert [t for t in ts if t not in wide] == tilings.register_tilings([512, 256], 0, 8, vectors=1)
    assert all(t[0] // 8 * math.prod(t[1:]) <= tilings.MAX_ACCUMULATORS for t in ts)
    assert tilings.register_tilings([512, 256], 0, 8, vectors=2) == [t for t in ts if t[0] <= 16]
    # 100 columns: 16 lanes round to 112 (within a seventh), 32 to 128 (not); three channels whole when 2 x 3 <= 16
    assert [t for t in tilings.register_tilings([100, 3], 0, 8) if isinstance(t, tilings.WideTile)] == [(16, 3)]
    assert [t for t in tilings.register_tilings([64, 5, 3], 0, 16) if isinstance(t, tilings.WideTile)] == \
        [(32, 5, 1), (32, 1, 3), (64, 1, 3)]  # 4 x 5 = 20 accumulators: not (64, 5, 1)
    assert all(t[0] <= 64 for t in tilings.register_tilings([4096, 64], 0, 32))  # u8 lanes: 2 x 32, not 4 x 32
    assert not any(isinstance(t, tilings.WideTile) for t in tilings.register_tilings([5, 3]))  # no SIMD, no width
    with pytest.raises(SearchError, match="register_tile_vectors=3: choose 1, 2 or 4"):
        space_mod.SpaceOptions(register_tile_vectors=3)


def test_a_wide_register_tile_is_one_simd_loop_over_its_vectors():
    """The space's spec of a WideTile vectorizes all its lanes (vector_width = its extent), a plain tile of the same
    extents only the native width."""
    from ir.target import CpuTarget

    sp = SearchSpace(matmul(64), CpuTarget(name="avx2-2core", cores=2, vector_bytes=32))
    prod = sp.dag.node("prod")
    x, y = prod.dims
    wide = sp._spec(prod, x, [tilings.WideTile((32, 4))], parallel=False)
    plain = sp._spec(prod, x, [(32, 4)], parallel=False)
    assert wide.vector_width == 32 and plain.vector_width is None
    assert wide.unroll == plain.unroll == {y: 4}


def test_register_tiles_of_two_dimensions_share_loads_both_ways():
    """conv_layer's update (x, y, output channel c, image n): one vector by 2 x 4 or 4 x 2 points of two other
    dimensions beside the one-dimensional tiles; n (5 images) takes neither 2 nor 4 without wasting over a seventh."""
    ts = tilings.register_tilings([100, 80, 24, 5], 0, 8, vectors=1)
    assert [t for t in ts if sum(k > 1 for k in t[1:]) == 2] == [(8, 2, 4, 1), (8, 4, 2, 1)]
    assert (8, 1, 1, 5) in ts and all(t[3] in (1, 5) for t in ts)
    assert all(tilings.unroll_extents(t, 0) for t in ts)  # the unroll heuristic unrolls every one
    one = tilings.register_tilings([100, 80, 24, 5], 0, 8, dims=1, vectors=1)  # the one-dimensional ones
    assert one == [t for t in ts if sum(k > 1 for k in t[1:]) == 1]
    with pytest.raises(SearchError, match="register_tile_dims=3: choose 1 or 2"):
        space_mod.SpaceOptions(register_tile_dims=3)


def _own_tiles(sp: SearchSpace, func: str, s) -> set:
    """The innermost own tiles `func` is offered from state `s`: at its placements, and at root in the
    parallel-tiling decision that follows."""
    out = set()
    for c in candidates(sp, s):
        if c.func != func:
            continue
        if c.decision.specs[0].tiles:
            out.add(tuple(c.decision.specs[0].tiles[-1].values()))
        if c.decision.kind == "root":
            child = sp.realize(c)
            for k in sp.successors(child) if child is not None else []:
                if k.decision is not None and len(k.decision.specs[0].tiles) > 1:
                    out.add(tuple(k.decision.specs[0].tiles[-1].values()))
    return out


def test_reductions_are_offered_register_tiles_and_only_they():
    """prod (a sum over k) is offered register tiles at root and at C's levels; in the space without them it had
    no tiling of its own at all, since its producers are inputs. C, not a reduction, is offered what it was before."""
    from ir.target import CpuTarget

    target = CpuTarget(name="avx2-2core", cores=2, vector_bytes=32)  # 8 f32 lanes
    p = matmul()
    on = SearchSpace(p, target)
    off = SearchSpace(p, target, space_mod.SpaceOptions(register_tiles=False))
    assert on._reductions == {"prod"} and off._reductions == set()
    assert "prod" not in on._tileable
    assert {(8, 4), (8, 8), (8, 12)} <= _own_tiles(on, "prod", first_state(on))
    assert not _own_tiles(off, "prod", first_state(off))
    assert _own_tiles(on, "C", on.initial()) == _own_tiles(off, "C", off.initial())  # not a reduction: as before


def fused_through_a_reader() -> Pipeline:
    """f read by g as a horizontal stencil, g read pointwise by h (the output), g computed in h's tiles."""
    inp = Input("inp", f32, 2)
    f, g, h = Func("f"), Func("g"), Func("h")
    f[x, y] = inp[x, y] * 2
    g[x, y] = f[x - 1, y] + f[x + 1, y]
    h[x, y] = g[x, y] * 3
    return Pipeline([h], {h: (64, 64)})


def _f_after_g_inside_h(sp: SearchSpace):
    s = first_state(sp, tiles=None)
    for c in candidates(sp, s):
        if c.func == "g" and c.decision.kind == "at" and c.decision.level == 0 and not c.decision.specs[0].tiles:
            s = sp.realize(c)
            while sp.func_of(s).name == "g":  # g's second decision: none, as it is not at root
                s = next(iter(sp.expand(s)))
            return s
    raise AssertionError("g is not offered h's level 0 untiled")


def test_enclosing_levels_offer_a_level_of_a_func_that_is_not_a_reader():
    """adams2019's compute_in_tiles: f may be computed in h's tiles, around g (its only reader), though h does not
    read f. Each such placement is legal and computes f over h's tile plus g's halo; the space without the option
    (SpaceOptions(enclosing_levels=False)) offers f only g's own levels, root or inlining."""
    on = SearchSpace(fused_through_a_reader())
    s = _f_after_g_inside_h(on)
    at = [c for c in candidates(on, s) if c.func == "f" and c.decision.kind == "at"]
    assert {c.decision.consumer for c in at} == {"g", "h"}
    in_h = [c for c in at if c.decision.consumer == "h"]
    assert {c.decision.level for c in in_h} == {0}
    for c in in_h:
        plan = Plan.extend(s.plan, c.tree)
        assert plan.func("f").site is plan.func("g").site  # beside g, in h's tile
        g_ext = plan.func("g").extents
        assert plan.func("f").extents == [g_ext[0] + 2, g_ext[1]]  # g's tile and its halo along x
    off = SearchSpace(fused_through_a_reader(), options=space_mod.SpaceOptions(enclosing_levels=False))
    s_off = _f_after_g_inside_h(off)
    assert {c.decision.consumer for c in candidates(off, s_off) if c.func == "f" and c.decision.kind == "at"} == {"g"}
