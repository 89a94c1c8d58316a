"""Reading the dataset for training: only ok rows, duplicates merged to their fastest time, small pipelines
skipped, batches of one pipeline, a deterministic split by pipeline, and one-line errors. One small dataset
is generated for real (numba) once for the module; the extra rows each test needs are built from real
pipelines, schedules and features with chosen measurements."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from backends import Measurement
from featurize import featurize
from featurize.dataset import DatasetError, Sample, read_dataset, write_batch
from generator.datagen import BatchSpec, generate_batch, sample_schedules
from generator.random_pipeline import random_pipeline
from ir import LoopNest, Pipeline
from featurize.schema import SCHEDULE_FEATURES, SCHEMA_VERSION
from backends import measuring_machine
from train.data import CostModelDataModule, DataConfig, PipelineBatch, TrainingData, is_validation

SIZE, STAGES = (32, 24, 3), 3


def find_seeds(n_train: int, n_val: int, skip=()) -> list[int]:
    """Seeds of small pipelines, n_val of them on the validation side of the default split."""
    train, val = [], []
    for seed in range(1000):
        if seed in skip:
            continue
        p = random_pipeline(seed, STAGES, SIZE)
        if len(p.funcs) > 4:
            continue  # keep compiles cheap
        side = val if is_validation(p.fingerprint, DataConfig("x").val_fraction) else train
        if len(side) < (n_val if side is val else n_train):
            side.append(seed)
        if len(train) == n_train and len(val) == n_val:
            return train + val
    raise AssertionError("no seeds found")


SEEDS = find_seeds(2, 1)  # 2 training pipelines and 1 validation pipeline


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    spec = BatchSpec(seeds=tuple(SEEDS), schedules_per_pipeline=4, max_stages=STAGES, output_size=SIZE)
    summary = generate_batch(spec, root)
    assert summary.ok >= 10, summary
    return root


@pytest.fixture
def root(dataset, tmp_path):
    """A private copy of the module's dataset that a test may add batches to."""
    shutil.copytree(dataset, tmp_path / "data")
    return tmp_path / "data"


def config(root, **kw) -> DataConfig:
    return DataConfig(str(root), **{"min_schedules": 3, **kw})


def synthetic(seed: int, runtimes, status: str = "ok", schedule_seed: int = 0) -> list[Sample]:
    """Real samples of pipeline `seed` (its first schedules as the generator samples them) with chosen times."""
    spec = BatchSpec(seeds=(seed,), schedules_per_pipeline=len(runtimes), max_stages=STAGES, output_size=SIZE,
                     schedule_seed=schedule_seed)
    p = random_pipeline(seed, STAGES, SIZE)
    out = []
    for (name, ln), t in zip(sample_schedules(p, spec, seed), runtimes):
        m = Measurement("ok", t, t, 0.0, 3, 3, 0.1) if status == "ok" else Measurement(status, error="failed")
        out.append(Sample.build(p, ln, featurize(p, ln), m, sampler=name))
    return out


def by_schedule(data: TrainingData) -> dict[tuple[str, str], float]:
    return {(b.pipeline_id, s): float(t) for b in data.train + data.val for s, t in zip(b.schedule_ids, b.runtimes)}


def test_batches_are_one_pipeline_s_schedules_with_their_features(root):
    data = TrainingData.load(config(root))
    ds = read_dataset(root, "host")
    ok = {r["sample_id"]: r for r in ds.samples.iter_rows(named=True) if r["status"] == "ok"}
    assert data.stats.train_samples + data.stats.val_samples == len(ok)
    # generate_batch recorded this host in every file; the stats (and the run's params and tags) say so
    here = f"{measuring_machine()} ({len(ds.files)} files)"
    assert data.stats.machines == here and f"measured on {here}" in str(data.stats)
    for b in data.train + data.val:
        assert isinstance(b, PipelineBatch) and len(b) == len(set(b.schedule_ids)) >= 3
        s = b.pipeline_features.shape[0]
        assert b.pipeline_features.shape == (s, 40, 7) and b.pipeline_features.dtype == torch.float32
        assert b.schedule_features.shape == (len(b), s, len(SCHEDULE_FEATURES))
        assert b.schedule_features.dtype == torch.float32
        assert b.runtimes.shape == (len(b),) and b.runtimes.dtype == torch.float64
        for i, sid in enumerate(b.schedule_ids):
            row = ok[f"{b.pipeline_id}-{sid}"]
            assert b.runtimes[i].item() == row["runtime_s"]
            p = Pipeline.from_json(json.loads(row["pipeline_json"]))
            f = featurize(p, LoopNest.loads(row["schedule_json"]))
            assert np.array_equal(b.schedule_features[i].numpy(), f.schedule)
            assert np.array_equal(b.pipeline_features.numpy(), f.pipeline)


def test_the_split_is_by_pipeline_deterministic_and_independent_of_the_seed(root):
    data = TrainingData.load(config(root))
    train, val = {b.pipeline_id for b in data.train}, {b.pipeline_id for b in data.val}
    assert train and val and not train & val
    assert all(is_validation(p, 0.125) for p in val) and not any(is_validation(p, 0.125) for p in train)
    assert (data.stats.train_pipelines, data.stats.val_pipelines) == (2, 1)
    for again in (TrainingData.load(config(root)), TrainingData.load(config(root, seed=7))):
        assert [(b.pipeline_id, b.schedule_ids) for b in again.train] == [(b.pipeline_id, b.schedule_ids)
                                                                          for b in data.train]
        assert [b.pipeline_id for b in again.val] == [b.pipeline_id for b in data.val]
        assert all(torch.equal(a.schedule_features, b.schedule_features) for a, b in zip(again.train, data.train))
        assert again.stats.fingerprint == data.stats.fingerprint


def test_failed_rows_are_dropped_and_do_not_change_the_fingerprint(root):
    before = TrainingData.load(config(root))
    seed = SEEDS[0]
    write_batch(root, "host", "failed", synthetic(seed, [0.0] * 6, status="compile_error", schedule_seed=9))
    after = TrainingData.load(config(root))
    assert after.stats.failed_dropped == before.stats.failed_dropped + 6
    assert by_schedule(after) == by_schedule(before) and after.stats.fingerprint == before.stats.fingerprint


def test_duplicate_schedules_are_merged_to_the_minimum_runtime(root):
    first = TrainingData.load(config(root))
    before = by_schedule(first)
    (pid, sid), t = next(iter(before.items()))
    row = read_dataset(root, "host").samples.filter(sample_id=f"{pid}-{sid}").row(0, named=True)
    p, ln = Pipeline.from_json(json.loads(row["pipeline_json"])), LoopNest.loads(row["schedule_json"])
    f = featurize(p, ln)
    again = [Sample.build(p, ln, f, Measurement("ok", v, v, 0.0, 3, 3)) for v in (2 * t, t / 4, 3 * t)]
    write_batch(root, "host", "remeasured", again)
    data = TrainingData.load(config(root))
    after = by_schedule(data)
    assert after[(pid, sid)] == t / 4 and len(after) == len(before)
    assert {k: v for k, v in after.items() if k != (pid, sid)} == {k: v for k, v in before.items() if k != (pid, sid)}
    assert data.stats.duplicates_merged == 3 and data.stats.fingerprint != first.stats.fingerprint


def test_pipelines_with_too_few_schedules_are_skipped(root):
    small = find_seeds(1, 0, skip=SEEDS)[0]
    write_batch(root, "host", "small", synthetic(small, [1e-3, 2e-3]))
    pid = random_pipeline(small, STAGES, SIZE).fingerprint
    data = TrainingData.load(config(root))
    assert pid not in {b.pipeline_id for b in data.train + data.val}
    assert (data.stats.pipelines_skipped, data.stats.schedules_skipped) == (1, 2)
    assert data.stats.machines.endswith(" | not recorded (1 files)")  # write_batch was given no machine
    data = TrainingData.load(config(root, min_schedules=2))
    assert pid in {b.pipeline_id for b in data.train} and data.stats.pipelines_skipped == 0


def test_large_pipelines_are_chunked_deterministically(root):
    whole = TrainingData.load(config(root))
    data = TrainingData.load(config(root, batch_size=3))
    for pid in {b.pipeline_id for b in whole.train}:
        parts = [b for b in data.train if b.pipeline_id == pid]
        full = next(b for b in whole.train if b.pipeline_id == pid)
        assert len(parts) == -(-len(full) // 3) and all(len(b) <= 3 for b in parts)
        assert max(len(b) for b in parts) - min(len(b) for b in parts) <= 1, "near-equal chunks"
        assert [s for b in parts for s in b.schedule_ids] == full.schedule_ids
        assert torch.equal(torch.cat([b.runtimes for b in parts]), full.runtimes)
    assert data.stats.train_batches == len(data.train) > whole.stats.train_batches


def test_a_dataset_too_small_to_split_is_a_one_line_error(root, tmp_path):
    with pytest.raises(DatasetError) as e:
        TrainingData.load(config(root, min_schedules=50))
    assert "0 pipelines with >= 50 ok schedules" in str(e.value) and "\n" not in str(e.value)
    only_train = tmp_path / "only-train"
    write_batch(only_train, "host", "one", synthetic(SEEDS[0], [1e-3, 2e-3, 3e-3]))
    with pytest.raises(DatasetError) as e:
        TrainingData.load(config(only_train))
    assert "1 pipelines with >= 3 ok schedules (1 for training, 0 for validation" in str(e.value)
    assert "\n" not in str(e.value)
    assert TrainingData.load(config(only_train, val_fraction=0.0)).stats.train_pipelines == 1


def test_reader_errors_pass_through_as_one_line(root, tmp_path):
    for cfg, message in [(config(tmp_path), "holds no dataset"), (config(root, target="avx2-8core"), "has no data")]:
        with pytest.raises(DatasetError, match=message) as e:
            TrainingData.load(cfg)
        assert "\n" not in str(e.value)
    with pytest.raises(DatasetError, match="val_fraction"):
        DataConfig("x", val_fraction=1.0)


def test_the_datamodule_shuffles_training_batches_per_epoch_and_trains(root):
    import lightning as L

    data = TrainingData.load(config(root, batch_size=1))
    dm = CostModelDataModule(data)
    loader = dm.train_dataloader()
    key = [b.schedule_ids[0] for b in data.train]
    epochs = []
    for epoch in (0, 1, 0):
        loader.sampler.set_epoch(epoch)
        items = list(loader)
        assert all(isinstance(b, PipelineBatch) for b in items)
        epochs.append([b.schedule_ids[0] for b in items])
        assert sorted(epochs[-1]) == sorted(key)
    assert epochs[0] == epochs[2] != epochs[1]
    assert [b.schedule_ids for b in dm.val_dataloader()] == [b.schedule_ids for b in data.val]
    assert CostModelDataModule(config(root, batch_size=1)).train_dataloader().sampler.n == len(data.train)

    class Mean(L.LightningModule):  # the smallest model that consumes PipelineBatches
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(len(SCHEDULE_FEATURES), 1)
            self.seen = []

        def training_step(self, batch, _):
            self.seen.append(batch.schedule_ids[0])
            pred = self.w(batch.schedule_features).sum(dim=(1, 2))
            return ((pred - torch.log(batch.runtimes).float()) ** 2).mean()

        def validation_step(self, batch, _):
            self.log("val", self.w(batch.schedule_features).mean(), batch_size=len(batch))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=1e-3)

    model = Mean()
    L.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False, num_sanity_val_steps=0).fit(model, datamodule=CostModelDataModule(data))
    assert model.seen == epochs[0] + epochs[1], "Lightning's epochs are the sampler's epochs 0 and 1"


def test_the_validation_hash_holds_out_the_asked_fraction():
    ids = [f"{i:016x}" for i in range(4000)]
    for fraction in (0.0, 0.125, 0.5):
        held = sum(is_validation(i, fraction) for i in ids) / len(ids)
        assert abs(held - fraction) < 0.03
    assert [is_validation(i, 0.125) for i in ids[:50]] == [is_validation(i, 0.125) for i in ids[:50]]


def two_backends(root) -> dict[tuple[str, str], float]:
    """Add halide rows for exactly the schedules the numba rows hold (same pipelines, schedules and features),
    with runtimes 3 times numba's for every other row and a quarter of it for the rest (so pooling by minimum
    would show on both sides); returns the halide times by schedule."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    halide = {}
    for f in sorted((root / "target=host").glob("batch-*.parquet")):
        t = pq.read_table(f)
        rt = pc.multiply(t["runtime_s"], pa.array([3.0 if i % 2 else 0.25 for i in range(t.num_rows)]))
        t = t.set_column(t.schema.get_field_index("backend"), "backend", pa.array(["halide"] * t.num_rows))
        t = t.set_column(t.schema.get_field_index("runtime_s"), t.schema.field("runtime_s"), rt)
        pq.write_table(t, f.with_name(f.stem + "-halide.parquet"))
        for r in t.select(["pipeline_id", "schedule_id", "status", "runtime_s"]).to_pylist():
            if r["status"] == "ok":
                halide[(r["pipeline_id"], r["schedule_id"])] = r["runtime_s"]
    return halide


def test_two_backends_are_selected_one_at_a_time_and_never_pooled(root):
    numba = by_schedule(TrainingData.load(config(root)))
    halide = two_backends(root)
    assert set(halide) >= set(numba)
    with pytest.raises(DatasetError, match="holds runtimes of backends halide, numba; name the one") as e:
        TrainingData.load(config(root))
    assert "\n" not in str(e.value)
    with pytest.raises(DatasetError, match="no runtimes of backend 'cuda'; it has halide, numba"):
        TrainingData.load(config(root, backend="cuda"))
    on_numba = TrainingData.load(config(root, backend="numba"))
    on_halide = TrainingData.load(config(root, backend="halide"))
    assert by_schedule(on_numba) == numba  # no faster halide time folded in
    assert by_schedule(on_halide) == {k: halide[k] for k in numba}  # no faster numba time either
    assert any(halide[k] < t for k, t in numba.items()) and any(halide[k] > t for k, t in numba.items())
    assert on_numba.stats.backend == "numba" and on_halide.stats.backend == "halide"
    assert on_numba.stats.duplicates_merged == 0 and on_halide.stats.duplicates_merged == 0
    assert on_numba.stats.other_backends_dropped == on_halide.stats.other_backends_dropped > 0
    assert on_numba.stats.fingerprint != on_halide.stats.fingerprint


def test_two_backends_train_two_models_with_different_fingerprints(root, tmp_path):
    import mlflow

    from train.config import TrainConfig
    from train.run import train

    two_backends(root)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    results = {b: train(TrainConfig(data=str(root), backend=b, epochs=1, min_schedules=3, tracking_uri=uri,
                                    checkpoint_dir=str(tmp_path / "ckpt"), progress=False, experiment="two"))
               for b in ("numba", "halide")}
    params = {b: mlflow.MlflowClient(uri).get_run(r.run_id).data.params for b, r in results.items()}
    assert params["numba"]["dataset_backend"] == "numba" and params["halide"]["dataset_backend"] == "halide"
    assert params["numba"]["data_fingerprint"] != params["halide"]["data_fingerprint"]
    assert params["numba"]["feature_schema"] == "cpu-adams2019"
    assert params["numba"]["feature_schema_version"] == str(SCHEMA_VERSION)
    versions = {b: r.registered for b, r in results.items()}
    assert versions["numba"].version != versions["halide"].version
    client = mlflow.MlflowClient(uri, registry_uri=uri)
    for b, v in versions.items():
        tags = client.get_model_version(v.name, v.version).tags
        assert tags["dataset_backend"] == b and tags["feature_schema"] == "cpu-adams2019"
        assert tags["dataset_fingerprint"] == params[b]["data_fingerprint"]


def test_a_model_for_another_schema_is_refused_by_the_data(root):
    from dataclasses import replace

    from featurize.schema import CPU_ADAMS2019, SchemaError

    data = TrainingData.load(config(root))
    assert data.schema is CPU_ADAMS2019
    data.check_schema(CPU_ADAMS2019)
    with pytest.raises(SchemaError, match=f"has feature schema cpu-adams2019@{SCHEMA_VERSION}, "
                                          f"expected cpu-adams2019@{SCHEMA_VERSION + 1}") as e:
        data.check_schema(replace(CPU_ADAMS2019, version=SCHEMA_VERSION + 1))
    assert "\n" not in str(e.value)


def test_a_v1_dataset_file_trains_once_refeaturized(tmp_path):
    """tests/fixtures/dataset_v1 was written by schedlab before schemas had names (main's datagen, version 1):
    refused by the trainer with one line, it trains at the current width once re-featurized."""
    import shutil
    from pathlib import Path

    import pyarrow.parquet as pq

    from featurize.dataset import META_SCHEMA_NAME
    from featurize.refeaturize import refeaturize_dataset

    fixture = Path(__file__).parent / "fixtures" / "dataset_v1"
    (f,) = (fixture / "target=host").glob("batch-*.parquet")
    assert META_SCHEMA_NAME not in pq.read_schema(f).metadata
    with pytest.raises(DatasetError, match="re-featurize it"):
        TrainingData.load(DataConfig(str(fixture), min_schedules=2, val_fraction=0.0))
    root = tmp_path / "v1"
    shutil.copytree(fixture, root)
    assert "1 of 1 files re-featurized" in refeaturize_dataset(root).report()
    data = TrainingData.load(DataConfig(str(root), min_schedules=2, val_fraction=0.0))
    assert data.schema.name == "cpu-adams2019" and data.stats.backend == "numba"
    assert data.stats.train_pipelines == 2 and data.stats.train_samples == 8
    for b in data.train:
        assert b.pipeline_features.shape[1:] == (40, 7) and b.schedule_features.shape[2] == len(SCHEDULE_FEATURES)



def test_labels_noisier_than_max_spread_are_dropped(root):
    """A duplicate of a known schedule measured faster but with a 50 % spread must not become its label under
    max_spread=0.25, and must without the filter (the merge takes the minimum). The fixture's own labels were
    measured for real, so some may already be that noisy on a busy machine: the counts are relative to them."""
    keep = TrainingData.load(config(root, max_spread=0.25))
    before = keep.stats.noisy_dropped
    (pid, sid), t = next(iter(by_schedule(keep).items()))
    row = read_dataset(root, "host").samples.filter(sample_id=f"{pid}-{sid}").row(0, named=True)
    p, ln = Pipeline.from_json(json.loads(row["pipeline_json"])), LoopNest.loads(row["schedule_json"])
    noisy = Sample.build(p, ln, featurize(p, ln), Measurement("ok", t / 2, t, 0.5, 5, 5, 0.1))
    write_batch(root, "host", "noisy", [noisy])
    everything = TrainingData.load(config(root))
    assert by_schedule(everything)[(pid, sid)] == t / 2 and everything.stats.noisy_dropped == 0
    clean = TrainingData.load(config(root, max_spread=0.25))
    assert by_schedule(clean)[(pid, sid)] == t and clean.stats.noisy_dropped == before + 1
    assert f"{before + 1} with a label spread above max_spread" in str(clean.stats)
    with pytest.raises(DatasetError, match="max_spread must be > 0"):
        config(root, max_spread=0.0)
