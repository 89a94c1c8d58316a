"""FunctionDAG's one analysis cache: computed once per DAG and key, nothing else attached to a DAG from
outside, and per-model caches keyed by the DAG object (weakly), not by id(dag), which a later DAG reuses."""

from __future__ import annotations

import gc

from generator.apps import get_app
from scheduler import autoschedule
from scheduler.cost import RandomModel
from scheduler.space import SearchSpace


def test_an_analysis_is_computed_once_per_dag_and_key():
    dag = get_app("blur").build("small").dag
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert dag.analysis("test.count", compute) == 1
    assert dag.analysis("test.count", compute) == 1 and len(calls) == 1
    assert dag.analysis(("test.count", 2), compute) == 2
    other = get_app("blur").build("small").dag
    assert other.analysis("test.count", compute) == 3  # per DAG


def test_searching_attaches_nothing_to_the_dag_but_its_analyses():
    p = get_app("unsharp").build("small")
    assert not hasattr(p.dag, "__dict__")  # a slotted class (an extension type compiled): nothing else attaches
    fields = [f for f in type(p.dag).__slots__ if f != "__weakref__"]
    before = {f: getattr(p.dag, f) for f in fields}
    autoschedule(p, model="analytical", algorithm="greedy")
    autoschedule(p, model="random:1", algorithm="greedy")
    assert all(getattr(p.dag, f) is v for f, v in before.items())
    keys = set(p.dag._analyses)
    assert {"featurize.pipeline_features", "featurize.static_facts", "featurize.loads", "ir.plan.inlined_calls",
            "scheduler.stage_keys"} <= {k if isinstance(k, str) else k[0] for k in keys}


def test_learned_model_embeddings_never_outlive_their_pipeline():
    """Keyed by id(dag), a new DAG allocated where a collected one was would get the old one's embedding: after
    many pipelines come and go, a model scores a new one exactly as a fresh model does."""
    import numpy as np

    model = RandomModel(seed=0)

    def first_states(p):
        sp = SearchSpace(p)
        return sp.expand(sp.expand(sp.initial())[0])

    for name in ("blur", "unsharp", "harris", "blur", "unsharp"):
        p = get_app(name).build("small")
        model.score(p.dag, first_states(p))
        del p
        gc.collect()
    p = get_app("harris").build("small")
    states = first_states(p)
    np.testing.assert_array_equal(model.score(p.dag, states), RandomModel(seed=0).score(p.dag, states))
