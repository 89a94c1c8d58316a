"""MCTS (protuner2020 §3-4): correct schedules on apps and random pipelines, determinism, the budget, the
tree statistics on a space whose best leaf is known, mcts-real's measurements, and its option errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from generator.apps import get_app
from generator.random_pipeline import generate
from ir.target import get_target
from scheduler import SearchError, autoschedule
from scheduler.cost import COST_MODELS, CostModel, load_model, register_cost_model
from scheduler.space import make_space
from scheduler.strategy import StrategyConfig, get_strategy
from tests.test_scheduler import assert_correct


@pytest.mark.parametrize("name,model,rollout", [("app:blur", "analytical", "greedy"),
                                                ("app:unsharp", "random:2", "random"),
                                                ("random:11", "analytical", "random"),
                                                ("random:12", "random:4", "greedy")])
def test_mcts_schedules_compile_and_equal_the_interpreter(name, model, rollout):
    kind, arg = name.split(":")
    p = get_app(arg).build("small") if kind == "app" else generate(int(arg), max_stages=8,
                                                                      output_size=(40, 24, 3)).pipeline
    s = autoschedule(p, model=model, algorithm="mcts", budget=300, trees=2, rollout=rollout, seed=1)
    assert s.stats.algorithm == "mcts" and 0 < s.stats.states_evaluated and s.predicted_cost > 0
    assert_correct(p, s.loopnest)


def test_same_seed_same_schedule_and_the_seed_matters():
    p = generate(21, max_stages=8, output_size=(40, 24, 3)).pipeline
    runs = {}
    for seed in (4, 4, 5, 6):
        s = autoschedule(p, model="random:5", algorithm="mcts", budget=150, rollout="random", seed=seed)
        runs.setdefault(seed, []).append((s.loopnest.fingerprint, s.predicted_cost, s.stats.states_evaluated))
    assert runs[4][0] == runs[4][1]
    assert len({r[0] for rs in runs.values() for r in rs}) > 1  # the trees' random streams do differ by seed


def _run(p, model, **kw):
    strategy = get_strategy("mcts")()
    tgt = get_target("host")
    strategy.initialize(make_space(p, tgt), load_model(model, tgt) if isinstance(model, str) else model,
                        StrategyConfig(**kw))
    return strategy, strategy.finish()


@pytest.mark.parametrize("budget", [60, 400])
def test_the_budget_bounds_the_states_evaluated(budget):
    p = get_app("unsharp").build("small")
    strategy, res = _run(p, "analytical", budget=budget, trees=2)
    assert res.stats.states_evaluated == strategy.evaluated
    # checked before each iteration: at most one iteration (an expansion and a rollout) over, and the committed
    # final state, scored at the end when a single-child level led to it and no iteration did
    assert res.stats.states_evaluated <= budget + strategy.max_iteration + 1
    # each level commits the child holding the cheapest leaf found so far: the path ends at the best leaf
    assert strategy.final.cost == res.best.cost and len(strategy.commits) > 0
    small, _ = _run(p, "analytical", budget=60, trees=2)
    assert budget == 60 or small.evaluated < strategy.evaluated  # a larger budget searches more


def test_budget_a_pass_leaves_over_is_spent_by_more_passes():
    """unsharp's late levels are scored out quickly: the first pass from the root leaves budget over, and
    further passes (the trees' statistics kept) spend it, ending at the cheapest leaf scored by any pass."""
    p = get_app("unsharp").build("small")
    strategy, res = _run(p, "analytical", budget=600, trees=2)
    assert strategy.passes > 1
    assert 600 <= strategy.evaluated <= 600 + strategy.max_iteration
    assert strategy.final.cost == res.best.cost
    roots = [c for c in strategy.commits if c.root is strategy.commits[0].root]
    assert len(roots) == strategy.passes  # each pass searched from the first real decision again
    assert roots[-1].root_visits > roots[0].root_visits  # with the statistics of the passes before


def test_tree_statistics_on_a_space_whose_best_leaf_is_known(monkeypatch):
    """blur's space has 130 complete schedules; a toy model makes one of them (not the greedy first
    child's) cost 1, every other complete schedule 2 and every partial one 1.5, so only search finds it."""
    p = get_app("blur").build("small")
    space = make_space(p, "host")
    level = [space.initial()]
    while not space.is_complete(level[0]):
        level = [k for s in level for k in space.expand(s)]
    target = level[len(level) * 2 // 3].tree.fingerprint
    monkeypatch.setattr("scheduler.cost.registry.COST_MODELS", dict(COST_MODELS))

    @register_cost_model("needle")
    class Needle(CostModel):  # scores states directly: the toy's costs are a function of the schedule
        def predict(self, pipeline_features, schedule_features):
            raise AssertionError("the search scores states")

        def score_stages(self, dag, states):
            n = 2 * len(dag.nodes)
            costs = [(1.0 if s.tree.fingerprint == target else 2.0) if s.num_decisions >= n else 1.5
                     for s in states]
            return np.array(costs), [None] * len(states)

    strategy, res = _run(p, Needle(), budget=2000, trees=3, rollout="random", seed=2)
    assert res.best.tree.fingerprint == target and res.best.cost == 1.0
    assert strategy.final.tree.fingerprint == target  # the committed path ends at it
    # at the first real decision, the child leading to the needle got the most visits of the ensemble
    first = strategy.commits[0]
    s, visits = first.root, first.visits
    on_path = next(k for k in visits if any(a is k for a in strategy.final.state.ancestors()))
    assert first.chosen is on_path and len(visits) == len(strategy.kids[strategy.node_of[s]]) > 1
    assert visits[on_path] == max(visits.values()) > min(visits.values())
    assert sum(visits.values()) == first.root_visits  # every iteration from s went through one child
    # its mean value is the best: best_cost * mean(1/cost) with the needle's 1 among the 2s
    values = {k: sum(t.stats[k].inv_sum for t in strategy.trees if k in t.stats) / v
              for k, v in visits.items() if v}
    assert values[on_path] == max(values.values()) and values[on_path] > 0.5


def test_mcts_real_measures_at_most_its_budget_and_returns_the_fastest():
    p = get_app("unsharp").build("small")
    s = autoschedule(p, model="random:3", algorithm="mcts-real", budget=200, trees=2, measurements=3, seed=1)
    assert s.stats.algorithm == "mcts-real" and 1 <= len(s.stats.measured) <= 3
    assert s.measured_runtime == min(s.stats.measured.values()) and math.isfinite(s.measured_runtime)
    assert s.stats.measured[s.loopnest.fingerprint] == s.measured_runtime
    assert_correct(p, s.loopnest)


@pytest.mark.parametrize("kw,match", [
    (dict(rollout="heavy"), "unknown rollout 'heavy'; choose one of greedy, random"),
    (dict(trees=0), "trees must be at least 1, got 0"),
    (dict(budget=0), "budget must be at least 1 cost-model evaluation, got 0"),
    (dict(budget_seconds=-1), r"budget_seconds must be >= 0 \(0: no time limit\), got -1"),
    (dict(exploration=-0.1), "exploration must be >= 0, got -0.1"),
    (dict(algorithm="mcts-real", measurements=0), "measurements must be at least 1, got 0"),
])
def test_bad_options_are_one_line_errors(kw, match):
    p = get_app("blur").build("small")
    with pytest.raises(SearchError, match=match) as e:
        autoschedule(p, model="analytical", **{"algorithm": "mcts", **kw})
    assert "\n" not in str(e.value)


def test_a_seconds_budget_ends_the_search():
    p = get_app("unsharp").build("small")
    s = autoschedule(p, model="analytical", algorithm="mcts", budget=10**9, budget_seconds=2.0, trees=2)
    assert s.stats.seconds < 20 and s.stats.states_evaluated < 10**9
    assert_correct(p, s.loopnest)



def test_dropping_states_to_bound_memory_leaves_the_search_unchanged(monkeypatch):
    """The States a search may need again are rebuilt from their node ids when dropped: with almost nothing
    kept (the latest rollout expansion, 2 whole leaves) the search scores the same states, commits the same
    decisions and ends at the same schedules as with everything kept; a dropped leaf is rebuilt exactly."""
    import scheduler.strategies.mcts as mcts

    p = get_app("unsharp").build("small")
    tgt = get_target("host")

    def run(finals_kept, recent_limit):
        monkeypatch.setattr(mcts, "FINALS_KEPT", finals_kept)
        strategy = get_strategy("mcts")()
        strategy.initialize(make_space(p, tgt), load_model("analytical", tgt),
                            StrategyConfig(budget=600, trees=2, seed=3))
        strategy.recent_limit = recent_limit  # below initialize's floor, so that expansions are dropped
        return strategy, strategy.finish()

    kept, res_kept = run(10**9, 10**9)
    small, res_small = run(2, 1)
    assert small.recent_states <= max(len(k) for k in kept.kids.values())  # only the latest expansion
    assert len(small.kids) + len(small.recent) < len(kept.kids) + len(kept.recent)
    assert (small.evaluated, small.passes) == (kept.evaluated, kept.passes) and kept.evaluated > 0
    assert [len(c.visits) for c in small.commits] == [len(c.visits) for c in kept.commits]
    assert [(x.cost, x.state.tree.fingerprint) for x in res_small.finals] == \
        [(x.cost, x.state.tree.fingerprint) for x in res_kept.finals[:2]]
    assert small.final.state.tree.fingerprint == kept.final.state.tree.fingerprint
    dropped = [(fp, x) for fp, x in small.leaves.items() if x.state is None]
    whole = len(small.leaves) - len(dropped)  # 2 after a drop, up to 2 x 2 whole before the next (_drop_states)
    assert 2 <= whole <= 4 and len(dropped) > 0
    for fp, x in dropped[:5]:
        assert small._state(x).tree.fingerprint == fp and small.cost[x.node] == x.cost
