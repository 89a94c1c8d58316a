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


class _Cycle:
    def __init__(self):
        self.me = self


def test_after_the_pause_the_young_generation_is_empty_and_cycles_are_still_collected():
    """What a paused block leaves alive joins the oldest generation unscanned (a young collection would walk it all):
    the young count starts afresh, and a cycle dropped inside the block is still found by a full collection."""
    import weakref

    gc.collect()
    with collector_paused():
        kept = [[i] for i in range(20_000)]  # tracked objects a search leaves alive (memos, results)
        dropped = _Cycle()
        ref = weakref.ref(dropped)
        del dropped  # garbage only the collector can free
        assert gc.get_count()[0] > 20_000
    assert gc.isenabled()
    assert gc.get_count()[0] < 1000  # (a few allocations since; without the promotion it would count the 20,000)
    assert gc.get_freeze_count() == 0
    assert ref() is not None  # not scanned yet: it waits in the oldest generation
    gc.collect()
    assert ref() is None
    assert len(kept) == 20_000


def test_a_process_that_froze_objects_keeps_them_frozen():
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with collector_paused():
            _ = [[i] for i in range(1000)]
        # the pause neither unfroze them (the count would drop to 0) nor froze its own objects (it would grow by
        # ~1000); frozen objects that reference counting freed meanwhile leave the count, so it may shrink a little
        assert 0.9 * frozen <= gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
