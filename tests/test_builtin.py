"""Built-in cost models (train.builtin, scheduler.cost.builtin) against a real SQLite MLflow store: a registered
version exported as plain data with its lineage, loaded back with identical predictions, the champion fallback
order (the user's champion, then the built-in model of the target and backend, then the analytical model), the
split `evaluate` reads from its lineage, and one-line errors for what cannot be exported or loaded. Every
model shipped in train/builtin_models loads and records where it came from."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("mlflow")

from featurize.schema import SCHEDULE_FEATURES
from ir.target import get_target
from scheduler.cost import CostModelError, load_model
from scheduler.cost.registry import ChampionFallbackWarning
from train import builtin, registry
from train.model import ModelConfig, build_model
from train.registry import log_and_register

HOST = get_target("host")
TAGS = {"dataset_fingerprint": "fp-builtin", "dataset_samples": "960", "dataset_pipelines": "60",
        "val_fraction": "0.2", "min_schedules": "8", "max_spread": "0.25", "loss": "relative_throughput"}


def features(seed: int, stages: int = 3, schedules: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 20, (stages, 40, 7)).astype(np.float32),
            np.exp(rng.uniform(0, 12, (schedules, stages, len(SCHEDULE_FEATURES)))).astype(np.float32))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with schedlab-host version 1 (learned Halide's runtimes), not promoted: no champion."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = registry.tracking_uri(str(root / "mlflow.db"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        mp.setenv("MPLCONFIGDIR", str(root / "mpl"))
        v = log_and_register(build_model(ModelConfig(kind="hybrid"), seed=11), "host", TAGS,
                             {"val_top1_score": 0.91, "val_pairwise_accuracy": 0.83}, features(0), promote=False,
                             tracking=uri, backend="halide")
        (root / "data").mkdir()
        for key, value in {"data": str(root / "data"), "lr": "0.01", "epochs": "7", "tracking_uri": uri}.items():
            registry._client(uri).log_param(v.run_id, key, value)  # as python -m train logs them
    return uri


@pytest.fixture
def shipped(tmp_path, monkeypatch, store):
    """A built-in directory (SCHEDLAB_BUILTIN_MODELS) holding version 1 exported through the CLI."""
    monkeypatch.setenv(builtin.BUILTIN_ENV, str(tmp_path / "builtin"))
    assert builtin.main(["model=models:/schedlab-host/1", f"tracking_uri={store}"]) == 0
    return tmp_path / "builtin" / "host-halide"


def test_export_writes_plain_data_and_lineage(shipped, store):
    assert sorted(p.name for p in shipped.iterdir()) == ["config.json", "lineage.json", "state_dict.pt"]
    lineage = json.loads((shipped / "lineage.json").read_text())
    assert lineage["source"] == "models:/schedlab-host/1"
    assert {k: lineage["tags"][k] for k in TAGS} == TAGS
    assert (lineage["tags"]["target"], lineage["tags"]["backend"]) == ("host", "halide")
    assert float(lineage["tags"]["val_top1_score"]) == 0.91
    assert not any(k.startswith("last_run.") for k in lineage["tags"])
    assert lineage["training_params"]["lr"] == "0.01" and lineage["training_params"]["data"] == lineage["dataset_path"]
    command = builtin.read_builtin(shipped).train_command()
    assert command == f"python -m train data={lineage['dataset_path']} epochs=7 lr=0.01"
    # tensors only: the weights load without unpickling code
    state = torch.load(shipped / "state_dict.pt", weights_only=True)
    assert all(isinstance(v, torch.Tensor) for v in state.values())


def test_builtin_predicts_exactly_as_the_registered_version(shipped, store):
    registered = load_model("models:/schedlab-host/1", HOST, store)
    shipped_model = load_model("builtin", HOST)
    assert (shipped_model.target, shipped_model.backend) == ("host", "halide")
    assert shipped_model.name == "builtin:host-halide (models:/schedlab-host/1)"
    pf, sf = features(3)
    np.testing.assert_array_equal(registered.predict(pf, sf).total, shipped_model.predict(pf, sf).total)
    assert load_model("builtin:host-halide", HOST).name == shipped_model.name
    assert load_model("builtin", HOST, backend="halide").backend == "halide"


def test_champion_falls_back_to_the_builtin_model_then_the_analytical_one(shipped, store, tmp_path, monkeypatch):
    with pytest.warns(ChampionFallbackWarning, match="no models:/schedlab-host@champion .* using the "
                                                     "builtin:host-halide \\(models:/schedlab-host/1\\) model"):
        m = load_model("champion", HOST, store)
    assert m.name.startswith("builtin:host-halide") and m.backend == "halide"
    # a search told to compile with numba: there is no numba built-in model, so the analytical model
    with pytest.warns(ChampionFallbackWarning, match="using the analytical model instead"):
        assert load_model("champion", HOST, store, backend="numba").name == "analytical"
    # a champion of the user's own takes precedence over the built-in model
    mine = registry.tracking_uri(str(tmp_path / "mine.db"))
    log_and_register(build_model(ModelConfig(kind="hybrid"), seed=4), "host", TAGS, {"val_top1_score": 0.5},
                     features(0), promote=True, tracking=mine, backend="halide")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ChampionFallbackWarning)
        assert load_model("champion", HOST, mine).name == "models:/schedlab-host@champion"
    # no built-in models at all: the analytical model, as before
    monkeypatch.setenv(builtin.BUILTIN_ENV, str(tmp_path / "empty"))
    with pytest.warns(ChampionFallbackWarning, match="using the analytical model instead"):
        assert load_model("champion", HOST, store).name == "analytical"


def test_autoschedule_says_it_used_the_builtin_model(shipped, store):
    from generator.random_pipeline import random_pipeline
    from scheduler import autoschedule

    p = random_pipeline(3, max_stages=4, output_size=(32, 24, 3))
    with pytest.warns(ChampionFallbackWarning):
        s = autoschedule(p, "host", tracking=store, beam_size=2, passes=1)
    assert s.stats.model.startswith("builtin:host-halide")
    assert s.backend == "halide"  # the backend the built-in model learned


def test_evaluate_reads_the_split_and_the_data_from_the_lineage(shipped, tmp_path, monkeypatch):
    from evaluate.config import EvalConfig
    from evaluate.models import model_split

    cfg, note = model_split(EvalConfig(model="builtin", split="val", data="unused"))
    assert (cfg.val_fraction, cfg.min_schedules, cfg.max_spread) == (0.2, 8, 0.25)
    assert "held out as in the model's training" in note and cfg.data == "unused"  # data= given: kept
    assert registry.recorded_target(str(shipped)) == ("host", "halide")
    trained_on = builtin.read_builtin(shipped).dataset_path
    assert trained_on.endswith("/data") and builtin.dataset_of(builtin.read_builtin(shipped)) == trained_on
    monkeypatch.chdir(tmp_path)  # no ./data here: python -m evaluate model=builtin scores the shipped dataset
    cfg, note = model_split(EvalConfig(model="builtin", split="val"))
    assert cfg.data == trained_on and "the dataset the built-in model was trained on" in note


def test_bad_exports_and_loads_are_one_line_errors(shipped, store, capsys, tmp_path):
    assert builtin.main(["model=models:/schedlab-host/1", f"tracking_uri={store}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "exists (built from models:/schedlab-host/1): pass replace=true" in err
    before = (shipped / "state_dict.pt").read_bytes()
    assert builtin.main(["model=models:/schedlab-host/1", f"tracking_uri={store}", "replace=true"]) == 0
    assert (shipped / "state_dict.pt").read_bytes() == before
    out = capsys.readouterr().out
    assert "builtin:host-halide (target host, backend halide) written to" in out and "dataset fp-builtin" in out
    for argv, message in ((["model=runs:/abc/model", f"tracking_uri={store}"], "give a registered version"),
                          (["model=models:/schedlab-host/7", f"tracking_uri={store}"], "has no version '7'"),
                          ([f"tracking_uri={store}"], "give model=models:/schedlab-<target>/<version>"),
                          (["model=models:/schedlab-host/1", f"tracking_uri={tmp_path / 'none.db'}"],
                           "no MLflow store")):
        assert builtin.main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and message in err, err
    assert not (tmp_path / "none.db").exists()
    with pytest.raises(CostModelError, match="no built-in model 'host-numba'; built in: builtin:host-halide"):
        load_model("builtin:host-numba", HOST)
    with pytest.raises(CostModelError, match="no built-in cost model for target host on backend numba"):
        load_model("builtin", HOST, backend="numba")


SHIPPED = builtin.builtin_models(builtin.BUILTIN_DIR)


@pytest.mark.parametrize("model", SHIPPED, ids=[m.name for m in SHIPPED])
def test_every_shipped_model_loads_and_records_its_lineage(model, monkeypatch):
    monkeypatch.delenv(builtin.BUILTIN_ENV, raising=False)
    for key in ("dataset_fingerprint", "dataset_samples", "dataset_pipelines", "val_fraction", "val_top1_score",
                "val_pairwise_accuracy", "feature_schema_version"):
        assert model.tags.get(key), key
    m = load_model(f"builtin:{model.path.name}", get_target(model.target))
    pf, sf = features(1)
    assert np.all(np.isfinite(m.predict(pf, sf).total))
    # it can be rebuilt here: its dataset is committed, unchanged, and the lineage says how it was trained
    from train.data import DataConfig, TrainingData

    data = builtin.dataset_of(model)  # one dataset or several, comma-separated
    assert data is not None and all(Path(d).is_relative_to(builtin.REPO) for d in data.split(",")), model.dataset_path
    params = dict(model.training_params)
    stats = TrainingData.load(DataConfig(path=str(data), target=model.target,
                                         val_fraction=float(params["val_fraction"]),
                                         max_spread=float(params["max_spread"]))).stats
    assert stats.fingerprint == model.tags["dataset_fingerprint"] == params["data_fingerprint"]
    command = model.train_command()
    assert f"data={model.dataset_path}" in command and f"model={model.tags['model_kind']}" in command
    assert f"loss={model.tags['loss']}" in command and "lr=" in command and "seed=" in command, command


def test_the_dataset_of_a_model_trained_on_several_is_all_of_them():
    """A model trained on data=A,B records both; dataset_of gives both, absolute, and None when one is missing."""
    several = builtin.BuiltinModel(Path("x"), "host", "halide", "models:/m/1", {},
                                   "datasets/random-host-halide,datasets/random-host-halide-conv")
    assert builtin.dataset_of(several) == (f"{builtin.REPO}/datasets/random-host-halide,"
                                           f"{builtin.REPO}/datasets/random-host-halide-conv")
    missing = dataclasses.replace(several, dataset_path="datasets/random-host-halide,datasets/no-such-dataset")
    assert builtin.dataset_of(missing) is None
