"""The search pauses the cyclic garbage collector (ir.collector.collector_paused), which is sound only while what
it allocates is acyclic: reference counting must free every plan, feature array and symbolic form it drops."""

from __future__ import annotations

import gc

import pytest

from ir.collector import collector_paused
from scheduler import autoschedule

from .search_walk import pipeline_from_spec


def test_the_pause_nests_and_restores_the_collector():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # a strategy that runs another search inside
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer search still runs
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with collector_paused():
            raise RuntimeError("a search that fails")
    assert gc.isenabled()
    gc.disable()  # a caller that runs without the collector keeps it off
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("model,algorithm", [("analytical", "beam"), ("builtin", "beam"), ("analytical", "mcts")])
def test_a_search_leaves_next_to_no_cyclic_garbage(model, algorithm):
    """Before Level referred to its chain weakly, every plan was a cycle: a beam search of harris left ~48
    collectable objects per state; now it leaves a few per hundred states (Funcs' inlined-call closures, per DAG).
    The same search runs once first: the per-DAG caches it fills (a few hundred objects, more as the space grows:
    MCTS filling them in the measured run left 484 in CI) are made once, not per state."""
    p = pipeline_from_spec("harris")
    kw = dict(model=model, algorithm=algorithm, beam_size=8, passes=2, budget=1500)
    autoschedule(p, "host", **kw)  # imports, per-DAG caches
    gc.collect()
    gc.disable()
    try:
        s = autoschedule(p, "host", **kw)
        garbage = gc.collect()
    finally:
        gc.enable()
    states = s.stats.states_evaluated
    assert states > 500
    assert garbage < states / 4, (garbage, states)
