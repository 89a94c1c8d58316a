"""The incremental search path agrees with the fresh one (issue: search at the speed of C++).

A search derives each child's plan and features from its parent's (Plan.extend, featurization memoized per
stage); the reference is to plan the child's tree from scratch and featurize every stage. These properties
hold on the states searches actually visit: every child of a few states per decision, down to complete
schedules, on all 17 apps and on random pipelines of up to 20 stages. Features must be equal bit for bit (the
issue allows a relative 1e-6; the incremental path reproduces the same arithmetic), and every search strategy
must return the same schedule at the same cost with either derivation.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from featurize.schedule import schedule_features
from generator.apps import APPS, get_app
from ir.plan import Plan
from scheduler import autoschedule
from scheduler.space import SearchError, SpaceOptions, make_space

from .search_walk import pipeline_from_spec as _pipeline
from .search_walk import sampled_search_children

TARGET = "i9-7960x"  # 16 cores, AVX-512
RANDOM_SEEDS = range(8)  # random pipelines of up to 20 stages
STATES_WANTED = 500  # over all pipelines of the property below
# children of 1 random state per decision in CI (~3,700 states); SLOW=1 walks 2 (7,517 states, twice the time)
PER_STEP = 2 if os.environ.get("SLOW") == "1" else 1


def _children_checked(p, seed: str, per_step: int = PER_STEP, visit=None) -> int:
    """Walk a search of `p`: all children of `per_step` random states per decision, each compared with a fresh
    plan and full featurization (and passed to `visit(child, space)` first); the number of children compared."""
    space = make_space(p, TARGET)
    checked = 0
    for c in sampled_search_children(space, seed, per_step):
        if visit is not None:
            visit(c, space)
        fresh = Plan(p.dag, c.tree, space.target, complete=False)
        full = schedule_features(fresh, space.target, c.pending)
        assert full.keys() == c.features.keys(), (p.name, c.num_decisions)
        for k, v in full.items():
            got = c.features[k]
            assert got.dtype == v.dtype and np.array_equal(got, v), \
                (p.name, c.num_decisions, k, np.flatnonzero(got != v).tolist())
        for name, fp in fresh.funcs.items():
            ep = c.plan.funcs[name]
            assert ep.inlined == fp.inlined
            if not fp.inlined:
                assert (ep.extents, ep.storage_extents, ep.strides, ep.layout) == \
                       (fp.extents, fp.storage_extents, fp.strides, fp.layout), (p.name, name)
        checked += 1
    return checked


def test_incremental_features_equal_fresh_ones_on_500_search_states():
    total, per_pipeline = 0, {}
    for spec in [*sorted(APPS), *(f"random:{s}" for s in RANDOM_SEEDS)]:
        per_pipeline[spec] = _children_checked(_pipeline(spec), spec)
        total += per_pipeline[spec]
    assert total >= STATES_WANTED, per_pipeline
    assert all(n > 0 for n in per_pipeline.values()), per_pipeline


def test_stages_that_read_a_change_only_through_their_task_patch_their_reads_per_task():
    """A stage that reaches a changed Func's producer only through Funcs stored inside its task gets the parent's
    features with its reads per task and working sets recomputed, not a featurization: camera_pipe's stages do (its
    demosaic Funcs are computed inside the tasks of the stages reading them), and every child's features still
    equal a fresh featurization's. (The featurizer is asked directly which stages those are: compiled, its class
    is an extension type, whose methods cannot be patched to count calls.)"""
    import featurize.schedule as fs

    task_only = []

    def count(c, space):
        if c.plan.changed:
            full, only = fs._Featurizer(c.plan, space.target, c.pending).affected(set(c.plan.changed))
            task_only.append(len(only))

    assert _children_checked(_pipeline("camera_pipe"), "camera_pipe", visit=count) > 0
    assert sum(n > 0 for n in task_only) > 10, task_only


@pytest.mark.parametrize("pipeline", ["unsharp", "harris", "iir_blur", "max_filter", "random:1", "random:3"])
@pytest.mark.parametrize("algorithm", ["greedy", "beam", "hierarchical", "dropout", "mcts"])
def test_every_strategy_finds_the_same_schedule_with_either_derivation(pipeline, algorithm):
    p = _pipeline(pipeline)
    kw = dict(model="analytical", algorithm=algorithm, beam_size=4, passes=2, seed=3, dropout=50, budget=150)
    a = autoschedule(p, TARGET, derivation="incremental", **kw)
    b = autoschedule(p, TARGET, derivation="fresh", **kw)
    assert a.loopnest.fingerprint == b.loopnest.fingerprint
    assert a.predicted_cost == b.predicted_cost
    assert a.stats.states_evaluated == b.stats.states_evaluated


def _checked_search_equals_extended(p, monkeypatch, derived=None, beam_size: int = 4) -> list[str]:
    """Beam search with derivation="checked" (each tiling sibling derived from its first sibling's plan and from
    Plan.extend, compared in legality, acceptability and every feature bit for bit) finds what searching with
    Plan.extend alone finds. `derived(space, c, group)`: which siblings to name in the list returned, asked of each
    sibling that has a first sibling (SearchSpace._retiled's group of its placement) before it is derived."""
    from scheduler.space import SearchSpace

    named: list[str] = []
    if derived is not None:
        retiled = SearchSpace._retiled

        def naming(self, c):
            parent, firsts = self._siblings
            group = firsts.get(self._sibling_key(c)) if parent is c.parent else None
            if group is not None and derived(self, c, group):
                named.append(c.func)
            return retiled(self, c)

        monkeypatch.setattr(SearchSpace, "_retiled", naming)
    kw = dict(model="analytical", algorithm="beam", beam_size=beam_size, passes=2, seed=1)
    checked = autoschedule(p, TARGET, derivation="checked", **kw)
    monkeypatch.undo()
    extended = autoschedule(p, TARGET, derivation="extend", **kw)
    assert checked.stats.retiled > 0 and extended.stats.retiled == 0
    assert checked.loopnest.fingerprint == extended.loopnest.fingerprint
    assert checked.predicted_cost == extended.predicted_cost
    assert checked.stats.states_evaluated == extended.stats.states_evaluated
    return named


@pytest.mark.parametrize("pipeline", ["harris", "camera_pipe", "max_filter", "random:0", "random:2"])
def test_tiling_siblings_from_their_first_sibling_equal_extended_ones(pipeline, monkeypatch):
    """A child placed as an earlier child of the same parent, but tiled otherwise, is featurized from that sibling's
    plan (Plan.retiled)."""
    _checked_search_equals_extended(_pipeline(pipeline), monkeypatch)


def test_a_first_sibling_that_the_rules_prune_still_serves_its_siblings(monkeypatch):
    """adams2019's rejection rules (recompute or inlined calls beyond their bounds) prune a child on its features, not
    its legality: when they prune the first child of a placement, its tiling siblings are still retiled from its plan.
    (A random pipeline at the generator's sizes, where the rules prune first siblings: at 64x48x3 they seldom do.)"""
    from generator.random import generate

    def pruned_first(space, c, group):
        first = group.get(space._simd_loops(c))
        return first is not None and not space._acceptable(first.features, first.plan.changed or set())

    served = _checked_search_equals_extended(generate(0, max_stages=20).pipeline, monkeypatch, pruned_first, 8)
    assert served, "no tiling sibling of a pruned first sibling"


@pytest.mark.parametrize("pipeline", ["harris", "local_laplacian", "random:1"])
def test_a_sibling_that_vectorizes_another_dimension_is_retiled_with_its_readers(pipeline, monkeypatch):
    """A child placed as an earlier child but vectorized along another dimension lays its Func out otherwise (the
    SIMD dimension innermost in storage), so what the Func's readers load moves with it: it is retiled from that
    sibling with its readers featurized again (retiled_features' relayout), and its own tiling siblings are retiled
    from it."""
    relaid = _checked_search_equals_extended(_pipeline(pipeline), monkeypatch,
                                             lambda space, c, group: space._simd_loops(c) not in group)
    assert relaid, "no sibling vectorized along another dimension"


def test_a_tiling_sibling_is_planned_only_when_asked():
    """A retiled sibling's State holds a DeferredPlan: no plan of its own until something asks for it, then the
    plan Plan.extend gives its tree, made once."""
    from scheduler.space import DeferredPlan

    from .test_plan_extend import _structure

    p = _pipeline("random:0")
    space = make_space(p, TARGET)
    s, deferred = space.initial(), []
    while not deferred and not space.is_complete(s):
        children = space.expand(s)
        deferred = [c for c in children if isinstance(c.planned, DeferredPlan)]
        s = children[0]
    assert deferred, "no tiling sibling on the way down"
    c = deferred[-1]
    assert c.planned._plan is None
    plan = c.plan
    assert c.plan is plan and c.planned._plan is plan
    assert _structure(plan) == _structure(Plan(p.dag, c.tree, space.target, complete=False))


def test_an_unknown_derivation_is_a_one_line_error():
    p = get_app("unsharp").build("small")
    with pytest.raises(SearchError, match="unknown derivation 'symbolic'; choose one of incremental, extend, fresh, "
                                          "checked"):
        make_space(p, TARGET, SpaceOptions(derivation="symbolic"))
