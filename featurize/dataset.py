"""The dataset of measured schedules (DESIGN §3.7): Parquet, Hive-partitioned by target.

    <root>/target=<target>/batch-<batch id>.parquet

One file per batch (one pipeline's schedules), written to a temporary name and renamed into place, so a
reader never sees half a file and a rerun of the same batch finds it done. One row per measured schedule:
its ids, the pipeline and schedule as JSON (so every sample can be recompiled), status, timings, round
and the model that sampled it, and its per-stage features as nested lists. The feature schema's name,
version and fingerprint are in every file's metadata; the reader refuses files whose schema is not the
registered one of that name (v1 files, written before schemas had names, are cpu-adams2019's), reports
rows that cannot be trained on and leaves them out. `featurize.database.Database` is the query API
(pipelines, records of a pipeline, top-k) over the same files.

The format lives here, next to the feature schema, because both the data-generation job (writer) and
the trainer (reader) depend on it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from ir.errors import SchedlabError

from .schema import CPU_ADAMS2019, FeatureSchema, SchemaError, get_schema

META_VERSION = b"schedlab.feature_schema_version"
META_SCHEMA = b"schedlab.feature_schema"
META_SCHEMA_NAME = b"schedlab.feature_schema_name"
V1_SCHEMA_NAME = CPU_ADAMS2019.name  # files without a schema name were all written under it
META_TARGET = b"schedlab.target"
META_MACHINE = b"schedlab.machine"  # ir.target.machine_description() of the machine(s) that measured
MAX_RUNTIME_S = 100.0  # Halide's loader drops samples slower than this as broken
MAX_FEATURE = 1e14  # larger schedule features are overflow (Halide's loader)


class DatasetError(SchedlabError):
    """A dataset that cannot be read as asked: wrong schema version, wrong target, nothing there."""


RIVAL_SEPARATOR = "|"  # sampler beam-A|B: rival models A and B picked the same schedule (generator.batch rivals)


def rival_pickers(sampler: str) -> tuple[str, ...]:
    """The rival models whose beam pick a row is (sampler beam-<rival>[|<rival>...]); () for any other sampler."""
    return tuple(sampler.removeprefix("beam-").split(RIVAL_SEPARATOR)) if sampler.startswith("beam-") else ()


@dataclass
class Sample:
    """One measured schedule."""

    pipeline_id: str
    pipeline_json: str
    schedule_id: str
    schedule_json: str
    status: str
    runtime_s: float  # best time of one run (the protocol's minimum); NaN unless status is ok
    median_s: float = math.nan
    spread: float = math.nan
    compile_s: float = math.nan
    error: str = ""
    round: int = 0
    model_version: str = ""
    sampler: str = ""
    backend: str = "numba"
    stages: list[tuple[str, int]] = field(default_factory=list)
    inlined: list[bool] = field(default_factory=list)
    schedule_features: np.ndarray | None = None  # [n_stages, 41]
    pipeline_features: np.ndarray | None = None  # [n_stages, 40, 7]

    @staticmethod
    def build(pipeline, loopnest, features, measurement, **kw) -> "Sample":
        return Sample(pipeline.fingerprint, json.dumps(pipeline.to_json(), sort_keys=True), loopnest.fingerprint,
                      loopnest.dumps(), measurement.status, measurement.min_s, measurement.median_s,
                      measurement.spread, measurement.compile_s, measurement.error,
                      stages=list(features.stages), inlined=list(features.inlined),
                      schedule_features=features.schedule, pipeline_features=features.pipeline, **kw)

    @property
    def sample_id(self) -> str:
        return f"{self.pipeline_id}-{self.schedule_id}"


def _arrow_schema():
    import pyarrow as pa

    return pa.schema([
        ("sample_id", pa.string()), ("batch_id", pa.string()), ("pipeline_id", pa.string()),
        ("schedule_id", pa.string()), ("target", pa.string()), ("backend", pa.string()),
        ("round", pa.int32()), ("model_version", pa.string()), ("sampler", pa.string()),
        ("status", pa.string()), ("runtime_s", pa.float64()), ("median_s", pa.float64()),
        ("spread", pa.float64()), ("compile_s", pa.float64()), ("error", pa.string()),
        ("pipeline_json", pa.string()), ("schedule_json", pa.string()),
        ("stage_func", pa.list_(pa.string())), ("stage_index", pa.list_(pa.int32())),
        ("inlined", pa.list_(pa.bool_())),
        ("schedule_features", pa.list_(pa.list_(pa.float32()))),
        ("pipeline_features", pa.list_(pa.list_(pa.float32()))),
    ])


def file_machine(path: Path | str) -> str:
    """Which machine measured a batch file's samples ("" for files written before machines were recorded)."""
    import pyarrow.parquet as pq

    return ((pq.read_schema(path).metadata or {}).get(META_MACHINE) or b"").decode()


def partition_dir(root: Path | str, target: str) -> Path:
    return Path(root) / f"target={target}"


def batch_path(root: Path | str, target: str, batch_id: str) -> Path:
    if not batch_id or any(c in batch_id for c in "/\\ ") or batch_id.startswith("."):
        raise DatasetError(f"batch id {batch_id!r} must be a non-empty name without spaces or slashes")
    return partition_dir(root, target) / f"batch-{batch_id}.parquet"


def write_batch(root: Path | str, target: str, batch_id: str, samples: Iterable[Sample],
                row_group_size: int = 64, schema: FeatureSchema = CPU_ADAMS2019, machine: str = "") -> Path:
    """Write one batch atomically under its deterministic name; a batch already written is left as is.
    `schema` is the FeatureSchema the samples' features follow (the target's extractor's); `machine` says which
    machine measured them (ir.target.machine_description(); "" when unknown), recorded in the file's metadata."""
    path = batch_path(root, target, batch_id)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    samples = list(samples)
    feature_schema = schema
    schema = _arrow_schema().with_metadata({
        META_VERSION: str(feature_schema.version).encode(), META_SCHEMA_NAME: feature_schema.name.encode(),
        META_SCHEMA: json.dumps(feature_schema.to_dict()).encode(), META_TARGET: target.encode(),
        **({META_MACHINE: machine.encode()} if machine else {})})
    write_table_atomically(_table(samples, batch_id, target, schema, feature_schema), path, row_group_size)
    return path


def write_table_atomically(table, path: Path, row_group_size: int = 64) -> None:
    """Write `table` (its schema's metadata included) to `path` through a temporary file renamed over it, so a
    reader sees the old file (or none) or the whole new one, never a part; a writer that dies leaves only its
    temporary, which the next writer of that batch removes."""
    import pyarrow.parquet as pq

    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        with pq.ParquetWriter(tmp, table.schema, compression="zstd") as w:
            for start in range(0, max(table.num_rows, 1), max(row_group_size, 1)):
                w.write_table(table.slice(start, row_group_size))
        os.replace(tmp, path)  # atomic on POSIX
    finally:
        if tmp.exists():
            tmp.unlink()


def _remove_stale_temporaries(path: Path) -> None:
    """Temporary files of this batch left by writers that died (on this host) before renaming."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            pid = int(tmp.name.rsplit(".", 2)[1])
            os.kill(pid, 0)  # still running: leave it alone
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except (ValueError, PermissionError):
            pass


def _table(samples: list[Sample], batch_id: str, target: str, schema, feature_schema: FeatureSchema):
    """The batch as an Arrow table; feature matrices go in as flat numpy buffers with list offsets."""
    import pyarrow as pa

    scalar = {
        "sample_id": [s.sample_id for s in samples], "batch_id": [batch_id] * len(samples),
        "pipeline_id": [s.pipeline_id for s in samples], "schedule_id": [s.schedule_id for s in samples],
        "target": [target] * len(samples), "backend": [s.backend for s in samples],
        "round": [s.round for s in samples], "model_version": [s.model_version for s in samples],
        "sampler": [s.sampler for s in samples], "status": [s.status for s in samples],
        "runtime_s": [_f(s.runtime_s) for s in samples], "median_s": [_f(s.median_s) for s in samples],
        "spread": [_f(s.spread) for s in samples], "compile_s": [_f(s.compile_s) for s in samples],
        "error": [s.error for s in samples], "pipeline_json": [s.pipeline_json for s in samples],
        "schedule_json": [s.schedule_json for s in samples],
        "stage_func": [[f for f, _ in s.stages] for s in samples],
        "stage_index": [[i for _, i in s.stages] for s in samples],
        "inlined": [list(s.inlined) for s in samples],
    }
    cols = {k: pa.array(v, type=schema.field(k).type) for k, v in scalar.items()}
    n_sched, n_pipe = feature_schema.schedule_width, feature_schema.num_pipeline_features
    cols["schedule_features"] = _nested([_matrix(s.schedule_features, n_sched) for s in samples], n_sched)
    cols["pipeline_features"] = _nested([_matrix(s.pipeline_features, n_pipe) for s in samples], n_pipe)
    return pa.table([cols[f.name] for f in schema], schema=schema)


def _matrix(a, width: int) -> np.ndarray:
    if a is None:
        return np.zeros((0, width), np.float32)
    a = np.asarray(a, dtype=np.float32)
    return a.reshape(len(a), width)


def _nested(mats: list[np.ndarray], width: int):
    """list<list<float32>> from per-sample [n_stages, width] matrices."""
    import pyarrow as pa

    values = pa.array(np.concatenate([m.reshape(-1) for m in mats]) if mats else np.zeros(0, np.float32))
    rows = sum(len(m) for m in mats)
    inner = pa.ListArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32) * width), values)
    outer_offsets = np.concatenate([[0], np.cumsum([len(m) for m in mats])]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(outer_offsets), inner)


def _f(v) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


@dataclass
class Dataset:
    samples: object  # polars DataFrame, one row per trainable sample (no feature columns)
    stages: object  # polars DataFrame, one row per (sample, stage): ids, stage names, s_<feature>, pipeline
    rejected: object  # polars DataFrame: sample_id, reason
    files: list[Path]
    schema: FeatureSchema = CPU_ADAMS2019  # the feature schema every file records

    def report(self) -> str:
        import polars as pl

        n, r = self.samples.height, self.rejected.height
        lines = [f"{n} samples from {len(self.files)} files; {r} rejected"]
        if r:
            for row in self.rejected.group_by("reason").agg(pl.len()).sort("reason").iter_rows():
                lines.append(f"  {row[1]} x {row[0]}")
        return "\n".join(lines)


def read_dataset(root: Path | str, target: str, statuses: tuple[str, ...] | None = None,
                 schema: FeatureSchema | None = None) -> Dataset:
    """Read every batch of `target` with polars, checking the files' feature schema (name and version) against
    the registered schema of that name, and against `schema` if given; rows that cannot be trained on
    (non-finite or negative features, absurd runtimes) are excluded and listed in `rejected`. `root` may name
    several dataset roots, comma-separated (datasets made by separate jobs, read as one)."""
    import polars as pl

    files = [f for r in dataset_roots(root) for f in target_files(r, target)]
    found = check_files(files, target, schema)
    df = pl.scan_parquet([str(f) for f in files], hive_partitioning=False).collect()
    if statuses is not None:
        df = df.filter(pl.col("status").is_in(list(statuses)))
    df, rejected = _screen(df)
    stages = _explode_stages(df, found)
    samples = df.drop(["schedule_features", "pipeline_features", "stage_func", "stage_index", "inlined"])
    return Dataset(samples, stages, rejected, files, found)


def dataset_roots(root: Path | str) -> list[Path]:
    """The roots named by `root`: one path, or several joined by commas."""
    if isinstance(root, Path):
        return [root]
    roots = [Path(r.strip()) for r in str(root).split(",") if r.strip()]
    if not roots:
        raise DatasetError("no dataset root given: name a directory (or several, comma-separated)")
    return roots


def target_files(root: Path | str, target: str) -> list[Path]:
    """The batch files of `target`; a one-line error naming the targets there are if it has none."""
    root = Path(root)
    part = partition_dir(root, target)
    files = sorted(part.glob("batch-*.parquet")) if part.is_dir() else []
    if not files:
        others = sorted(p.name.removeprefix("target=") for p in root.glob("target=*")
                        if p.is_dir() and any(p.glob("batch-*.parquet")))
        if others:
            raise DatasetError(f"{root} has no data for target {target!r}; it has {', '.join(others)}")
        raise DatasetError(f"{root} holds no dataset (no target=*/batch-*.parquet files)")
    return files


def file_schema(f: Path) -> tuple[str, str]:
    """(schema name, version) a batch file records; v1 files have no name and are cpu-adams2019's."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(f).metadata or {}
    return meta.get(META_SCHEMA_NAME, V1_SCHEMA_NAME.encode()).decode(), meta.get(META_VERSION, b"?").decode()


def check_files(files: list[Path], target: str | None, expected: FeatureSchema | None = None) -> FeatureSchema:
    """The one feature schema all `files` were written under, checked against the registered schema of its
    name (and `expected`), and their target against `target`; one-line DatasetError otherwise."""
    import pyarrow.parquet as pq

    found = None
    for f in files:
        name, version = file_schema(f)
        try:
            schema = expected if expected is not None and expected.name == name else get_schema(name)
        except SchemaError as e:
            raise DatasetError(f"{f}: {e}") from None
        if version != str(schema.version):
            older = version.isdigit() and int(version) < schema.version
            fix = ("re-featurize it (python -m generator.dataset refeaturize data=<its root>)" if older
                   else "regenerate the data or use a matching schedlab")
            raise DatasetError(f"{f} has feature schema version {version}, this schedlab uses {schema.version} "
                               f"for {name}; {fix}")
        if expected is not None and schema.name != expected.name:
            raise DatasetError(f"{f} has feature schema {name}, expected {expected.name}; read it with its own "
                               "schema or regenerate it")
        if found is not None and schema.name != found.name:
            raise DatasetError(f"{f} has feature schema {name} but {files[0]} has {found.name}; "
                               "keep one schema per dataset")
        found = schema
        meta = pq.read_schema(f).metadata or {}
        if target is not None and meta.get(META_TARGET, b"").decode() != target:
            raise DatasetError(f"{f} was written for target {meta.get(META_TARGET, b'?').decode()!r}, "
                               f"not {target!r}")
    return found or expected or CPU_ADAMS2019


def _screen(df):
    """Split off rows a model must not be trained on, with the reason."""
    import polars as pl

    from ir.status import Status

    ok = pl.col("status") == Status.OK
    feats = pl.col("schedule_features").list.eval(pl.element().list.eval(
        pl.element().is_finite() & (pl.element() >= 0) & (pl.element() <= MAX_FEATURE)).list.all()).list.all()
    pfeats = pl.col("pipeline_features").list.eval(pl.element().list.eval(
        pl.element().is_finite() & (pl.element() >= 0)).list.all()).list.all()
    bad_runtime = ok & (pl.col("runtime_s").is_null() | ~pl.col("runtime_s").is_finite()
                        | (pl.col("runtime_s") <= 0) | (pl.col("runtime_s") > MAX_RUNTIME_S))
    reason = (pl.when(bad_runtime).then(pl.lit("runtime missing, non-positive or above 100 s"))
              .when(~feats.fill_null(False)).then(pl.lit("schedule feature negative, non-finite or overflowing"))
              .when(~pfeats.fill_null(False)).then(pl.lit("pipeline feature negative or non-finite"))
              .otherwise(pl.lit(None, dtype=pl.String)))
    df = df.with_columns(reason.alias("_reason"))
    rejected = df.filter(pl.col("_reason").is_not_null()).select(["sample_id", pl.col("_reason").alias("reason")])
    return df.filter(pl.col("_reason").is_null()).drop("_reason"), rejected


def _explode_stages(df, schema: FeatureSchema = CPU_ADAMS2019):
    import polars as pl

    base = df.select(["sample_id", "pipeline_id", "schedule_id", "stage_func", "stage_index", "inlined",
                      "schedule_features", "pipeline_features"])
    base = base.with_columns(pl.int_ranges(pl.col("stage_func").list.len()).alias("stage_pos"))
    long = base.explode(["stage_pos", "stage_func", "stage_index", "inlined", "schedule_features",
                         "pipeline_features"])
    feat_cols = [pl.col("schedule_features").list.get(i).alias(f"s_{name}")
                 for i, name in enumerate(schema.schedule_names)]
    return long.select(["sample_id", "pipeline_id", "schedule_id", "stage_pos",
                        pl.col("stage_func").alias("func"), "stage_index", "inlined", *feat_cols,
                        "pipeline_features"])
