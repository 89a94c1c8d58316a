"""The one versioned feature schema, shared by the dataset writer, the trainer and the scheduler.

Per stage, two arrays (float32):
  * pipeline features, 40 x 7 (seeds/adams2019 §4.1): rows are Halide's 24 op types then 16 memory-access
    classes (pointwise / transpose / broadcast / slice x load from a Func / from itself / from an Input /
    store); columns are the 7 scalar-type buckets. Raw counts.
  * schedule features, 39 (adams2019 Appendix A), in Halide's order.
Bump SCHEMA_VERSION whenever a name, the order or a definition changes: datasets and models record it
and refuse to mix versions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from ir.dag import OP_TYPES, TYPE_BUCKETS

SCHEMA_VERSION = 1
DTYPE = np.float32

ACCESS_CLASSES = ("pointwise", "transpose", "broadcast", "slice")
ACCESS_KINDS = ("LoadFunc", "LoadSelf", "LoadImage", "Store")
PIPELINE_ROWS = OP_TYPES + tuple(f"{c}_{k}" for c in ACCESS_CLASSES for k in ACCESS_KINDS)

SCHEDULE_FEATURES = (
    "num_realizations",
    "num_productions",
    "points_computed_per_realization",
    "points_computed_per_production",
    "points_computed_total",
    "points_computed_minimum",
    "innermost_loop_extent",
    "innermost_pure_loop_extent",
    "unrolled_loop_extent",
    "inner_parallelism",
    "outer_parallelism",
    "bytes_at_realization",
    "bytes_at_production",
    "bytes_at_root",
    "innermost_bytes_at_realization",
    "innermost_bytes_at_production",
    "innermost_bytes_at_root",
    "inlined_calls",
    "unique_bytes_read_per_realization",
    "unique_lines_read_per_realization",
    "allocation_bytes_read_per_realization",
    "working_set",
    "vector_size",
    "native_vector_size",
    "num_vectors",
    "num_scalars",
    "scalar_loads_per_vector",
    "vector_loads_per_vector",
    "scalar_loads_per_scalar",
    "bytes_at_task",
    "innermost_bytes_at_task",
    "unique_bytes_read_per_vector",
    "unique_lines_read_per_vector",
    "unique_bytes_read_per_task",
    "unique_lines_read_per_task",
    "working_set_at_task",
    "working_set_at_production",
    "working_set_at_realization",
    "working_set_at_root",
)
SCHEDULE_INDEX = {name: i for i, name in enumerate(SCHEDULE_FEATURES)}


@dataclass(frozen=True)
class FeatureSchema:
    version: int = SCHEMA_VERSION
    pipeline_rows: tuple[str, ...] = PIPELINE_ROWS
    type_buckets: tuple[str, ...] = TYPE_BUCKETS
    schedule_features: tuple[str, ...] = SCHEDULE_FEATURES
    dtype: str = "float32"

    @property
    def pipeline_shape(self) -> tuple[int, int]:
        return len(self.pipeline_rows), len(self.type_buckets)

    @property
    def num_pipeline_features(self) -> int:
        return len(self.pipeline_rows) * len(self.type_buckets)

    @property
    def num_schedule_features(self) -> int:
        return len(self.schedule_features)

    def to_dict(self) -> dict:
        return {"version": self.version, "pipeline_rows": list(self.pipeline_rows),
                "type_buckets": list(self.type_buckets), "schedule_features": list(self.schedule_features),
                "dtype": self.dtype}

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


SCHEMA = FeatureSchema()
