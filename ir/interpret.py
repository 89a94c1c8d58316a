"""The reference interpreter: the meaning of a pipeline, computed with numpy and no schedule.

Every Func is evaluated over its whole required region (the FunctionDAG's global region) from the
inputs toward the outputs, each definition vectorized over its pure dimensions. Update definitions
run their reduction domain serially, in RDom order (the first dimension innermost), except that a
scatter `f[c] = f[c] + v` (or * for any type, min/max for integers) is applied with `ufunc.at`, which
accumulates in that same order. Arithmetic is `semantics`, so the result is what every backend must
reproduce exactly.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from . import semantics as sem
from .dag import FunctionDAG, Node, Stage
from .errors import SchedlabError
from .expr import BinOp, Call, Cast, Cmp, Const, Expr, Logical, Math, Not, RVar, Select, Var, walk
from .pipeline import Pipeline

_CHUNK = 1 << 20  # elements per vectorized block of a reduction domain
_BLOCK = 1 << 16  # points of a pure definition evaluated at once: its temporaries (a few per operation, 8 bytes a point
# at most) stay in the L2 cache, where whole-region arrays streamed every operation through memory (1.5-2x slower)


def interpret(pipeline: Pipeline, inputs: dict[str, np.ndarray] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Outputs (F-ordered arrays of the output sizes) for the given inputs (default: random_inputs(seed))."""
    if inputs is None:
        inputs = pipeline.random_inputs(seed)
    arrays = check_inputs(pipeline, inputs)
    dag = pipeline.dag
    bufs: dict[str, tuple[np.ndarray, tuple[tuple[int, int], ...]]] = {}
    for name, a in arrays.items():
        bufs[name] = (a, dag.inputs[name].region)
    order = list(reversed(dag.nodes))  # producers first
    # a Func's buffer is dropped once its last consumer is realized: the peak is what is live at once, not every
    # intermediate of the pipeline (a 20-stage pipeline at 2000 x 2000 x 3 held several GB)
    last_use: dict[int, list[str]] = {}
    position = {n.name: i for i, n in enumerate(order)}
    outputs = {o.name for o in pipeline.outputs}
    for n in order:
        if n.name not in outputs and n.consumers:
            last_use.setdefault(max(position[c] for c in n.consumers), []).append(n.name)
    for i, node in enumerate(order):
        bufs[node.name] = (_realize(dag, node, bufs), node.region)
        for name in last_use.get(i, ()):
            del bufs[name]
    out = {}
    for o in pipeline.outputs:
        a, region = bufs[o.name]
        sl = tuple(slice(-lo, -lo + e) for (lo, _), e in zip(region, pipeline.output_sizes[o.name]))
        out[o.name] = np.asfortranarray(a[sl])
    return out


def check_inputs(pipeline: Pipeline, inputs: dict) -> dict[str, np.ndarray]:
    """Input arrays as 1-D Fortran-order views, after checking names, shapes and dtypes."""
    names = [i.name for i in pipeline.inputs]
    missing = [n for n in names if n not in inputs]
    if missing:
        raise SchedlabError(f"missing input {missing[0]}; the pipeline's inputs are {names}")
    extra = [n for n in inputs if n not in names]
    if extra:
        raise SchedlabError(f"{extra[0]} is not an input of the pipeline; its inputs are {names}")
    out = {}
    regions = pipeline.input_regions
    for inp in pipeline.inputs:
        a = np.asarray(inputs[inp.name])
        shape = tuple(e for _, e in regions[inp.name])
        if a.shape != shape or a.dtype != inp.type.dtype:
            raise SchedlabError(f"input {inp.name} must be a {inp.type.dtype} array of shape {shape} (its required "
                                f"region), got {a.dtype} {a.shape}")
        out[inp.name] = np.asfortranarray(a)
    return out


def _realize(dag: FunctionDAG, node: Node, bufs) -> np.ndarray:
    shape = tuple(hi - lo + 1 for lo, hi in node.region)
    t = node.type
    ev = _Evaluator(bufs, node.name)
    arr = np.empty(shape, dtype=t.dtype, order="F")
    value = node.stages[0].value
    # each point's value is the same operations on the same inputs, whatever the block. The blocks' grids run
    # along reversed axes (x last): numpy then makes every temporary in x-fastest order, the F order of the
    # buffers, so results are stored (into arr.T, C-contiguous) and producers read without transposing copies
    rev = arr.T
    for block, bounds in _blocks(node.region):
        env = {v: _grid_of(bounds, d) for d, v in enumerate(node.dims)}
        out = rev[block[::-1]]
        out[...] = np.broadcast_to(ev.eval(value, env), out.shape)
    bufs[node.name] = (arr, node.region)
    for s in node.stages[1:]:
        _update(node, s, arr, ev)
    return arr


def _blocks(region: tuple[tuple[int, int], ...]):
    """(index into the Func's array, the block's (lo, hi) per dimension) of blocks of about _BLOCK points covering
    `region`: whole along the innermost dimensions, split along the first one whose prefix reaches _BLOCK, one
    index at a time along the outer ones."""
    ext = [hi - lo + 1 for lo, hi in region]
    if math.prod(ext) <= _BLOCK:
        yield (slice(None),) * len(region), tuple(region)
        return
    axis, inner = 0, 1
    while inner * ext[axis] < _BLOCK:
        inner *= ext[axis]
        axis += 1
    step = max(1, _BLOCK // inner)
    for outer in itertools.product(*(range(e) for e in ext[axis + 1:])):
        for start in range(0, ext[axis], step):
            stop = min(start + step, ext[axis])
            index = (slice(None),) * axis + (slice(start, stop),) + tuple(slice(i, i + 1) for i in outer)
            bounds = (tuple(region[:axis]) + ((region[axis][0] + start, region[axis][0] + stop - 1),)
                      + tuple((region[d][0] + i, region[d][0] + i) for d, i in enumerate(outer, axis + 1)))
            yield index, bounds


def _grid_of(bounds: tuple[tuple[int, int], ...], d: int) -> np.ndarray:
    """Coordinates of dimension d over a block, along axis n - 1 - d (reversed, see _realize)."""
    lo, hi = bounds[d]
    shape = [1] * len(bounds)
    shape[len(bounds) - 1 - d] = hi - lo + 1
    return np.arange(lo, hi + 1, dtype=np.int64).reshape(shape)


def _grid(node: Node, d: int) -> np.ndarray:
    lo, hi = node.region[d]
    shape = [1] * node.dimensions
    shape[d] = hi - lo + 1
    return np.arange(lo, hi + 1, dtype=np.int64).reshape(shape)


def _update(node: Node, s: Stage, arr: np.ndarray, ev: "_Evaluator") -> None:
    env = {l.name: _grid(node, l.func_dim) for l in s.loop if l.pure}
    rvars = [l.rvar for l in s.loop if not l.pure]
    scatter = _scatter_op(node, s)
    if rvars and scatter is not None:
        _update_scatter(node, s, arr, ev, env, rvars, scatter)
        return
    ranges = [range(r.min, r.min + r.extent) for r in rvars]
    for point in _rdom_points(ranges):
        for r, v in zip(rvars, point):
            env[r.name] = np.int64(v)
        _store(node, s, arr, ev, env)


def _rdom_points(ranges):
    """RDom points in iteration order: the first dimension innermost."""
    if not ranges:
        yield ()
        return
    for rev in itertools.product(*reversed(ranges)):
        yield tuple(reversed(rev))


def _store(node: Node, s: Stage, arr: np.ndarray, ev: "_Evaluator", env) -> None:
    value = ev.eval(s.value, env)
    idx = _coords(node, s, ev, env)
    shape = np.broadcast_shapes(*(np.shape(i) for i in idx), np.shape(value))
    arr[tuple(np.broadcast_to(i, shape) for i in idx)] = np.broadcast_to(value, shape)


def _coords(node: Node, s: Stage, ev: "_Evaluator", env) -> tuple:
    out = []
    for d, a in enumerate(s.lhs):
        c = np.asarray(ev.eval(a, env)).astype(np.int64) - node.region[d][0]
        _check_range(c, node.region[d][1] - node.region[d][0] + 1, node.name, node.name)
        out.append(c)
    return tuple(out)


def _scatter_op(node: Node, s: Stage):
    """The ufunc of an update `f[c] = f[c] OP v` whose order of application ufunc.at preserves."""
    v = s.value
    if not isinstance(v, BinOp) or v.op not in ("add", "mul", "min", "max"):
        return None
    if v.op in ("min", "max") and not v.type.is_integer:
        return None  # float min/max with NaN depends on operand order
    a, b = v.a, v.b
    if not (isinstance(a, Call) and a.target.name == node.name):
        return None
    if tuple(x.key() for x in a.args) != tuple(x.key() for x in s.lhs):
        return None
    for part in (b, *s.lhs):
        if any(isinstance(n, Call) and n.target.name == node.name for n in walk(part)):
            return None
    return {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[v.op], b


def _updates_every_point_once(node: Node, s: Stage) -> bool:
    """The update's left side is its Func's own pure loops, in order (`f(x, y, c) = f(x, y, c) OP v`): each
    RDom point then updates every point of the Func exactly once."""
    pure = {l.name: l.func_dim for l in s.loop if l.pure}
    return len(s.lhs) == node.dimensions and all(isinstance(a, Var) and pure.get(a.name) == d
                                                 for d, a in enumerate(s.lhs))


def _update_scatter(node, s, arr, ev, env, rvars, scatter) -> None:
    ufunc, operand = scatter
    # a reduction into every point (convolutions, channel sums): applied one RDom point at a time over the whole
    # array, the same operations in the same order per point as ufunc.at, without its index arrays
    elementwise = _updates_every_point_once(node, s)
    ranges = [(r.min, r.extent) for r in rvars]
    pure_shape = arr.shape
    n_pure = len(pure_shape)
    total = math.prod(e for _, e in ranges)
    # RDom axes after the Func's axes, last RDom dimension first so C-order flattening follows RDom order
    order = list(reversed(range(len(rvars))))
    step = max(1, _CHUNK // max(1, math.prod(pure_shape)))
    flat = np.arange(total, dtype=np.int64)
    for start in range(0, total, step):
        block = flat[start:start + step]
        coords = np.unravel_index(block, [ranges[k][1] for k in order])
        renv = dict(env)
        for axis, k in enumerate(order):
            shape = [1] * n_pure + [len(block)]
            renv[rvars[k].name] = (coords[axis] + ranges[k][0]).reshape(shape)
        for name, g in env.items():
            renv[name] = g.reshape(g.shape + (1,))
        val = ev.eval(operand, renv)
        if elementwise:
            v = np.broadcast_to(np.asarray(val, dtype=arr.dtype), pure_shape + (len(block),))
            for j in range(len(block)):
                ufunc(arr, v[..., j], out=arr)
            continue
        idx = _coords(node, s, ev, renv)
        shape = np.broadcast_shapes(*(np.shape(i) for i in idx), np.shape(val), (1,) * n_pure + (len(block),))
        full_idx = tuple(np.broadcast_to(i, shape).reshape(-1) for i in idx)
        ufunc.at(arr, full_idx, np.broadcast_to(np.asarray(val, dtype=arr.dtype), shape).reshape(-1))


def _check_range(idx: np.ndarray, extent: int, consumer: str, producer: str) -> None:
    if idx.size and (idx.min() < 0 or idx.max() >= extent):
        raise AssertionError(f"bounds inference bug: {consumer} reads {producer} outside its computed region")


def _strided_view(arr: np.ndarray, idx: list[np.ndarray]) -> np.ndarray | None:
    """arr[tuple(idx)] as a view, when each index runs along its own axis of the loop grid as an increasing
    arithmetic progression (f(x + 1, 2 * y, c), a constant): what numpy's gather computes, without the gather.
    None otherwise."""
    ndim = max(c.ndim for c in idx)
    slices, axes = [], []
    for c in idx:
        shape = (1,) * (ndim - c.ndim) + c.shape
        long = [a for a, n in enumerate(shape) if n > 1]
        if len(long) > 1:
            return None
        v = c.reshape(-1)
        if not long:
            slices.append(slice(int(v[0]), int(v[0]) + 1))
            axes.append(None)
            continue
        step = int(v[1] - v[0])
        if step <= 0 or (len(v) > 2 and not (np.diff(v) == step).all()):
            return None
        slices.append(slice(int(v[0]), int(v[-1]) + 1, step))
        axes.append(long[0])
    along = [a for a in axes if a is not None]
    if len(set(along)) != len(along):
        return None
    view = arr[tuple(slices)]
    order = sorted((k for k, a in enumerate(axes) if a is not None), key=lambda k: axes[k])
    view = view.transpose(order + [k for k, a in enumerate(axes) if a is None])
    shape = [1] * ndim
    for k in order:
        shape[axes[k]] = view.shape[order.index(k)]
    return view.reshape(shape)


class _Evaluator:
    def __init__(self, bufs, func: str):
        self.bufs = bufs
        self.func = func

    def eval(self, e: Expr, env) -> np.ndarray:
        if isinstance(e, Const):
            return np.asarray(e.value, dtype=e.type.dtype)
        if isinstance(e, (Var, RVar)):
            return env[e.name]
        if isinstance(e, Cast):
            return sem.cast(self.eval(e.value, env), e.value.type, e.target)
        if isinstance(e, BinOp):
            return sem.arith(e.op, self.eval(e.a, env), self.eval(e.b, env), e.type)
        if isinstance(e, Cmp):
            return sem.compare(e.op, self.eval(e.a, env), self.eval(e.b, env))
        if isinstance(e, Logical):
            f = np.logical_and if e.op == "and" else np.logical_or
            return f(self.eval(e.a, env), self.eval(e.b, env))
        if isinstance(e, Not):
            return np.logical_not(self.eval(e.a, env))
        if isinstance(e, Select):
            return np.where(self.eval(e.cond, env), self.eval(e.t, env), self.eval(e.f, env)).astype(e.type.dtype)
        if isinstance(e, Call):
            arr, region = self.bufs[e.target.name]
            idx = []
            for d, a in enumerate(e.args):
                c = np.asarray(self.eval(a, env)).astype(np.int64) - region[d][0]
                _check_range(c, region[d][1] - region[d][0] + 1, self.func, e.target.name)
                idx.append(c)
            if e.target.name != self.func:  # (a Func's own buffer is read only by its updates, which write it)
                view = _strided_view(arr, idx)
                if view is not None:
                    return view
            return arr[tuple(idx)]
        if isinstance(e, Math):
            args = [self.eval(a, env) for a in e.args]
            return np.asarray(sem.math_fn(e.fn, args, e.type, e.args[0].type)).astype(e.type.dtype)
        raise TypeError(f"cannot interpret {e!r}")  # pragma: no cover
