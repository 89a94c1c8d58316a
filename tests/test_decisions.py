"""train.decisions: a model's ordering of each one-decision contrast against its beam sample, per decision."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from featurize.dataset import DatasetError

from train.decisions import decision_accuracy, samplers_of, side_by_side


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
    flipped = [(p, ids, -pred, true) for p, ids, pred, true in scored]  # the opposite orders
    assert side_by_side(decision_accuracy(scored, samplers), decision_accuracy(flipped, samplers)) == (
        "compute 0.50 / 0.50 of 1 (0.50 / 0.50 of 1 >= 10 % apart); inline 0.00 / 1.00 of 1; "
        "serial 0.50 / 0.50 of 2 (1.00 / 0.00 of 1 >= 10 % apart)")


def test_each_rivals_beam_pick_is_scored_against_the_samplers_beam_pick():
    """A rival model's beam pick (sampler beam-<rival>, generator.batch rivals) is a decision `rival <model>`; a row
    two rivals picked (beam-a|b) is a pair for each."""
    samplers = {("p1", "b"): "beam", ("p1", "r"): "beam-analytical", ("p1", "d"): "dropout",
                ("p2", "b"): "beam", ("p2", "r"): "beam-analytical|learned:/m"}
    scored = [
        # p1: the rival's pick measured 2x faster, predicted 1.5x dearer (wrong)
        ("p1", ["b", "r", "d"], np.array([1.0, 1.5, 9.0]), np.array([2.0, 1.0, 3.0])),
        # p2: the rivals' pick measured 1.5x slower, predicted dearer (right)
        ("p2", ["b", "r"], np.array([1.0, 2.0]), np.array([1.0, 1.5])),
    ]
    got = {d.decision: d for d in decision_accuracy(scored, samplers)}
    assert sorted(got) == ["rival analytical", "rival learned:/m"]
    a = got["rival analytical"]
    assert (a.pairs, a.correct, a.pairs_apart, a.correct_apart) == (2, 1, 2, 1)
    assert (got["rival learned:/m"].pairs, got["rival learned:/m"].correct) == (1, 1)


def test_samplers_are_read_from_the_dataset_for_the_pipelines_asked(tmp_path):
    d = tmp_path / "target=host"
    d.mkdir()
    pl.DataFrame({"pipeline_id": ["p1", "p1", "p2"], "schedule_id": ["a", "b", "c"],
                  "sampler": ["beam", "contrast-compute", "beam"], "stage_index": [0, 0, 0]}).write_parquet(
        d / "batch-1.parquet")
    assert samplers_of(tmp_path, "host", ["p1"]) == {("p1", "a"): "beam", ("p1", "b"): "contrast-compute"}
    with pytest.raises(DatasetError, match="missing holds no dataset"):
        samplers_of(tmp_path / "missing", "host", ["p1"])


def test_training_reports_each_decision_next_to_the_analytical_model(tmp_path):
    """A dataset whose first schedules are labelled beam and contrasts: the training summary and its MLflow run
    give this model's and the analytical model's one-decision accuracy on the validation pipelines' pairs."""
    import mlflow

    from featurize.dataset import write_batch
    from ir.config import load_config
    from train.config import TrainConfig
    from train.run import train

    from .test_train import ROOT, synthetic_samples

    names = ["beam", "contrast-serial", "contrast-inline", "dropout", "dropout", "dropout"]
    samples = synthetic_samples(16, names, 40)
    write_batch(tmp_path / "data", "host", "0000", samples)
    cfg = load_config(TrainConfig, ROOT / "conf" / "train.yaml", [
        f"data={tmp_path / 'data'}", "model=calibrated", "epochs=2", "val_fraction=0.3", "min_schedules=4",
        "register=false", "progress=false", f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
        f"checkpoint_dir={tmp_path / 'ckpt'}"])
    r = train(cfg)
    pipelines_with_both = r.val_pipelines  # every pipeline drew at least its first three schedules
    assert [d.decision for d in r.decisions] == ["inline", "serial"] == [d.decision for d in r.analytical_decisions]
    assert all(d.pairs == pipelines_with_both for d in r.decisions + r.analytical_decisions)
    assert "one decision (a contrast vs its beam sample, ordered as measured), this model / analytical: inline " \
        in r.summary()
    logged = mlflow.tracking.MlflowClient(r.tracking_uri).get_run(r.run_id).data.metrics
    assert logged["best/decision_serial_accuracy"] == r.decisions[1].accuracy
    assert [b.label for b in r.by_apart] == ["<1.1x", "1.1-1.3x", "1.3-2x", ">=2x"]
    assert [b.pairs for b in r.by_apart] == [b.pairs for b in r.analytical_by_apart] and sum(
        b.pairs for b in r.by_apart) > 0
    assert "pairwise by how far apart each pair was measured, this model / analytical: " in r.summary()
    for b in r.by_apart:
        if b.pairs:
            assert logged[f"best/{b.metric}"] == pytest.approx(b.accuracy)
    assert logged["analytical/decision_inline_accuracy"] == r.analytical_decisions[0].accuracy
