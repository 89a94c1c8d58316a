"""Local data generation: deterministic pipelines and schedules, one atomic Parquet batch per spec that a
rerun never duplicates, failures kept as rows with their status, and the command line. One tiny batch is
compiled and measured for real (numba) once for the module."""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from backends import STATUSES
from featurize import featurize
from featurize.dataset import batch_path, read_dataset
from generator import datagen
from generator.datagen import BatchSpec, generate_batch, sample_schedules
from generator.random_pipeline import random_pipeline
from ir import LoopNest, Pipeline

# 3 Funcs per pipeline at 32 x 24: about 1-3 s per schedule to compile cold on 2 cores, milliseconds cached.
SPEC = BatchSpec(seeds=(1, 2), schedules_per_pipeline=5, max_stages=3, output_size=(32, 24, 3))


def pipeline_of(spec: BatchSpec, seed: int):
    return random_pipeline(seed, spec.max_stages, spec.output_size, spec.markov)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    calls = []
    t0 = time.perf_counter()
    summary = generate_batch(SPEC, root, progress=lambda done, total, note: calls.append((done, total, note)))
    return root, summary, calls, time.perf_counter() - t0


def rows(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


# -- sampling, without measuring ------------------------------------------------------------------------


def test_same_spec_gives_the_same_pipelines_and_distinct_schedules():
    spec = BatchSpec(seeds=(0, 3, 5), schedules_per_pipeline=8, max_stages=4, output_size=(32, 24, 3))
    for seed in spec.seeds:
        first = sample_schedules(pipeline_of(spec, seed), spec, seed)
        again = sample_schedules(pipeline_of(spec, seed), spec, seed)
        assert pipeline_of(spec, seed).fingerprint == pipeline_of(spec, seed).fingerprint
        prints = [ln.fingerprint for _, ln in first]
        assert prints == [ln.fingerprint for _, ln in again]
        assert len(set(prints)) == len(prints) == spec.schedules_per_pipeline
        assert [name for name, _ in first[:2]] == ["naive", "simple"]
        assert {name for name, _ in first[2:]} == {"random"}
    other = dataclasses.replace(spec, schedule_seed=1)
    p = pipeline_of(spec, 0)
    assert [ln.fingerprint for _, ln in sample_schedules(p, spec, 0)][2:] != \
        [ln.fingerprint for _, ln in sample_schedules(p, other, 0)][2:]


def test_schedules_are_deduplicated_by_fingerprint():
    """A one-Func 1x1 pipeline: about half of the random draws repeat an earlier schedule or a baseline."""
    spec = BatchSpec(seeds=(1,), schedules_per_pipeline=16, max_stages=2, output_size=(1, 1, 1))
    got = sample_schedules(pipeline_of(spec, 1), spec, 1)
    assert len({ln.fingerprint for _, ln in got}) == len(got) == 16


def test_batch_id_is_a_stable_function_of_the_spec():
    assert SPEC.batch_id == BatchSpec(seeds=[1, 2], schedules_per_pipeline=5, max_stages=3,
                                      output_size=[32, 24, 3]).batch_id
    assert SPEC.batch_id == "".join(SPEC.batch_id)  # a plain string, usable as a file name
    variants = [dataclasses.replace(SPEC, **{k: v}) for k, v in
                [("seeds", (2, 1)), ("schedules_per_pipeline", 6), ("schedule_seed", 1), ("markov", True),
                 ("output_size", (32, 24, 1)), ("protocol", "default")]]
    assert len({v.batch_id for v in variants} | {SPEC.batch_id}) == len(variants) + 1


def test_bad_specs_are_refused():
    with pytest.raises(ValueError, match="protocol"):
        BatchSpec(seeds=(1,), protocol="slow")
    with pytest.raises(ValueError, match="at least one"):
        BatchSpec(seeds=())


# -- one real batch -------------------------------------------------------------------------------------


def test_a_batch_is_one_file_of_the_spec_s_schedules(generated):
    root, summary, calls, seconds = generated
    path = batch_path(root, "host", SPEC.batch_id)
    assert summary.path == path and path.exists() and not summary.reused
    assert summary.pipelines == 2 and summary.schedules == 10 and summary.pipelines_skipped == 0
    assert summary.ok + sum(summary.failed_by_status.values()) == 10
    table = rows(path)
    assert len(table) == 10 and {r["batch_id"] for r in table} == {SPEC.batch_id}
    for seed in SPEC.seeds:
        p = pipeline_of(SPEC, seed)
        mine = [r for r in table if r["pipeline_id"] == p.fingerprint]
        expected = sample_schedules(p, SPEC, seed)
        assert [r["schedule_id"] for r in mine] == [ln.fingerprint for _, ln in expected]
        assert [r["sampler"] for r in mine] == [name for name, _ in expected]
        for r in mine:
            assert r["status"] in STATUSES and r["backend"] == "numba"
            assert (r["status"] == "ok") == (r["runtime_s"] is not None and r["runtime_s"] > 0)
        assert {r["status"] for r in mine[:2]} == {"ok"}, "the baselines compile and match the interpreter"
    assert sum(r["status"] == "ok" for r in table) == summary.ok
    assert str(summary).startswith(f"batch {SPEC.batch_id}: 2 pipelines, 10 schedules")
    print(f"\n{summary} ({seconds / 10:.2f} s per schedule)")


def test_rows_recompile_to_their_features(generated):
    root, _, _, _ = generated
    r = rows(batch_path(root, "host", SPEC.batch_id))[-1]
    p = Pipeline.from_json(json.loads(r["pipeline_json"]))
    f = featurize(p, LoopNest.loads(r["schedule_json"]))
    assert np.array_equal(np.asarray(r["schedule_features"], np.float32), f.schedule)
    assert np.array_equal(np.asarray(r["pipeline_features"], np.float32), f.pipeline.reshape(len(f.stages), -1))


def test_progress_is_reported_per_schedule(generated):
    _, _, calls, _ = generated
    assert [d for d, _, _ in calls] == list(range(1, 11))
    assert calls[-1][1] == 10 and all("seed" in note for _, _, note in calls)


def test_a_rerun_never_duplicates_rows(generated, tmp_path):
    root, summary, _, _ = generated
    path = summary.path
    stamp = path.stat().st_mtime_ns
    again = generate_batch(SPEC, root)
    assert again.reused and again.path == path and path.stat().st_mtime_ns == stamp
    assert (again.schedules, again.ok, again.failed_by_status) == (10, summary.ok, summary.failed_by_status)
    redone = generate_batch(SPEC, root, overwrite=True)  # compiled kernels come from the disk cache
    assert not redone.reused and path.stat().st_mtime_ns != stamp
    assert sorted(path.parent.iterdir()) == [path], "no temporaries or second files left behind"
    ds = read_dataset(root, "host")
    assert ds.samples.height == 10 and ds.samples["sample_id"].n_unique() == 10


def test_failures_are_rows_with_their_status(tmp_path):
    """A fresh worker cannot import numba in 10 ms: every compile times out, and every schedule is a row."""
    spec = BatchSpec(seeds=(2,), schedules_per_pipeline=3, max_stages=3, output_size=(32, 24, 3),
                     compile_timeout=0.01)
    summary = generate_batch(spec, tmp_path)
    assert (summary.ok, summary.schedules, summary.failed_by_status) == (0, 3, {"timeout": 3})
    table = rows(summary.path)
    assert [r["status"] for r in table] == ["timeout"] * 3
    assert all(r["runtime_s"] is None and "timed out" in r["error"] for r in table)
    assert all(len(r["schedule_features"]) == len(r["stage_func"]) > 0 for r in table), "features are kept"
    ds = read_dataset(tmp_path, "host")
    assert ds.samples.height == 3 and ds.rejected.height == 0


def test_a_pipeline_that_cannot_be_generated_is_skipped(tmp_path):
    spec = BatchSpec(seeds=(1, 2), schedules_per_pipeline=2, max_stages=1, output_size=(32, 24, 3))
    seen = []
    summary = generate_batch(spec, tmp_path, progress=lambda *a: seen.append(a))
    assert (summary.pipelines, summary.pipelines_skipped, summary.schedules) == (0, 2, 0)
    assert len(summary.errors) == 2 and all("max_stages" in e and "\n" not in e for e in summary.errors)
    assert summary.path.exists() and pq.read_table(summary.path).num_rows == 0
    assert [note for *_, note in seen] == ["seed 1: pipeline skipped", "seed 2: pipeline skipped"]


# -- the command line -----------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "5:2", "--out", "x"], "select no seed"),
    (["--seeds", "a:b", "--out", "x"], "seeds must be"),
    (["--seeds", "0:2", "--schedules", "0", "--out", "x"], "positive int"),
    (["--seeds", "0:2", "--max-stages", "1", "--out", "x"], "max stages"),
    (["--seeds", "0:2", "--size", "3,3", "--out", "x"], "W,H,C"),
    (["--seeds", "0:2"], "--out"),
    (["--seeds", "0:2", "--target", "v100", "--out", "x"], "cuda target"),
    (["--seeds", "0:2", "--target", "nosuch", "--out", "x"], "unknown target"),
])
def test_bad_arguments_are_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        datagen.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and err.count("\n") == 1


def test_the_command_line_writes_a_batch_per_pipeline(generated, tmp_path, capsys):
    argv = ["--seeds", "1,2", "--schedules", "2", "--max-stages", "3", "--size", "32,24,3", "--out", str(tmp_path)]
    assert datagen.main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("2 batches (0 already written), 2 pipelines (0 skipped), 4 schedules: ok 4;")
    assert len(list((tmp_path / "target=host").glob("batch-*.parquet"))) == 2
    assert datagen.main(argv) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("2 batches (2 already written)")
    assert read_dataset(tmp_path, "host").samples.height == 4
