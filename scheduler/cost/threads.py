"""One intra-op thread for the search's scoring batches.

A search scores each step's children in one batch: tens to a few thousand schedules of a pipeline, tensors of
kilobytes to a few megabytes. torch splits element-wise ops of more than 32,768 elements among its intra-op threads
(one per core by default), and on a small machine that costs more than it saves: the threads synchronise after
every op, and when another process holds a core (the data job plans beside its compiles; evaluate and tests run
beside searches) each op waits for a thread that is not running. `scoring_threads` scores a batch with one thread
and restores torch's setting after it (benchmarks/search_speed.py --threads-ab measures both, side by side)."""

from __future__ import annotations

import sys
from contextlib import contextmanager

# stage rows (schedules x stages) from which a batch is scored with torch's own thread count: larger batches are
# training- or evaluation-sized, where the threads pay for themselves
SINGLE_THREAD_ROWS = 1 << 20


@contextmanager
def scoring_threads(rows: int):
    """Score a batch of `rows` stage rows with one torch thread when it is search-sized; torch's setting is
    restored afterwards. Nothing to do where torch is not loaded (a model that does not use it)."""
    torch = sys.modules.get("torch")
    n = torch.get_num_threads() if torch is not None else 1
    if n <= 1 or rows >= SINGLE_THREAD_ROWS:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)
