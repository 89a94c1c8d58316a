"""Re-featurize a dataset's batch files under the current feature schema, from the pipelines and LoopNests they store.

A schema version (a new feature, a changed definition) makes the files written under an older one unreadable to the
trainer, and the labels in them are the expensive part: every row keeps its pipeline and LoopNest as JSON, so its
features can be computed again. They depend on the machine the schedule was measured for (the SIMD width, and L2
for new_bytes_read_per_realization): a file's `schedlab.machine` line gives them; a file from before machines were
recorded is tried at 64-, 32- and 16-byte vectors, and the width that reproduces its stored features is kept, with
`l2_kib` for the L2 it did not record. Every feature the old schema shares with the new one must come out bit for
bit as stored, or the file is left as it was and the error names the file and the sample: re-featurizing changes
what the new schema adds, never the labels or the features the rows were trained on.

    python -m generator.dataset refeaturize data=datasets/random-host-halide-avx2
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .dataset import (META_MACHINE, META_SCHEMA, META_SCHEMA_NAME, META_VERSION, V1_SCHEMA_NAME, DatasetError,
                      dataset_roots, write_table_atomically)
from .schema import HALIDE_SCHEDULE_FEATURES, FeatureSchema, get_schema

VECTOR_WIDTHS = (64, 32, 16)  # bytes: AVX-512, AVX2, SSE/NEON


@dataclass(frozen=True)
class FileResult:
    path: Path
    samples: int
    status: str  # "rewritten" | "current" (already under the current schema)
    machine: str  # what the features were computed for


@dataclass(frozen=True)
class RefeaturizeReport:
    files: tuple[FileResult, ...]
    schema: str  # name@version written

    def report(self) -> str:
        done = [f for f in self.files if f.status == "rewritten"]
        lines = [f"{len(done)} of {len(self.files)} files re-featurized under {self.schema} "
                 f"({sum(f.samples for f in done)} samples); {len(self.files) - len(done)} already under it"]
        for machine in sorted({f.machine for f in done}):
            lines.append(f"  for {machine}: {sum(1 for f in done if f.machine == machine)} files")
        return "\n".join(lines)


def refeaturize_dataset(root: Path | str, l2_kib: int = 1024, progress=None) -> RefeaturizeReport:
    """Re-featurize every batch file under `root` (one dataset root, or several comma-separated) that is not under
    the current version of its schema. `progress(i, n, path)` is called before each file."""
    files = [f for r in dataset_roots(root) for f in sorted(r.glob("target=*/batch-*.parquet"))]
    if not files:
        raise DatasetError(f"no batch files under {root}: give the dataset root (it holds target=<name>/)")
    results = []
    schema = None
    for i, f in enumerate(files):
        if progress is not None:
            progress(i, len(files), f)
        r, schema = refeaturize_file(f, l2_kib)
        results.append(r)
    return RefeaturizeReport(tuple(results), schema.key if schema else "")


def refeaturize_file(path: Path, l2_kib: int = 1024) -> tuple[FileResult, FeatureSchema]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = dict(pq.read_schema(path).metadata or {})
    name = meta.get(META_SCHEMA_NAME, V1_SCHEMA_NAME.encode()).decode()
    new = get_schema(name)
    old_names = _old_names(meta, new)
    machine = (meta.get(META_MACHINE) or b"").decode()
    if meta.get(META_VERSION, b"").decode() == str(new.version):
        return FileResult(path, 0, "current", machine), new
    table = pq.read_table(path)
    rows = table.to_pydict()
    columns = [new.schedule_names.index(n) for n in old_names]
    last_error = ""
    pipelines: dict = {}
    for target in _targets(machine, l2_kib):
        try:
            features = [_row_features(rows, i, target, columns, pipelines) for i in range(table.num_rows)]
        except _Mismatch as e:
            last_error = str(e)
            continue
        break
    else:
        raise DatasetError(f"{path}: {last_error}; the file was left as it was")
    col = pa.array(features, type=table.schema.field("schedule_features").type)
    table = table.set_column(table.schema.get_field_index("schedule_features"), "schedule_features", col)
    meta.update({META_VERSION: str(new.version).encode(), META_SCHEMA_NAME: new.name.encode(),
                 META_SCHEMA: json.dumps(new.to_dict()).encode()})
    table = table.replace_schema_metadata(meta)
    row_group = pq.ParquetFile(path).metadata.row_group(0).num_rows if table.num_rows else 64
    write_table_atomically(table, path, row_group)
    return FileResult(path, table.num_rows, "rewritten", _describe(target)), new


class _Mismatch(Exception):
    pass


def _old_names(meta: dict, new: FeatureSchema) -> list[str]:
    """The schedule features the file's schema shares with `new` (each must be reproduced as stored)."""
    raw = meta.get(META_SCHEMA)
    names = json.loads(raw)["schedule_features"] if raw else list(HALIDE_SCHEDULE_FEATURES)
    missing = [n for n in names if n not in new.schedule_names]
    if missing:
        raise DatasetError(f"the file's features {', '.join(missing)} are not in {new.key}: it cannot be "
                           "re-featurized into a schema that dropped them; regenerate the data")
    return names


def _targets(machine: str, l2_kib: int):
    from ir.target import host_target, target_of_machine

    recorded = target_of_machine(machine)
    if recorded is not None:
        yield recorded
        return
    base = dataclasses.replace(host_target(), l2_bytes=l2_kib << 10)
    for vb in VECTOR_WIDTHS:
        yield dataclasses.replace(base, vector_bytes=vb)


def _describe(t) -> str:
    return f"{t.vector_bytes}-byte vectors, L2 {t.l2_bytes >> 10} KiB"


def _row_features(rows: dict, i: int, target, columns: list[int], pipelines: dict) -> list[list[float]]:
    """Row i's features under the current schema; those at `columns` must equal the stored ones bit for bit.
    `pipelines` maps pipeline JSON to the parsed Pipeline: a file's samples share one, parsed once (its
    FunctionDAG's analyses kept across them)."""
    from ir.loopnest import LoopNest
    from ir.pipeline import Pipeline

    from . import featurize

    stored = rows["schedule_features"][i]
    if not stored:  # a sample whose schedule never got features (it failed before): nothing to redo
        return stored or []
    text = rows["pipeline_json"][i]
    if text not in pipelines:
        pipelines[text] = Pipeline.from_json(json.loads(text))
    f = featurize(pipelines[text], LoopNest.loads(rows["schedule_json"][i]), target)
    by_stage = {st: row for st, row in zip(f.stages, f.schedule)}
    out = []
    for func, index, old in zip(rows["stage_func"][i], rows["stage_index"][i], stored):
        row = by_stage.get((func, index))
        if row is None:
            raise _Mismatch(f"sample {rows['sample_id'][i]}: stage {func}.{index} has no features now")
        row = np.asarray(row, dtype=np.float32)
        old = np.asarray(old, dtype=np.float32)
        differ = np.flatnonzero(row[columns] != old)
        if differ.size:
            bad = int(differ[0])
            raise _Mismatch(f"sample {rows['sample_id'][i]}, stage {func}.{index}: feature {bad} comes out "
                            f"{row[columns][bad]:g} at {_describe(target)}, stored {old[bad]:g}")
        out.append(row.tolist())
    return out
