"""Plan.extend gives the plan a fresh Plan gives, down to its structure (issue 15: search at the speed of C++).

test_search_equivalence compares features and extents, test_featurize the levels' loops; these compare what the
incremental derivation takes from the parent plan rather than derives: the order of the Funcs, the tree's parent
links and keys, which Level every node has and whose chain it is, and the parent's FuncPlans it keeps whole.
"""

from __future__ import annotations

import pytest

from ir.errors import ScheduleError
from ir.plan import Plan
from scheduler.space import make_space

from .search_walk import pipeline_from_spec, sampled_search_children

TARGET = "i9-7960x"


def _structure(plan: Plan) -> tuple:
    """What a plan says about its tree, with nodes by their keys and regions and loops by their forms."""
    key = plan.keys
    funcs = []
    for name, fp in plan.funcs.items():
        if fp.inlined:
            funcs.append((name, "inlined"))
            continue
        chains = [(ch.func, ch.stage.index, key[id(ch.head)], key[id(ch.site)], repr(ch.bounds), ch.extents, ch.exact,
                   [(key[id(lvl.node)], lvl.depth, lvl.order, repr(lvl.loops)) for lvl in ch.levels])
                  for ch in fp.chains]
        sliding = None if fp.sliding is None else (fp.sliding.dim, key[id(fp.sliding.level.node)],
                                                   repr(fp.sliding.loop))
        funcs.append((name, key[id(fp.site)], key[id(fp.store)], repr(fp.region), fp.extents, repr(fp.storage),
                      fp.storage_extents, fp.layout, fp.strides, sliding, chains))
    parents = sorted((key[i], None if p is None else key[id(p)]) for i, p in plan.parent.items())
    by_key = sorted((k, key[id(n)]) for k, n in plan.by_key.items())
    return funcs, parents, by_key, sorted(key[i] for i in plan.levels)


def _consistent(plan: Plan) -> None:
    """Every node of the tree is indexed, every level is its chain's, every chain its FuncPlan's."""
    nodes = {id(n) for n, _ in plan.root.nodes()}
    assert set(plan.parent) == nodes and set(plan.keys) == nodes
    assert all(plan.by_key[plan.keys[i]] is n for n, _ in plan.root.nodes() for i in [id(n)])
    for name, fp in plan.funcs.items():
        for ch in fp.chains:
            assert ch.site is fp.site and plan.parent[id(ch.head)] is ch.site
            for lvl in ch.levels:
                assert lvl.chain is ch and plan.levels[id(lvl.node)] is lvl
        if fp.sliding is not None:
            assert plan.levels[id(fp.sliding.level.node)] is fp.sliding.level


@pytest.mark.parametrize("pipeline", ["harris", "camera_pipe", "random:2"])
def test_extended_plans_have_the_structure_of_fresh_ones(pipeline):
    p = pipeline_from_spec(pipeline)
    space = make_space(p, TARGET)
    checked = whole = 0
    for c in sampled_search_children(space, pipeline, 2):
        if c.plan is c.parent.plan:  # a decision that left the tree alone
            continue
        fresh = Plan(p.dag, c.tree, space.target, complete=False)
        assert _structure(c.plan) == _structure(fresh), (pipeline, c.num_decisions)
        _consistent(c.plan)
        whole += sum(fp is c.parent.plan.funcs.get(f) for f, fp in c.plan.funcs.items() if not fp.inlined)
        checked += 1
    assert checked > 50 and whole > 0, (checked, whole)


@pytest.mark.parametrize("pipeline,per_step", [("lens_blur", 2), ("stencil_chain", 4), ("random:2", 2)])
def test_extending_a_plan_leaves_it_as_it_was(pipeline, per_step):
    """extend hands a child the parent's FuncPlan objects where their nodes are the parent's, and rebuilds (on a
    copy) those whose levels it must relink: the parent (and every sibling after) must see its own plan unchanged.
    lens_blur and stencil_chain reach the relinking case (a Func sliding along a level of a reader whose levels a
    child relinks) at these sample sizes."""
    p = pipeline_from_spec(pipeline)
    space = make_space(p, TARGET)
    before: dict[int, tuple] = {}
    parents = []
    for c in sampled_search_children(space, pipeline, per_step):
        parent = c.parent.plan
        if id(parent) not in before:
            before[id(parent)] = _structure(parent)
            parents.append(parent)  # alive, so its id stays its own
    assert len(parents) > 10
    for parent in parents:
        assert _structure(parent) == before[id(parent)]
        _consistent(parent)


def test_a_new_innermost_level_that_lists_other_inlined_funcs_is_refused():
    """With the parent's inlined Funcs, extend checks only the new innermost levels' lists: a new one must still
    be checked (here one that says it calls an inlined Func 99 times per point)."""
    p = pipeline_from_spec("harris")
    space = make_space(p, TARGET)
    for c in sampled_search_children(space, "harris", 1):
        old = c.parent.plan
        new = [n for n, _ in c.tree.nodes() if n.innermost and id(n) not in old.keys]
        if c.plan is old or not new or not old.inlined or c.plan.inlined != old.inlined:
            continue
        bad = new[0].replace(inlined=((sorted(old.inlined)[0], 99),))
        with pytest.raises(ScheduleError, match="innermost level lists inlined"):
            Plan.extend(old, c.tree.replace_node(new[0], bad))
        return
    pytest.fail("no child with a new innermost level")


@pytest.mark.parametrize("pipeline", ["camera_pipe", "local_laplacian", "random:2"])
def test_regions_remembered_for_the_search_are_a_fresh_plans(pipeline):
    """During search a region is remembered for the whole DAG (ir.plan.dag_search_regions): at the root by Func and
    the set of scheduled Funcs; at a level by Func, the level's stage and loop forms, the stages within it and the
    scheduled and inlined Funcs. A plan of another state with the same of those takes it as is. Every region at every
    node equals what a fresh plan of the same tree derives, and plans of different states do share them."""
    from ir.plan import dag_search_regions

    p = pipeline_from_spec(pipeline)
    space = make_space(p, TARGET)
    names = [n.name for n in p.dag.nodes]
    checked = {"root": 0, "level": 0}
    shared = {"root": 0, "level": 0}
    first: dict[tuple, tuple] = {}  # (func, node key, repr of the region) -> (a plan, its region object)
    plans = 0
    for c in sampled_search_children(space, pipeline, 2):
        if c.plan is c.parent.plan or plans >= 150:
            continue
        plans += 1
        fresh = Plan(p.dag, c.tree, space.target, complete=False)
        for n, _ in c.tree.nodes():
            where = "root" if n.func is None else "level"
            for f in names:
                try:
                    want = fresh.region_at(f, n)
                except ScheduleError:
                    continue
                got = c.plan.region_at(f, n)
                assert repr(got) == repr(want), (pipeline, f, c.plan.keys[id(n)], c.num_decisions)
                if got is None:
                    continue
                seen = first.setdefault((f, c.plan.keys[id(n)], repr(got)), (c.plan, got))
                shared[where] += seen[0] is not c.plan and seen[1] is got
                checked[where] += 1
    assert min(checked.values()) > 100 and min(shared.values()) > 20, (checked, shared)
    regions = dag_search_regions(p.dag)
    assert regions.at_root and regions.at_levels


def _loops(fp) -> list:
    return [[(lp.name, lp.count, lp.tile, lp.tail, lp.base, lp.ext) for lp in lvl.loops]
            for ch in fp.chains for lvl in ch.levels]


def _sliding(fp) -> tuple | None:
    w = fp.sliding
    return None if w is None else (w.dim, w.loop.name, w.loop.count, w.level.chain.func, w.level.depth)


@pytest.mark.parametrize("pipeline", ["harris", "local_laplacian", "random:1"])
def test_a_retiled_func_is_planned_as_extend_plans_its_sibling(pipeline):
    """Plan.retiled plans a tiling sibling's Func from its first sibling's plan: the region, the storage and their
    extents taken over (the same compute and store nodes, the same readers), layout, strides and loops its own.
    Each equals what Plan.extend makes of the sibling's whole tree, for siblings of the same and of other SIMD
    dimensions."""
    from ir.plan import retiled_heads

    p = pipeline_from_spec(pipeline)
    space = make_space(p, TARGET)
    compared, relaid, parents = 0, 0, 0
    for s in sampled_search_children(space, pipeline, 1):
        if space.is_complete(s) or s.num_decisions % 2 or parents >= 40:
            continue
        parents += 1
        firsts: dict[tuple, tuple] = {}  # placement -> (its first child, that child's plan by Plan.extend)
        for c in space.successors(s):
            if c.decision is None or c.decision.kind == "inline":
                continue
            try:
                full = Plan.extend(s.plan, c.tree)
            except ScheduleError:
                continue
            first, plan = firsts.setdefault(space._sibling_key(c), (c, full))
            heads = retiled_heads(first.tree, c.tree, c.func) if first is not c else None
            if heads is None:
                continue
            got, want = plan.retiled(c.func, heads).funcs[c.func], full.funcs[c.func]
            assert (got.region, got.extents, got.storage, got.storage_extents, got.layout, got.strides) == \
                   (want.region, want.extents, want.storage, want.storage_extents, want.layout, want.strides), c.func
            assert _loops(got) == _loops(want), c.func
            assert _sliding(got) == _sliding(want), c.func
            compared += 1
            relaid += got.layout != plan.funcs[c.func].layout  # another SIMD dimension than the first's
    assert compared > 0 and relaid > 0, (compared, relaid)
