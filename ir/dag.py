"""FunctionDAG: the algorithm analysis, built once per pipeline and never changed.

As in Halide's Adams2019 autoscheduler (`FunctionDAG.h`): Funcs in topological order with the outputs
first, their stages (the pure definition, then each update), each stage's loop dimensions, every
access with its Jacobian (exact rationals, or None where non-affine), op histograms, and the bounds
relation between consumers and producers. The global regions computed here (every Func over what the
outputs need, as if everything were computed at root) are the regions the interpreter computes and
the outer limit of what any schedule computes, so they fix the input regions once for all schedules.

Analyses other packages derive from a DAG (algorithm features, inlined-call counts, load Jacobians through
inlined Funcs, ...) are kept in its one explicit cache, `dag.analysis(key, compute)`, not in attributes
set on it from outside; the DAG never changes, so nothing there is ever invalidated.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Optional

from .bounds import Env, interval
from .errors import PipelineError
from .expr import BinOp, Call, Cast, Cmp, Const, Expr, Logical, Math, Not, RVar, Select, Var, walk
from .func import Func
from .symbolic import Lin, const
from .types import Type

Box = tuple[tuple[int, int], ...]  # inclusive (min, max) per dimension
Jacobian = tuple[tuple[Optional[Fraction | int], ...], ...]  # [producer dim][stage loop dim]: ints where whole

MAX_REGION_POINTS = 1 << 31


@dataclass(frozen=True, slots=True)
class LoopDim:
    """One loop of a stage: a pure Var of the Func, or a dimension of the update's RDom."""

    name: str
    pure: bool
    func_dim: int = -1  # the Func dimension a pure loop iterates
    rvar: RVar | None = None  # the RVar a reduction loop iterates

    @property
    def rdom_range(self) -> tuple[int, int]:
        assert self.rvar is not None
        return self.rvar.min, self.rvar.min + self.rvar.extent - 1


@dataclass(frozen=True, slots=True)
class Access:
    """Calls from one stage to one producer with the same arguments (`count` of them)."""

    producer: str
    kind: str  # "func" | "input" | "self"
    args: tuple[Expr, ...]
    jacobian: Jacobian
    count: int
    type: Type


@dataclass(slots=True)
class Stage:
    func: str
    index: int  # 0 = pure definition, k = k-th update
    lhs: tuple[Expr, ...]
    value: Expr
    loop: tuple[LoopDim, ...]
    accesses: tuple[Access, ...]
    op_histogram: Counter = field(repr=False)
    relations: dict = field(default_factory=dict, repr=False)  # producer -> ir.relation.Relation
    # per loop, (name, Func dimension, None) for a pure loop or (name, -1, its RDom interval as constant forms):
    # what loop_env reads, made once (search asks it of every region it derives)
    env_loops: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.env_loops = tuple((l.name, l.func_dim, None) if l.pure else
                               (l.name, -1, (const(l.rvar.min), const(l.rvar.min + l.rvar.extent - 1)))
                               for l in self.loop)

    def __getstate__(self) -> dict:
        """The fields by name: the form a Stage pickled in before it had slots, so __setstate__ reads one form."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            setattr(self, k, v)
        if "env_loops" not in state:  # pickled before the field existed
            self.__post_init__()

    @property
    def is_update(self) -> bool:
        return self.index > 0

    @property
    def name(self) -> str:
        return f"{self.func}.s{self.index}"

    def loop_index(self, name: str) -> int:
        for i, l in enumerate(self.loop):
            if l.name == name:
                return i
        raise KeyError(name)

    def pure_loop_of_dim(self, d: int) -> int:
        """The loop iterating Func dimension d in this stage, or -1 if the stage stores at a computed
        coordinate there."""
        for i, l in enumerate(self.loop):
            if l.pure and l.func_dim == d:
                return i
        return -1

    def loop_env(self, region: tuple[tuple[Lin, Lin], ...]) -> Env:
        """Loop variable intervals when the Func's region is `region` (pure dims) and RDoms in full."""
        env: Env = {}
        for name, d, rdom in self.env_loops:
            env[name] = region[d] if rdom is None else rdom
        return env

    def footprint(self, env: Env) -> list[tuple[Lin | None, Lin | None]]:
        """Interval per Func dimension this stage writes or reads of its own Func."""
        out = []
        for a in self.lhs:
            out.append(interval(a, env))
        for acc in self.accesses:
            if acc.kind == "self":
                for d, a in enumerate(acc.args):
                    lo, hi = interval(a, env)
                    olo, ohi = out[d]
                    out[d] = (_hmin(olo, lo), _hmax(ohi, hi))
        return out


@dataclass(slots=True)
class Node:
    """A Func of the pipeline with its stages and its global region."""

    func: Func
    stages: tuple[Stage, ...]
    is_output: bool
    region: Box = ()
    consumers: tuple[str, ...] = ()  # Funcs that call this one (not itself)
    producers: tuple[str, ...] = ()  # Funcs and Inputs this one calls (not itself)
    # what search and featurization read of the Func per node per state: fields set once, not properties
    name: str = field(init=False)
    dims: tuple[str, ...] = field(init=False, repr=False, compare=False)  # the pure Vars, in dimension order
    dimensions: int = field(init=False, repr=False, compare=False)
    type: Type | None = field(init=False, repr=False, compare=False)
    bytes_per_point: int | None = field(init=False, repr=False, compare=False)  # None while the Func is untyped
    # dimensions some update stores to at computed coordinates: always computed in full
    update_dims: frozenset[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        f = self.func
        self.name = f.name
        self.dims = f.args
        self.dimensions = f.dimensions
        self.type = f.type
        self.bytes_per_point = None if self.type is None else self.type.bytes
        self.update_dims = frozenset(d for s in self.stages[1:] for d, a in enumerate(s.lhs)
                                     if not isinstance(a, Var))

    @property
    def inlinable(self) -> bool:
        """Inlining substitutes the definition into its callers: only single pure definitions."""
        return len(self.stages) == 1 and not self.is_output

    def region_extent(self, d: int) -> int:
        lo, hi = self.region[d]
        return hi - lo + 1


@dataclass
class InputNode:
    name: str
    type: Type
    dimensions: int
    region: Box = ()


class FunctionDAG:
    """The pipeline's Funcs as nodes with their stages, regions and access relations, and the analyses derived
    from them (a plain slotted class: ir/dag.pxd declares it as a Cython extension type, so the compiled hot modules
    look up nodes and analyses by C calls)."""

    __slots__ = ("pipeline", "nodes", "_by_name", "inputs", "_analyses", "__weakref__")

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.nodes: tuple[Node, ...] = tuple(self._node(f, pipeline) for f in pipeline.funcs)
        self._by_name = {n.name: n for n in self.nodes}
        self.inputs: dict[str, InputNode] = {
            i.name: InputNode(i.name, i.type, i.dimensions) for i in pipeline.inputs}
        self._analyses: dict[Hashable, object] = {}
        self._link()
        self._infer_regions()

    def __reduce__(self):
        """Pickled without its analyses: they are recomputed on demand, and a searched DAG's memos (plans'
        chains, featurization tables) made a pipeline's pickle ~4 MB that every Ray task receiving it spent
        ~0.3 s unpickling. The state follows the new object (its pipeline refers back to it)."""
        return (_empty_dag, (), {"pipeline": self.pipeline, "nodes": self.nodes, "_by_name": self._by_name,
                                 "inputs": self.inputs})

    def __setstate__(self, state: dict) -> None:
        self.pipeline, self.nodes = state["pipeline"], state["nodes"]
        self._by_name, self.inputs = state["_by_name"], state["inputs"]
        self._analyses = {}

    # -- derived analyses ------------------------------------------------------------------------

    def analysis(self, key: Hashable, compute: Callable[[], object]):
        """The analysis `key` of this DAG: `compute()` the first time, the kept result afterwards.

        Keys name the package and the analysis, `"featurize.pipeline_features"`, with its arguments in a
        tuple where it has some: `("ir.plan.inlined_calls", inlined)`. Results must not depend on anything
        but the DAG and the key (a model's weights do not belong here)."""
        try:
            return self._analyses[key]
        except KeyError:
            value = self._analyses[key] = compute()
            return value

    # -- lookup ----------------------------------------------------------------------------------

    def node(self, name: str) -> Node:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def stage(self, func: str, index: int) -> Stage:
        return self._by_name[func].stages[index]

    @property
    def input_regions(self) -> dict[str, Box]:
        return {k: v.region for k, v in self.inputs.items()}

    @property
    def internal_outputs(self) -> tuple[str, ...]:
        """Outputs whose computed region is larger than the buffer the caller asked for (another Func reads
        them beyond it): every backend computes them into a scratch buffer and copies the requested part out."""
        sizes = self.pipeline.output_sizes
        return tuple(o for o in self.pipeline.output_names
                     if self.node(o).region != tuple((0, e - 1) for e in sizes[o]))

    def accesses_to(self, producer: str):
        """(consumer stage, access) for every access to `producer` from another Func."""
        for n in self.nodes:
            for s in n.stages:
                for a in s.accesses:
                    if a.producer == producer and a.kind != "self":
                        yield s, a

    # -- bounds relations ------------------------------------------------------------------------

    def stage_requires(self, stage: Stage, producer: str, env: Env) -> list[tuple[Lin | None, Lin | None]] | None:
        """Per producer dimension, the interval `stage` reads of `producer` when its loop variables
        range over `env`; None if the stage does not read it."""
        rel = stage.relations.get(producer)
        return None if rel is None else rel.apply(env)

    def required_region(self, producer: str, consumer: str, consumer_region: Box) -> Box:
        """The region of `producer` that computing `consumer` over `consumer_region` reads."""
        node = self.node(consumer)
        region = tuple((const(lo), const(hi)) for lo, hi in consumer_region)
        box = None
        for s in node.stages:
            env = s.loop_env(region)
            r = self.stage_requires(s, producer, env)
            if r is not None:
                box = r if box is None else [(_hmin(b[0], i[0]), _hmax(b[1], i[1])) for b, i in zip(box, r)]
        if box is None:
            raise KeyError(f"{consumer} does not read {producer}")
        return tuple(_concrete(lo, hi, consumer, producer, d) for d, (lo, hi) in enumerate(box))

    # -- construction ----------------------------------------------------------------------------

    @staticmethod
    def _node(f: Func, pipeline) -> Node:
        stages = tuple(_make_stage(f, i) for i in range(len(f.definitions)))
        return Node(f, stages, f.name in pipeline.output_sizes)

    def _link(self) -> None:
        consumers: dict[str, set[str]] = {n.name: set() for n in self.nodes}
        for n in self.nodes:
            prods = set()
            for s in n.stages:
                for a in s.accesses:
                    if a.kind != "self":
                        prods.add(a.producer)
                        if a.producer in consumers:
                            consumers[a.producer].add(n.name)
            n.producers = tuple(sorted(prods))
        for n in self.nodes:
            n.consumers = tuple(sorted(consumers[n.name]))

    def _infer_regions(self) -> None:
        """Every Func over all that its consumers need (outputs: their sizes), plus what its own
        updates touch; then every Input over what the Funcs read."""
        regions: dict[str, list[tuple[Lin, Lin]]] = {}
        for n in self.nodes:  # consumers before producers
            box = None
            if n.is_output:
                box = [(const(0), const(e - 1)) for e in self.pipeline.output_sizes[n.name]]
            if n.consumers:
                for c in n.consumers:
                    cn = self.node(c)
                    for s in cn.stages:
                        r = self.stage_requires(s, n.name, s.loop_env(tuple(regions[c])))
                        if r is not None:
                            box = r if box is None else [(_hmin(b[0], i[0]), _hmax(b[1], i[1]))
                                                         for b, i in zip(box, r)]
                assert box is not None, n.name
                for d, (lo, hi) in enumerate(box):
                    _concrete(lo, hi, self._reader(n.name, d, regions), n.name, d)
            box = self._with_updates(n, box)
            regions[n.name] = box
            n.region = tuple((lo.const, hi.const) for lo, hi in box)
        for name, inp in self.inputs.items():
            box = None
            for n in self.nodes:
                for s in n.stages:
                    r = self.stage_requires(s, name, s.loop_env(tuple(regions[n.name])))
                    if r is None:
                        continue
                    for d, (lo, hi) in enumerate(r):
                        _concrete(lo, hi, n.name, name, d)
                    box = r if box is None else [(_hmin(b[0], i[0]), _hmax(b[1], i[1])) for b, i in zip(box, r)]
            assert box is not None
            inp.region = tuple(_concrete(lo, hi, "?", name, d) for d, (lo, hi) in enumerate(box))

    def _reader(self, producer: str, d: int, regions) -> str:
        """The first consumer whose access to `producer` in dimension d is unbounded (for errors)."""
        for c in self.node(producer).consumers:
            for s in self.node(c).stages:
                r = self.stage_requires(s, producer, s.loop_env(tuple(regions[c])))
                if r is not None and (r[d][0] is None or r[d][1] is None):
                    return c
        return self.node(producer).consumers[0]

    def _with_updates(self, n: Node, box: list) -> list:
        for _ in range(8):  # a dimension computed by one update widens another's loops: iterate
            changed = False
            for s in n.stages[1:]:
                fp = s.footprint(s.loop_env(tuple(box)))
                for d, (lo, hi) in enumerate(fp):
                    lo_c, hi_c = _concrete(lo, hi, n.name, n.name, d)
                    olo, ohi = box[d][0].const, box[d][1].const
                    if lo_c < olo or hi_c > ohi:
                        box[d] = (const(min(lo_c, olo)), const(max(hi_c, ohi)))
                        changed = True
            if not changed:
                return box
        raise PipelineError(f"{n.name}: the regions its updates touch do not converge")  # pragma: no cover


def _empty_dag() -> FunctionDAG:
    """A FunctionDAG for unpickling to fill (FunctionDAG.__setstate__)."""
    return FunctionDAG.__new__(FunctionDAG)


def _hmin(a, b):
    from .bounds import _min

    return _min(a, b)


def _hmax(a, b):
    from .bounds import _max

    return _max(a, b)


def _concrete(lo: Lin | None, hi: Lin | None, consumer: str, producer: str, d: int) -> tuple[int, int]:
    if lo is None or hi is None:
        raise PipelineError(
            f"{consumer}: the access to {producer} in dimension {d} is unbounded; clamp the index "
            "(e.g. clamp(cast(i32, v), 0, 255))")
    rlo, rhi = lo.range()[0], hi.range()[1]
    if rhi - rlo + 1 > MAX_REGION_POINTS:
        raise PipelineError(
            f"{consumer}: the access to {producer} in dimension {d} spans [{rlo}, {rhi}], too large to "
            "allocate; clamp the index")
    return int(rlo), int(rhi)


# -- stages ------------------------------------------------------------------------------------


def _make_stage(f: Func, index: int) -> Stage:
    d = f.definitions[index]
    loop: list[LoopDim] = []
    for k, a in enumerate(d.lhs):
        if isinstance(a, Var):
            loop.append(LoopDim(a.name, True, func_dim=k))
    for rv in d.rdom:
        loop.append(LoopDim(rv.name, False, rvar=rv))
    loop_names = [l.name for l in loop]
    accesses: dict[tuple, list] = {}
    for part in (d.value, *d.lhs):
        for n in walk(part):
            if isinstance(n, Call):
                kind = "input" if n.is_input else ("self" if n.target is f else "func")
                key = (n.target.name, kind, tuple(a.key() for a in n.args))
                if key in accesses:
                    accesses[key][3] += 1
                else:
                    accesses[key] = [n.target.name, kind, n.args, 1, n.type]
    names: dict[int, frozenset] = {}  # the Var names in each node of the stage's expressions, by id
    acc = tuple(
        Access(name, kind, args, tuple(tuple(_whole(derivative(a, v, names)) for v in loop_names) for a in args),
               cnt, t)
        for name, kind, args, cnt, t in accesses.values())
    from .relation import build_relation

    relations = {}
    for a in acc:
        if a.kind != "self" and a.producer not in relations:
            args = [b.args for b in acc if b.producer == a.producer and b.kind != "self"]
            relations[a.producer] = build_relation(args, loop_names)
    return Stage(f.name, index, d.lhs, d.value, tuple(loop), acc, op_histogram(f, d), relations)


def derivative(e: Expr, var: str, names: dict[int, frozenset] | None = None) -> Fraction | None:
    """d e / d var as an exact rational, or None where e is not affine in var.

    Clamps and other min/max with a constant report the slope of their varying side, so boundary
    conditions keep the access class of the interior (dense, transposed, ...). `names` remembers which Vars each
    node of e uses (_names_in); pass one dict to the derivatives of one set of expressions, alive while it is used.
    """
    if names is None:
        names = {}
    if var not in _names_in(e, names):
        return Fraction(0)
    if isinstance(e, (Var, RVar)):
        return Fraction(1)
    if isinstance(e, Cast):
        if e.value.type.is_float or not e.target.is_integer:
            return None
        return derivative(e.value, var, names)
    if isinstance(e, BinOp):
        da, db = derivative(e.a, var, names), derivative(e.b, var, names)
        if e.op in ("add", "sub"):
            if da is None or db is None:
                return None
            return da + db if e.op == "add" else da - db
        if e.op == "mul":
            ka, kb = _const(e.a), _const(e.b)
            if kb is not None and da is not None:
                return da * kb
            if ka is not None and db is not None:
                return db * ka
            return None
        if e.op == "div":
            kb = _const(e.b)
            if kb and da is not None:
                return da / kb
            return None
        if e.op in ("min", "max"):
            if _const(e.a) is not None:
                return db
            if _const(e.b) is not None:
                return da
            return da if da == db else None
        return None
    if isinstance(e, Select):
        dt, df = derivative(e.t, var, names), derivative(e.f, var, names)
        return dt if dt == df and var not in _names_in(e.cond, names) else None
    return None


def _whole(d: Fraction | None) -> Fraction | int | None:
    """A derivative that is a whole number as an int (equal and hashing alike, but ints multiply and hash in C:
    featurization composes Jacobians through inlined Funcs for every new set of them a search meets)."""
    return int(d) if d is not None and d.denominator == 1 else d


def _names_in(e: Expr, memo: dict[int, frozenset]) -> frozenset:
    """The names of the Vars and RVars in e, with those of every node below it remembered in `memo` by id (one walk
    per expression, where asking each derivative's question anew walked the subtree at every level). Post-order with
    a stack: an expression may be deeper than Python's recursion limit."""
    hit = memo.get(id(e))
    if hit is not None:
        return hit
    stack = [(e, None)]
    while stack:
        n, kids = stack.pop()
        if id(n) in memo:
            continue
        if kids is None:  # first visit: its children first, then it again with them
            kids = n.children()
            stack.append((n, kids))
            stack.extend([(c, None) for c in kids])
            continue
        found = {n.name} if isinstance(n, (Var, RVar)) else set()
        for c in kids:
            found |= memo[id(c)]
        memo[id(n)] = frozenset(found)
    return memo[id(e)]


def _const(e: Expr) -> int | None:
    if isinstance(e, Const) and not isinstance(e.value, float):
        return int(e.value)
    if isinstance(e, Cast) and isinstance(e.value, Const) and not isinstance(e.value.value, float):
        return int(e.value.value)
    return None


# -- op histograms (seeds/adams2019 §4.1; Halide's Featurizer) ----------------------------------

OP_TYPES = ("Const", "Cast", "Variable", "Param", "Add", "Sub", "Mod", "Mul", "Div", "Min", "Max",
            "EQ", "NE", "LT", "LE", "And", "Or", "Not", "Select", "ImageCall", "FuncCall", "SelfCall",
            "ExternCall", "Let")
TYPE_BUCKETS = ("Bool", "UInt8", "UInt16", "UInt32", "UInt64", "Float", "Double")


def type_bucket(t: Type) -> str:
    """Halide's scalar buckets: bool, then integers by width (signedness merged), float, double."""
    if t.is_bool:
        return "Bool"
    if t.is_float:
        return "Float" if t.bits == 32 else "Double"
    return f"UInt{t.bits}"


_BINOP_NAME = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "mod": "Mod", "min": "Min", "max": "Max"}
_CMP_NAME = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "LT", "ge": "LE"}


def op_histogram(f: Func, d) -> Counter:
    """Counts of (op type, type bucket) over a definition, value and stored coordinates."""
    h: Counter = Counter()
    for part in (d.value, *d.lhs):
        for n in walk(part):
            h[(_op_name(n, f), type_bucket(n.type))] += 1
    return h


def _op_name(n: Expr, f: Func) -> str:
    if isinstance(n, Const):
        return "Const"
    if isinstance(n, Cast):
        return "Cast"
    if isinstance(n, (Var, RVar)):
        return "Variable"
    if isinstance(n, BinOp):
        return _BINOP_NAME[n.op]
    if isinstance(n, Cmp):
        return _CMP_NAME[n.op]
    if isinstance(n, Logical):
        return "And" if n.op == "and" else "Or"
    if isinstance(n, Not):
        return "Not"
    if isinstance(n, Select):
        return "Select"
    if isinstance(n, Call):
        if n.is_input:
            return "ImageCall"
        return "SelfCall" if n.target is f else "FuncCall"
    if isinstance(n, Math):
        return "ExternCall"
    raise TypeError(f"unexpected node {n!r}")  # pragma: no cover
