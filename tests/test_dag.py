"""FunctionDAG: order, stages, Jacobians, bounds relations, regions and op histograms."""

from collections import Counter
from fractions import Fraction

import pytest

from ir import Func, Input, Pipeline, RDom, Var, cast, clamp, f32, i32, select, sqrt, u8

x, y = Var("x"), Var("y")
Fr = Fraction


def blur():
    inp = Input("inp", f32, 2)
    bx, by = Func("blur_x"), Func("blur_y")
    bx[x, y] = (inp[x - 1, y] + inp[x, y] + inp[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return Pipeline([by], {by: (64, 48)})


def single_access(p, consumer, producer, stage=0):
    accs = [a for a in p.dag.stage(consumer, stage).accesses if a.producer == producer]
    assert len(accs) == 1
    return accs[0]


def assert_jacobian(acc, expected):
    """Exact entries: whole ones as ints (they multiply and hash in C), the others as Fractions."""
    assert acc.jacobian == expected
    for row in acc.jacobian:
        for v in row:
            assert v is None or type(v) is (int if v.denominator == 1 else Fraction)


# -- order and stages ---------------------------------------------------------------------------


def test_topological_order_chain():
    inp = Input("inp", f32, 1)
    a, b, c = Func("a"), Func("b"), Func("c")
    a[x] = inp[x]
    b[x] = a[x] * 2
    c[x] = b[x] + a[x]
    dag = Pipeline([c], {c: (4,)}).dag
    assert [n.name for n in dag.nodes] == ["c", "b", "a"]
    assert [n.is_output for n in dag.nodes] == [True, False, False]
    assert dag.node("a").consumers == ("b", "c")
    assert dag.node("c").producers == ("a", "b")
    assert dag.node("a").producers == ("inp",)


def test_topological_order_diamond_two_outputs():
    inp = Input("inp", f32, 1)
    a, b, c, o1, o2 = Func("a"), Func("b"), Func("c"), Func("o1"), Func("o2")
    a[x] = inp[x]
    b[x] = a[x] + 1
    c[x] = a[x] * 2
    o1[x] = b[x] + c[x]
    o2[x] = c[x] - 1
    names = [n.name for n in Pipeline([o1, o2], {o1: (4,), o2: (4,)}).dag.nodes]
    assert sorted(names) == ["a", "b", "c", "o1", "o2"]
    assert set(names[:2]) == {"o1", "o2"} and names[-1] == "a"
    for consumer, producer in [("o1", "b"), ("o1", "c"), ("o2", "c"), ("b", "a"), ("c", "a")]:
        assert names.index(consumer) < names.index(producer)


def test_blur_dag():
    dag = blur().dag
    assert [n.name for n in dag.nodes] == ["blur_y", "blur_x"]
    assert dag.input_regions == {"inp": ((-1, 64), (-1, 48))}
    assert dag.node("blur_y").region == ((0, 63), (0, 47))
    assert dag.node("blur_x").region == ((0, 63), (-1, 48))
    assert dag.node("blur_x").region_extent(1) == 50
    assert dag.node("blur_x").inlinable and not dag.node("blur_y").inlinable


def test_stages_and_loop_dims_with_two_updates():
    inp = Input("inp", f32, 2)
    f = Func("f")
    r = RDom((0, 3), (0, 2), name="r")
    k = RDom((0, 4), name="k")
    f[x, y] = 0.0
    f[x, y] += inp[x + r.x, y + r.y]
    f[k, y] = f[k, y] * 2.0
    node = Pipeline([f], {f: (4, 5)}).dag.node("f")
    assert [s.name for s in node.stages] == ["f.s0", "f.s1", "f.s2"]
    assert [s.is_update for s in node.stages] == [False, True, True]
    loops = [[(l.name, l.pure) for l in s.loop] for s in node.stages]
    assert loops == [[("x", True), ("y", True)],
                     [("x", True), ("y", True), ("r_x", False), ("r_y", False)],
                     [("y", True), ("k_x", False)]]
    s2 = node.stages[2]
    assert s2.loop[0].func_dim == 1 and s2.loop[1].rdom_range == (0, 3)
    assert node.stages[1].loop[3].rdom_range == (0, 1)
    assert s2.pure_loop_of_dim(0) == -1 and s2.pure_loop_of_dim(1) == 0
    assert node.update_dims == frozenset({0})
    assert not node.inlinable


# -- Jacobians ----------------------------------------------------------------------------------


def accessor(make):
    """A pipeline where `out[x, y] = make(p)` for a 2-D producer p; returns the single access to p."""
    p, out = Func("p"), Func("out")
    p[x, y] = cast(f32, x + y)
    out[x, y] = make(p)
    return single_access(Pipeline([out], {out: (8, 8)}), "out", "p")


def test_jacobian_stencil_is_identity():
    assert_jacobian(accessor(lambda p: p[x + 1, y]), ((Fr(1), Fr(0)), (Fr(0), Fr(1))))


def test_jacobian_downsample():
    assert_jacobian(accessor(lambda p: p[2 * x, y]), ((Fr(2), Fr(0)), (Fr(0), Fr(1))))


def test_jacobian_upsample():
    assert_jacobian(accessor(lambda p: p[x / 2, y]), ((Fr(1, 2), Fr(0)), (Fr(0), Fr(1))))


def test_jacobian_transpose():
    assert_jacobian(accessor(lambda p: p[y, x]), ((Fr(0), Fr(1)), (Fr(1), Fr(0))))


def test_jacobian_mixed_affine():
    assert_jacobian(accessor(lambda p: p[x - 3 * y, 2 * y + x / 4]), ((Fr(1), Fr(-3)), (Fr(1, 4), Fr(2))))


def test_jacobian_reduction_access():
    g, out = Func("g"), Func("out")
    r = RDom((0, 5))
    g[x, y] = cast(f32, x * y)
    out[x, y] = 0.0
    out[x, y] += g[x + r, y]
    p = Pipeline([out], {out: (8, 8)})
    assert single_access(p, "out", "g", stage=1).jacobian == ((Fr(1), Fr(0), Fr(1)), (Fr(0), Fr(1), Fr(0)))
    self_acc = single_access(p, "out", "out", stage=1)
    assert self_acc.kind == "self" and self_acc.jacobian == ((Fr(1), Fr(0), Fr(0)), (Fr(0), Fr(1), Fr(0)))


def test_jacobian_data_dependent_is_none():
    h = Input("h", u8, 2)
    acc = accessor(lambda p: p[cast(i32, h[x, y]), y])
    assert acc.jacobian == ((None, None), (Fr(0), Fr(1)))


def test_access_counts_and_kinds():
    inp = Input("inp", f32, 1)
    f = Func("f")
    f[x] = inp[x] * inp[x] + inp[x + 1]
    accs = Pipeline([f], {f: (4,)}).dag.stage("f", 0).accesses
    assert sorted((a.producer, a.kind, a.count) for a in accs) == [("inp", "input", 1), ("inp", "input", 2)]


# -- bounds relations ---------------------------------------------------------------------------


def one_d(make, size=32, dtype=f32):
    p, c = Func("p"), Func("c")
    p[x] = cast(dtype, x)
    make(p, c)
    return Pipeline([c], {c: (size,)})


def test_required_region_stencil():
    def make(p, c):
        c[x] = p[x - 1] + p[x] + p[x + 1]
    pl = one_d(make)
    assert pl.dag.required_region("p", "c", ((10, 19),)) == ((9, 20),)
    assert pl.dag.node("p").region == ((-1, 32),)


def test_required_region_downsample():
    def make(p, c):
        c[x] = p[2 * x] + p[2 * x + 1]
    pl = one_d(make)
    assert pl.dag.required_region("p", "c", ((0, 9),)) == ((0, 19),)
    assert pl.dag.required_region("p", "c", ((3, 5),)) == ((6, 11),)
    assert pl.dag.node("p").region == ((0, 63),)


def test_required_region_upsample():
    def make(p, c):
        c[x] = p[x / 2]
    pl = one_d(make)
    assert pl.dag.required_region("p", "c", ((0, 9),)) == ((0, 4),)
    assert pl.dag.required_region("p", "c", ((-3, 4),)) == ((-2, 2),)
    assert pl.dag.required_region("p", "c", ((1, 1),)) == ((0, 0),)
    assert pl.dag.node("p").region == ((0, 15),)


def test_required_region_transpose():
    p, c = Func("p"), Func("c")
    p[x, y] = cast(f32, x - y)
    c[x, y] = p[y, x]
    pl = Pipeline([c], {c: (10, 6)})
    assert pl.dag.required_region("p", "c", ((0, 9), (20, 24))) == ((20, 24), (0, 9))
    assert pl.dag.node("p").region == ((0, 5), (0, 9))


def test_required_region_reduction():
    def make(p, c):
        r = RDom((-1, 3))
        c[x] = 0.0
        c[x] += p[x + 2 * r]
    pl = one_d(make, size=8)
    assert pl.dag.required_region("p", "c", ((5, 8),)) == ((3, 10),)
    assert pl.dag.node("p").region == ((-2, 9),)


def test_required_region_reduction_2d_rdom_input():
    img = Input("img", f32, 2)
    c = Func("c")
    r = RDom((0, 3), (-2, 5))
    c[x, y] = 0.0
    c[x, y] += img[x + r.x, y * 2 + r.y]
    pl = Pipeline([c], {c: (4, 4)})
    assert pl.dag.required_region("img", "c", ((1, 2), (1, 3))) == ((1, 4), (0, 8))
    assert pl.dag.input_regions == {"img": ((0, 5), (-2, 8))}
    assert pl.input_regions == {"img": ((0, 6), (-2, 11))}


@pytest.mark.parametrize("t", [f32, i32, u8])
def test_required_region_data_dependent_clamped(t):
    q = Input("q", t, 1)
    p, c = Func("p"), Func("c")
    p[x] = cast(f32, x)
    c[x] = p[clamp(cast(i32, q[x]), 0, 255)]
    pl = Pipeline([c], {c: (4,)})
    assert pl.dag.required_region("p", "c", ((0, 3),)) == ((0, 255),)
    assert pl.dag.required_region("p", "c", ((100, 100),)) == ((0, 255),)
    assert pl.dag.node("p").region == ((0, 255),)
    assert pl.dag.input_regions == {"q": ((0, 3),)}


def test_required_region_of_non_consumer_raises():
    def make(p, c):
        c[x] = p[x]
    with pytest.raises(KeyError):
        one_d(make).dag.required_region("c", "p", ((0, 3),))


def test_histogram_region_covers_all_buckets():
    img = Input("img", u8, 2)
    hist, out = Func("hist"), Func("out")
    r = RDom((0, 10), (0, 7))
    hist[x] = 0
    hist[clamp(cast(i32, img[r.x, r.y]), 0, 255)] += 1
    out[x] = hist[x] * 2
    dag = Pipeline([out], {out: (16,)}).dag
    assert dag.node("out").region == ((0, 15),)
    assert dag.node("hist").region == ((0, 255),)
    assert dag.required_region("hist", "out", ((0, 15),)) == ((0, 15),)
    assert dag.input_regions == {"img": ((0, 9), (0, 6))}
    assert dag.node("hist").update_dims == frozenset({0})


# -- op histograms ------------------------------------------------------------------------------


def test_op_histogram_mixed_stage():
    inp = Input("inp", u8, 2)
    g, out = Func("g"), Func("out")
    g[x, y] = cast(f32, x)
    out[x, y] = g[x, y] * 2.0 + cast(f32, inp[x + 1, y])
    h = Pipeline([out], {out: (4, 4)}).dag.stage("out", 0).op_histogram
    assert h == Counter({
        ("Add", "Float"): 1, ("Mul", "Float"): 1, ("FuncCall", "Float"): 1, ("Const", "Float"): 1,
        ("Cast", "Float"): 1, ("ImageCall", "UInt8"): 1, ("Add", "UInt32"): 1, ("Const", "UInt32"): 1,
        ("Variable", "UInt32"): 6,  # x, y in g[...], x, y in inp[...], x, y stored
    })


def test_op_histogram_select_compare_math():
    a = Input("a", f32, 1)
    f = Func("f")
    f[x] = select(a[x] > 0.5, sqrt(a[x]), 0.0)
    h = Pipeline([f], {f: (4,)}).dag.stage("f", 0).op_histogram
    assert h == Counter({
        ("Select", "Float"): 1, ("LT", "Bool"): 1, ("ImageCall", "Float"): 2, ("Const", "Float"): 2,
        ("ExternCall", "Float"): 1, ("Variable", "UInt32"): 3,
    })


def test_op_histogram_histogram_update():
    img = Input("img", u8, 2)
    hist = Func("hist")
    r = RDom((0, 4), (0, 4))
    hist[x] = 0
    hist[clamp(cast(i32, img[r.x, r.y]), 0, 255)] += 1
    dag = Pipeline([hist], {hist: (256,)}).dag
    assert dag.stage("hist", 0).op_histogram == Counter({("Const", "UInt32"): 1, ("Variable", "UInt32"): 1})
    # the clamp appears twice: as the stored coordinate and as the argument of the self call
    assert dag.stage("hist", 1).op_histogram == Counter({
        ("Add", "UInt32"): 1, ("SelfCall", "UInt32"): 1, ("Const", "UInt32"): 5,
        ("Max", "UInt32"): 2, ("Min", "UInt32"): 2, ("Cast", "UInt32"): 2, ("ImageCall", "UInt8"): 2,
        ("Variable", "UInt32"): 4,
    })


def test_a_pickled_dag_leaves_its_analyses_behind_and_recomputes_them_alike():
    """Ray ships pipelines to every compile task: a searched DAG's memos made that ~4 MB and 0.3 s to unpickle."""
    import pickle

    import numpy as np

    from featurize import featurize
    from generator.apps import get_app
    from scheduler import autoschedule

    p = get_app("unsharp").build("small")
    ln = autoschedule(p, "host", algorithm="greedy", model="analytical").loopnest
    before = featurize(p, ln)
    assert len(p.dag._analyses) > 5  # search and featurization filled them
    q = pickle.loads(pickle.dumps(p))
    assert q.dag._analyses == {} and p.dag._analyses  # the original keeps its own
    assert len(pickle.dumps(p)) < 100_000
    after = featurize(q, ln)
    assert np.array_equal(before.schedule, after.schedule) and np.array_equal(before.pipeline, after.pipeline)
    assert q.dag.pipeline is q  # the pipeline refers back to its own DAG, unpickled as one object


def test_pickles_of_the_dict_based_dag_and_of_stages_without_env_loops_still_load():
    """Before stop 84 a FunctionDAG pickled its __dict__ and a Stage had no env_loops, and before stop 94 a Stage
    pickled its __dict__ (it has slots now): such state loads as now, and so does a pickle of today's."""
    import dataclasses
    import pickle

    from generator.apps import get_app
    from ir.dag import FunctionDAG, Stage
    from ir.symbolic import const

    p = get_app("unsharp").build("small")
    out = p.output_names[0]
    old = {"pipeline": p, "nodes": p.dag.nodes, "_by_name": {n.name: n for n in p.dag.nodes}, "inputs": p.dag.inputs,
           "_analyses": {"stale": 1}}
    d = FunctionDAG.__new__(FunctionDAG)
    d.__setstate__(old)
    assert d._analyses == {} and d.node(out) is p.dag.node(out) and out in d
    stage = p.dag.stage(out, 0)
    state = {f.name: getattr(stage, f.name) for f in dataclasses.fields(stage) if f.name != "env_loops"}
    s = Stage.__new__(Stage)
    s.__setstate__(state)
    region = tuple((const(lo), const(hi)) for lo, hi in p.dag.node(out).region)
    assert s.env_loops == stage.env_loops and s.loop_env(region) == stage.loop_env(region)
    again = pickle.loads(pickle.dumps(stage))
    assert again.env_loops == stage.env_loops and again.loop_env(region) == stage.loop_env(region)
    assert (again.func, again.index, again.op_histogram) == (stage.func, stage.index, stage.op_histogram)


# -- derivative's memo of Var names (one walk per stage's expressions) ----------------------------


def _walked_names(e):
    from ir.expr import RVar, walk
    from ir.expr import Var as V

    return frozenset(n.name for n in walk(e) if isinstance(n, (V, RVar)))


@pytest.mark.parametrize("spec", ["harris", "camera_pipe", "local_laplacian", "lens_blur", "bilateral_grid",
                                  "random:0", "random:3"])
def test_var_names_remembered_per_node_are_a_walks_and_give_the_same_derivatives(spec):
    """_names_in's memo (filled once for all of a stage's expressions) holds, for every node, the names a walk of
    that node finds; and derivatives asked through one shared memo equal those asked each with a fresh one, for
    every argument of every access and stored coordinate against every loop of the stage."""
    from ir.dag import _names_in, derivative
    from ir.expr import walk

    from .search_walk import pipeline_from_spec

    dag = pipeline_from_spec(spec).dag
    checked = 0
    for node in dag.nodes:
        for st in node.stages:
            loops = [l.name for l in st.loop]
            shared: dict = {}
            for e in [a for acc in st.accesses for a in acc.args] + list(st.lhs):
                for v in loops:
                    assert derivative(e, v, shared) == derivative(e, v)
                for n in walk(e):
                    assert _names_in(n, shared) == _walked_names(n)
                    checked += 1
    assert checked > 50


def test_var_names_of_an_expression_deeper_than_the_recursion_limit():
    """_names_in walks with a stack: a sum of 3,000 terms (a depth Python's recursion would not reach)."""
    import sys

    from ir.dag import _names_in

    z = Var("z")
    e = x
    for k in range(3000):
        e = e + (y if k == 1500 else 1)
    e = e + z
    assert 3000 > sys.getrecursionlimit() / 2
    assert _names_in(e, {}) == frozenset({"x", "y", "z"})


# -- Relation.apply's memo, keyed by the boxes of the loops a relation depends on ------------------


def _check_relations(dag) -> tuple[int, int]:
    """For every relation of every stage: loop_vars holds every loop variable its intervals read (an AffineDim's
    coefficients, a fallback dimension's Vars and RVars) and nothing it does not read; apply (memoized by those boxes
    alone) equals a fresh evaluation, for the stage's own boxes and for boxes that differ in a loop the relation does
    not read (the memo's hit then). Returns (relations, moved boxes) checked."""
    import pickle

    from ir.expr import RVar, walk
    from ir.expr import Var as V
    from ir.symbolic import Lin, Sym, const

    def names(e):
        return {n.name for n in walk(e) if isinstance(n, (V, RVar))}

    checked = moved_boxes = 0
    for node in dag.nodes:
        for st in node.stages:
            env = st.loop_env(tuple((const(lo), const(hi)) for lo, hi in node.region))
            for rel in st.relations.values():
                used: set = set()
                for d, dim in enumerate(rel.dims):
                    used |= {v for v, _ in dim.coefs} if dim is not None else \
                        set().union(*[names(args[d]) for args in rel.args])
                assert set(rel.loop_vars) == used and used <= set(env)
                assert rel.apply(env) == rel._apply(env)
                for name in env:
                    if name not in rel.loop_vars:
                        s = Lin(((Sym(f"{name}_moved", 0, 7), 1),), 3)
                        moved = {**env, name: (s, s + 5)}
                        assert rel.apply(moved) == rel._apply(moved) == rel.apply(env)
                        moved_boxes += 1
                assert pickle.loads(pickle.dumps(rel)).loop_vars == rel.loop_vars
                checked += 1
    return checked, moved_boxes


@pytest.mark.parametrize("spec", ["harris", "camera_pipe", "local_laplacian", "interpolate", "random:0", "random:5"])
def test_a_relations_loop_vars_are_what_it_reads_and_its_memo_gives_fresh_intervals(spec):
    from .search_walk import pipeline_from_spec

    checked, _ = _check_relations(pipeline_from_spec(spec).dag)
    assert checked > 10


def test_a_relation_of_fewer_loops_than_its_stage_ignores_the_other_loops_boxes():
    """g reads inp along x only and f along both through a clamp; h reads g through a data-dependent index (a
    fallback dimension) and inp along y."""
    inp = Input("inp", u8, 1)
    f, g, h = Func("f"), Func("g"), Func("h")
    f[x, y] = cast(f32, x + y)
    g[x, y] = f[x, clamp(y, 0, 9)] + cast(f32, inp[x])
    h[x, y] = g[x, cast(i32, inp[y])]
    p = Pipeline([h], {h: (16, 12)})
    assert p.dag.stage("g", 0).relations["inp"].loop_vars == ("x",)
    assert set(p.dag.stage("g", 0).relations["f"].loop_vars) == {"x", "y"}
    fallback = p.dag.stage("h", 0).relations["g"]
    assert fallback.dims[1] is None and set(fallback.loop_vars) == {"x", "y"}
    assert p.dag.stage("h", 0).relations["inp"].loop_vars == ("y",)
    checked, moved_boxes = _check_relations(p.dag)
    assert checked == 4 and moved_boxes == 2


def test_a_relation_pickled_before_loop_vars_existed_loads_with_them():
    """A Relation pickled as its __dict__ without loop_vars (before stop 94 it had no slots) loads with them; so
    does a pickle of today's."""
    import dataclasses
    import pickle

    from generator.apps import get_app
    from ir.relation import Relation

    dag = get_app("harris").build("small").dag
    rel = next(r for n in dag.nodes for s in n.stages for r in s.relations.values())
    state = {f.name: getattr(rel, f.name) for f in dataclasses.fields(rel) if f.name != "loop_vars"}
    old = Relation.__new__(Relation)
    old.__setstate__(state)
    assert old.loop_vars == rel.loop_vars and old == rel
    again = pickle.loads(pickle.dumps(rel))
    assert again.loop_vars == rel.loop_vars and again.dims == rel.dims and len(again.args) == len(rel.args)
