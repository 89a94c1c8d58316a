"""Lowering a CPU (pipeline, LoopNest) to LLVM IR with llvmlite: no type inference, no Python in between.

The program is one LLVM function per stage chain computed at root, `void stage(i8** buffers, i64 lo, i64 hi)`,
run in order by the host (backends.llvm.compiler): a PARALLEL outermost level is the task range [lo, hi) of its
fused loops (the host splits it over a thread pool, each call with the GIL released); a serial chain ignores
lo/hi. Below the root the walk is the numba backend's: loops as `ir.plan.Plan` describes them, allocations at
their store level (stack slots for small tiles, malloc for large ones), sliding windows that compute only the
rows not computed yet, SIMD loops innermost with constant trip counts for LLVM's loop vectorizer. Values follow
`ir/semantics.py` exactly: integers carried in i32 where every value they can take (their static range, or their
type's once wrapped) is an i32, else in i64 (loop indices and addresses always), computed with LLVM's wrapping
add/sub/mul and truncated back into their type where their static range can leave it; floats with no fast-math
flags (no contraction); Halide's floor division and Euclidean modulus as shifts and masks for powers of two, as
small internal functions otherwise, and its saturating float->int cast too; transcendentals as the same
LLVM intrinsics and libm calls numba emits.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import llvmlite.ir as ir

from ir.dag import FunctionDAG
from ir.errors import ScheduleError
from ir.expr import BinOp, Call, Cast, Cmp, Const, Expr, Logical, Math, Not, RVar, Select, Var
from ir.loopnest import LoopNest
from ir.plan import FuncPlan, Level, Plan
from ir.semantics import VIA_F64
from ir.symbolic import FloorDiv, Lin, MinMax, Sym
from ir.types import Type

from ..numba.codegen import MAX_POINT_STATEMENTS
from ..numba.exprgen import INF, _range_arith, _range_div_const

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()
STACK_BYTES = 64 * 1024  # allocations up to this size are stack slots; larger ones are malloc'd
I32_MIN, I32_MAX = -(2 ** 31), 2 ** 31 - 1


def fits32(lo: float, hi: float) -> bool:
    """Whether every value of [lo, hi] is an i32: such a value may be carried in 32 bits."""
    return I32_MIN <= lo and hi <= I32_MAX


def carrier(t: Type) -> ir.IntType:
    """The carrier of a loaded or cast integer of type t: i32 for every type whose values are i32s (u8 to i32),
    i64 for u32 and the 64-bit ones. On AVX2 a 32-bit lane is native for add, mul and arithmetic shifts; a 64-bit
    one has half the lanes, and its multiply and arithmetic right shift are emulated."""
    return I32 if fits32(t.min, t.max) else I64


def storage_type(t: Type) -> ir.Type:
    if t.is_bool:
        return I8
    if t.is_float:
        return F32 if t.bits == 32 else F64
    return ir.IntType(t.bits)


@dataclass(frozen=True)
class Buffer:
    name: str
    role: str  # "input" | "output" | "global"
    func: str
    dtype: str
    size: int


@dataclass(frozen=True)
class Stage:
    function: str  # the LLVM function's name
    tasks: int  # iterations of its parallel level (1: serial)


@dataclass(frozen=True)
class LlvmSource:
    ir: str  # the module's LLVM IR
    name: str
    buffers: tuple[Buffer, ...]
    stages: tuple[Stage, ...]
    # outputs computed over a larger region than their size: (func, element of point (0, .., 0), strides, size)
    copies: tuple[tuple[str, int, tuple[int, ...], tuple[int, ...]], ...]


@dataclass
class V:
    """A value during point emission: its LLVM value and, for integers, the static range of its exact result."""

    v: ir.Value
    lo: float = -INF
    hi: float = INF


def generate(plan: Plan, name: str = "kernel") -> LlvmSource:
    return _Gen(plan, name).run()


class _Gen:
    def __init__(self, plan: Plan, name: str):
        self.plan = plan
        self.dag: FunctionDAG = plan.dag
        self.name = name
        p = self.dag.pipeline
        self.inputs = [i.name for i in p.inputs]
        self.outputs = list(p.output_names)
        self.internal = list(self.dag.internal_outputs)
        self.inlined = {f: self.dag.node(f).func for f in plan.inlined}
        self.module = ir.Module(name=name)
        self.module.triple = ""
        self.statements = 0
        self.keys: dict[int, tuple] = {}  # id(expression) -> its structural key (the pipeline's Exprs outlive this)
        self._helpers()

    # -- module-level helpers ----------------------------------------------------------------------

    def _helpers(self) -> None:
        m = self.module

        def fn(name, ret, args):
            f = ir.Function(m, ir.FunctionType(ret, args), name)
            f.linkage = "internal"
            f.attributes.add("alwaysinline")
            return f, ir.IRBuilder(f.append_basic_block("e"))

        f, b = fn("sl_floordiv", I64, [I64, I64])  # b > 0 or b < 0, b != 0: floor(a / b)
        a, d = f.args
        q, r = b.sdiv(a, d), b.srem(a, d)
        adjust = b.and_(b.icmp_signed("!=", r, I64(0)), b.icmp_signed("!=", b.icmp_signed("<", r, I64(0)),
                                                                            b.icmp_signed("<", d, I64(0))))
        b.ret(b.select(adjust, b.sub(q, I64(1)), q))
        self.floordiv = f
        f, b = fn("sl_idiv", I64, [I64, I64])  # Halide: 0 for b == 0, floor for b > 0, -(a // -b) for b < 0
        a, d = f.args
        zero = b.icmp_signed("==", d, I64(0))
        safe = b.select(zero, I64(1), d)
        pos = b.call(self.floordiv, [a, safe])
        neg = b.neg(b.call(self.floordiv, [a, b.neg(safe)]))
        b.ret(b.select(zero, I64(0), b.select(b.icmp_signed(">", safe, I64(0)), pos, neg)))
        self.idiv = f
        f, b = fn("sl_imod", I64, [I64, I64])  # Euclidean, 0 for b == 0
        a, d = f.args
        zero = b.icmp_signed("==", d, I64(0))
        m_ = b.select(b.icmp_signed("<", d, I64(0)), b.neg(d), d)
        m_ = b.select(zero, I64(1), m_)
        r = b.srem(a, m_)
        r = b.select(b.icmp_signed("<", r, I64(0)), b.add(r, m_), r)
        b.ret(b.select(zero, I64(0), r))
        self.imod = f
        f, b = fn("sl_f2i", I64, [F64, I64, I64])  # truncate, saturate to [lo, hi], NaN -> 0
        x, lo, hi = f.args
        xi = b.fptosi(x, I64)
        r = b.select(b.fcmp_ordered(">=", x, b.sitofp(hi, F64)), hi, xi)
        r = b.select(b.fcmp_ordered("<=", x, b.sitofp(lo, F64)), lo, r)
        b.ret(b.select(b.fcmp_unordered("uno", x, x), I64(0), r))
        self.f2i = f
        f, b = fn("sl_f2i32", I32, [F32, I32, I32])  # the same from f32 into a 32-bit carrier: 8 lanes, not 4
        x, lo, hi = f.args  # f32(hi) >= hi (i32's max rounds up to 2^31) and f32(lo) == lo: the same thresholds
        xi = b.fptosi(x, I32)
        r = b.select(b.fcmp_ordered(">=", x, b.sitofp(hi, F32)), hi, xi)
        r = b.select(b.fcmp_ordered("<=", x, b.sitofp(lo, F32)), lo, r)
        b.ret(b.select(b.fcmp_unordered("uno", x, x), I32(0), r))
        self.f2i32 = f
        self.malloc = ir.Function(m, ir.FunctionType(I8.as_pointer(), [I64]), "malloc")
        self.free = ir.Function(m, ir.FunctionType(ir.VoidType(), [I8.as_pointer()]), "free")
        self._decls: dict[str, ir.Function] = {}

    def _intrinsic(self, name: str, ty: ir.Type, nargs: int = 1) -> ir.Function:
        f = self._decls.get(name)
        if f is None:
            f = self._decls[name] = ir.Function(self.module, ir.FunctionType(ty, [ty] * nargs), name)
        return f

    # -- buffers -------------------------------------------------------------------------------------

    def _buffers(self) -> list[Buffer]:
        out = []
        for n in self.inputs:
            inp = self.dag.inputs[n]
            out.append(Buffer(n, "input", n, inp.type.dtype.name, math.prod(hi - lo + 1 for lo, hi in inp.region)))
        for n in self.outputs:
            out.append(Buffer(n, "output", n, self.dag.node(n).type.dtype.name,
                              math.prod(self.dag.pipeline.output_sizes[n])))
        for f, fp in self.plan.funcs.items():
            if not fp.inlined and (fp.store is None or fp.store.is_root) and (f not in self.outputs or f in self.internal):
                out.append(Buffer(f"g_{f}", "global", f, fp.node.type.dtype.name, fp.allocation_points))
        return out

    def run(self) -> LlvmSource:
        self.buffers = self._buffers()
        self.slot = {}
        for k, b in enumerate(self.buffers):
            if b.role == "input":
                self.slot[("in", b.func)] = k
            elif b.role == "output" and b.func not in self.internal:
                self.slot[("buf", b.func)] = k
            elif b.role == "global":
                self.slot[("buf", b.func)] = k
        stages = []
        for k, c in enumerate(self.plan.root.children):
            stages.append(self._stage(f"{self.name}_{k}_{c.func}_s{c.stage}", self.plan.level(c)))
        copies = []
        for o in self.internal:
            fp = self.plan.func(o)
            origin = -sum(int(lo.const) * s for (lo, _), s in zip(fp.storage, fp.strides))
            copies.append((o, origin, tuple(fp.strides), tuple(self.dag.pipeline.output_sizes[o])))
        return LlvmSource(str(self.module), self.name, tuple(self.buffers), tuple(stages), tuple(copies))

    # -- one stage function --------------------------------------------------------------------------

    def _stage(self, fname: str, lvl: Level) -> Stage:
        """`void fname(i8** buffers, i64 lo, i64 hi)`, which loads the buffers' pointers and calls the stage's body,
        `fname_body(T0* noalias, T1* noalias, ..., lo, hi)`. The buffers are distinct arrays, and saying so lets
        LLVM vectorize a SIMD loop of a few lanes: with pointers that may alias it must add run-time overlap
        checks, and it does not vectorize loops of fewer than 16 iterations that need them (blur's 8-lane SIMD
        loop ran 6.7x slower than its scalar row loop, which the vectorizer takes with checks)."""
        slots = list(self.slot.items())
        types = [storage_type(self.dag.inputs[f].type if kind == "in" else self.dag.node(f).type).as_pointer()
                 for (kind, f), _ in slots]
        outer = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I8.as_pointer().as_pointer(), I64, I64]),
                            fname)
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), types + [I64, I64]), f"{fname}_body")
        fn.linkage = "internal"
        for a in fn.args[:len(types)]:
            a.add_attribute("noalias")
        ob = ir.IRBuilder(outer.append_basic_block("entry"))
        args, olo, ohi = outer.args
        ptrs = [ob.bitcast(ob.load(ob.gep(args, [I64(k)])), t) for ((_, _), k), t in zip(slots, types)]
        ob.call(fn, ptrs + [olo, ohi])
        ob.ret_void()
        lo, hi = fn.args[len(types):]
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self.env: dict[str, ir.Value] = {}  # loop index symbol -> i64 value
        self.ptr: dict[str, ir.Value] = {}  # Func or input -> typed pointer
        self.off: dict[str, ir.Value] = {}  # Func -> i64 offset of its storage origin
        self.done: dict[str, ir.Value] = {}  # sliding Func -> stack slot of its last computed row
        for ((kind, f), _), a in zip(slots, fn.args):
            self.ptr[("in", f) if kind == "in" else f] = a
        for f in self.plan.root.store_at:
            self._offset(self.plan.func(f))
            self._sliding_start(self.plan.func(f))
        n = lvl.node
        tasks = 1
        if n.parallel:
            fused = [lvl.loops[j] for j in lvl.order if lvl.loops[j].count > 1]
            tasks = math.prod(lp.count for lp in fused)
            self._for_range(lo, hi, lambda t: self._parallel_body(lvl, fused, t))
        else:
            self._chain_or_level(lvl)
        self.b.ret_void()
        ir.IRBuilder(self.entry).branch(body)
        return Stage(fname, tasks)

    def _parallel_body(self, lvl: Level, fused, t: ir.Value) -> None:
        rest = t
        for k, lp in enumerate(reversed(fused)):
            if k == len(fused) - 1:
                self.env[self._index(lp)] = rest
            else:
                self.env[self._index(lp)] = self.b.srem(rest, I64(lp.count))
                rest = self.b.sdiv(rest, I64(lp.count))
        self._node_body(lvl.node)

    # -- loops ----------------------------------------------------------------------------------------

    def _for_range(self, start: ir.Value, stop: ir.Value, body) -> None:
        """for (i = start; i < stop; ++i) body(i), the index in a stack slot (promoted to a phi by mem2reg)."""
        slot = ir.IRBuilder(self.entry).alloca(I64)
        b = self.b
        b.store(start, slot)
        head = self.fn.append_basic_block("loop")
        inner = self.fn.append_basic_block("do")
        done = self.fn.append_basic_block("done")
        b.branch(head)
        b.position_at_end(head)
        i = b.load(slot)
        b.cbranch(b.icmp_signed("<", i, stop), inner, done)
        b.position_at_end(inner)
        body(i)
        b.store(b.add(b.load(slot), I64(1)), slot)
        b.branch(head)
        b.position_at_end(done)

    def _loop(self, lp, body) -> None:
        if lp.count <= 1:
            body()
            return
        name = self._index(lp)

        def run(i):
            self.env[name] = i
            body()

        self._for_range(I64(0), self._count(lp), run)

    def _loops(self, lps: list, body) -> None:
        if not lps:
            body()
            return
        self._loop(lps[0], lambda: self._loops(lps[1:], body))

    def _count(self, lp) -> ir.Value:
        return I64(lp.count) if lp.count_form.is_const else self.lin(lp.count_form)

    def _index(self, lp) -> str:
        syms = lp.index.symbols()
        assert len(syms) == 1
        return next(iter(syms))

    # -- tree walk ---------------------------------------------------------------------------------------

    def _node_body(self, n: LoopNest) -> None:
        allocated = [self._allocate(self.plan.func(f)) for f in n.store_at]
        for c in n.children:
            if (c.func, c.stage) == (n.func, n.stage):
                self._level(self.plan.level(c))
            else:
                self._chain_or_level(self.plan.level(c).chain.levels[0])
        for heap in allocated:
            if heap is not None:
                self.b.call(self.free, [heap])

    def _chain_or_level(self, lvl: Level) -> None:
        ch = lvl.chain
        fp = self.plan.func(ch.func)
        sl = fp.sliding
        if sl is not None:
            d = sl.dim
            lo, hi = fp.region[d]
            self.slo, self.shi = self.lin(lo), self.lin(hi)
            slo, shi = self.slo, self.shi
            done = self.b.load(self.done[fp.name])
            new = self.b.select(self.b.icmp_signed(">", slo, self.b.add(done, I64(1))), slo, self.b.add(done, I64(1)))
            self.sliding_range = (fp.name, slo, shi, new)
        self._level(lvl)
        if sl is not None:
            slot = self.done[fp.name]
            done = self.b.load(slot)
            self.b.store(self.b.select(self.b.icmp_signed(">", done, shi), done, shi), slot)

    def _level(self, lvl: Level) -> None:
        n = lvl.node
        fp = self.plan.func(lvl.chain.func)
        if n.innermost:
            self._innermost(lvl)
            return
        sliding_loop = None
        if fp.sliding is not None and lvl.depth == 0:
            sliding_loop = lvl.chain.stage.pure_loop_of_dim(fp.sliding.dim)
        loops = [lvl.loops[j] for j in lvl.order]
        order = list(lvl.order)

        def nest(k: int) -> None:
            if k == len(order):
                self._node_body(n)
                return
            j = order[k]
            lp = loops[k]
            if j == sliding_loop:
                _, slo, shi, new = self.sliding_range
                name = self._index(lp) if lp.count > 1 else None

                def run(i):
                    if name is not None:
                        self.env[name] = i
                    nest(k + 1)

                self._for_range(self.b.sub(new, slo), self.b.add(self.b.sub(shi, slo), I64(1)), run)
            else:
                self._loop(lp, lambda: nest(k + 1))

        nest(0)

    def _innermost(self, lvl: Level) -> None:
        """The point loops as the numba backend writes them: plain loops, then the UNROLLED level's pure loops
        written out (LLVM's own unroller stays off: it is most of the compile time), then the SIMD loop.

        When the SIMD loop is pure and the written-out copies need no guards, the SIMD loop goes outside the copies:
        one vector loop whose body holds every copy. LLVM removes common subexpressions within a loop body, not
        across loops, so what the copies share is computed once per vector, as Halide's vectorize-then-unroll does.
        nl_means' beam schedule inlines the weights (an exp) into the update of each of 4 unrolled channels: 4 exp
        loops before, 1 after. Legal because the loops interchanged are all pure loops of one stage: a point's value
        depends on no other point of the stage (an update reads itself only at its own pure coordinates,
        ir.func), and nothing else is computed inside the level."""
        n = lvl.node
        vec = n.vectorized_loop
        unrolled = [j for j in lvl.order if n.unrolled and j != vec and lvl.loops[j].pure and lvl.loops[j].count > 1]
        outer = [lvl.loops[j] for j in lvl.order if j != vec and j not in unrolled and lvl.loops[j].count > 1]
        vector = lvl.loops[vec] if vec >= 0 and lvl.loops[vec].count > 1 else None

        def simd():
            if vector is not None:
                self._loop(vector, lambda: self._point(lvl))
            else:
                self._point(lvl)

        def copies(body):
            for combo in itertools.product(*[range(lvl.loops[j].count) for j in unrolled]):
                guards = []
                for j, k in zip(unrolled, combo):
                    lp = lvl.loops[j]
                    self.env[self._index(lp)] = I64(k)
                    if not lp.count_form.is_const:
                        guards.append(self.b.icmp_signed("<", I64(k), self.lin(lp.count_form)))
                if guards:
                    cond = guards[0]
                    for g in guards[1:]:
                        cond = self.b.and_(cond, g)
                    with self.b.if_then(cond):
                        body()
                else:
                    body()

        if (unrolled and vector is not None and vector.pure
                and all(lvl.loops[j].count_form.is_const for j in unrolled)):
            self._loops(outer, lambda: self._loop(vector, lambda: copies(lambda: self._point(lvl))))
        else:
            self._loops(outer, lambda: copies(simd))

    # -- storage ---------------------------------------------------------------------------------------------

    def _allocate(self, fp: FuncPlan) -> ir.Value | None:
        """A tile of fp per iteration of its store level: a stack slot (reused every iteration) or malloc'd."""
        t = storage_type(fp.node.type)
        size = fp.allocation_points
        nbytes = size * fp.node.type.bytes
        heap = None
        if nbytes <= STACK_BYTES:
            ptr = ir.IRBuilder(self.entry).alloca(t, size=I64(max(size, 1)))
        else:
            heap = self.b.call(self.malloc, [I64(max(nbytes, 1))])
            ptr = self.b.bitcast(heap, t.as_pointer())
        self.ptr[fp.name] = ptr
        self._offset(fp)
        self._sliding_start(fp)
        return heap

    def _offset(self, fp: FuncPlan) -> None:
        off = I64(0)
        for (lo, _), s in zip(fp.storage, fp.strides):
            off = self.b.add(off, self.b.mul(self.lin(lo), I64(s)))
        self.off[fp.name] = self.b.neg(off)

    def _sliding_start(self, fp: FuncPlan) -> None:
        if fp.sliding is not None:
            slot = ir.IRBuilder(self.entry).alloca(I64)
            self.b.store(self.b.sub(self.lin(fp.storage[fp.sliding.dim][0]), I64(1)), slot)
            self.done[fp.name] = slot

    # -- symbolic forms ---------------------------------------------------------------------------------------

    def lin(self, x: Lin) -> ir.Value:
        x = Lin.of(x)
        out = I64(x.const)
        for a, c in x.terms:
            v = self._atom(a)
            out = self.b.add(out, v if c == 1 else self.b.mul(v, I64(c)))
        return out

    def _atom(self, a) -> ir.Value:
        if isinstance(a, Sym):
            return self.env[a.name]
        if isinstance(a, FloorDiv):
            return floordiv_const(self.b, self.lin(a.num), a.q, False) if a.q > 0 else \
                self.b.call(self.floordiv, [self.lin(a.num), I64(a.q)])
        if isinstance(a, MinMax):
            out = self.lin(a.args[0])
            for x in a.args[1:]:
                y = self.lin(x)
                pick = self.b.icmp_signed("<" if a.kind == "min" else ">", y, out)
                out = self.b.select(pick, y, out)
            return out
        raise TypeError(f"cannot lower {a!r}")  # pragma: no cover

    # -- points -------------------------------------------------------------------------------------------------

    def _point(self, lvl: Level) -> None:
        stage = lvl.chain.stage
        fp = self.plan.func(stage.func)
        env: dict[str, V] = {}
        for lp, l in zip(lvl.loops, stage.loop):
            lo, hi = (fp.node.region[l.func_dim] if l.pure else l.rdom_range)
            env[l.name] = V(self.lin(lp.base), lo, hi)
        em = _Points(self, env)
        coords = [em.index(em.value(a, em.frame)) for a in stage.lhs]
        val = em.value(stage.value, em.frame)
        self._store(fp.name, coords, val, fp.node.type)
        self.statements += em.count
        if self.statements > MAX_POINT_STATEMENTS:
            raise ScheduleError(f"{fp.name}: the inlined code per point exceeds {MAX_POINT_STATEMENTS} "
                                "statements; compute some inlined Funcs instead")

    def _address(self, f: str, coords: list[ir.Value]) -> ir.Value:
        fp = self.plan.func(f)
        idx = self.off[f]
        for c, s in zip(coords, fp.strides):
            idx = self.b.add(idx, c if s == 1 else self.b.mul(c, I64(s)))
        return self.b.gep(self.ptr[f], [idx], inbounds=True)

    def _store(self, f: str, coords, val: V, t: Type) -> None:
        v = val.v
        if t.is_bool:
            v = self.b.zext(v, I8)
        elif t.is_integer:  # the carrier holds the exact value (or, at the type's width, its bits)
            w = v.type.width
            v = self.b.trunc(v, ir.IntType(t.bits)) if t.bits < w else self.b.sext(v, ir.IntType(t.bits)) \
                if t.bits > w else v
        self.b.store(v, self._address(f, coords))

    def load(self, call: Call, args: list[ir.Value]) -> ir.Value:
        name = call.target.name
        if call.is_input:
            region = self.dag.inputs[name].region
            stride, idx = 1, I64(0)
            for (lo, hi), c in zip(region, args):
                idx = self.b.add(idx, self.b.mul(self.b.sub(c, I64(lo)), I64(stride)) if stride != 1 or lo
                                 else c)
                stride *= hi - lo + 1
            ptr = self.b.gep(self.ptr[("in", name)], [idx], inbounds=True)
            t = self.dag.inputs[name].type
        else:
            ptr = self._address(name, args)
            t = self.dag.node(name).type
        raw = self.b.load(ptr)
        if t.is_bool:
            return self.b.icmp_unsigned("!=", raw, I8(0))
        if t.is_integer:
            c = carrier(t)
            return raw if c.width == t.bits else (self.b.zext if t.is_uint else self.b.sext)(raw, c)
        return raw


class _Frame:
    def __init__(self, env: dict[str, V], sig: tuple):
        self.env, self.sig = env, sig


class _Points:
    """One point's values, each subexpression emitted once (per inlined call site)."""

    def __init__(self, g: _Gen, env: dict[str, V]):
        self.g, self.b = g, g.b
        self.frame = _Frame(env, ())
        self.memo: dict[tuple, V] = {}
        self.count = 0

    def value(self, e: Expr, f: _Frame) -> V:
        if isinstance(e, (Var, RVar)):
            return f.env[e.name]
        if isinstance(e, Const):
            return _const(e)
        ek = self.g.keys.get(id(e))
        if ek is None:  # structural keys are costly on large inlined expressions: one per node, per kernel
            ek = self.g.keys[id(e)] = e.key()
        k = (f.sig, ek)
        v = self.memo.get(k)
        if v is None:
            v = self.memo[k] = self._emit(e, f)
            self.count += 1
        return v

    # -- integer carriers ------------------------------------------------------------------------------------

    def as_type(self, v: V, ty: ir.IntType) -> ir.Value:
        """v's carrier as `ty`: sign-extended when wider (a carrier holds its exact value), truncated when narrower
        (the low bits, all that wrapping add/sub/mul need)."""
        w = v.v.type.width
        if w == ty.width:
            return v.v
        return self.b.sext(v.v, ty) if ty.width > w else self.b.trunc(v.v, ty)

    def index(self, v: V) -> ir.Value:
        """An integer as an i64, for address arithmetic."""
        return self.as_type(v, I64)

    def common(self, a: V, c: V) -> tuple[ir.Value, ir.Value]:
        """Two integer carriers at one width, exactly: 32 bits when one is carried in 32 and both values are i32s
        (a constant or an index meeting a 32-bit value), else 64."""
        narrow = 32 in (a.v.type.width, c.v.type.width) and fits32(min(a.lo, c.lo), max(a.hi, c.hi))
        ty = I32 if narrow else I64
        return self.as_type(a, ty), self.as_type(c, ty)

    def _emit(self, e: Expr, f: _Frame) -> V:
        b = self.b
        if isinstance(e, Cast):
            return self._cast(e, f)
        if isinstance(e, BinOp):
            return self._binop(e, f)
        if isinstance(e, Cmp):
            a, c = self.value(e.a, f), self.value(e.b, f)
            if e.a.type.is_float:
                op = _CMP[e.op]
                v = b.fcmp_unordered(op, a.v, c.v) if e.op == "ne" else b.fcmp_ordered(op, a.v, c.v)
            elif e.a.type.is_bool:
                v = b.icmp_unsigned(_CMP[e.op], a.v, c.v)
            else:
                v = b.icmp_signed(_CMP[e.op], *self.common(a, c))
            return V(v, 0, 1)
        if isinstance(e, Logical):
            a, c = self.value(e.a, f), self.value(e.b, f)
            return V((b.and_ if e.op == "and" else b.or_)(a.v, c.v), 0, 1)
        if isinstance(e, Not):
            return V(b.not_(self.value(e.a, f).v), 0, 1)
        if isinstance(e, Select):
            c, t, fv = self.value(e.cond, f), self.value(e.t, f), self.value(e.f, f)
            tv, fvv = self.common(t, fv) if e.type.is_integer else (t.v, fv.v)
            return V(b.select(c.v, tv, fvv), min(t.lo, fv.lo), max(t.hi, fv.hi))
        if isinstance(e, Call):
            args = [self.value(a, f) for a in e.args]
            if e.target.name in self.g.inlined and not e.is_input:
                func = self.g.inlined[e.target.name]
                env = {name: a for name, a in zip(func.args, args)}
                sub = _Frame(env, ("inline", e.target.name, tuple(id(a.v) for a in args)))
                return self.value(func.definitions[0].value, sub)
            v = self.g.load(e, [self.index(a) for a in args])
            t = e.type
            return V(v, t.min, t.max) if t.is_integer else V(v, 0, 1) if t.is_bool else V(v)
        if isinstance(e, Math):
            return self._math(e, f)
        raise TypeError(f"cannot lower {e!r}")  # pragma: no cover

    def _wrap(self, v: V, t: Type) -> V:
        """v wrapped into type t (its low t.bits bits), in t's carrier."""
        if t.min <= v.lo and v.hi <= t.max:
            return v
        ty = carrier(t)
        x = v.v
        w = x.type.width
        if t.bits < w:
            x = self.b.trunc(x, ir.IntType(t.bits))
            w = t.bits
        if w < ty.width:
            x = (self.b.zext if t.is_uint else self.b.sext)(x, ty)
        return V(x, t.min, t.max)

    def _cast(self, e: Cast, f: _Frame) -> V:
        src, dst = e.value.type, e.target
        v = self.value(e.value, f)
        b = self.b
        if dst.is_bool:
            if src.is_float:
                return V(b.fcmp_unordered("!=", v.v, ir.Constant(v.v.type, 0.0)), 0, 1)
            if src.is_bool:
                return v
            return V(b.icmp_signed("!=", v.v, ir.Constant(v.v.type, 0)), 0, 1)
        if dst.is_float:
            ft = F32 if dst.bits == 32 else F64
            if src.is_float:
                if src.bits == dst.bits:
                    return v
                return V(b.fpext(v.v, ft) if dst.bits > src.bits else b.fptrunc(v.v, ft))
            if src.is_bool:
                return V(b.uitofp(v.v, ft))
            return V(b.sitofp(v.v, ft))  # the carriers of every integer type are exact and signed
        if src.is_float and src.bits == 32 and carrier(dst) is I32:
            return V(b.call(self.g.f2i32, [v.v, I32(int(dst.min)), I32(int(dst.max))]), dst.min, dst.max)
        if src.is_float:
            x = v.v if src.bits == 64 else b.fpext(v.v, F64)
            i = b.call(self.g.f2i, [x, I64(int(dst.min)), I64(int(dst.max))])
            return V(i if carrier(dst) is I64 else b.trunc(i, carrier(dst)), dst.min, dst.max)
        if src.is_bool:
            return V(b.zext(v.v, carrier(dst)), 0, 1)
        return self._wrap(v, dst)

    def _binop(self, e: BinOp, f: _Frame) -> V:
        a, c = self.value(e.a, f), self.value(e.b, f)
        b = self.b
        t = e.type
        if t.is_float:
            if e.op == "min":
                return V(b.select(b.fcmp_ordered("<", c.v, a.v), c.v, a.v))
            if e.op == "max":
                return V(b.select(b.fcmp_ordered(">", c.v, a.v), c.v, a.v))
            if e.op == "mod":
                q = b.call(self.g._intrinsic(f"llvm.floor.f{t.bits}", a.v.type), [b.fdiv(a.v, c.v)])
                return V(b.fsub(a.v, b.fmul(c.v, q)))
            return V({"add": b.fadd, "sub": b.fsub, "mul": b.fmul, "div": b.fdiv}[e.op](a.v, c.v))
        op = e.op
        if op in ("add", "sub", "mul"):
            lo, hi = _range_arith(op, a, c)
            # 32 bits when an operand is carried in 32 (values, not indices) and the exact result or its wrapped
            # value is an i32: wrapping arithmetic is exact in the low 32 bits
            narrow = 32 in (a.v.type.width, c.v.type.width) and (fits32(lo, hi) or carrier(t) is I32)
            ty = I32 if narrow else I64
            x, y = self.as_type(a, ty), self.as_type(c, ty)
            return self._wrap(V({"add": b.add, "sub": b.sub, "mul": b.mul}[op](x, y), lo, hi), t)
        if op in ("min", "max"):
            x, y = self.common(a, c)
            pick = b.icmp_signed("<" if op == "min" else ">", y, x)
            f_ = min if op == "min" else max
            return V(b.select(pick, y, x), f_(a.lo, c.lo), f_(a.hi, c.hi))
        k = c.v.constant if isinstance(c.v, ir.Constant) else None
        if op == "div":
            if k is not None:
                if k == 0:
                    return V(I64(0), 0, 0)
                lo, hi = _range_div_const(a, k)
                x = self.as_type(a, a.v.type if fits32(lo, hi) and fits32(-abs(k), abs(k)) else I64)
                q = floordiv_const(b, x, abs(k), a.lo >= 0)
                return self._wrap(V(q if k > 0 else b.neg(q), lo, hi), t)
            m = max(abs(a.lo), abs(a.hi))
            return self._wrap(V(b.call(self.g.idiv, [self.index(a), self.index(c)]), -m, m), t)
        if op == "mod":
            if k is not None:
                if k == 0:
                    return V(I64(0), 0, 0)
                x = self.as_type(a, a.v.type if fits32(-abs(k), abs(k)) else I64)
                return V(mod_const(b, x, abs(k), a.lo >= 0), 0, abs(k) - 1)
            m = max(abs(c.lo), abs(c.hi))
            return V(b.call(self.g.imod, [self.index(a), self.index(c)]), 0, max(m - 1, 0))
        raise ValueError(op)  # pragma: no cover

    def _math(self, e: Math, f: _Frame) -> V:
        args = [self.value(a, f) for a in e.args]
        b = self.b
        t = e.type
        if e.fn == "abs":
            a = args[0]
            if e.args[0].type.is_float:
                return V(b.call(self.g._intrinsic(f"llvm.fabs.f{e.args[0].type.bits}", a.v.type), [a.v]))
            m = max(abs(a.lo), abs(a.hi))
            lo = 0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
            x = self.as_type(a, a.v.type if fits32(lo, m) else I64)
            return V(b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x), lo, m)
        vals = [a.v for a in args]
        if e.fn in VIA_F64 and t.bits == 32:  # ir.semantics: the f64 routine, rounded once
            wide = [b.fpext(v, F64) for v in vals]
            return V(b.fptrunc(self._call_math(e.fn, F64, wide), F32))
        return V(self._call_math(e.fn, F32 if t.bits == 32 else F64, vals))

    def _call_math(self, fn: str, ty: ir.Type, vals: list[ir.Value]) -> ir.Value:
        bits = 32 if ty == F32 else 64
        if fn in ("sqrt", "floor", "ceil", "sin", "cos", "exp", "log", "pow"):
            return self.b.call(self.g._intrinsic(f"llvm.{fn}.f{bits}", ty, len(vals)), vals)
        if fn == "round":
            return self.b.call(self.g._intrinsic(f"llvm.rint.f{bits}", ty), vals)
        if fn == "tanh":
            return self.b.call(self.g._intrinsic("tanhf" if bits == 32 else "tanh", ty), vals)
        raise ValueError(fn)  # pragma: no cover


def floordiv_const(b: ir.IRBuilder, x: ir.Value, m: int, nonnegative: bool) -> ir.Value:
    """floor(x / m) for a constant m > 0, in x's width: an arithmetic shift for a power of two (vectorizable,
    where LLVM's division by a constant of a value that may be negative is not simplified), a plain signed
    division when x >= 0, else the signed division corrected by the remainder's sign."""
    if m & (m - 1) == 0:
        return b.ashr(x, ir.Constant(x.type, m.bit_length() - 1)) if m > 1 else x
    k = ir.Constant(x.type, m)
    q = b.sdiv(x, k)
    if nonnegative:
        return q
    r = b.srem(x, k)
    return b.select(b.icmp_signed("<", r, ir.Constant(x.type, 0)), b.sub(q, ir.Constant(x.type, 1)), q)


def mod_const(b: ir.IRBuilder, x: ir.Value, m: int, nonnegative: bool) -> ir.Value:
    """The Euclidean x mod m for a constant m > 0, in x's width: a mask for a power of two (two's complement)."""
    if m & (m - 1) == 0:
        return b.and_(x, ir.Constant(x.type, m - 1))
    k = ir.Constant(x.type, m)
    r = b.srem(x, k)
    if nonnegative:
        return r
    return b.select(b.icmp_signed("<", r, ir.Constant(x.type, 0)), b.add(r, k), r)


_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _const(e: Const) -> V:
    t = e.type
    if t.is_bool:
        return V(I1(int(bool(e.value))), int(e.value), int(e.value))
    if t.is_float:
        return V(ir.Constant(F32 if t.bits == 32 else F64, float(e.value)))
    v = int(e.value)
    return V(I64(v), v, v)
