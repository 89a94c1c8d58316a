"""The analytical terms computed one row at a time (train.analytical_rows, compiled by ir.hot) are the numpy path's
bits: for float32 and float64 features, every prior the loop covers, random rows with the edge values the terms
branch on, and the features of real measured schedules. Both the build (when current) and the .py source are checked,
so neither can drift from the numpy definition."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from featurize.schema import SCHEDULE_FEATURES, SCHEDULE_INDEX
from ir.hot import source_path
from train import analytical_rows
from train.analytical import (DRAM_ALLOCATION, LINE_BYTES, MMAP_THRESHOLD, PAGE_BYTES, PRIOR_PARTS, PRIORS,
                              _analytical_terms, _terms_by_rows, analytical_terms)
from train.array_ops import NUMPY
from train.model import TERMS

SCHEDULE_WIDTH = len(SCHEDULE_FEATURES)
ROW_PRIORS = [p for p in PRIORS if PRIOR_PARTS[p] <= analytical_rows.ROW_PARTS]


def _source_module():
    """train/analytical_rows.py run as the plain Python it is, whether or not a build of it is current."""
    spec = importlib.util.spec_from_file_location("analytical_rows_source", source_path("train.analytical_rows"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert not mod.COMPILED
    return mod


def _numpy_terms(pf, sf, cores, prior):
    with NUMPY.quiet():
        return _analytical_terms(NUMPY, pf, sf, cores, prior)


def _rows_terms(module, pf, sf, cores, prior):
    """_terms_by_rows with `module`'s loop (the build or the source)."""
    real = analytical_rows.terms_rows
    try:
        analytical_rows.terms_rows = module.terms_rows
        return _terms_by_rows(pf, sf, cores, prior)
    finally:
        analytical_rows.terms_rows = real


def _random_features(rng, b: int, s: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Rows spanning zero to overflow, with the values the terms branch on: exact thresholds, ones, negatives."""
    sf = np.exp(rng.uniform(-3, 30, size=(b, s, SCHEDULE_WIDTH))) * rng.integers(0, 2, size=(b, s, SCHEDULE_WIDTH))
    sf[rng.random(sf.shape) < 0.15] = 1.0
    sf[rng.random(sf.shape) < 0.05] *= -1
    for name, value in (("bytes_at_realization", MMAP_THRESHOLD), ("bytes_at_realization", DRAM_ALLOCATION),
                        ("vector_size", 1.0), ("inner_parallelism", 1.0), ("inlined_calls", 0.0)):
        sf[..., SCHEDULE_INDEX[name]][rng.random((b, s)) < 0.2] = value
    sf = sf.astype(dtype)
    sf.flags.writeable = False  # search hands the model read-only rows
    pf = (rng.random((s, 40, 7)) * rng.integers(0, 30, size=(s, 40, 7))).astype(np.float32)
    return pf, sf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_are_the_numpy_bits_on_random_features(dtype):
    rng = np.random.default_rng(7)
    source = _source_module()
    for _ in range(4):
        pf, sf = _random_features(rng, 5, 7, dtype)
        for prior in ROW_PRIORS:
            for cores in (1.0, 2.0, 3.0):
                ref = _numpy_terms(pf, sf, cores, prior)
                for module in {analytical_rows, source}:
                    got = _rows_terms(module, pf, sf, cores, prior)
                    assert got.dtype == ref.dtype and got.shape == ref.shape
                    np.testing.assert_array_equal(got, ref, err_msg=f"prior {prior}, {cores} cores, {module.__name__}")


def test_rows_are_the_numpy_bits_on_measured_schedules():
    from train.data import DataConfig, TrainingData

    data = TrainingData.load(DataConfig(path="datasets/random-host-halide", backend="halide", val_fraction=0.0))
    batches = data.train[:40]
    assert len(batches) == 40
    for b in batches:
        pf = b.pipeline_features.numpy()
        for sf in (b.schedule_features.numpy(), b.schedule_features.numpy().astype(np.float64)):
            for prior in ROW_PRIORS:
                np.testing.assert_array_equal(_rows_terms(analytical_rows, pf, sf, 2.0, prior),
                                              _numpy_terms(pf, sf, 2.0, prior))


def test_analytical_terms_takes_the_loop_where_it_runs_compiled(monkeypatch):
    """Compiled, analytical_terms runs the loop for the priors it covers and numpy for the rest; the same bits."""
    rng = np.random.default_rng(3)
    pf, sf = _random_features(rng, 3, 4, np.float64)
    calls = []
    monkeypatch.setattr(analytical_rows, "COMPILED", True)
    real = analytical_rows.terms_rows
    monkeypatch.setattr(analytical_rows, "terms_rows", lambda *a: calls.append(1) or real(*a))
    for prior in PRIORS:
        before = len(calls)
        np.testing.assert_array_equal(analytical_terms(pf, sf, 2.0, prior), _numpy_terms(pf, sf, 2.0, prior))
        assert (len(calls) > before) == (prior in ROW_PRIORS), prior
    assert set(ROW_PRIORS) >= {7} and set(PRIORS) - set(ROW_PRIORS)  # the default is covered; some priors are not


def test_the_loop_refuses_rows_of_the_wrong_shape():
    rows, ops, out = np.zeros((4, SCHEDULE_WIDTH - 1)), np.ones(4), np.empty((4, len(TERMS)))
    with pytest.raises(ValueError, match=r"rows \[4, 40\].*want rows of the whole schedule width"):
        analytical_rows.terms_rows(rows, ops, out, 2, 2.0, False, True, True, True, True,
                                   float(MMAP_THRESHOLD), float(PAGE_BYTES), float(LINE_BYTES), float(DRAM_ALLOCATION))


def test_the_loop_fills_the_model_terms():
    assert analytical_rows.NUM_TERMS == len(TERMS)
