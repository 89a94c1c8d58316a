"""The reference interpreter evaluates a pure definition in blocks of about `_BLOCK` points (cache-sized
temporaries); a point's value must not depend on the block it falls in. Checked bit for bit against whole-region
evaluation on the fuzz pipelines (every corner of the DSL) and on random pipelines of the data generator, with
blocks small enough to split every dimension, including ones that do not divide the region."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ir
from generator.random_pipeline import random_pipeline

from .fuzz_pipelines import random_test_pipeline

INTERPRET = sys.modules["ir.interpret"]  # the module (ir.interpret the attribute is the function)


def outputs(p, seed: int, block: int, monkeypatch) -> dict[str, np.ndarray]:
    monkeypatch.setattr(INTERPRET, "_BLOCK", block)
    with np.errstate(all="ignore"):
        return ir.interpret(p, p.random_inputs(seed))


@pytest.mark.parametrize("block", [7, 100])
def test_blocked_evaluation_equals_whole_regions(block, monkeypatch):
    pipelines = [(s, random_test_pipeline(s, (37, 23))) for s in range(0, 120, 4)]
    pipelines += [(s, random_pipeline(s, 12, (41, 19, 3))) for s in range(8)]
    for seed, p in pipelines:
        whole = outputs(p, seed, 1 << 40, monkeypatch)
        blocked = outputs(p, seed, block, monkeypatch)
        assert whole.keys() == blocked.keys()
        for name in whole:
            a, b = whole[name], blocked[name]
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes(), (seed, name, block)  # bit for bit, NaNs included


def test_blocks_cover_the_region_once():
    region = ((-2, 40), (3, 21), (0, 2))
    seen = np.zeros((43, 19, 3), dtype=int)
    for index, bounds in INTERPRET._blocks(region):
        seen[index] += 1
        assert [hi - lo + 1 for lo, hi in bounds] == list(seen[index].shape)
        assert all(lo >= rlo and hi <= rhi for (lo, hi), (rlo, rhi) in zip(bounds, region))
    assert (seen == 1).all()
