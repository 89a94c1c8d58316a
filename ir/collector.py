"""Fewer garbage collections while schedlab allocates millions of short-lived objects and few cycles.

A search's symbolic forms, a Plan, and a code generator's IR values are such work: at CPython's default (a
young-generation collection every 700 allocations, each older collection walking the whole heap, which in a
data-generation task holds the batch's plans and features) the collector took ~25 % of search time
(benchmarks/search_speed.py) and more than half of an llvm compile's Python time (Plan + irgen of 16 random-pipeline
schedules: 1.70 s at the default, 0.71 s under `fewer_collections`). Results do not change; the thresholds are
restored when the last such block in the process ends (nesting and threads share one count).

`collector_paused` goes further for searches, which allocate nothing cyclic: no cyclic collection at all while one
runs (docs/scheduler.md, "Plans without reference cycles").
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

FEWER_GC_THRESHOLD = 50_000  # allocations between young-generation collections inside fewer_collections()
_lock = threading.Lock()
_depth: list = [0, None]  # blocks running in this process, the thresholds before the first


@contextmanager
def fewer_collections():
    """Raise the young-generation threshold to FEWER_GC_THRESHOLD (never lower it) for the block."""
    with _lock:
        if _depth[0] == 0:
            _depth[1] = gc.get_threshold()
            gc.set_threshold(max(FEWER_GC_THRESHOLD, _depth[1][0]), *_depth[1][1:])
        _depth[0] += 1
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0:
                gc.set_threshold(*_depth[1])


_paused = [0, False]  # collector_paused() blocks running in this process, whether the collector was on before


@contextmanager
def collector_paused():
    """No cyclic garbage collection for the block (reference counting still frees everything acyclic): for a
    search, whose plans, features and symbolic forms are acyclic (ir.plan.Level refers to its chain weakly; no
    recursive closures), so a pause frees no less and costs no memory, while each collection it saves walks the
    heap (about a sixth of beam search's time even at fewer_collections' threshold; tests/test_collector.py checks
    that a search leaves next to no cyclic garbage). The collector is re-enabled when the last such block ends."""
    with _lock:
        if _paused[0] == 0:
            _paused[1] = gc.isenabled()
            gc.disable()
        _paused[0] += 1
    try:
        yield
    finally:
        with _lock:
            _paused[0] -= 1
            if _paused[0] == 0 and _paused[1]:
                _promote_unscanned()
                gc.enable()


def _promote_unscanned() -> None:
    """Move every tracked object to the oldest generation without scanning it. A search leaves millions of young
    objects alive (the per-DAG memos, its result's states); re-enabled as they were, the collector's next young
    collection walks them all (40-110 ms after a beam 8 x 2 search of local_laplacian; a tenth of a data batch's
    planning, which runs a search per sample). Promoted, they wait for the next full collection, which finds any
    cycle among them as it would have. gc.freeze() then gc.unfreeze() are two list splices; skipped where the
    process keeps objects frozen itself (a server that froze before forking), whose frozen set must stay."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
