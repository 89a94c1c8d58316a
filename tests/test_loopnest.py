"""LoopNest: JSON, structural hashes, printing, the regions the plan derives, and why invalid trees are rejected."""

from __future__ import annotations

import json

import pytest

from ir import Func, Input, LoopKind, LoopNest, Pipeline, RDom, ScheduleError, Var, cast, clamp, f32, i32, u8
from ir.builder import ScheduleBuilder, StageSpec, annotate_inlined, naive_schedule, simple_schedule
from ir.plan import Plan
from ir.printing import to_halide_schedule
from ir.sampling import random_loopnest
from ir.symbolic import Lin

from .fuzz_pipelines import random_test_pipeline

x, y = Var("x"), Var("y")


def three_stage(size=(64, 32)):
    """h -> g -> f, each a 3-tap stencil of the previous (the running example of adams2019 §3)."""
    inp = Input("inp", f32, 2)
    h, g, f = Func("h"), Func("g"), Func("f")
    h[x, y] = inp[x, y] * 2
    g[x, y] = h[x - 1, y] + h[x + 1, y]
    f[x, y] = g[x, y - 1] + g[x, y + 1]
    return Pipeline([f], {f: size})


def tiled(p, tx=16, ty=8, g_level=0, h="inline"):
    s = ScheduleBuilder(p)
    s.root("f", tiles=[{"x": tx, "y": ty}], vectorize="x", vector_width=8, parallel=True)
    s.compute_at("g", "f", level=g_level, vectorize="x", vector_width=8)
    if h == "inline":
        s.inline("h")
    else:
        s.compute_at("h", "g", level=0)
    return s.build()


# -- identity ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_json_round_trip_is_exact(seed):
    p = random_test_pipeline(seed)
    ln = random_loopnest(p, seed)
    again = LoopNest.loads(ln.dumps())
    assert again == ln and again.fingerprint == ln.fingerprint
    assert LoopNest.from_json(json.loads(json.dumps(ln.to_json()))) == ln
    Plan(p.dag, again)


def test_malformed_json_is_a_schedule_error():
    with pytest.raises(ScheduleError, match="format"):
        LoopNest.loads('{"format": 99, "root": {}}')
    with pytest.raises(ScheduleError, match="malformed"):
        LoopNest.from_json({"children": [{"func": "f", "size": ["a"]}]})


def test_structural_hash_coarse_to_fine():
    p = three_stage((128, 64))
    a, b = tiled(p, tx=16, ty=8), tiled(p, tx=32, ty=8)
    c = tiled(p, h="compute")
    assert a.structural_hash(0) == b.structural_hash(0)  # same Funcs at the same levels
    assert a.structural_hash(2) != b.structural_hash(2)  # different tile sizes
    assert a.structural_hash(2) == c.structural_hash(2)  # h sits two levels below what depth 2 sees
    assert a.structural_hash(4) != c.structural_hash(4)  # h computed inside g instead of inlined
    assert a.structural_hash(5) == LoopNest.loads(a.dumps()).structural_hash(5)


def test_structural_hash_remembered_per_node_agrees_with_a_fresh_tree():
    """Each node remembers its hash per depth, and new trees share those nodes: a tree hashed after its subtrees
    were hashed at other depths, or sharing them with another tree, hashes as the same tree built afresh does."""
    p = three_stage((128, 64))
    a, b, c = tiled(p, tx=16, ty=8), tiled(p, tx=32, ty=8), tiled(p, h="compute")
    depths = range(-1, 7)
    for t in (a, b, c):  # warm the memos deepest first, so shallower depths meet children remembered at others
        warm = [t.structural_hash(d) for d in reversed(depths)][::-1]
        fresh = LoopNest.loads(t.dumps())
        assert warm == [fresh.structural_hash(d) for d in depths] == [t.structural_hash(d) for d in depths]
    shared = a.with_children(a.children)  # a new root over a's (already hashed) subtrees
    assert shared is not a and [shared.structural_hash(d) for d in depths] == [a.structural_hash(d) for d in depths]
    other = a.with_children(b.children)  # a's root over b's tiles
    assert other.structural_hash(0) == a.structural_hash(0) and other.structural_hash(2) == b.structural_hash(2)
    assert other.structural_hash(2) != a.structural_hash(2) and c.structural_hash(4) != a.structural_hash(4)
    assert a == LoopNest.loads(a.dumps())  # the memo is not part of the value


@pytest.mark.parametrize("seed", range(6))
def test_stages_within_are_a_walks_and_remembered_per_node(seed):
    """stages_within is the (func, stage) of every level at and below a node, as a walk of its subtree finds them;
    remembered on the node, so a new root over old subtrees reuses theirs; not part of the node's value."""
    p = random_test_pipeline(seed)
    t = random_loopnest(p, seed=seed)
    for n, _ in t.nodes():
        walked = {(m.func, m.stage) for m, _ in n.nodes() if m.func is not None}
        assert n.stages_within() == walked and n.stages_within() is n.stages_within()
    computed = {m.func for m, _ in t.nodes()}
    assert t.stages_within() == {(s.func, s.index) for node in p.dag.nodes if node.name in computed
                                 for s in node.stages}  # every stage of a computed Func is somewhere in the tree
    again = t.with_children(t.children)
    assert again.stages_within() == t.stages_within()
    assert all(a.stages_within() is b.stages_within() for a, b in zip(again.children, t.children))
    assert t == LoopNest.loads(t.dumps())


def test_printing_reads_like_the_paper():
    p = three_stage()
    text = tiled(p).to_str(p)
    assert "parallel for f.y f.x in [4 x 4]:" in text  # outermost first
    assert "allocate g[16 x 10]" in text
    assert "simd for g.x" in text and "simd for f.x" in text
    assert "inlining h x2" in text
    directives = to_halide_schedule(tiled(p), p)
    assert "h.compute_inline();" in directives
    # f's outer tile loops fuse into one parallel loop (as the Halide backend runs them), and g sits in it
    assert "fuse(x_0, y_0, par_0).parallel(par_0);" in directives and "g.compute_at(f, par_0);" in directives
    assert "vectorize(x_2)" in directives


def _undefined_vars(directives: str, pipeline) -> list[str]:
    """Vars a directive uses before a split or fuse (or the Func's definition) makes them."""
    import re

    made: dict[str, set[str]] = {}
    for node in pipeline.dag.nodes:
        for st in node.stages:
            made[node.name if st.index == 0 else f"{node.name}.update({st.index - 1})"] = {l.name for l in st.loop}
    bad = []
    for line in directives.splitlines():
        m = re.match(r"(\w+(?:\.update\(\d+\))?)\.(.*);$", line)
        stage, calls = m.group(1), re.findall(r"(\w+)\(([^()]*)\)", m.group(2))
        for verb, args in calls:
            names = [a.strip() for a in args.split(",")]
            if verb in ("compute_at", "store_at"):  # a loop of any of the Func's stages
                if not any(names[1] in vs for st, vs in made.items() if st.split(".")[0] == names[0]):
                    bad.append(f"{line}: {names[1]}")
            elif verb in ("split", "fuse", "vectorize", "unroll", "parallel", "reorder"):
                used = names[:2] if verb == "fuse" else names if verb == "reorder" else names[:1]
                bad += [f"{line}: {v}" for v in used if v not in made[stage]]
                if verb == "split":
                    made[stage] |= {names[1], names[2]}
                elif verb == "fuse":
                    made[stage].add(names[2])
    return bad


def test_halide_directives_only_use_vars_they_made():
    """Every app's expert schedule at small size, and a few searched ones: a Var a directive names exists
    (a split that skips a level keeps the last name; printing x_3 for a loop never split there is wrong)."""
    from generator.apps import APPS
    from ir.target import get_target
    from scheduler import autoschedule

    target = get_target("host")
    checked = 0
    for app in APPS.values():
        p = app.build("small")
        loopnests = [app.schedule(p, target)] if app.schedule is not None else []
        if app.name in ("unsharp", "harris", "blur"):
            loopnests.append(autoschedule(p, model="analytical", algorithm="greedy").loopnest)
        for ln in loopnests:
            text = to_halide_schedule(ln, p)
            assert _undefined_vars(text, p) == [], (app.name, text)
            checked += 1
    assert checked >= 10


# -- regions -------------------------------------------------------------------------------------


def test_regions_at_each_site_are_exact():
    p = three_stage((64, 32))
    plan = Plan(p.dag, tiled(p, tx=16, ty=8, h="compute"))
    g, h = plan.func("g"), plan.func("h")
    assert g.extents == [16, 10] and g.storage_extents == [16, 10]  # 8 rows of f need 10 of g
    assert h.extents == [10, 1]  # h per iteration of g's outer level: one row, 8 columns + 2
    env = {"f_s0_x_0": 2, "f_s0_y_0": 1}
    assert [(lo.evaluate(env), hi.evaluate(env)) for lo, hi in g.region] == [(32, 47), (7, 16)]
    assert g.strides == (1, 16)


def test_tails_shift_inwards_for_pure_stages():
    p = three_stage((37, 20))
    s = ScheduleBuilder(p)
    s.root("f", tiles=[{"x": 8, "y": 20}])
    ln = s.build()
    plan = Plan(p.dag, ln)
    loop = plan.level(ln.children[-1]).loops[0]
    assert loop.count == 5 and loop.tile == 8 and loop.tail == "shift"
    starts = [loop.base.evaluate({"f_s0_x_0": i}) for i in range(5)]
    assert starts == [0, 8, 16, 24, 29]  # the last tile moves inwards to end at 36


def test_update_stages_guard_their_tails():
    inp = Input("inp", i32, 1)
    f = Func("f")
    f[x] = 0
    r = RDom((0, 3), name="r")
    f[x] += inp[x + r]
    p = Pipeline([f], {f: (10,)})
    s = ScheduleBuilder(p)
    s.root("f", tiles=[{"x": 4}], stages={1: StageSpec(tiles=[{"x": 4}])})
    plan = Plan(p.dag, s.build())
    upd = plan.func("f").chains[1].levels[0].loops[0]
    assert upd.tail == "guard"
    assert upd.ext.evaluate({"f_s1_x_0": 2}) == 2  # the last of 3 tiles covers 8..9


def test_data_dependent_regions_are_bounded_statically():
    inp = Input("inp", u8, 2)
    lut, out = Func("lut"), Func("out")
    lut[x] = cast(i32, x) * 3
    out[x, y] = lut[clamp(cast(i32, inp[x, y]) / 4, 0, 63)]
    p = Pipeline([out], {out: (32, 16)})
    s = ScheduleBuilder(p)
    s.root("out", tiles=[{"x": 8, "y": 4}])
    s.compute_at("lut", "out", level=0)
    plan = Plan(p.dag, s.build())
    assert plan.func("lut").extents == [64]  # the clamp's whole range, wherever the tile is


# -- rejection ------------------------------------------------------------------------------------


def naive(p):
    return naive_schedule(p)


def invalid_trees(p):
    ln = naive(p)
    f_head = ln.children[-1]
    g_head = ln.children[1]
    yield "order", ln.replace(children=(ln.children[0], f_head, g_head)), "g must be computed before f"
    yield "size", ln.replace(children=(ln.children[0], g_head.replace(size=(3, 3)), f_head)), \
        "level 0 must run"
    yield "stored nowhere", ln.replace(store_at=("f", "h")), "g is computed but stored nowhere"
    yield "unscheduled", ln.replace(children=(g_head, f_head), store_at=("f", "g")), "leaves h unscheduled"
    yield "parallel innermost", ln.replace(children=(ln.children[0], g_head, f_head.replace(kind=LoopKind.PARALLEL))), \
        "cannot also be the innermost"
    yield "vector dim", ln.replace(children=(ln.children[0], g_head, f_head.replace(vector_dim=1))), \
        "output stored with dimension 0 innermost"
    yield "bad func", ln.replace(children=ln.children + (LoopNest("nope", 0, (1,), innermost=True),)), \
        "nope, which is not a Func"
    yield "inline output", ln.replace(children=(ln.children[0], g_head.replace(inlined=(("f", 1),))),
                                      store_at=("g", "h")), "never inlined"
    h_inlined = annotate_inlined(ln.replace(children=(g_head, f_head), store_at=("f", "g")), p.dag, {"h"})
    assert h_inlined.children[0].inlined == (("h", 2),)
    yield "stale inlined", h_inlined.replace(children=(h_inlined.children[0].replace(inlined=(("h", 3),)),
                                                       f_head)), "lists inlined"


@pytest.mark.parametrize("case", range(9))
def test_invalid_trees_are_rejected_with_a_reason(case):
    p = three_stage()
    name, tree, reason = list(invalid_trees(p))[case]
    with pytest.raises(ScheduleError) as e:
        Plan(p.dag, tree)
    assert reason in str(e.value), (name, str(e.value))
    assert "\n" not in str(e.value)


def test_consumer_outside_the_compute_level_is_rejected():
    inp = Input("inp", f32, 2)
    g, a, b = Func("g"), Func("a"), Func("b")
    g[x, y] = inp[x, y]
    a[x, y] = g[x, y] + 1
    b[x, y] = a[x, y] + g[x, y]
    p = Pipeline([b], {b: (16, 16)})
    s = ScheduleBuilder(p)
    s.root("b", tiles=[{"x": 8}])
    s.root("a", tiles=[{"x": 8}])
    s.compute_at("g", "a", level=0)
    with pytest.raises(ScheduleError, match="reads it outside"):
        s.build()


def test_builder_errors_name_the_problem():
    p = three_stage()
    with pytest.raises(ScheduleError, match="vector width 128 exceeds"):
        ScheduleBuilder(p).root("f", vectorize="x", vector_width=128).build()
    with pytest.raises(ScheduleError, match="only Funcs computed at root run in parallel"):
        ScheduleBuilder(p).root("f", tiles=[{"x": 8}]).compute_at("g", "f", 0, tiles=[{"x": 4}],
                                                                    parallel=True).build()
    with pytest.raises(ScheduleError, match="cannot be inlined"):
        ScheduleBuilder(p).inline("f").build()
    with pytest.raises(ScheduleError, match="is not a Func"):
        ScheduleBuilder(p).root("zz")
    with pytest.raises(ScheduleError, match="a sliding window needs a single serial loop"):
        s = ScheduleBuilder(p)
        s.root("f", tiles=[{"x": 16, "y": 8}, {"x": 8, "y": 4}])
        s.compute_at("g", "f", level=1, store_level=-1)
        s.build()


def test_rvars_are_iterated_by_the_innermost_level_only():
    inp = Input("inp", f32, 1)
    f = Func("f")
    f[x] = 0.0
    r = RDom((0, 4), name="r")
    f[x] += inp[x + r]
    p = Pipeline([f], {f: (8,)})
    ln = naive(p)
    head = ln.children[1]
    bad = head.replace(innermost=False, size=(1, 2), children=(head.replace(size=(8, 2)),))
    with pytest.raises(ScheduleError, match="RVar r_x is iterated only by the innermost level"):
        Plan(p.dag, ln.replace(children=(ln.children[0], bad)))


def test_simple_schedule_is_parallel_and_vectorized():
    p = three_stage((256, 64))
    plan = Plan(p.dag, simple_schedule(p, "host"))
    for f in ("f", "g", "h"):
        fp = plan.func(f)
        assert fp.site.is_root and fp.chains[0].levels[0].node.parallel
        assert fp.chains[0].levels[-1].node.vectorized_loop == 0
    assert isinstance(plan.func("g").region[0][0], Lin)


def test_validate_returns_the_plan_and_accepts_partial_schedules():
    p = three_stage()
    plan = naive(p).validate(p, "host")
    assert plan.func("g").extents == [64, 34]
    partial = naive(p).replace(children=naive(p).children[1:], store_at=("f", "g"))
    with pytest.raises(ScheduleError, match="leaves h unscheduled"):
        partial.validate(p)
    assert partial.validate(p, complete=False).func("g").site.is_root


# -- loop kinds (format 2) and format-1 JSON ------------------------------------------------------------

V1 = json.load(open(__import__("pathlib").Path(__file__).parent / "fixtures" / "loopnest_v1.json"))


@pytest.mark.parametrize("name", sorted(V1))
def test_version_1_json_still_loads(name):
    """Every dataset written before loop kinds holds format-1 JSON (booleans parallel / unrolled)."""
    from generator.apps import get_app
    from ir.target import get_target

    entry = V1[name]
    assert json.loads(entry["json"])["format"] == 1
    ln = LoopNest.loads(entry["json"])
    kinds = ln.kinds()
    assert kinds <= {LoopKind.SERIAL, LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED}
    v1 = entry["json"]
    assert (LoopKind.PARALLEL in kinds) == ('"parallel":true' in v1)
    assert (LoopKind.UNROLLED in kinds) == ('"unrolled":true' in v1)
    assert (LoopKind.VECTORIZED in kinds) or '"vectorized_loop"' not in v1 or LoopKind.UNROLLED in kinds
    v2 = ln.dumps()
    assert json.loads(v2)["format"] == 2 and '"parallel":true' not in v2 and LoopNest.loads(v2) == ln
    assert ln.fingerprint == entry["fingerprint"]  # dataset ids stay valid
    assert ln.to_v1_json() == json.loads(v1)["root"]
    app_name, how = name.split("/")
    app = get_app(app_name)
    p = app.build("small")
    tgt = get_target("avx2-8core")
    Plan(p.dag, ln, tgt)  # a valid schedule of its pipeline
    if how == "expert":  # the same schedule the builder makes today, kinds and all
        assert app.schedule(p, tgt) == ln


def test_loop_kinds_replace_the_booleans_and_are_normalized():
    ln = LoopNest("f", 0, (8,), innermost=True, vectorized_loop=0, vector_dim=0)
    assert ln.kind is LoopKind.VECTORIZED and not ln.parallel and not ln.unrolled
    assert LoopNest("f", 0, (8,), innermost=True, kind=LoopKind.VECTORIZED).kind is LoopKind.SERIAL
    un = LoopNest("f", 0, (8, 4), innermost=True, kind="unrolled", vectorized_loop=0, vector_dim=0)
    assert un.kind is LoopKind.UNROLLED and un.unrolled  # unrolled around a SIMD loop
    assert LoopNest("f", 0, (4,), kind=LoopKind.PARALLEL).parallel
    with pytest.raises(ValueError):
        LoopNest("f", 0, (4,), kind="sideways")
    with pytest.raises(ScheduleError, match="malformed LoopNest JSON"):
        LoopNest.loads(json.dumps({"format": 2, "root": {"children": [{"func": "f", "size": [1], "kind": "x"}]}}))
    with pytest.raises(ScheduleError, match="format 7 is not one this schedlab reads"):
        LoopNest.loads(json.dumps({"format": 7, "root": {}}))


def test_structural_hash_and_printing_include_the_kind():
    p = blur_pipeline(64)
    a = ScheduleBuilder(p).root("by", tiles=[{"x": 8, "y": 8}], parallel=True).inline("bx").build()
    b = ScheduleBuilder(p).root("by", tiles=[{"x": 8, "y": 8}]).inline("bx").build()
    assert a.children[-1].kind is LoopKind.PARALLEL and b.children[-1].kind is LoopKind.SERIAL
    assert a.structural_hash(1) != b.structural_hash(1)
    assert "parallel for" in a.to_str(p) and "parallel for" not in b.to_str(p)


def _gpu(tree: LoopNest, kinds: dict) -> LoopNest:
    """`tree` with the levels of each (func, depth in its chain) given a GPU loop kind."""
    def walk(n, depth):
        kids = tuple(walk(c, depth + 1 if (c.func, c.stage) == (n.func, n.stage) else 0) for c in n.children)
        return n.replace(children=kids, kind=kinds.get((n.func, depth), n.kind))
    return walk(tree, -1)


def blur_pipeline(size=512):
    x, y = Var("x"), Var("y")
    inp = Input("inp", f32, 2)
    bx, by = Func("bx"), Func("by")
    bx[x, y] = inp[x - 1, y] + inp[x, y] + inp[x + 1, y]
    by[x, y] = bx[x, y - 1] + bx[x, y] + bx[x, y + 1]
    return Pipeline([by], {by: (size, size)})


def test_compute_at_a_stage_that_is_not_computed_is_a_clear_error():
    from ir.builder import FuncDecision

    p = blur_pipeline(64)
    b = ScheduleBuilder(p)
    at_by = FuncDecision("at", "by", 0, 0, specs={0: StageSpec()})
    with pytest.raises(ScheduleError, match=r"^bx: cannot compute at by.s0, which is not computed \(yet\); "
                                            "compute_at needs a consumer that is computed, not inlined$"):
        b.place(LoopNest(), "bx", at_by, frozenset())  # by is not placed yet
    tree = b.place(LoopNest(), "by", FuncDecision("root", specs={0: StageSpec(tiles=[{"x": 8, "y": 8}])}),
                   frozenset())
    assert b.place(tree, "bx", at_by, frozenset()).find_chain("bx")[0].func == "bx"
    with pytest.raises(ScheduleError, match=r"^bx: cannot compute at by.s1, which is not computed"):
        b.place(tree, "bx", FuncDecision("at", "by", 1, 0, specs={0: StageSpec()}), frozenset())  # by has no s1


def test_plan_rejects_loop_kinds_the_target_does_not_have():
    from ir.target import get_target

    p = blur_pipeline()
    cpu = ScheduleBuilder(p).root("by", tiles=[{"x": 32, "y": 8}], parallel=True).build()
    Plan(p.dag, cpu, get_target("avx2-8core"))
    with pytest.raises(ScheduleError, match="by.s0: parallel loops are not legal on h100, a cuda target"):
        Plan(p.dag, cpu, get_target("h100"))
    gpu = _gpu(ScheduleBuilder(p).root("by", tiles=[{"x": 32, "y": 8}]).build(),
               {("by", 0): LoopKind.BLOCK, ("by", 1): LoopKind.THREAD})
    Plan(p.dag, gpu, get_target("h100"))
    assert gpu.to_v1_json() is None and gpu.fingerprint != cpu.fingerprint  # hashed as format 2
    with pytest.raises(ScheduleError, match="by.s0: block loops are not legal on avx2-8core, a cpu target"):
        Plan(p.dag, gpu, get_target("avx2-8core"))


def test_plan_checks_a_cuda_targets_threads_and_shared_memory():
    from ir.target import get_target

    h100 = get_target("h100")
    p = blur_pipeline()
    kinds = {("by", 0): LoopKind.BLOCK, ("by", 1): LoopKind.THREAD}
    too_many = _gpu(ScheduleBuilder(p).root("by", tiles=[{"x": 64, "y": 32}]).build(), kinds)
    with pytest.raises(ScheduleError, match="by.s0: 2048 threads per block exceed h100's max_threads_per_block 1024"):
        Plan(p.dag, too_many, h100)
    # bx computed and stored at by's block level lives in shared memory: 256 x 66 f32 = 67,584 bytes > 48 KB
    three = {("by", 0): LoopKind.BLOCK, ("by", 2): LoopKind.THREAD}
    big = _gpu(ScheduleBuilder(p).root("by", tiles=[{"x": 256, "y": 64}, {"x": 16, "y": 16}])
               .compute_at("bx", "by", 0).build(), three)
    with pytest.raises(ScheduleError, match="need 67584 bytes of shared memory per block, more than h100's "
                                            "shared_memory_per_block 49152"):
        Plan(p.dag, big, h100)
    small = _gpu(ScheduleBuilder(p).root("by", tiles=[{"x": 64, "y": 32}, {"x": 16, "y": 16}])
                 .compute_at("bx", "by", 0).build(), three)
    assert Plan(p.dag, small, h100).func("bx").allocation_points == 64 * 34


@pytest.mark.parametrize("seed", range(12))
def test_children_holding_a_reader_found_through_the_plan_equal_a_walk_of_each_subtree(seed):
    from ir.builder import _children_holding, readers

    p = random_test_pipeline(seed)
    tree = random_loopnest(p, seed)
    plan = Plan(p.dag, tree)
    inlined = plan.inlined
    checked = 0
    for site, _ in tree.nodes():
        if site.innermost:
            continue
        for node in p.dag.nodes:
            stages = readers(p.dag, node.name, inlined)
            walked = {id(c) for c in site.children if any((m.func, m.stage) in stages for m, _ in c.nodes())}
            assert _children_holding(plan, site, stages) == walked, (seed, node.name, site.func, site.stage)
            checked += bool(walked)
    assert checked > 0
