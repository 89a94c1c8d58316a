"""Feature schemas as objects that travel with features, datasets and models.

A FeatureSchema names what a cost model reads: its name and version, the rows and columns of the per-stage
pipeline features and the per-stage schedule features, each with a one-line definition. Datasets record the
schema's name and version, models record them, and both refuse to meet another schema's data. Today there is
one, CPU_ADAMS2019 (seeds/adams2019 §4.1 and Appendix A); a GPU schema (anderson2021) registers beside it.

CPU_ADAMS2019, per stage, float32:
  * pipeline features, 40 x 7: rows are Halide's 24 op types then 16 memory-access classes (pointwise /
    transpose / broadcast / slice x load from a Func / from itself / from an Input / store); columns are the
    7 scalar-type buckets. Raw counts.
  * schedule features, 41: adams2019 Appendix A's 39 in Halide's order, then (version 2) schedlab's two of what
    consecutive realizations share: a sliding stencil computed per row reads mostly rows the previous row
    read, which the per-realization footprint counts as fresh (docs/featurize.md).
Bump its version whenever a name, the order or a definition changes: datasets and models record it and refuse
to mix versions. The module constants (SCHEDULE_FEATURES, SCHEDULE_INDEX, PIPELINE_ROWS, SCHEMA_VERSION, DTYPE,
SCHEMA) are the CPU schema's fields, for the code that reads them by name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from ir.dag import OP_TYPES, TYPE_BUCKETS
from ir.errors import SchedlabError


class SchemaError(SchedlabError):
    """A feature schema that is not registered, or features and a schema that do not fit together."""


@dataclass(frozen=True)
class FeatureDef:
    """One named feature (or row / column of a feature matrix) and what it measures, in one line."""

    name: str
    definition: str


@dataclass(frozen=True)
class FeatureSchema:
    """What a cost model reads per stage: a [rows x columns] pipeline matrix and a vector of schedule features."""

    name: str
    version: int
    pipeline_rows: tuple[FeatureDef, ...]
    pipeline_columns: tuple[FeatureDef, ...]
    schedule_features: tuple[FeatureDef, ...]
    dtype: str = "float32"

    @property
    def pipeline_shape(self) -> tuple[int, int]:
        return len(self.pipeline_rows), len(self.pipeline_columns)

    @property
    def schedule_width(self) -> int:
        return len(self.schedule_features)

    @property
    def num_pipeline_features(self) -> int:
        rows, cols = self.pipeline_shape
        return rows * cols

    @property
    def num_schedule_features(self) -> int:
        return self.schedule_width

    @property
    def schedule_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.schedule_features)

    @property
    def row_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.pipeline_rows)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.pipeline_columns)

    @property
    def key(self) -> str:
        """name@version: what datasets and models record and compare."""
        return f"{self.name}@{self.version}"

    def definition(self, feature: str) -> str:
        for f in self.schedule_features + self.pipeline_rows + self.pipeline_columns:
            if f.name == feature:
                return f.definition
        raise SchemaError(f"feature schema {self.key} has no feature {feature!r}; its schedule features are "
                          f"{', '.join(self.schedule_names)}")

    def to_dict(self) -> dict:
        return {"name": self.name, "version": self.version, "pipeline_rows": list(self.row_names),
                "pipeline_columns": list(self.column_names), "schedule_features": list(self.schedule_names),
                "dtype": self.dtype}

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


_SCHEMAS: dict[str, FeatureSchema] = {}


def register_schema(schema: FeatureSchema) -> FeatureSchema:
    """Make `schema` known by its name (to dataset readers, the trainer and get_schema)."""
    _SCHEMAS[schema.name] = schema
    return schema


def get_schema(name: str) -> FeatureSchema:
    try:
        return _SCHEMAS[name]
    except KeyError:
        raise SchemaError(f"unknown feature schema {name!r}; registered: {', '.join(sorted(_SCHEMAS))}") from None


def registered_schemas() -> tuple[str, ...]:
    return tuple(sorted(_SCHEMAS))


def check_schema(found_name: str, found_version: int | str, expected: FeatureSchema, what: str) -> None:
    """One-line refusal when `what` (a dataset file, a model) carries another schema than `expected`."""
    if found_name != expected.name or str(found_version) != str(expected.version):
        raise SchemaError(f"{what} has feature schema {found_name}@{found_version}, expected {expected.key}: "
                          "regenerate the data or retrain the model under one schema")


def describe(features, schema: FeatureSchema | None = None, stage: int | None = None,
             nonzero: bool = True) -> str:
    """The schedule features of `features` (a featurize.Features) by name, one line per feature per stage;
    with `nonzero`, zero values are left out. What to print when debugging a cost model."""
    schema = schema or CPU_ADAMS2019
    sched = np.asarray(features.schedule)
    if sched.ndim != 2 or sched.shape[1] != schema.schedule_width:
        raise SchemaError(f"schedule features of shape {tuple(sched.shape)} do not fit schema {schema.key} "
                          f"(width {schema.schedule_width})")
    lines = []
    for i, (func, s) in enumerate(features.stages):
        if stage is not None and i != stage:
            continue
        inl = " (inlined)" if features.inlined and features.inlined[i] else ""
        lines.append(f"{func}.s{s}{inl}:")
        for f, v in zip(schema.schedule_features, sched[i]):
            if v or not nonzero:
                lines.append(f"  {f.name:<40} {float(v):>14.6g}  {f.definition}")
    return "\n".join(lines)


_OP_DEFS = {
    "Const": "constants", "Cast": "type conversions", "Variable": "references to loop variables",
    "Param": "references to scalar parameters", "Add": "additions", "Sub": "subtractions", "Mod": "modulos",
    "Mul": "multiplications", "Div": "divisions", "Min": "minimums", "Max": "maximums",
    "EQ": "equality comparisons", "NE": "inequality comparisons", "LT": "less-than comparisons",
    "LE": "less-or-equal comparisons", "And": "logical ands", "Or": "logical ors", "Not": "logical nots",
    "Select": "selects (if-then-else expressions)", "ImageCall": "loads from an input image",
    "FuncCall": "calls to another Func", "SelfCall": "calls of a Func to itself (update stages)",
    "ExternCall": "calls to extern functions (math intrinsics)", "Let": "let bindings",
}
_ACCESS_DEFS = {
    "pointwise": "pointwise (the access Jacobian is the identity)",
    "transpose": "transposed (the Jacobian permutes dimensions)",
    "broadcast": "broadcast (some dimension of the access does not depend on the loop)",
    "slice": "slicing (the Jacobian drops or mixes dimensions otherwise)",
}
_KIND_DEFS = {"LoadFunc": "loads from another Func", "LoadSelf": "loads of a Func from itself",
              "LoadImage": "loads from an input image", "Store": "stores of the stage's own value"}

ACCESS_CLASSES = ("pointwise", "transpose", "broadcast", "slice")
ACCESS_KINDS = ("LoadFunc", "LoadSelf", "LoadImage", "Store")

_PIPELINE_ROW_DEFS = tuple(FeatureDef(op, f"number of {_OP_DEFS[op]} in the stage's definition")
                           for op in OP_TYPES) + tuple(
    FeatureDef(f"{c}_{k}", f"number of {_KIND_DEFS[k]} whose access is {_ACCESS_DEFS[c]}")
    for c in ACCESS_CLASSES for k in ACCESS_KINDS)
_PIPELINE_COLUMN_DEFS = tuple(FeatureDef(b, d) for b, d in zip(TYPE_BUCKETS, (
    "operations on booleans", "operations on 8-bit integers", "operations on 16-bit integers",
    "operations on 32-bit integers", "operations on 64-bit integers", "operations on 32-bit floats",
    "operations on 64-bit floats")))

_HALIDE_SCHEDULE_DEFS = (
    ("num_realizations", "times the stage's storage is allocated: total runs of its store_at site"),
    ("num_productions", "times a region of the stage is computed: total runs of its compute_at site"),
    ("points_computed_per_realization", "points of the stage computed per allocation"),
    ("points_computed_per_production", "points of the stage computed per run of its compute_at site"),
    ("points_computed_total", "points computed over the whole pipeline run, recomputation included"),
    ("points_computed_minimum", "points the consumers need at least: the total without any recomputation"),
    ("innermost_loop_extent", "trip count of the innermost loop of the stage"),
    ("innermost_pure_loop_extent", "trip count of the innermost pure-variable (not RVar) loop"),
    ("unrolled_loop_extent", "product of the extents of the unrolled loops"),
    ("inner_parallelism", "parallel tasks of the stage's own outermost loops (1 if they are serial)"),
    ("outer_parallelism", "parallel iterations of the loops enclosing the stage's compute_at site"),
    ("bytes_at_realization", "bytes of the stage's allocation at its store_at site"),
    ("bytes_at_production", "bytes of the stage computed per run of its compute_at site"),
    ("bytes_at_root", "bytes of the stage's whole region over the pipeline run"),
    ("innermost_bytes_at_realization", "bytes along the innermost storage dimension per allocation"),
    ("innermost_bytes_at_production", "bytes along the innermost storage dimension per production"),
    ("innermost_bytes_at_root", "bytes along the innermost storage dimension over the whole region"),
    ("inlined_calls", "calls to this stage inlined into its consumers (0 unless inlined)"),
    ("unique_bytes_read_per_realization", "distinct bytes the stage loads per allocation"),
    ("unique_lines_read_per_realization", "distinct contiguous lines the stage loads per allocation"),
    ("allocation_bytes_read_per_realization", "bytes of the producers' allocations touched per allocation"),
    ("working_set", "bytes of all allocations made inside the stage's own outermost loop"),
    ("vector_size", "SIMD width the stage is vectorized with (1 if not vectorized)"),
    ("native_vector_size", "the target's SIMD width for the stage's widest type"),
    ("num_vectors", "vectors computed over the pipeline run"),
    ("num_scalars", "scalar points computed (points outside full vectors) over the pipeline run"),
    ("scalar_loads_per_vector", "loads per vector that must be done one lane at a time (gathers)"),
    ("vector_loads_per_vector", "dense vector loads per vector computed"),
    ("scalar_loads_per_scalar", "loads per scalar point computed"),
    ("bytes_at_task", "bytes of the stage computed per parallel task"),
    ("innermost_bytes_at_task", "bytes along the innermost storage dimension per parallel task"),
    ("unique_bytes_read_per_vector", "distinct bytes loaded per vector computed"),
    ("unique_lines_read_per_vector", "distinct contiguous lines loaded per vector computed"),
    ("unique_bytes_read_per_task", "distinct bytes loaded per parallel task"),
    ("unique_lines_read_per_task", "distinct contiguous lines loaded per parallel task"),
    ("working_set_at_task", "bytes of all allocations made inside one parallel task"),
    ("working_set_at_production", "bytes of all allocations made inside the stage's compute_at site"),
    ("working_set_at_realization", "bytes of all allocations made inside the stage's store_at site"),
    ("working_set_at_root", "bytes of all allocations of the pipeline (at the root)"),
)
# schedlab's, not Halide's (version 2): what consecutive realizations share
_NEW_READS_DEFS = (
    ("new_bytes_read_per_realization", "unique_bytes_read_per_realization less what the previous realization of the "
     "store_at loop read: that loop's footprint over its iterations, while one realization's lines fit in L2"),
    ("new_lines_read_per_realization", "unique_lines_read_per_realization, amortized over the store_at loop as "
     "new_bytes_read_per_realization is"),
)

CPU_ADAMS2019 = register_schema(FeatureSchema(
    name="cpu-adams2019", version=2, pipeline_rows=_PIPELINE_ROW_DEFS, pipeline_columns=_PIPELINE_COLUMN_DEFS,
    schedule_features=tuple(FeatureDef(n, d) for n, d in _HALIDE_SCHEDULE_DEFS + _NEW_READS_DEFS)))
# adams2019 Appendix A's schedule features in Halide's order: all that version 1 of the schema had
HALIDE_SCHEDULE_FEATURES = tuple(n for n, _ in _HALIDE_SCHEDULE_DEFS)

# What a load touches, for the estimates that bound a box by the loads inside it (featurize's new reads, the
# analytical model's caps, prior 5 on): a cache line, and two lines per dense vector load (it may straddle one).
LINE_BYTES = 64


def lines_per_vector(vector_loads, lane_loads):
    """Cache lines a vector's loads can touch: two per dense vector load, one per lane-at-a-time load (numbers,
    arrays or tensors alike)."""
    return 2 * vector_loads + lane_loads

# The CPU schema's fields under the names the rest of schedlab imports.
SCHEMA = CPU_ADAMS2019
SCHEMA_VERSION = CPU_ADAMS2019.version
DTYPE = np.float32
PIPELINE_ROWS = CPU_ADAMS2019.row_names
SCHEDULE_FEATURES = CPU_ADAMS2019.schedule_names
SCHEDULE_INDEX = {name: i for i, name in enumerate(SCHEDULE_FEATURES)}
