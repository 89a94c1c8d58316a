"""The dataset as a database (MetaSchedule's Database in spirit): pipelines and the records measured for them.

    db = Database("data")
    db.pipelines()                               # [PipelineEntry(id, json)], each pipeline once
    db.records(pid, backend="numba")             # every measured record of the pipeline, keyed by
                                                 #   (pipeline, schedule, backend, target)
    db.top_k(pid, 5, backend="numba")            # the fastest ok records, fastest first

Reads are lazy (polars scan_parquet over every target=*/batch-*.parquet; only the columns and rows a query
needs are read). Pipelines are stored once by deduplicating on read: batch files stay one atomic write each
and v1 files read as they are. The backend is part of every record's key, and a query over a pipeline
measured on several backends or targets must name one: runtimes of two backends are never merged. The
LoopNest JSON of a record is its decision trace: it holds every decision the search took (per Func its
compute and store sites, tilings, vectorized, parallel and unrolled loops), so `Record.loopnest()` replays it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .dataset import DatasetError, check_files
from .schema import FeatureSchema

_RECORD_COLUMNS = ("pipeline_id", "schedule_id", "backend", "target", "status", "runtime_s", "median_s",
                   "compile_s", "error", "round", "sampler", "model_version", "schedule_json")


@dataclass(frozen=True)
class PipelineEntry:
    pipeline_id: str
    pipeline_json: str

    def pipeline(self):
        """The Pipeline, rebuilt from its JSON."""
        import json

        from ir import Pipeline

        return Pipeline.from_json(json.loads(self.pipeline_json))


@dataclass(frozen=True)
class Record:
    """One measurement of one schedule of one pipeline on one backend and target."""

    pipeline_id: str
    schedule_id: str
    backend: str
    target: str
    status: str
    runtime_s: float  # NaN unless status is ok
    median_s: float
    compile_s: float
    error: str
    round: int
    sampler: str
    model_version: str
    schedule_json: str  # the LoopNest: the decision trace of the schedule

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.pipeline_id, self.schedule_id, self.backend, self.target

    def loopnest(self):
        from ir import LoopNest

        return LoopNest.loads(self.schedule_json)


class Database:
    """Query API over the Parquet dataset under `root` (all targets)."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.files = sorted(self.root.glob("target=*/batch-*.parquet"))
        if not self.files:
            raise DatasetError(f"{self.root} holds no dataset (no target=*/batch-*.parquet files)")
        self.schemas: dict[str, FeatureSchema] = {}
        for part in sorted({f.parent for f in self.files}):
            target = part.name.removeprefix("target=")
            self.schemas[target] = check_files(sorted(part.glob("batch-*.parquet")), target)

    def scan(self):
        """The lazy frame of every row of every file (nothing is read until collected)."""
        import polars as pl

        return pl.scan_parquet([str(f) for f in self.files], hive_partitioning=False)

    def targets(self) -> list[str]:
        return sorted(self.schemas)

    def backends(self, pipeline_id: str | None = None) -> list[str]:
        import polars as pl

        q = self.scan()
        if pipeline_id is not None:
            q = q.filter(pl.col("pipeline_id") == pipeline_id)
        return sorted(q.select(pl.col("backend").unique()).collect()["backend"].to_list())

    def pipelines(self) -> list[PipelineEntry]:
        """Every pipeline once, by id."""
        df = (self.scan().select(["pipeline_id", "pipeline_json"]).unique(subset="pipeline_id", keep="first")
              .sort("pipeline_id").collect())
        return [PipelineEntry(*row) for row in df.iter_rows()]

    def pipeline(self, pipeline_id: str) -> PipelineEntry:
        import polars as pl

        df = self.scan().filter(pl.col("pipeline_id") == pipeline_id).select(["pipeline_id", "pipeline_json"]) \
            .head(1).collect()
        if df.height == 0:
            raise DatasetError(f"{self.root} has no pipeline {pipeline_id!r}; list them with Database.pipelines()")
        return PipelineEntry(*df.row(0))

    def records(self, pipeline_id: str, backend: str | None = None, target: str | None = None) -> list[Record]:
        """All measured records of a pipeline (of `backend` / `target` if given), in key order."""
        import polars as pl

        q = self.scan().filter(pl.col("pipeline_id") == pipeline_id)
        if backend is not None:
            q = q.filter(pl.col("backend") == backend)
        if target is not None:
            q = q.filter(pl.col("target") == target)
        df = q.select(list(_RECORD_COLUMNS)).sort(["backend", "target", "schedule_id", "round"]).collect()
        if df.height == 0:
            self.pipeline(pipeline_id)  # an unknown pipeline is an error; a filter that matches nothing is not
        return [_record(r) for r in df.iter_rows(named=True)]

    def top_k(self, pipeline_id: str, k: int, backend: str | None = None, target: str | None = None) -> list[Record]:
        """The k fastest ok records of a pipeline on one backend and target, fastest first; a schedule measured
        more than once counts once, at its fastest time. Without `backend` (or `target`) the pipeline must have
        been measured on just one."""
        if k < 1:
            raise DatasetError(f"top_k needs k >= 1, got {k}")
        ok = [r for r in self.records(pipeline_id, backend, target) if r.status == "ok"]
        for name, chosen in (("backend", backend), ("target", target)):
            values = sorted({getattr(r, name) for r in ok})
            if chosen is None and len(values) > 1:
                raise DatasetError(f"pipeline {pipeline_id} was measured on {name}s {', '.join(values)}; name one "
                                   f"({name}=...): runtimes of different {name}s are not compared")
        best: dict[str, Record] = {}
        for r in ok:
            if r.schedule_id not in best or r.runtime_s < best[r.schedule_id].runtime_s:
                best[r.schedule_id] = r
        return sorted(best.values(), key=lambda r: (r.runtime_s, r.schedule_id))[:k]


def _record(row: dict) -> Record:
    def f(v):
        return math.nan if v is None else float(v)

    return Record(row["pipeline_id"], row["schedule_id"], row["backend"], row["target"], row["status"],
                  f(row["runtime_s"]), f(row["median_s"]), f(row["compile_s"]), row["error"] or "", row["round"],
                  row["sampler"] or "", row["model_version"] or "", row["schedule_json"])


__all__ = ["Database", "PipelineEntry", "Record"]
