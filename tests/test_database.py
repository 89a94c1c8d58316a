"""The Database API over the Parquet dataset: each pipeline once, records keyed by (pipeline, schedule, backend,
target), top-k per backend and target, lazy reads, v1 files, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends import Measurement
from featurize import featurize
from featurize.database import Database, Record
from featurize.dataset import DatasetError, Sample, write_batch
from ir.sampling import random_schedule

from .fuzz_pipelines import random_test_pipeline

V1 = Path(__file__).parent / "fixtures" / "dataset_v1"


def measured(seed: int, runtimes: list[float], backend: str, statuses=None) -> list[Sample]:
    """Real samples of test pipeline `seed`: schedules 0..n-1 of it, measured at the given times on `backend`."""
    p = random_test_pipeline(seed)
    out = []
    for k, t in enumerate(runtimes):
        ln, _ = random_schedule(p, 1000 * seed + k)
        status = statuses[k] if statuses else "ok"
        m = Measurement("ok", t, t, 0.0, 3, 3, 0.1) if status == "ok" else Measurement(status, error="boom")
        out.append(Sample.build(p, ln, featurize(p, ln), m, backend=backend, round=k % 2))
    return out


@pytest.fixture
def db(tmp_path) -> Database:
    write_batch(tmp_path, "host", "numba-a", measured(1, [3e-3, 1e-3, 2e-3, 5e-4], "numba",
                                                       ["ok", "ok", "ok", "timeout"]))
    write_batch(tmp_path, "host", "numba-b", measured(1, [4e-3, 9e-4], "numba"))  # re-measured, 2nd faster
    write_batch(tmp_path, "host", "halide", measured(1, [1e-4, 5e-3, 2e-4], "halide"))
    write_batch(tmp_path, "host", "other", measured(2, [1e-3, 2e-3], "numba"))
    write_batch(tmp_path, "avx2-8core", "x", measured(1, [7e-3], "numba"))
    return Database(tmp_path)


def test_pipelines_are_listed_once(db):
    entries = db.pipelines()
    ids = [e.pipeline_id for e in entries]
    assert sorted(ids) == ids and len(ids) == len(set(ids)) == 2
    assert {random_test_pipeline(s).fingerprint for s in (1, 2)} == set(ids)
    assert all(e.pipeline().fingerprint == e.pipeline_id for e in entries)


def test_records_are_keyed_by_backend_and_target(db):
    pid = random_test_pipeline(1).fingerprint
    everything = db.records(pid)
    assert all(isinstance(r, Record) for r in everything) and len(everything) == 4 + 2 + 3 + 1
    assert len({r.key for r in everything}) == len(everything) - 2  # the re-measured schedules share a key
    assert {(r.backend, r.target) for r in everything} == {("numba", "host"), ("halide", "host"),
                                                            ("numba", "avx2-8core")}
    halide = db.records(pid, backend="halide", target="host")
    assert [r.runtime_s for r in sorted(halide, key=lambda r: r.runtime_s)] == [1e-4, 2e-4, 5e-3]
    assert all(r.loopnest().fingerprint == r.schedule_id for r in halide)  # the stored decision trace replays
    assert db.records(pid, backend="cuda") == []
    assert db.backends() == ["halide", "numba"] and db.targets() == ["avx2-8core", "host"]


def test_top_k_is_per_backend_and_target_and_never_pools(db):
    pid = random_test_pipeline(1).fingerprint
    numba = db.top_k(pid, 10, backend="numba", target="host")
    # each schedule once at its fastest (schedule 1: 9e-4 of its re-measurement; schedule 0 keeps 3e-3);
    # the timeout is not a record to rank
    assert [r.runtime_s for r in numba] == [9e-4, 2e-3, 3e-3]
    assert all(r.backend == "numba" and r.target == "host" for r in numba)
    assert [r.runtime_s for r in db.top_k(pid, 2, backend="halide")] == [1e-4, 2e-4]
    with pytest.raises(DatasetError, match="measured on backends halide, numba; name one") as e:
        db.top_k(pid, 3, target="host")
    assert "\n" not in str(e.value)
    with pytest.raises(DatasetError, match="measured on targets avx2-8core, host; name one"):
        db.top_k(pid, 3, backend="numba")
    with pytest.raises(DatasetError, match="k >= 1"):
        db.top_k(pid, 0, backend="numba", target="host")
    with pytest.raises(DatasetError, match="no pipeline 'nope'"):
        db.records("nope")


def test_reads_are_lazy_and_refeaturized_v1_files_are_read(tmp_path):
    import shutil

    import polars as pl

    from featurize.refeaturize import refeaturize_dataset

    with pytest.raises(DatasetError, match="re-featurize it"):
        Database(V1)
    shutil.copytree(V1, tmp_path / "v1")
    refeaturize_dataset(tmp_path / "v1")
    db = Database(tmp_path / "v1")
    assert isinstance(db.scan(), pl.LazyFrame)
    (entry, other) = db.pipelines()
    records = db.records(entry.pipeline_id)
    assert len(records) == 4 and {r.backend for r in records} == {"numba"}
    best = db.top_k(entry.pipeline_id, 2)
    assert len(best) == 2 and best[0].runtime_s <= best[1].runtime_s == sorted(r.runtime_s for r in records)[1]


def test_an_empty_root_is_one_line(tmp_path):
    with pytest.raises(DatasetError, match="holds no dataset"):
        Database(tmp_path)
