"""Schedule-specific features: the 39 per-stage numbers of seeds/adams2019 Appendix A, and schedlab's two of what
consecutive realizations share (new_reads).

Computed from the Plan of a LoopNest — the bounds inference the backends compile from — so a feature
says what the generated code does: loop counts are the plan's trip counts, regions and footprints are
the plan's static region extents, strides come from the FunctionDAG's Jacobians. Definitions follow
Halide's `LoopNest::compute_features` (described in shared/reference §3), adapted where schedlab's
LoopNest differs: the innermost level holds the SIMD loop, the unrolled loops and the RVar loops, so
"a tile" is one execution of the innermost level and "a vector" one run of its SIMD loop.

Partial schedules (during search) follow the optimistic rules of adams2019 §3.2: only scheduled stages
get features; a load from an unscheduled producer is assumed dense along whichever dimension is best;
unscheduled readers of a producer are ignored; a root Func whose parallel tiling is still to be chosen
is assumed split into at most 8 x cores tasks.
"""

from __future__ import annotations

import functools
from math import prod
from fractions import Fraction

import numpy as np

try:
    import cython
except ImportError:  # pure Python without Cython: the typing decorators do nothing
    from ir.cython_pure import cython

from ir.dag import FunctionDAG, Stage
from ir.loopnest import LoopNest
from ir.plan import Chain, FuncPlan, Plan, Region
from ir.symbolic import Lin
from ir.target import CpuTarget

from .schema import DTYPE, LINE_BYTES, SCHEDULE_FEATURES, lines_per_vector


# run as Python: ir.plan's _id is the builtin id, and ir.symbolic's functions are imported (compiled,
# featurize/schedule.pxd cimports _id's C cast and those C functions)
if not cython.compiled:
    from ir.plan import _id
    from ir.symbolic import lmax, lmin, static_extent


# numpy's own answers: what the helpers below compute as Python, and where, compiled, an array is not one they read
# in place (another dtype, order or byte order)
def _items_by_numpy(a: np.ndarray, idx: tuple) -> list:
    return a[list(idx)].tolist()


def _with_items_by_numpy(a: np.ndarray, idx: tuple, values: list) -> np.ndarray:
    v = a.copy()
    v[list(idx)] = values
    return v


def _stacked_by_numpy(features: list, keys: tuple) -> np.ndarray:
    return np.array([[f[k] for k in keys] for f in features])


def _float32_by_numpy(x: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(x))


@cython.locals(v=list, i="Py_ssize_t", n="Py_ssize_t")
def _float64(v: list) -> np.ndarray:
    """np.array(v) of a list of Python floats, as float64. Compiled, one loop of C stores into a new array's items
    (numpy's C API): numpy's conversion of a list looks at every item's type and shape first (about 10 k
    instructions for a stage's 41), and a typed memoryview costs a few thousand to acquire."""
    n = len(v)
    out = np.empty(n)
    data = cython.declare(cython.p_double, _float64_data(out))  # noqa: F821 - a C function of the .pxd
    for i in range(n):
        data[i] = v[i]
    return out


@cython.locals(i="Py_ssize_t")
def _float32_items(a: np.ndarray, idx: tuple) -> list:
    """a[list(idx)].tolist(): the items of a stage's feature array at `idx`, as Python floats. Compiled, a float32
    array in C order is read in place (numpy's fancy indexing and tolist cost a few thousand instructions a call)."""
    data = cython.declare(cython.p_float, _float32_data(a))  # noqa: F821 - a C function of the .pxd
    if data == cython.NULL:
        return _items_by_numpy(a, idx)
    return [cython.cast(cython.double, data[i]) for i in idx]


@cython.locals(k="Py_ssize_t")
def _float32_with_items(a: np.ndarray, idx: tuple, values: list) -> np.ndarray:
    """A copy of float32 array `a` with the items at `idx` set to `values`, each already a float32 value (rounded by
    _as_float32): what `v = a.copy(); v[list(idx)] = values` makes, stored in C where `a` is a C-order array."""
    if _float32_data(a) == cython.NULL:  # noqa: F821 - a C function of the .pxd
        return _with_items_by_numpy(a, idx, values)
    v = a.copy()  # C order, as `a` is
    data = cython.declare(cython.p_float, _float32_data(v))  # noqa: F821 - a C function of the .pxd
    for k in range(len(idx)):
        data[idx[k]] = cython.cast(cython.float, cython.cast(cython.double, values[k]))
    return v


@cython.locals(features=list, keys=tuple, nb="Py_ssize_t", ns="Py_ssize_t", w="Py_ssize_t", b="Py_ssize_t",
               j="Py_ssize_t", i="Py_ssize_t", at="Py_ssize_t")
def stack_stage_features(features: list, keys: tuple) -> np.ndarray:
    """np.array([[f[k] for k in keys] for f in features]): the schedule features of B states (their dicts of stage
    arrays) over the stages `keys`, [B, S, width], what a cost model scores in one batch. Compiled, where every array
    is a float32 row of one width in C order, its items are copied in C into one new array (numpy's conversion of
    the nested lists inspects each of the B x S arrays first); anything else is numpy's own conversion."""
    nb, ns = len(features), len(keys)
    if nb == 0 or ns == 0:
        return _stacked_by_numpy(features, keys)
    w = _float32_width(features[0][keys[0]])  # noqa: F821 - a C function of the .pxd
    if w < 0:
        return _stacked_by_numpy(features, keys)
    out = np.empty((nb, ns, w), dtype=np.float32)
    dst = cython.declare(cython.p_float, _float32_data(out))  # noqa: F821 - a C function of the .pxd
    at = 0
    for b in range(nb):
        f = features[b]
        for j in range(ns):
            a = f[keys[j]]
            if _float32_width(a) != w:  # noqa: F821 - a C function of the .pxd
                return _stacked_by_numpy(features, keys)
            src = cython.declare(cython.p_float, _float32_data(a))  # noqa: F821 - a C function of the .pxd
            for i in range(w):
                dst[at + i] = src[i]
            at += w
    return out


_FLOAT32_MAX = float(np.finfo(np.float32).max)


@cython.locals(x="double")
def _as_float32(x: float) -> float:
    """x rounded to float32 and back, as numpy's cast to a float32 array stores it: compiled, the same C conversion
    within float32's range; beyond it, numpy's own (it gives inf)."""
    if -_FLOAT32_MAX <= x <= _FLOAT32_MAX:
        return cython.cast(cython.float, x)
    return _float32_by_numpy(x)


if not cython.compiled:  # run as Python: numpy's own conversions
    def _float64(v: list) -> np.ndarray:  # noqa: F811
        return np.array(v)

    _float32_items, _float32_with_items = _items_by_numpy, _with_items_by_numpy
    stack_stage_features, _as_float32 = _stacked_by_numpy, _float32_by_numpy


_F = {name: i for i, name in enumerate(SCHEDULE_FEATURES)}
_WS = np.array([_F[k] for k in ("working_set", "working_set_at_production", "working_set_at_realization",
                                "working_set_at_task", "working_set_at_root")])
_WS_ROOT = _F["working_set_at_root"]
_TASK_READS = np.array([_F["unique_bytes_read_per_task"], _F["unique_lines_read_per_task"]])
_WS_ITEMS = tuple(_WS.tolist())  # the same indices as a tuple of ints (_float32_items, _float32_with_items)
_TASK_READS_ITEMS = tuple(_TASK_READS.tolist())
# indices as module constants: stage() fills a list of Python floats by these (a dict look-up and a numpy item
# assignment per feature cost more than the arithmetic)
_N = len(SCHEDULE_FEATURES)
_NUM_REALIZATIONS = _F["num_realizations"]
_NUM_PRODUCTIONS = _F["num_productions"]
_PER_REALIZATION = _F["points_computed_per_realization"]
_PER_PRODUCTION = _F["points_computed_per_production"]
_TOTAL = _F["points_computed_total"]
_MINIMUM = _F["points_computed_minimum"]
_INNERMOST_EXTENT = _F["innermost_loop_extent"]
_INNERMOST_PURE_EXTENT = _F["innermost_pure_loop_extent"]
_UNROLLED_EXTENT = _F["unrolled_loop_extent"]
_INNER_PAR = _F["inner_parallelism"]
_OUTER_PAR = _F["outer_parallelism"]
_BYTES_REAL = _F["bytes_at_realization"]
_BYTES_PROD = _F["bytes_at_production"]
_BYTES_ROOT = _F["bytes_at_root"]
_INNER_BYTES_REAL = _F["innermost_bytes_at_realization"]
_INNER_BYTES_PROD = _F["innermost_bytes_at_production"]
_INNER_BYTES_ROOT = _F["innermost_bytes_at_root"]
_UNIQUE_BYTES_REAL = _F["unique_bytes_read_per_realization"]
_UNIQUE_LINES_REAL = _F["unique_lines_read_per_realization"]
_ALLOC_BYTES_REAL = _F["allocation_bytes_read_per_realization"]
_WS_HEAD = _F["working_set"]
_VECTOR_SIZE = _F["vector_size"]
_NATIVE_VECTOR_SIZE = _F["native_vector_size"]
_NUM_VECTORS = _F["num_vectors"]
_NUM_SCALARS = _F["num_scalars"]
_SCALAR_LOADS_PER_VECTOR = _F["scalar_loads_per_vector"]
_VECTOR_LOADS_PER_VECTOR = _F["vector_loads_per_vector"]
_SCALAR_LOADS_PER_SCALAR = _F["scalar_loads_per_scalar"]
_BYTES_TASK = _F["bytes_at_task"]
_INNER_BYTES_TASK = _F["innermost_bytes_at_task"]
_UNIQUE_BYTES_VECTOR = _F["unique_bytes_read_per_vector"]
_UNIQUE_LINES_VECTOR = _F["unique_lines_read_per_vector"]
_UNIQUE_BYTES_TASK = _F["unique_bytes_read_per_task"]
_UNIQUE_LINES_TASK = _F["unique_lines_read_per_task"]
_WS_TASK = _F["working_set_at_task"]
_WS_PROD = _F["working_set_at_production"]
_WS_REAL = _F["working_set_at_realization"]
_NEW_BYTES_REAL = _F["new_bytes_read_per_realization"]
_NEW_LINES_REAL = _F["new_lines_read_per_realization"]
_INLINED_CALLS = _F["inlined_calls"]


def schedule_features(plan: Plan, target: CpuTarget, pending_parallel: frozenset = frozenset(),
                      parent: dict[tuple[str, int], np.ndarray] | None = None,
                      parent_pending: frozenset = frozenset()) -> dict[tuple[str, int], np.ndarray]:
    """The schema's 41 features for every scheduled stage, keyed by (func, stage index).

    With `parent` (the features of the plan `plan` was extended from, see Plan.extend), only the stages
    a changed decision can affect are recomputed, as Halide memoizes featurization during search: those of
    the changed Funcs, and of the stages that read them or their producers (directly, through inlined Funcs,
    or through Funcs computed inside their parallel task); every other stage keeps its features but for the
    working sets, which any new allocation moves. `parent_pending` is the pending set the parent features were
    computed with: a Func whose parallel tiling got chosen (or was dropped) is changed even where its loops
    are not (the serial option leaves them as they were).
    """
    return _Featurizer(plan, target, pending_parallel).run(parent, frozenset(parent_pending))


def allocations(plan: Plan) -> dict[int, int]:
    """id(node) -> bytes allocated at the node or inside it, for every node of `plan`'s tree (what the working-set
    features sum)."""
    table: dict[int, int] = {}
    _alloc_walk(plan.root, plan.funcs, _static_facts(plan.dag).func_bpp, table)
    return table


@cython.locals(view="Plan", fp="FuncPlan", ch="Chain")
def retiled_features(view: Plan, target: CpuTarget, pending_parallel: frozenset,
                     sibling: dict[tuple[str, int], np.ndarray], func: str,
                     sibling_allocations: dict[int, int], relayout: bool = False) -> dict[tuple[str, int], np.ndarray]:
    """The features of a tiling sibling: `sibling`'s (those of the plan `view` was retiled from, Plan.retiled, whose
    allocations() are `sibling_allocations`) with `func`'s stages featurized over `view`. The tiling of a Func whose
    producers are not scheduled moves nothing else: its readers read its region and layout, its producers' regions
    at coarser levels are over that region, and its levels allocate nothing (what schedule_features would recompute
    of the others is the sibling's). `relayout`: the sibling vectorizes `func` along another dimension, which
    becomes its innermost storage dimension (Plan's layout), so what its readers load moves too: the stages that
    read it directly or through inlined Funcs are featurized again, and those that read it only through Funcs
    computed inside their task have their reads per task patched."""
    fz = _Featurizer(view, target, pending_parallel)
    fp = view.funcs[func]
    table = fz._alloc = dict(sibling_allocations)
    for ch in fp.chains:  # the new levels, which the sibling's tree does not have
        _alloc_walk(ch.head, view.funcs, fz.static.func_bpp, table)
    out = dict(sibling)
    for ch in fp.chains:
        out[(func, ch.stage.index)] = fz.stage(fp, ch).astype(DTYPE)
    if relayout:
        _relayout_readers(fz, func, out)
    return out


@cython.locals(fz="_Featurizer", fp="FuncPlan", ch="Chain")
def _relayout_readers(fz, func: str, out: dict) -> None:
    """retiled_features' `relayout`: `func`'s readers featurized again over the view, in `out`, in place (as
    _Featurizer.run would for a plan whose only change is `func`'s layout)."""
    redo, task_only = fz.readers({func})
    task_only -= redo
    funcs = fz.plan.funcs
    feats = fz.feats
    feats.update(out)
    for name, fp in funcs.items():
        if not fp.inlined and (name in redo or name in task_only) and name != func:
            for ch in fp.chains:
                key = (name, ch.stage.index)
                if name in redo:
                    feats[key] = fz.stage(fp, ch)
                else:
                    feats[key] = fz.patch_working_sets(out[key], fp, ch, True)
    for name, fp in funcs.items():
        if fp.inlined and fz.callers_redone(name, redo):
            feats[(name, 0)] = fz.inlined(fp)
    for key, v in feats.items():
        if v is not out[key]:
            out[key] = v.astype(DTYPE)


@cython.locals(n="LoopNest", c="LoopNest")
def _alloc_walk(n: LoopNest, funcs: dict[str, FuncPlan], bpp: dict[str, int], table: dict[int, int]) -> int:
    """Bytes allocated at node n or inside it, recorded for every node of its subtree (a module function, not a
    recursive closure: a closure that calls itself is a reference cycle only the cyclic collector frees)."""
    k = 0
    for f in n.store_at:
        k += bpp[f] * prod(funcs[f].storage_extents)
    for c in n.children:
        k += _alloc_walk(c, funcs, bpp, table)
    table[_id(n)] = k
    return k


class _Featurizer:
    @cython.locals(plan="Plan", memo="_Memo")
    def __init__(self, plan: Plan, target: CpuTarget, pending: frozenset):
        self.plan = plan
        self.dag: FunctionDAG = plan.dag
        self.target = target
        self.pending = pending
        self.parent: dict[int, LoopNest | None] = plan.parent
        self.feats: dict[tuple[str, int], np.ndarray] = {}
        self._runs: dict[int, int] = {}
        self.static = _static_facts(self.dag)
        self.inlined_set = frozenset(plan.inlined)
        self.minimum = self.static.minimum
        self._alloc: dict[int, int] | None = None  # node id -> alloc_in, for the whole tree at once
        self._input_fp: dict[tuple[str, int], tuple[int, int]] = {}
        self._calls: dict[str, list[tuple[LoopNest, int]]] | None = None
        memo = self.dag.analysis("featurize.memo", _Memo)
        if len(memo.regions) > _MEMO_LIMIT:
            memo.regions.clear()
        if len(memo.vectors) > _MEMO_LIMIT:
            memo.vectors.clear()
        self._regions_memo, self._vectors_memo, self._counts_memo = memo.regions, memo.vectors, memo.counts
        self._siblings_memo = memo.siblings
        if len(memo.tasks) > _MEMO_LIMIT:
            memo.tasks.clear()
        self._tasks_memo = memo.tasks

    # -- tree arithmetic -------------------------------------------------------------------------

    @cython.locals(lp="Loop", n="LoopNest")
    def iters(self, n: LoopNest) -> int:
        """Iterations of node n's own loops (1 at the root)."""
        if n.func is None:
            return 1
        return prod([lp.count for lp in self.plan.level(n).loops])

    @cython.locals(n="LoopNest", p="LoopNest")
    def runs(self, n: LoopNest) -> int:
        """How many times the body of node n executes in one run of the pipeline."""
        k = self._runs.get(_id(n))
        if k is None:
            p = self.parent[_id(n)]
            k = self.iters(n) * (1 if p is None else self.runs(p))
            self._runs[_id(n)] = k
        return k

    @cython.locals(lvl="Level", lp="Loop", n="LoopNest")
    def tasks(self, n: LoopNest) -> int:
        """Parallel tasks of a parallel level."""
        lvl = self.plan.level(n)
        return prod([lp.count for lp in lvl.loops if lp.pure])

    @cython.locals(m="LoopNest")
    def outer_parallelism(self, n: LoopNest) -> int:
        """Parallel tasks of the parallel levels enclosing (or being) node n."""
        k = 1
        m: LoopNest | None = n
        while m is not None:
            if m.func is not None and m.parallel:
                k *= self.tasks(m)
            m = self.parent[_id(m)]
        return k

    @cython.locals(m="LoopNest")
    def root_head(self, n: LoopNest) -> LoopNest:
        """The child of the root whose subtree holds n (the task site of Halide's featurization)."""
        m = n
        while self.parent[_id(m)].func is not None:  # type: ignore[union-attr]
            m = self.parent[_id(m)]  # type: ignore[assignment]
        return m

    def alloc_in(self, n: LoopNest) -> int:
        """Bytes of all allocations made at node n or inside it."""
        return self.alloc_table()[_id(n)]

    def alloc_table(self) -> dict[int, int]:
        """id(node) -> alloc_in of every node, walked once per plan (working_set_at_root needs them all anyway)."""
        if self._alloc is None:
            self._alloc = allocations(self.plan)
        return self._alloc

    def extents(self, region: Region | None, cap) -> list[int]:
        if region is None:
            return []
        return [static_extent(lo, hi, c) for (lo, hi), c in zip(region, cap)]

    # -- the walk --------------------------------------------------------------------------------

    @cython.locals(fp="FuncPlan", ch="Chain")
    def run(self, parent=None, parent_pending: frozenset = frozenset()) -> dict[tuple[str, int], np.ndarray]:
        redo = changed = sibling_key = shared = None
        task_only: set[str] = set()
        if parent is not None and self.plan.changed is not None:
            changed = set(self.plan.changed) | (self.pending ^ parent_pending)
            redo, task_only = self.affected(changed)
            sibling_key = self.sibling_key(parent, changed, parent_pending)
            hit = self._siblings_memo.get(sibling_key)
            if hit is not None and hit[0] is parent:
                shared = hit[1]
        final: set[tuple[str, int]] = set()  # keys whose array is already the returned one
        for name, fp in self.plan.funcs.items():
            if not fp.inlined:
                for ch in fp.chains:
                    key = (name, ch.stage.index)
                    if shared is not None and key in shared:  # (the recomputed and the patched reads per task)
                        self.feats[key] = shared[key]
                        final.add(key)
                    elif redo is None or name in redo or key not in parent:
                        self.feats[key] = self.stage(fp, ch)
                    else:
                        v = self.feats[key] = self.patch_working_sets(parent[key], fp, ch, name in task_only)
                        if v.dtype == DTYPE:
                            final.add(key)
        for name, fp in self.plan.funcs.items():
            if fp.inlined:
                key = (name, 0)
                if redo is None or key not in parent or self.callers_redone(name, redo):
                    self.feats[key] = self.inlined(fp)
                else:  # its callers' loops are the parent's: only the working set at root may move
                    v = self.feats[key] = self.patch_root_working_set(parent[key])
                    if v.dtype == DTYPE:
                        final.add(key)
        out = {k: v if k in final else v.astype(DTYPE) for k, v in self.feats.items()}
        if sibling_key is not None and shared is None:
            memo = self._siblings_memo
            if len(memo) > _MEMO_LIMIT:
                memo.clear()
            funcs = self.plan.funcs
            memo[sibling_key] = (parent, {k: out[k] for k in out if (k[0] in redo or k[0] in task_only)
                                          and k[0] not in changed and not funcs[k[0]].inlined})
        return out

    @cython.locals(fp="FuncPlan")
    def sibling_key(self, parent: dict, changed: set[str], parent_pending: frozenset) -> tuple:
        """What the features of the other recomputed stages depend on among the children of one parent: the
        changed Funcs' placement (site, storage, layout, regions), not their own loops. Children that differ
        only in a changed Func's tiling (a beam step's siblings) share those stages' features."""
        keys, funcs = self.plan.keys, self.plan.funcs
        placed = []
        for f in sorted(changed):
            fp = funcs.get(f)
            if fp is None:
                placed.append((f, None))
            elif fp.inlined:
                placed.append((f, "inlined"))
            else:
                placed.append((f, keys[_id(fp.site)], keys[_id(fp.store)], fp.layout, tuple(fp.extents),
                               tuple(fp.storage_extents), fp.sliding is not None))
        return _id(parent), tuple(placed), self.pending, parent_pending

    def callers_redone(self, name: str, redo: set[str]) -> bool:
        """Whether an inlined Func or a Func calling it (directly or through inlined Funcs) was recomputed."""
        return not _inlined_callers(self.dag, self.inlined_set)[name].isdisjoint(redo)

    def patch_root_working_set(self, old: np.ndarray) -> np.ndarray:
        """An inlined Func's parent features with this plan's working set at root (the only schedule-wide
        number among them); the parent's array itself when that did not move."""
        ws = self.alloc_in(self.plan.root)
        if old.dtype != DTYPE:
            v = old.astype(np.float64)
            v[_WS_ROOT] = ws
            return v
        if DTYPE(ws) == old[_WS_ROOT]:
            return old
        v = old.copy()
        v[_WS_ROOT] = ws
        return v

    def affected(self, changed: set[str]) -> tuple[set[str], set[str]]:
        """(Funcs whose features may differ from the parent plan's, Funcs of which only the reads per task may),
        given the Funcs scheduled differently. A stage that reads a changed Func's producer only through Funcs
        stored inside its task (not inlined) reads that producer in its task's footprint, not in its loads."""
        dag = self.dag
        # a stage's footprint of a producer includes what the producer's other readers need there, so a
        # changed Func also moves its producers' regions, and with them their other readers' features
        # (inputs too: a footprint of an input spans what all its scheduled readers read of it)
        roots = set(changed)
        for f in changed:
            if f in dag:
                roots.update(dag.node(f).producers)
        out, task_only = self.readers(roots)
        out |= changed
        return out, task_only - out

    @cython.locals(plan="Plan", cp="FuncPlan")
    def readers(self, roots: set[str]) -> tuple[set[str], set[str]]:
        """(the scheduled Funcs that read one of `roots` directly or through inlined Funcs, those that read one only
        through Funcs computed inside their task)."""
        plan, dag = self.plan, self.dag
        out: set[str] = set()
        task_only: set[str] = set()
        input_readers = self.static.input_readers
        for f in roots:
            pending = [(f, False)]
            seen: dict[str, bool] = {}  # Func -> reached through a Func stored inside a task only
            while pending:  # readers, looking through inlined Funcs and Funcs computed inside a task
                g, in_task = pending.pop()
                was = seen.get(g)
                if was is not None and (not was or in_task):
                    continue
                seen[g] = in_task
                consumers = dag.node(g).consumers if g in dag else input_readers.get(g, ())
                for c in consumers:
                    cp = plan.funcs.get(c)
                    if cp is None:
                        continue
                    (task_only if in_task else out).add(c)
                    if cp.inlined:
                        pending.append((c, in_task))
                    elif cp.store.func is not None or cp.site.func is not None:
                        pending.append((c, True))
        return out, task_only

    @cython.locals(fp="FuncPlan", ch="Chain")
    def patch_working_sets(self, old: np.ndarray, fp: FuncPlan, ch: Chain, task_reads: bool = False) -> np.ndarray:
        """The parent's features with this plan's working sets (and with `task_reads`, its reads per task): the
        parent's array itself where none moved (no caller writes feature arrays in place; search shares a state's
        with its children already)."""
        table = self.alloc_table()
        head = ch.head
        ws = [float(table[_id(head)]), float(table[_id(ch.site)]), float(table[_id(fp.store)]),
              float(table[_id(self.root_head(head))]), float(table[_id(self.plan.root)])]
        if task_reads and ch.site.func is None:
            reads = [0.0] * _N
            self.task_reads(reads, fp, ch)
            now = [reads[_UNIQUE_BYTES_TASK], reads[_UNIQUE_LINES_TASK]]
            if now != _float32_items(old, _TASK_READS_ITEMS) or old.dtype != DTYPE:
                v = old.astype(np.float64)
                v[_TASK_READS] = np.array(now, dtype=np.float64)
                v[_WS] = np.array(ws, dtype=np.float64)
                return v
        if old.dtype != DTYPE:
            v = old.astype(np.float64)
            v[_WS] = np.array(ws, dtype=np.float64)
            return v
        # working sets are whole numbers >= 0 (never -0.0 or NaN): equal values are equal bytes, and a number equal
        # to a float32 is that float32 once rounded
        before = _float32_items(old, _WS_ITEMS)
        if ws == before:
            return old
        rounded = [_as_float32(x) for x in ws]
        if rounded == before:
            return old
        return _float32_with_items(old, _WS_ITEMS, rounded)

    @cython.locals(fp="FuncPlan", ch="Chain", inner="Level", lvl="Level", lp="Loop", site="LoopNest", store="LoopNest",
                   head="LoopNest", inode="LoopNest", v=list)
    def stage(self, fp: FuncPlan, ch: Chain) -> np.ndarray:
        """The stage's features as float64. Filled in a list of Python floats, one array at the end: float(x) is the
        double a float64 item assignment stores, and Python float arithmetic on what is read back is the float64
        arithmetic numpy scalars did, so every value is the same."""
        v = [0.0] * _N
        node = fp.node
        stage = ch.stage
        bpp = node.bytes_per_point
        site, store, head, inner = ch.site, fp.store, ch.head, ch.levels[-1]
        assert site is not None and store is not None

        realizations = self.runs(store)
        productions = self.runs(site)
        per_production = prod([lp.count for lvl in ch.levels for lp in lvl.loops])
        if fp.sliding is not None:
            per_realization = prod(
                [fp.storage_extents[l.func_dim] if l.pure else l.rvar.extent for l in stage.loop])
            per_production = per_realization * realizations / productions
        else:
            per_realization = per_production * productions / realizations
        total = realizations * per_realization
        v[_NUM_REALIZATIONS] = float(realizations)
        v[_NUM_PRODUCTIONS] = float(productions)
        v[_PER_REALIZATION] = float(per_realization)
        v[_PER_PRODUCTION] = float(per_production)
        v[_TOTAL] = float(total)
        v[_MINIMUM] = float(self.minimum[(fp.name, stage.index)])

        inode = inner.node
        sizes = inode.size
        v[_INNERMOST_EXTENT] = float(prod(sizes))
        pure_extent = prod([s for s, l in zip(sizes, stage.loop) if l.pure])
        v[_INNERMOST_PURE_EXTENT] = float(pure_extent)
        vec = inode.vectorized_loop
        unrolled = [j for j, l in enumerate(stage.loop) if l.pure and j != vec] if inode.unrolled else None
        v[_UNROLLED_EXTENT] = float(prod([sizes[j] for j in unrolled]) if unrolled else 1)

        if head.parallel:
            inner_par = self.tasks(head)
        elif site.func is None and fp.name in self.pending:
            inner_par = min(prod([lp.count for lp in ch.levels[0].loops if lp.pure]), 8 * self.target.cores)
        else:
            inner_par = 1
        v[_INNER_PAR] = float(inner_par)
        v[_OUTER_PAR] = float(self.outer_parallelism(site))

        inner_dim = fp.layout[0] if fp.layout else 0
        v[_BYTES_REAL] = float(bpp * prod(fp.storage_extents))
        v[_INNER_BYTES_REAL] = float(bpp * fp.storage_extents[inner_dim])
        v[_BYTES_PROD] = float(bpp * prod(fp.extents))
        v[_INNER_BYTES_PROD] = float(bpp * fp.extents[inner_dim])
        root_ext = self.static.root_ext[fp.name]
        v[_BYTES_ROOT] = float(bpp * prod(root_ext))
        v[_INNER_BYTES_ROOT] = float(bpp * root_ext[inner_dim])

        vsize = sizes[vec] if vec >= 0 else 1
        v[_VECTOR_SIZE] = float(vsize)
        v[_NATIVE_VECTOR_SIZE] = float(self.native_vector_size(stage))
        if vsize > 1:
            v[_NUM_VECTORS] = float(total / vsize)
        else:
            v[_NUM_SCALARS] = float(total)

        self.task_features(v, fp, ch)
        self.load_features(v, fp, ch, realizations)

        v[_WS_HEAD] = float(self.alloc_in(head))
        v[_WS_PROD] = float(self.alloc_in(site))
        v[_WS_REAL] = float(self.alloc_in(store))
        v[_WS_TASK] = float(self.alloc_in(self.root_head(head)))
        v[_WS_ROOT] = float(self.alloc_in(self.plan.root))
        return _float64(v)

    def native_vector_size(self, stage: Stage) -> int:
        """SIMD lanes for the narrowest type the stage computes with."""
        bits = self.static.narrowest_bits[(stage.func, stage.index)]
        return self.target.vector_bytes // (bits // 8) if bits else self.target.vector_bytes

    @cython.locals(fp="FuncPlan", ch="Chain", lvl="Level", lp="Loop", head="LoopNest")
    def task_features(self, v: list[float], fp: FuncPlan, ch: Chain) -> None:
        bpp = fp.node.bytes_per_point
        inner_dim = fp.layout[0] if fp.layout else 0
        if ch.site.func is not None:
            v[_BYTES_TASK] = v[_BYTES_REAL]
            v[_INNER_BYTES_TASK] = v[_INNER_BYTES_REAL]
            return
        head = ch.head
        if head.parallel:
            lvl = self.plan.level(head)
            per_task = list(fp.extents)
            for lp, l in zip(lvl.loops, ch.stage.loop):
                if l.pure:
                    per_task[l.func_dim] = max(1, -(-per_task[l.func_dim] // lp.count))
            v[_BYTES_TASK] = float(bpp * prod(per_task))
            v[_INNER_BYTES_TASK] = float(bpp * per_task[inner_dim])
        elif fp.name in self.pending:
            v[_BYTES_TASK] = -(-v[_BYTES_REAL] // self.target.cores)
            v[_INNER_BYTES_TASK] = min(v[_BYTES_TASK], v[_INNER_BYTES_REAL])
        else:
            v[_BYTES_TASK] = v[_BYTES_REAL]
            v[_INNER_BYTES_TASK] = v[_INNER_BYTES_REAL]
        self.task_reads(v, fp, ch)

    @cython.locals(fp="FuncPlan", ch="Chain", pp="FuncPlan", head="LoopNest")
    def task_reads(self, v: list[float], fp: FuncPlan, ch: Chain) -> None:
        """Unique bytes and lines read per task of a stage computed at root: the data streamed into one task,
        producers stored at root (or inputs), looking through Funcs stored inside the task."""
        head = ch.head
        bytes_, lines = 0, 0
        seen: set[str] = set()
        funcs, func_producers = self.plan.funcs, self.static.func_producers
        pending = list(self.static.producers[(fp.name, ch.stage.index)])
        # with nothing computed inside the stage's levels, the only loops that read anything during one iteration of
        # its head are its own: a region there is the stage's reads over the head level's box (through the inlined
        # Funcs), whatever the rest of the schedule, so its footprint is memoized on that box's loops
        stage, loops = ch.stage, ch.levels[0].loops
        alone = all([len(lvl.node.children) <= 1 for lvl in ch.levels])  # (a list: no closure in a cpdef method)
        memo, inlined = self._tasks_memo, self.inlined_set
        while pending:
            p = pending.pop()
            if p in seen:
                continue
            seen.add(p)
            pp = funcs.get(p)
            if pp is not None and (pp.inlined or pp.store.func is not None):
                pending.extend(func_producers[p])
                continue
            if alone:
                key = (p, _id(stage), _id(loops), inlined, self.dense_dim(p))
                hit = memo.get(key)
                if hit is not None and hit[0] is stage and hit[1] is loops:
                    b, l = hit[2]
                else:
                    b, l = r = self.region_footprint(p, head)
                    memo[key] = (stage, loops, r)
            else:
                b, l = self.region_footprint(p, head)
            bytes_ += b
            lines += l
        v[_UNIQUE_BYTES_TASK] = float(bytes_)
        v[_UNIQUE_LINES_TASK] = float(lines)

    # -- loads -----------------------------------------------------------------------------------

    @cython.locals(n="LoopNest")
    def region_footprint(self, producer: str, n: LoopNest) -> tuple[int, int]:
        """Footprint of the region of `producer` read during one iteration of node n. A Func's is memoized
        on the identity of the plan's region forms (Plan.extend passes unchanged ones on to its children)."""
        if producer in self.dag.inputs:
            key = (producer, _id(n))
            r = self._input_fp.get(key)
            if r is None:
                r = self._input_fp[key] = self.footprint(producer, self._input_region_at(producer, n))
            return r
        reg = self.plan.region_at(producer, n)
        cap = self.static.root_ext[producer]
        if reg is None:
            return self.footprint(producer, [1] * len(cap))
        dense = self.dense_dim(producer)
        key = (producer, _id(reg), dense)
        hit = self._regions_memo.get(key)
        if hit is not None and hit[0] is reg:
            return hit[1]
        r = self._footprint(producer, [static_extent(lo, hi, c) for (lo, hi), c in zip(reg, cap)], dense)
        self._regions_memo[key] = (reg, r)
        return r

    @cython.locals(fp="FuncPlan", ch="Chain")
    def _input_region_at(self, name: str, n: LoopNest) -> list[int]:
        inp = self.dag.inputs[name]
        cap = self.static.cap[name]
        box: Region | None = None
        for s, _ in self.static.readers[name]:
            fp = self.plan.funcs.get(s.func)
            if fp is None:
                continue
            if fp.inlined:
                creg = self.plan.region_at(s.func, n)
                env = None if creg is None else s.loop_env(tuple(creg))
            else:
                ch = fp.chains[s.index]
                env = self.plan._stage_env_within(ch, n)
            if env is None:
                continue
            r = self.dag.stage_requires(s, name, env)
            if r is None:
                continue
            box = r if box is None else [(lmin(a[0], b[0]), lmax(a[1], b[1])) for a, b in zip(box, r)]
        if box is None:
            return [1] * inp.dimensions
        return [static_extent(lo, hi, c) for (lo, hi), c in zip(box, cap)]

    @cython.locals(fp="FuncPlan")
    def dense_dim(self, producer: str) -> int | None:
        """The producer's innermost storage dimension, or None if it is not scheduled yet."""
        if producer in self.dag.inputs:
            return 0
        fp = self.plan.funcs.get(producer)
        if fp is None or fp.inlined:
            return None
        return fp.layout[0]

    def footprint(self, producer: str, extents: list[int]) -> tuple[int, int]:
        """(bytes, contiguous lines) of a region of a producer."""
        return self._footprint(producer, extents, self.dense_dim(producer))

    def _footprint(self, producer: str, extents: list[int], dense: int | None) -> tuple[int, int]:
        b = self.static.bpp[producer] * prod(extents)
        lines = 1
        for d, e in enumerate(extents):
            if d != dense:
                lines *= e
        if dense is None:  # not scheduled: assume its best layout
            lines //= max(extents) if extents else 1
        return b, max(lines, 1)

    @cython.locals(fp="FuncPlan", ch="Chain", inner="Level", pp="FuncPlan")
    def load_features(self, v: list[float], fp: FuncPlan, ch: Chain, realizations: int) -> None:
        stage = ch.stage
        inner = ch.levels[-1]
        vsize = v[_VECTOR_SIZE]
        counts = self.load_counts(stage, inner.node)
        update = 1 if stage.index > 0 else 0
        v[_VECTOR_LOADS_PER_VECTOR] = float(counts["dense"] + 2 * counts["s2"] + 3 * counts["s3"] + 4 * counts["s4"]
                                            + update)
        v[_SCALAR_LOADS_PER_VECTOR] = float(counts["broadcast"] + vsize * counts["gather"])
        v[_SCALAR_LOADS_PER_SCALAR] = float(counts["loads"] + update)

        # footprints of one vector, one realization, and the allocations they touch
        vec_regions = self.vector_regions(ch)
        b_vec = l_vec = 0
        for p, ext in vec_regions:
            b, l = self.footprint(p, ext)
            b_vec += b
            l_vec += l
        v[_UNIQUE_BYTES_VECTOR] = float(b_vec)
        v[_UNIQUE_LINES_VECTOR] = float(l_vec)

        b_real = l_real = alloc = 0
        funcs, inputs = self.plan.funcs, self.dag.inputs
        for p, _ in vec_regions:
            at_store = self.region_footprint(p, fp.store)
            pp = funcs.get(p)
            nested = (pp is not None and not pp.inlined
                      and self.runs(pp.store) > realizations)
            if nested:
                b, l = self.footprint(p, pp.storage_extents)
            else:
                b, l = at_store
            b_real += b
            l_real += l
            if p in inputs:  # the whole input is one allocation
                alloc += self.footprint(p, self.static.cap[p])[0]
            elif pp is None:  # not scheduled yet: as if computed where this stage reads it
                alloc += at_store[0]
            else:
                alloc += self.static.func_bpp[p] * prod(pp.extents)
        if stage.index > 0:
            bap = v[_BYTES_PROD]
            b_real += bap
            l_real += bap / max(v[_INNER_BYTES_PROD], 1)
            alloc += bap
        v[_UNIQUE_BYTES_REAL] = float(b_real)
        v[_UNIQUE_LINES_REAL] = float(l_real)
        v[_ALLOC_BYTES_REAL] = float(alloc)
        b_new, l_new = self.new_reads(v, fp, stage, vec_regions, b_real, l_real)
        v[_NEW_BYTES_REAL] = float(b_new)
        v[_NEW_LINES_REAL] = float(l_new)

    @cython.locals(fp="FuncPlan", store="LoopNest")
    def new_reads(self, v: list[float], fp: FuncPlan, stage: Stage, vec_regions, b_real: float,
                  l_real: float) -> tuple[float, float]:
        """(bytes, lines) a realization reads that the previous one did not. Consecutive iterations of the store_at
        loop realize the stage one after another (a row of a strip, say); a stencil's rows mostly overlap, so
        while one realization's reads stay in L2 what is new per realization is the loop's whole footprint (the
        producers' regions over one iteration of the enclosing node) divided among its iterations. A realization's
        reads are estimated by its cache lines (64 bytes per line its loads touch per point), not by its box: a
        data-dependent index inflates the box (max_filter's slices) but not what the loads touch. Never more than
        the unique bytes and lines read per realization."""
        store = fp.store
        k = 1 if store is None or store.func is None else self.iters(store)
        parent = None if k <= 1 else self.parent[_id(store)]
        if parent is None:
            return b_real, l_real
        lanes = v[_VECTOR_SIZE]
        per_point = (lines_per_vector(v[_VECTOR_LOADS_PER_VECTOR], v[_SCALAR_LOADS_PER_VECTOR]) / lanes
                     if lanes > 1 else v[_SCALAR_LOADS_PER_SCALAR])
        if min(b_real, v[_PER_REALIZATION] * per_point * LINE_BYTES) > self.target.l2_bytes:
            return b_real, l_real
        b_loop = l_loop = 0.0
        for p, _ in vec_regions:
            b, l = self.region_footprint(p, parent)
            b_loop += b
            l_loop += l
        if stage.index > 0:  # an update reads its own production, every iteration anew
            bap = v[_BYTES_PROD]
            b_loop += bap * k
            l_loop += bap * k / max(v[_INNER_BYTES_PROD], 1)
        if b_loop / k >= b_real:
            return b_real, l_real
        return b_loop / k, min(l_real, max(l_loop / k, 1.0))

    @cython.locals(inner="LoopNest")
    def load_counts(self, stage: Stage, inner: LoopNest) -> dict[str, float]:
        """Loads per point by kind, memoized per DAG on everything they depend on: the stage, the inlined
        Funcs it reads through, the SIMD loop, the unrolled extents and the storage layouts of the producers."""
        vec = inner.vectorized_loop
        if inner.unrolled:
            size = inner.size
            unrolled = [j for j, l in enumerate(stage.loop) if l.pure and j != vec and size[j] > 1]
        else:
            unrolled = []
        reached, loads = _loads_entry(self.dag, self.inlined_set, stage)
        key = (stage.func, stage.index, reached, vec, tuple([(j, inner.size[j]) for j in unrolled]),
               tuple([self.dense_dim(p) for p, _, _ in loads]))
        memo = self._counts_memo
        counts = memo.get(key)
        if counts is not None:
            return counts
        counts = dict(broadcast=0.0, dense=0.0, s2=0.0, s3=0.0, s4=0.0, gather=0.0, loads=0.0)
        for producer, jac, n in loads:
            amort = 1
            for j in unrolled:
                if all([jac[i][j] == 0 for i in range(len(jac))]):
                    amort *= inner.size[j]
            n /= amort
            counts["loads"] += n
            counts[self.classify(producer, jac, vec)] += n
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
        memo[key] = counts
        return counts

    @cython.locals(ch="Chain", inner="Level")
    def vector_regions(self, ch: Chain) -> list[tuple[str, list[int]]]:
        """(producer, static extents) of the regions one SIMD vector reads, memoized on the identity of the
        loop lists vector_env derives from (shared with the parent plan's where the chain was not replanned)."""
        inner = ch.levels[-1]
        loops = inner.loops
        outer = ch.levels[-2].loops if len(ch.levels) > 1 else ch.bounds
        stage = ch.stage
        key = (_id(stage), inner.node.vectorized_loop, _id(loops), _id(outer), self.inlined_set)
        hit = self._vectors_memo.get(key)
        if hit is not None and hit[0] is stage and hit[1] is loops and hit[2] is outer:
            return hit[3]
        cap = self.static.cap
        regions = [(p, self.extents(reg, cap[p]))
                   for p, reg in _regions_read(self.dag, self.inlined_set, stage, self.vector_env(ch)).items()]
        self._vectors_memo[key] = (stage, loops, outer, regions)
        return regions

    @cython.locals(ch="Chain", inner="Level", lp="Loop")
    def vector_env(self, ch: Chain) -> dict[str, tuple[Lin, Lin]]:
        """Loop boxes of one SIMD vector: the whole SIMD loop, one point of every other loop."""
        inner = ch.levels[-1]
        vec = inner.node.vectorized_loop
        env = {}
        for j, (lp, l) in enumerate(zip(inner.loops, ch.stage.loop)):
            env[l.name] = self._outer_box(ch, l.name) if j == vec else (lp.base, lp.base)
        return env

    @staticmethod
    def _outer_box(ch: Chain, name: str) -> tuple[Lin, Lin]:
        """What Level.box() of the level around the innermost one (or the chain's bounds) has for loop `name`."""
        box = None
        if len(ch.levels) > 1:
            for lp in ch.levels[-2].loops:
                if lp.name == name:
                    box = lp
            return box.base, box.base + box.ext - 1
        for l, b in zip(ch.stage.loop, ch.bounds):
            if l.name == name:
                box = b
        return box

    def classify(self, producer: str, jac, vec: int) -> str:
        if vec < 0:
            return "broadcast"
        strides = [row[vec] for row in jac]
        if all([s == 0 for s in strides]):
            return "broadcast"
        dense = self.dense_dim(producer)
        for k, name in ((1, "dense"), (2, "s2"), (3, "s3"), (4, "s4")):
            if dense is None:  # any dimension may end up innermost: the best case
                if strides.count(k) == 1 and strides.count(0) == len(strides) - 1:
                    return name
            elif strides[dense] == k and all([s == 0 for i, s in enumerate(strides) if i != dense]):
                return name
        return "gather"

    # -- inlined Funcs ---------------------------------------------------------------------------

    def _inlined_calls(self) -> dict[str, list[tuple[LoopNest, int]]]:
        """Inlined Func -> (innermost node calling it, calls per point), in pre-order like LoopNest.nodes() (the
        plan's own walk listed the innermost nodes in that order: no second walk of the tree)."""
        out: dict[str, list[tuple[LoopNest, int]]] = {}
        for n in self.plan.innermost_nodes():
            if n.inlined:
                for f, k in dict(n.inlined).items():
                    if k:
                        out.setdefault(f, []).append((n, k))
        return out

    @cython.locals(fp="FuncPlan")
    def inlined(self, fp: FuncPlan) -> np.ndarray:
        node = fp.node
        calls = 0.0
        vectors = scalars = 0.0
        vsize = None
        pure_extent = None
        outer = 1
        native = self.native_vector_size(node.stages[0])
        if self._calls is None:
            self._calls = self._inlined_calls()
        feats = self.feats
        for n, k in self._calls.get(fp.name, ()):
            cf = feats[(n.func, n.stage)]
            if cf.dtype != np.float64:  # a parent's array kept as it was
                cf = cf.astype(np.float64)
            calls += k * cf[_TOTAL]
            vectors += k * cf[_NUM_VECTORS]
            scalars += k * cf[_NUM_SCALARS]
            vsize = cf[_VECTOR_SIZE] if vsize is None else min(vsize, cf[_VECTOR_SIZE])
            pe = cf[_INNERMOST_PURE_EXTENT]
            pure_extent = pe if pure_extent is None else min(pure_extent, pe)
            native = cf[_NATIVE_VECTOR_SIZE]
            outer = max(outer, int(cf[_OUTER_PAR] * cf[_INNER_PAR]))
        v = [0.0] * _N
        v[_INLINED_CALLS] = calls
        v[_NUM_VECTORS] = vectors
        v[_NUM_SCALARS] = scalars
        v[_VECTOR_SIZE] = vsize or 1
        v[_NATIVE_VECTOR_SIZE] = native
        v[_INNERMOST_PURE_EXTENT] = pure_extent or 0
        v[_INNER_PAR] = 1
        v[_OUTER_PAR] = outer
        v[_BYTES_ROOT] = node.bytes_per_point * prod(self.static.root_ext[fp.name])
        v[_MINIMUM] = self.minimum[(fp.name, 0)]
        v[_WS_ROOT] = self.alloc_in(self.plan.root)
        return _float64(v)


# -- helpers over the DAG --------------------------------------------------------------------------


class _StaticFacts:
    """What featurization needs of a FunctionDAG that no schedule changes; computed once per DAG."""

    def __init__(self, dag: FunctionDAG):
        self.minimum = points_computed_minimum(dag)
        self.narrowest_bits: dict[tuple[str, int], int] = {}
        for n in dag.nodes:
            for s in n.stages:
                bits = [t.bits for t in _types_used(s) if not t.is_bool]
                self.narrowest_bits[(n.name, s.index)] = min(bits) if bits else 0
        self.func_bpp = {n.name: n.bytes_per_point for n in dag.nodes}
        self.root_ext = {n.name: [n.region_extent(d) for d in range(n.dimensions)] for n in dag.nodes}
        self.bpp = dict(self.func_bpp)  # of any producer, an input's where names clash (as footprint had it)
        self.bpp.update((i.name, i.type.bytes) for i in dag.inputs.values())
        self.cap = {name: _cap(dag, name) for name in self.bpp}
        self.producers = {(n.name, s.index): tuple(_producers(dag, s)) for n in dag.nodes for s in n.stages}
        self.func_producers = {n.name: tuple(p for s in n.stages for p in _producers(dag, s)) for n in dag.nodes}
        self.readers = {name: list(_readers_of(dag, name)) for name in dag.inputs}
        self.input_readers = {name: tuple(dict.fromkeys(s.func for s, _ in r)) for name, r in self.readers.items()}
        # producers a stage reads, as the set _regions_read iterated (the same order)
        self.reads = {(n.name, s.index): tuple({a.producer for a in s.accesses if a.kind != "self"})
                      for n in dag.nodes for s in n.stages}


_MEMO_LIMIT = 4_000  # entries of each search-wide memo before it starts afresh: a beam step reuses only its own
# parents' forms, and pinning more costs memory and garbage-collector time (camera_pipe beam 32x5: limit 50,000
# -> 594 MB peak, featurize 44 s; 4,000 -> 445 MB, 34 s)


class _Memo:
    """Results that recur across the plans of one search, keyed by the identity of what they derive from:
    Plan.extend hands a child plan its parent's unchanged region forms and loop lists as the same objects.
    Every entry keeps those objects, so their ids cannot be reused while it lives."""

    def __init__(self):
        # (producer, id(region), dense dim) -> (region, (bytes, lines)): footprint of a Plan.region_at result
        self.regions: dict[tuple, tuple] = {}
        # (id(stage), SIMD loop, id(innermost loops), id(outer box source), inlined) ->
        #   (stage, innermost loops, outer source, [(producer, extents)]): regions one vector reads
        self.vectors: dict[tuple, tuple] = {}
        # (func, stage, inlined, SIMD loop, unrolled extents, producer layouts) -> load counts (no ids: no pins)
        self.counts: dict[tuple, dict[str, float]] = {}
        # (id(parent features), changed Funcs' placement, pending sets) -> (parent features, {stage: features}):
        # the stages a child recomputed (or patched the reads per task of) besides its changed Funcs, shared with its
        # siblings (_Featurizer.run)
        self.siblings: dict[tuple, tuple] = {}
        # (producer, id(stage), id(loops of its head level), inlined, dense dim) -> (stage, loops, (bytes, lines)):
        # a footprint per task of a stage with nothing computed inside its levels (_Featurizer.task_features)
        self.tasks: dict[tuple, tuple] = {}


@cython.locals(dag="FunctionDAG")
def _inlined_callers(dag: FunctionDAG, inlined: frozenset) -> dict[str, frozenset]:
    """Inlined Func -> itself and the Funcs that call it, directly or through other inlined Funcs: whose
    recomputation moves its features (_Featurizer.callers_redone). Depends only on which Funcs are inlined."""
    cache = dag.analysis("featurize.inlined_callers", dict)
    out = cache.get(inlined)
    if out is None:
        if len(cache) >= _MEMO_LIMIT:  # a search meets a few inlined sets at a time; do not keep them all
            cache.clear()
        out = cache[inlined] = {}
        for f in inlined:
            pending, seen = [f], set()
            while pending:
                g = pending.pop()
                if g in seen:
                    continue
                seen.add(g)
                if g in inlined:
                    pending.extend(dag.node(g).consumers)
            out[f] = frozenset(seen)
    return out


@cython.locals(dag="FunctionDAG")
def _static_facts(dag: FunctionDAG) -> _StaticFacts:
    return dag.analysis("featurize.static_facts", functools.partial(_StaticFacts, dag))


def points_computed_minimum(dag: FunctionDAG) -> dict[tuple[str, int], float]:
    """Points every stage must compute for a correct output (schedule-independent); a single pure
    definition can do with what its callers' points times calls would need if it were inlined."""
    out: dict[tuple[str, int], float] = {}
    for n in dag.nodes:  # consumers first
        for s in n.stages:
            m = 1
            for l in s.loop:
                if l.pure:
                    m *= n.region_extent(l.func_dim)
                else:
                    m *= l.rvar.extent
            out[(n.name, s.index)] = float(m)
        if len(n.stages) == 1 and not n.is_output:
            inl = 0.0
            for s, a in dag.accesses_to(n.name):
                inl += out[(s.func, s.index)] * a.count
            out[(n.name, 0)] = min(out[(n.name, 0)], inl)
    return out


def _types_used(stage: Stage):
    from ir.expr import walk

    for part in (stage.value, *stage.lhs):
        for e in walk(part):
            if e.type is not None:
                yield e.type


def _producers(dag: FunctionDAG, stage: Stage):
    for a in stage.accesses:
        if a.kind != "self":
            yield a.producer


def _readers_of(dag: FunctionDAG, name: str):
    for n in dag.nodes:
        for s in n.stages:
            for a in s.accesses:
                if a.producer == name and a.kind == "input":
                    yield s, a
                    break


def _cap(dag: FunctionDAG, p: str) -> list[int]:
    if p in dag.inputs:
        return [hi - lo + 1 for lo, hi in dag.inputs[p].region]
    n = dag.node(p)
    return [n.region_extent(d) for d in range(n.dimensions)]


def _matmul(outer, inner):
    """Jacobian of a composition: d(producer) / d(loops) = d(producer)/d(inlined) x d(inlined)/d(loops)."""
    rows, mid, cols = len(outer), len(inner), len(inner[0]) if inner else 0
    out = []
    for i in range(rows):
        row = []
        for j in range(cols):
            acc: Fraction | int | None = 0
            for k in range(mid):
                a, b = outer[i][k], inner[k][j]
                if a == 0 or b == 0:
                    continue
                if a is None or b is None or acc is None:
                    acc = None
                    continue
                acc += a * b
            row.append(acc)
        out.append(tuple(row))
    return tuple(out)


@cython.locals(dag="FunctionDAG")
def _loads(dag: FunctionDAG, inlined: frozenset, stage: Stage) -> list[tuple[str, tuple, int]]:
    """(producer, Jacobian w.r.t. the stage's loops, count) of the stage's loads, looking through inlined
    Funcs; loads of one producer with the same Jacobian are one entry (a stencil's taps), so chains of
    inlined stencils cost one composition per distinct Jacobian, not one per path."""
    return _loads_entry(dag, inlined, stage)[1]


@cython.locals(dag="FunctionDAG")
def _loads_entry(dag: FunctionDAG, inlined: frozenset, stage: Stage) -> tuple[frozenset, list]:
    """(the inlined Funcs the stage reads through, its _loads). Memoized on the whole inlined set, which a search
    meets once per state, and below that on the Funcs the stage reads through, which are all the loads depend on:
    inlining a Func elsewhere in the pipeline changes a new state's set but not this stage's loads (greedy search
    composed the same Jacobians again for most of its states' stages)."""
    cache = dag.analysis("featurize.loads", dict)  # (func, stage, inlined) -> (reached, loads)
    key = (stage.func, stage.index, inlined)
    hit = cache.get(key)
    if hit is not None:
        return hit
    reached = _inlined_reached(dag, inlined, stage)
    by_reached = dag.analysis("featurize.loads_reached", dict)  # (func, stage, reached) -> loads
    rkey = (stage.func, stage.index, reached)
    out = by_reached.get(rkey)
    if out is None:
        agg: dict[tuple[str, tuple], int] = {}
        for a in stage.accesses:
            if a.kind == "self":
                continue
            if a.producer in inlined:
                for p, jac, n in _loads(dag, inlined, dag.node(a.producer).stages[0]):
                    k = (p, _matmul(jac, a.jacobian))
                    agg[k] = agg.get(k, 0) + n * a.count
            else:
                k = (a.producer, a.jacobian)
                agg[k] = agg.get(k, 0) + a.count
        out = [(p, jac, n) for (p, jac), n in agg.items()]
        by_reached[rkey] = out
    hit = cache[key] = (reached, out)
    return hit


@cython.locals(dag="FunctionDAG")
def _inlined_reached(dag: FunctionDAG, inlined: frozenset, stage: Stage) -> frozenset:
    """The inlined Funcs whose definitions `stage` reads through: its inlined producers, theirs, and so on."""
    found: set[str] = set()
    pending = [a.producer for a in stage.accesses if a.kind != "self"]
    while pending:
        p = pending.pop()
        if p in found or p not in inlined:
            continue
        found.add(p)
        pending.extend([a.producer for a in dag.node(p).stages[0].accesses if a.kind != "self"])
    return frozenset(found)


@cython.locals(dag="FunctionDAG")
def _regions_read(dag: FunctionDAG, inlined: frozenset, stage: Stage, env) -> dict[str, Region]:
    """Regions of every (non-inlined) producer read by `stage` over the loop boxes `env`."""
    out: dict[str, Region] = {}
    for p in _static_facts(dag).reads[(stage.func, stage.index)]:
        reg = dag.stage_requires(stage, p, env)
        if reg is None:
            continue
        if p in inlined:
            inner_stage = dag.node(p).stages[0]
            for q, r in _regions_read(dag, inlined, inner_stage, inner_stage.loop_env(tuple(reg))).items():
                out[q] = r if q not in out else [(lmin(a[0], b[0]), lmax(a[1], b[1])) for a, b in zip(out[q], r)]
        else:
            out[p] = reg if p not in out else [(lmin(a[0], b[0]), lmax(a[1], b[1])) for a, b in zip(out[p], reg)]
    return out
