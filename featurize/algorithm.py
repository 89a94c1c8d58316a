"""Algorithm-specific features: what each stage computes, whatever the schedule (adams2019 §4.1).

Per stage, the histogram of operations by scalar type bucket (from the FunctionDAG) and the classes of
its memory accesses, read off the Jacobian of each access's coordinates with respect to the stage's
loops (Halide's Featurizer): pointwise (the identity), transpose (a permutation, possibly dropping
loops), broadcast (each coordinate follows one loop and each loop feeds one coordinate), slice (each
coordinate follows one loop or none, and each loop feeds one coordinate).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ir.dag import OP_TYPES, TYPE_BUCKETS, FunctionDAG, Stage, derivative, type_bucket

from .schema import ACCESS_CLASSES, ACCESS_KINDS, DTYPE, PIPELINE_ROWS

_ROW = {name: i for i, name in enumerate(PIPELINE_ROWS)}
_COL = {name: i for i, name in enumerate(TYPE_BUCKETS)}
_KIND = {"func": "LoadFunc", "self": "LoadSelf", "input": "LoadImage"}


def stage_pipeline_features(stage: Stage, func_type) -> np.ndarray:
    """The 40 x 7 pipeline features of one stage."""
    out = np.zeros((len(PIPELINE_ROWS), len(TYPE_BUCKETS)), dtype=DTYPE)
    for (op, bucket), n in stage.op_histogram.items():
        out[_ROW[op], _COL[bucket]] += n
    for a in stage.accesses:
        _add_access(out, a.jacobian, _KIND[a.kind], type_bucket(a.type), a.count)
    loops = [l.name for l in stage.loop]
    names: dict = {}  # derivative's memo for these expressions (alive while it is used)
    store = tuple(tuple(derivative(arg, v, names) for v in loops) for arg in stage.lhs)
    _add_access(out, store, "Store", type_bucket(func_type), 1)
    return out


def pipeline_features(dag: FunctionDAG) -> dict[tuple[str, int], np.ndarray]:
    """Pipeline features of every stage, keyed by (func, stage index)."""
    return {(n.name, s.index): stage_pipeline_features(s, n.type) for n in dag.nodes for s in n.stages}


def access_classes(jac) -> dict[str, bool]:
    """The four access classes of a Jacobian (a tuple of rows), remembered by its value: a pipeline's accesses
    repeat a few Jacobians (a stencil's taps, the identity), and every search of a new pipeline classifies them all.
    The dict returned is shared: read it, do not change it."""
    try:
        hit = _CLASSES.get(jac)
    except TypeError:  # rows given as lists: nothing to remember them by
        return _access_classes(jac)
    if hit is None:
        if len(_CLASSES) > 4096:
            _CLASSES.clear()
        hit = _CLASSES[jac] = _access_classes(jac)
    return hit


_CLASSES: dict[tuple, dict[str, bool]] = {}


def _access_classes(jac) -> dict[str, bool]:
    rows = len(jac)
    cols = len(jac[0]) if rows else 0
    one, zero = Fraction(1), Fraction(0)
    ones_row = [sum(d == one for d in r) for r in jac]
    zeros_row = [sum(d == zero for d in r) for r in jac]
    ones_col = [sum(jac[i][j] == one for i in range(rows)) for j in range(cols)]
    zeros_col = [sum(jac[i][j] == zero for i in range(rows)) for j in range(cols)]
    pointwise = rows == cols and all(jac[i][j] == (one if i == j else zero) for i in range(rows) for j in range(cols))
    transpose = rows == cols
    broadcast = slice_ = True
    for i in range(rows):
        single = ones_row[i] == 1 and zeros_row[i] == cols - 1
        empty = zeros_row[i] == cols
        transpose &= single
        broadcast &= single
        slice_ &= single or empty
    for j in range(cols):
        single = ones_col[j] == 1 and zeros_col[j] == rows - 1
        empty = zeros_col[j] == rows
        transpose &= single or empty
        broadcast &= single
        slice_ &= single
    return {"pointwise": pointwise, "transpose": transpose, "broadcast": broadcast, "slice": slice_}


def _add_access(out: np.ndarray, jac, kind: str, bucket: str, count: int) -> None:
    classes = access_classes(jac)
    col = _COL[bucket]
    for cls in ACCESS_CLASSES:
        if classes[cls]:
            out[_ROW[f"{cls}_{kind}"], col] += count


assert len(OP_TYPES) == 24 and len(ACCESS_KINDS) * len(ACCESS_CLASSES) == 16
