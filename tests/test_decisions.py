"""evaluate.decisions: a model's ordering of each one-decision contrast against its beam sample, per decision."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from evaluate.decisions import decision_accuracy, samplers_of


def test_each_contrast_is_scored_against_its_pipelines_beam_sample():
    samplers = {("p1", "b"): "beam", ("p1", "s"): "contrast-serial", ("p1", "i"): "contrast-inline",
                ("p1", "d"): "dropout", ("p2", "s2"): "contrast-serial", ("p2", "b2"): "beam",
                ("p2", "c2"): "contrast-compute", ("p3", "s3"): "contrast-serial"}  # p3: no beam sample
    scored = [
        # p1: serial measured 2x slower and predicted slower (right); inline measured 5 % faster, predicted slower
        ("p1", ["d", "b", "s", "i"], np.array([9.0, 1.0, 3.0, 1.5]), np.array([0.1, 1.0, 2.0, 0.95])),
        # p2: serial measured 1.05x slower, predicted faster (wrong); compute: a predicted tie counts half
        ("p2", ["s2", "b2", "c2"], np.array([0.5, 1.0, 1.0]), np.array([1.05, 1.0, 3.0])),
        ("p3", ["s3"], np.array([1.0]), np.array([1.0])),
    ]
    got = {d.decision: d for d in decision_accuracy(scored, samplers)}
    assert sorted(got) == ["compute", "inline", "serial"]
    s = got["serial"]
    assert (s.pairs, s.correct, s.pairs_apart, s.correct_apart) == (2, 1, 1, 1)  # 1.05x is a near-tie
    assert s.accuracy == 0.5 and s.accuracy_apart == 1.0
    i = got["inline"]
    assert (i.pairs, i.correct, i.pairs_apart) == (1, 0, 0) and math.isnan(i.accuracy_apart)
    assert (got["compute"].correct, got["compute"].pairs_apart) == (0.5, 1)
    assert got["serial"].describe() == "serial 0.50 of 2 (1.00 of 1 >= 10 % apart)"
    assert got["inline"].describe() == "inline 0.00 of 1"


def test_samplers_are_read_from_the_dataset_for_the_pipelines_asked(tmp_path):
    d = tmp_path / "target=host"
    d.mkdir()
    pl.DataFrame({"pipeline_id": ["p1", "p1", "p2"], "schedule_id": ["a", "b", "c"],
                  "sampler": ["beam", "contrast-compute", "beam"], "stage_index": [0, 0, 0]}).write_parquet(
        d / "batch-1.parquet")
    assert samplers_of(tmp_path, "host", ["p1"]) == {("p1", "a"): "beam", ("p1", "b"): "contrast-compute"}
    assert samplers_of(tmp_path / "missing", "host", ["p1"]) == {}
