"""The Parquet dataset: exact round trip through polars, atomic batches under a killed writer, refusal of
mismatched schema versions and targets, and rows that must not be trained on."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from backends import Measurement
from featurize import featurize
from featurize.dataset import META_VERSION, DatasetError, Sample, batch_path, partition_dir, read_dataset, write_batch
from featurize.schema import SCHEDULE_FEATURES, SCHEMA_VERSION
from ir import LoopNest, Pipeline
from ir.sampling import random_schedule
from ir.target import host_target

from .fuzz_pipelines import random_test_pipeline

ROOT = Path(__file__).resolve().parent.parent


def make_samples(seed: int, n: int = 4) -> list[Sample]:
    p = random_test_pipeline(seed)
    out = []
    for k in range(n):
        ln, _ = random_schedule(p, 100 * seed + k)
        m = Measurement("ok", 1e-3 * (k + 1), 1.2e-3 * (k + 1), 0.02, 5, 40, 0.7) if k % 3 != 2 else \
            Measurement("timeout", error="no answer within 60 s", compile_s=0.5)
        out.append(Sample.build(p, ln, featurize(p, ln), m, round=1, model_version="v3", sampler="dropout"))
    return out


def test_round_trip_is_exact(tmp_path):
    batches = {f"{b:04d}": make_samples(b) for b in range(3)}
    for bid, samples in batches.items():
        path = write_batch(tmp_path, "host", bid, samples)
        assert path == partition_dir(tmp_path, "host") / f"batch-{bid}.parquet"
    ds = read_dataset(tmp_path, "host")
    assert ds.rejected.height == 0 and len(ds.files) == 3
    expected = [s for samples in batches.values() for s in samples]
    assert ds.samples.height == len(expected)
    rows = {r["sample_id"]: r for r in ds.samples.iter_rows(named=True)}
    for s in expected:
        r = rows[s.sample_id]
        assert r["status"] == s.status and r["round"] == 1 and r["model_version"] == "v3"
        assert r["pipeline_json"] == s.pipeline_json and r["schedule_json"] == s.schedule_json
        if s.status == "ok":
            assert r["runtime_s"] == s.runtime_s and r["median_s"] == s.median_s
        else:
            assert r["runtime_s"] is None and r["error"] == s.error
        # every sample can be rebuilt and recompiled from the row
        p = Pipeline.from_json(__import__("json").loads(r["pipeline_json"]))
        assert p.fingerprint == s.pipeline_id and LoopNest.loads(r["schedule_json"]).fingerprint == s.schedule_id
        st = ds.stages.filter(ds.stages["sample_id"] == s.sample_id).sort("stage_pos")
        assert list(zip(st["func"], st["stage_index"])) == s.stages
        got = np.stack([st[f"s_{n}"].to_numpy() for n in SCHEDULE_FEATURES], axis=1).astype(np.float32)
        assert np.array_equal(got, s.schedule_features)
        pf = np.stack(st["pipeline_features"].to_list()).astype(np.float32).reshape(s.pipeline_features.shape)
        assert np.array_equal(pf, s.pipeline_features)


def test_a_batch_is_written_once(tmp_path):
    samples = make_samples(5, 2)
    p1 = write_batch(tmp_path, "host", "0007", samples)
    mtime = p1.stat().st_mtime_ns
    assert write_batch(tmp_path, "host", "0007", make_samples(6, 3)) == p1
    assert p1.stat().st_mtime_ns == mtime and read_dataset(tmp_path, "host").samples.height == 2


WRITER = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, {root!r})
    from featurize.dataset import Sample, write_batch
    from featurize.schema import SCHEDULE_FEATURES
    n, rng = 40, np.random.default_rng(0)
    samples = [Sample("p", "{{}}", f"s{{i}}", "{{}}", "ok", 1e-3, stages=[("f", 0)] * n, inlined=[False] * n,
                      schedule_features=rng.random((n, len(SCHEDULE_FEATURES)), np.float32),
                      pipeline_features=rng.random((n, 40, 7), np.float32)) for i in range(3000)]
    write_batch(sys.argv[1], "host", "0001", samples, row_group_size=16)
""")


def test_an_interrupted_writer_leaves_no_partial_batch(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT)))
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "data")])
    part = partition_dir(tmp_path / "data", "host")
    deadline = time.time() + 300
    while time.time() < deadline and not list(part.glob(".*.tmp")):
        if proc.poll() is not None:
            pytest.fail("the writer finished before it could be interrupted; make the batch larger")
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    final = batch_path(tmp_path / "data", "host", "0001")
    assert not final.exists()
    assert list(part.glob(".*.tmp")), "the killed writer's temporary file is left behind"
    with pytest.raises(DatasetError, match="holds no dataset"):
        read_dataset(tmp_path / "data", "host")  # readers never see the temporary
    write_batch(tmp_path / "data", "host", "0001", make_samples(2, 2))  # the rerun completes the batch
    assert final.exists() and not list(part.glob(".*.tmp"))  # and cleans up after the dead writer
    assert read_dataset(tmp_path / "data", "host").samples.height == 2


def test_mismatches_are_refused_with_one_line(tmp_path):
    with pytest.raises(DatasetError, match="holds no dataset"):
        read_dataset(tmp_path, "host")
    path = write_batch(tmp_path, "host", "0001", make_samples(1, 2))
    with pytest.raises(DatasetError, match="no data for target 'v100'; it has host"):
        read_dataset(tmp_path, "v100")
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    meta[META_VERSION] = b"0"
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(DatasetError, match=f"feature schema version 0, this schedlab uses {SCHEMA_VERSION}") as e:
        read_dataset(tmp_path, "host")
    assert "\n" not in str(e.value)
    with pytest.raises(DatasetError, match="batch id"):
        write_batch(tmp_path, "host", "a/b", [])


def test_rows_that_cannot_be_trained_on_are_reported_and_excluded(tmp_path):
    samples = make_samples(3, 5)
    ok = [s for s in samples if s.status == "ok"]
    ok[0].schedule_features = ok[0].schedule_features.copy()
    ok[0].schedule_features[0, 3] = np.nan
    ok[1].runtime_s = 250.0
    ok[2].pipeline_features = ok[2].pipeline_features.copy()
    ok[2].pipeline_features[0, 0, 0] = -1
    write_batch(tmp_path, "host", "0001", samples)
    ds = read_dataset(tmp_path, "host")
    reasons = dict(ds.rejected.iter_rows())
    assert reasons[ok[0].sample_id].startswith("schedule feature")
    assert reasons[ok[1].sample_id].startswith("runtime")
    assert reasons[ok[2].sample_id].startswith("pipeline feature")
    assert ds.samples.height == len(samples) - 3
    assert set(ds.stages["sample_id"].unique()) == set(ds.samples["sample_id"])
    assert "3 rejected" in ds.report()
    assert not {s.sample_id for s in ok[:3]} & set(ds.samples["sample_id"])  # the NaN, slow and negative rows


V1 = ROOT / "tests" / "fixtures" / "dataset_v1"


def test_files_record_the_schema_name_and_version_and_a_mismatch_is_refused(tmp_path):
    from dataclasses import replace

    from featurize.dataset import META_SCHEMA_NAME
    from featurize.schema import CPU_ADAMS2019, FeatureDef, FeatureSchema

    path = write_batch(tmp_path, "host", "0001", make_samples(1, 2))
    meta = pq.read_schema(path).metadata
    assert meta[META_SCHEMA_NAME] == b"cpu-adams2019" and meta[META_VERSION] == str(SCHEMA_VERSION).encode()
    assert read_dataset(tmp_path, "host").schema is CPU_ADAMS2019
    gpu = FeatureSchema("gpu-test", 1, (FeatureDef("r", "a row"),), (FeatureDef("c", "a column"),),
                        (FeatureDef("x", "a feature"),))
    with pytest.raises(DatasetError, match="has feature schema cpu-adams2019, expected gpu-test") as e:
        read_dataset(tmp_path, "host", schema=gpu)
    assert "\n" not in str(e.value)
    newer = SCHEMA_VERSION + 1
    with pytest.raises(DatasetError, match=f"version {SCHEMA_VERSION}, this schedlab uses {newer} for cpu-adams2019"):
        read_dataset(tmp_path, "host", schema=replace(CPU_ADAMS2019, version=SCHEMA_VERSION + 1))
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, META_SCHEMA_NAME: b"gpu-nope"}), path)
    with pytest.raises(DatasetError, match="unknown feature schema 'gpu-nope'; registered: cpu-adams2019") as e:
        read_dataset(tmp_path, "host")
    assert "\n" not in str(e.value)


def test_a_v1_dataset_file_is_refused_until_refeaturized_and_then_reads_with_its_labels(tmp_path):
    """Written by schedlab's datagen before schemas had names (version 1, 39 features): the reader refuses it with
    one line naming the command that migrates it; `generator.dataset refeaturize` recomputes its rows' features
    from their pipelines and LoopNests, for the machine that wrote it (AVX-512: no machine line, so the width that
    reproduces the stored features is found), keeping every version-1 feature and every label as stored."""
    import shutil

    import polars as pl

    from featurize.dataset import META_SCHEMA_NAME

    (f,) = partition_dir(V1, "host").glob("batch-*.parquet")
    assert META_SCHEMA_NAME not in pq.read_schema(f).metadata and f.stat().st_size < 200_000
    with pytest.raises(DatasetError, match="version 1, this schedlab uses 2 .*python -m generator.dataset "
                                           "refeaturize") as e:
        read_dataset(V1, "host")
    assert "\n" not in str(e.value)
    old = pl.read_parquet(f)
    root = tmp_path / "v1"
    shutil.copytree(V1, root)
    out = subprocess.run([sys.executable, "-m", "generator.dataset", "refeaturize", f"data={root}"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "1 of 1 files re-featurized under cpu-adams2019@2 (8 samples)" in out.stdout
    assert "64-byte vectors" in out.stdout
    ds = read_dataset(root, "host")
    assert ds.schema.name == "cpu-adams2019" and ds.rejected.height == 0 and ds.samples.height == 8
    new = pl.read_parquet(next(partition_dir(root, "host").glob("batch-*.parquet")))
    assert new["runtime_s"].to_list() == old["runtime_s"].to_list()
    assert new["sample_id"].to_list() == old["sample_id"].to_list()
    box = SCHEDULE_FEATURES.index("unique_bytes_read_per_realization")
    for before, after in zip(old["schedule_features"].to_list(), new["schedule_features"].to_list()):
        b, a = np.array(before, np.float32), np.array(after, np.float32)
        assert b.shape[1] == 39 and a.shape[1] == len(SCHEDULE_FEATURES) == 41
        assert np.array_equal(a[:, :39], b)
        assert (a[:, 39] <= a[:, box]).all()
    # rows still rebuild and re-featurize to what is stored, on the machine it was written on
    writer = dataclasses.replace(host_target(), vector_bytes=64)
    for r in ds.samples.iter_rows(named=True):
        p = Pipeline.from_json(__import__("json").loads(r["pipeline_json"]))
        f = featurize(p, LoopNest.loads(r["schedule_json"]), writer)
        st = ds.stages.filter(ds.stages["sample_id"] == r["sample_id"]).sort("stage_pos")
        got = np.stack([st[f"s_{n}"].to_numpy() for n in SCHEDULE_FEATURES], axis=1).astype(np.float32)
        assert np.array_equal(got, f.schedule)
    again = subprocess.run([sys.executable, "-m", "generator.dataset", "refeaturize", f"data={root}"],
                           capture_output=True, text=True, cwd=ROOT)
    assert again.returncode == 0 and "0 of 1 files re-featurized" in again.stdout
    assert "1 already under it" in again.stdout


def test_a_file_whose_stored_features_do_not_come_back_is_left_as_it_was(tmp_path):
    """Re-featurizing must never change the features a model was trained on: a row whose version-1 features are
    not reproduced (here: tampered with) fails the file with one line naming it and the sample, and the file
    on disk is the same bytes as before."""
    import shutil

    import pyarrow as pa

    root = tmp_path / "v1"
    shutil.copytree(V1, root)
    (f,) = partition_dir(root, "host").glob("batch-*.parquet")
    table = pq.read_table(f)
    feats = table.column("schedule_features").to_pylist()
    feats[3][0][0] += 1.0
    table = table.set_column(table.schema.get_field_index("schedule_features"), "schedule_features",
                             pa.array(feats, type=table.schema.field("schedule_features").type))
    pq.write_table(table, f)
    before = f.read_bytes()
    out = subprocess.run([sys.executable, "-m", "generator.dataset", "refeaturize", f"data={root}"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f.name in out.stderr and "the file was left as it was" in out.stderr and "sample" in out.stderr
    assert f.read_bytes() == before



def test_several_roots_read_as_one_dataset(tmp_path):
    """Datasets made by separate jobs (e.g. datasets/random-host-halide and its -contrasts sibling) train together:
    `data=a,b` reads every batch of both; a root with no batches is still a one-line error naming it."""
    a, b = tmp_path / "a", tmp_path / "b"
    write_batch(a, "host", "0001", make_samples(1))
    write_batch(b, "host", "0002", make_samples(2))
    both = read_dataset(f"{a},{b}", "host")
    assert len(both.files) == 2
    assert both.samples.height == read_dataset(a, "host").samples.height + read_dataset(b, "host").samples.height
    with pytest.raises(DatasetError, match="holds no dataset") as e:
        read_dataset(f"{a},{tmp_path / 'empty'}", "host")
    assert str(tmp_path / "empty") in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(DatasetError, match="no dataset root given"):
        read_dataset(" , ", "host")
