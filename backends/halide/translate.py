"""A schedlab Pipeline as Halide Funcs, ImageParams and RDoms with schedlab's exact semantics.

Every Func becomes an `hl.Func` with the same pure Vars and update definitions; every Input an
`hl.ImageParam` whose buffer starts at the Input's required region. Where Halide's meaning differs
from `ir.semantics` (32-bit signed overflow is undefined to Halide's simplifier, float min/max and
float->int casts, INT_MIN / -1), explicit expressions reproduce schedlab's. A static range per
integer value (as the numba backend keeps) limits those fixes to where a value can leave its type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import halide as hl

from ir.errors import SchedlabError
from ir.expr import BinOp, Call, Cast, Cmp, Const, Expr, Logical, Math, Not, RVar, Select, Var, walk
from ir.semantics import VIA_F64
from ir.types import Type

from ..numba.exprgen import _range_arith

INF = math.inf


class TranslateError(SchedlabError):
    """A pipeline construct the Halide backend does not translate."""


def halide_type(t: Type) -> hl.Type:
    if t.is_bool:
        return hl.Bool()
    if t.is_uint:
        return hl.UInt(t.bits)
    if t.is_int:
        return hl.Int(t.bits)
    return hl.Float(t.bits)


@dataclass
class HalidePipeline:
    """The Halide objects standing for one schedlab pipeline (unscheduled until `schedule.apply`)."""

    funcs: dict[str, hl.Func]
    vars: dict[str, tuple[hl.Var, ...]]  # each Func's pure Vars, in dimension order
    rdoms: dict[tuple[str, int], hl.RDom]  # (func, update stage index) -> its reduction domain
    params: dict[str, hl.ImageParam]
    sources: dict[str, hl.Func | hl.ImageParam]  # each Input as read: clamped to its buffer or not (translate)
    outputs: dict[str, hl.Func]  # what is realized into each output buffer (see _output_funcs)

    def pipeline(self) -> hl.Pipeline:
        return hl.Pipeline(list(self.outputs.values()))


@dataclass
class _Val:
    """A Halide expression with the static range of its exact integer value (floats: unbounded)."""

    e: hl.Expr
    lo: float = -INF
    hi: float = INF


def translate(pipeline, clamp_inputs: bool = True) -> HalidePipeline:
    """Halide Funcs computing exactly what `ir.interpret(pipeline)` computes, with estimates set.

    A guarded or shifted tail tile makes Halide compute producers over the whole tile, which may read an Input
    past its region; those values are never used. clamp_inputs=True clamps every read of an Input to its buffer
    (repeat_edge; the clamp bounds are the buffer's own, symbolic: with constant bounds the simplifier drops a clamp
    it believes redundant inside a guarded tail, and the input bounds check then fails). Halide's loop partitioning
    removes the clamp from a loop's steady state only when it can solve for it, and inside a register tile whose
    taps run in RVar loops it cannot: conv_layer's beam schedule kept a clamped, gathered load at every tap and ran
    2.4x slower than on an Input read as it is. clamp_inputs=False reads Inputs unclamped: the caller passes each
    Input in a buffer padded to the region Halide's bounds query asks for, its edge values repeated into the
    padding, so that every value computed equals the clamped pipeline's (backends.halide.aot does so)."""
    dag = pipeline.dag
    funcs = {n.name: hl.Func(n.name) for n in dag.nodes}
    vars_ = {n.name: tuple(hl.Var(v) for v in n.dims) for n in dag.nodes}
    params = {i.name: hl.ImageParam(halide_type(i.type), i.dimensions, i.name) for i in pipeline.inputs}
    sources = {n: hl.BoundaryConditions.repeat_edge(p) if clamp_inputs else p for n, p in params.items()}
    hp = HalidePipeline(funcs, vars_, {}, params, sources, _output_funcs(pipeline, funcs, vars_))
    for n in reversed(dag.nodes):  # producers first (any order works; this one reads well when printed)
        _define(hp, n)
    _define_wrappers(hp)
    for name, p in params.items():
        p.set_estimates([hl.Range(lo, ext) for lo, ext in pipeline.input_regions[name]])
    for name, f in hp.outputs.items():
        f.set_estimates([hl.Range(0, e) for e in pipeline.output_sizes[name]])
        # a kernel is compiled for its sizes, and the harness passes output buffers of exactly those: saying so of
        # the extents gives a Func computed inside a full-width tile an allocation of constant size and its register
        # tile constant offsets (with the output's extent a runtime value, conv_layer's 100-wide strips ran 2.5x
        # slower per column). The mins stay symbolic: constant mins (set_bounds) also changed how Halide partitions
        # loops at the edges, and interpolate's beam schedule ran 0.72x (docs/halide.md, "Schedule mapping")
        out = f.output_buffer()
        for d, e in enumerate(pipeline.output_sizes[name]):
            out.dim(d).set_extent(e)
    return hp


def _output_funcs(pipeline, funcs: dict[str, hl.Func], vars_) -> dict[str, hl.Func]:
    """The Func realized into each output buffer. Halide computes an output exactly over its buffer,
    but a schedlab output read by other Funcs, or scattering updates outside its size, is computed
    over a larger region: such an output is computed as a separate Func (`_<name>`, which carries the
    LoopNest's schedule) and copied into the buffer by a wrapper."""
    out = {}
    for o in pipeline.outputs:
        node = pipeline.dag.node(o.name)
        size = pipeline.output_sizes[o.name]
        if all(r == (0, e - 1) for r, e in zip(node.region, size)):
            out[o.name] = funcs[o.name]
            continue
        inner = hl.Func(f"_{o.name}")
        wrapper = funcs[o.name]
        funcs[o.name] = inner
        out[o.name] = wrapper
    return out


def _define_wrappers(hp: HalidePipeline) -> None:
    for name, wrapper in hp.outputs.items():
        if wrapper is not hp.funcs[name]:
            vs = list(hp.vars[name])
            wrapper[vs] = hp.funcs[name][vs]


def _define(hp: HalidePipeline, node) -> None:
    f = hp.funcs[node.name]
    region = node.region
    env = {v: _Val(hl.Expr(hv), lo, hi) for v, hv, (lo, hi) in zip(node.dims, hp.vars[node.name], region)}
    em = _Emitter(hp, node.name)
    for k, d in enumerate(node.func.definitions):
        denv = dict(env)
        if k > 0 and d.rdom:
            rv0 = d.rdom[0]
            rd = hl.RDom([hl.Range(mn, ext) for mn, ext in rv0.ranges], f"{node.name}_r{k}")
            hp.rdoms[(node.name, k)] = rd
            for i, rv in enumerate(d.rdom):
                denv[rv.name] = _Val(hl.Expr(rd[i]), rv.min, rv.min + rv.extent - 1)
        value = em.value(d.value, denv).e
        if k == 0:
            f[list(hp.vars[node.name])] = value
        else:
            f[[em.index(a, denv) for a in d.lhs]] = value


class _Emitter:
    def __init__(self, hp: HalidePipeline, func: str):
        self.hp = hp
        self.func = func

    def index(self, e: Expr, env) -> hl.Expr:
        v = self.value(e, env).e
        return v if v.type() == hl.Int(32) else hl.cast(hl.Int(32), v)

    def value(self, e: Expr, env) -> _Val:
        if isinstance(e, (Var, RVar)):
            return env[e.name]
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            raise TranslateError(f"{self.func}: the Halide backend cannot translate {type(e).__name__} {e!r}")
        return method(e, env)

    # -- leaves and calls ------------------------------------------------------------------------

    def _Const(self, e: Const, env) -> _Val:
        t = e.type
        if t.is_bool:
            return _Val(hl.Expr(bool(e.value)), int(e.value), int(e.value))
        if t.is_float:
            if t.bits == 32:
                return _Val(hl.Expr(float(e.value)))
            return _Val(hl.f64(hl.Expr(float(e.value))) if float(e.value) == _f32(e.value) else _f64_const(e.value))
        v = int(e.value)
        return _Val(hl.cast(halide_type(t), hl.Expr(v)), v, v)

    def _Call(self, e: Call, env) -> _Val:
        args = [self.index(a, env) for a in e.args]
        target = self.hp.sources[e.name] if e.is_input else self.hp.funcs[e.name]
        t = e.type
        load = target[args]
        load = load if isinstance(load, hl.Expr) else hl.Expr(load)
        return _Val(load, t.min, t.max) if not t.is_float else _Val(load)

    # -- arithmetic ------------------------------------------------------------------------------

    def _BinOp(self, e: BinOp, env) -> _Val:
        a, b = self.value(e.a, env), self.value(e.b, env)
        t = e.type
        ht = halide_type(t)
        x, y = _as(a.e, ht), _as(b.e, ht)
        if t.is_float:
            if e.op == "min":
                return _Val(hl.select(y < x, y, x))
            if e.op == "max":
                return _Val(hl.select(y > x, y, x))
            if e.op in ("div", "mod"):
                q = _float_div(x, y, _constant(e.b))
                return _Val(q if e.op == "div" else x - y * hl.floor(q))
            return _Val({"add": x + y, "sub": x - y, "mul": x * y}[e.op])
        if e.op in ("min", "max"):
            fn = hl.min if e.op == "min" else hl.max
            agg = min if e.op == "min" else max
            return _Val(fn(x, y), agg(a.lo, b.lo), agg(a.hi, b.hi))
        if e.op in ("add", "sub", "mul"):
            return _wrapping(e.op, x, y, a, b, t)
        if e.op == "div":
            return _divide(x, y, a, b, t)
        return _modulo(x, y, a, b, t)

    def _Cast(self, e: Cast, env) -> _Val:
        src, dst = e.value.type, e.target
        v = self.value(e.value, env)
        ht = halide_type(dst)
        if src == dst:
            return v
        if dst.is_bool:
            zero = hl.cast(halide_type(src), hl.Expr(0)) if not src.is_bool else hl.Expr(False)
            return _Val(v.e != zero, 0, 1)
        if dst.is_float:
            return _Val(hl.cast(ht, v.e))
        if src.is_float:
            return _Val(_float_to_int(v.e, src, dst), dst.min, dst.max)
        if src.is_bool:
            return _Val(hl.cast(ht, v.e), 0, 1)
        if dst.min <= v.lo and v.hi <= dst.max:
            return _Val(hl.cast(ht, v.e), v.lo, v.hi)
        if dst.is_int and dst.bits >= 32:
            # Halide's casts wrap when run, as schedlab's, but its bounds inference takes a cast to a signed type of
            # 32 bits or more not to overflow (signed overflow is undefined to it): cast<int32>(u32) >= 0, so a
            # clamp's lower bound looks unreachable, producers were computed over too small a region and a
            # wrapped negative index read outside them (fuzz pair 8280/256687 died with SIGSEGV). So the value is
            # wrapped explicitly in 64-bit arithmetic, whose bounds Halide derives rather than assumes (a reinterpret
            # of the unsigned cast it simplifies back into the cast, and the clamp's bound went again).
            return _Val(hl.cast(ht, _wrapped(v.e, dst.bits)), dst.min, dst.max)
        return _Val(hl.cast(ht, v.e), dst.min, dst.max)  # Halide's casts to narrower ints wrap, as schedlab's

    def _Cmp(self, e: Cmp, env) -> _Val:
        a, b = self.value(e.a, env).e, self.value(e.b, env).e
        b = _as(b, a.type())  # typechecking matched the operand types already
        op = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[e.op]
        if e.op in ("le", "ge") and a.type().is_float():
            # Halide's simplifier makes a <= b into !(b < a), true for a NaN operand even under StrictFloat; IEEE's
            # (and the interpreter's, numba's, llvm's) a <= b is false there. Random pipeline 7596 (motifs 0.15)
            # compared 1.0 >= sqrt(sqrt(negative)) and lost every schedule to wrong_output.
            op = op & hl.logical_not(hl.is_nan(a) | hl.is_nan(b))
        return _Val(op, 0, 1)

    def _Logical(self, e: Logical, env) -> _Val:
        a, b = self.value(e.a, env).e, self.value(e.b, env).e
        return _Val((a & b) if e.op == "and" else (a | b), 0, 1)

    def _Not(self, e: Not, env) -> _Val:
        return _Val(hl.logical_not(self.value(e.a, env).e), 0, 1)

    def _Select(self, e: Select, env) -> _Val:
        c, a, b = (self.value(x, env) for x in (e.cond, e.t, e.f))
        ht = halide_type(e.type)
        return _Val(hl.select(c.e, _as(a.e, ht), _as(b.e, ht)), min(a.lo, b.lo), max(a.hi, b.hi))

    def _Math(self, e: Math, env) -> _Val:
        args = [self.value(a, env) for a in e.args]
        if e.fn == "abs":
            a = args[0]
            if e.args[0].type.is_float:
                return _Val(hl.abs(a.e))
            lo = 0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
            return _Val(hl.abs(a.e), lo, max(abs(a.lo), abs(a.hi)))
        ht = halide_type(e.type)
        xs = [_as(a.e, ht) for a in args]
        if e.fn in _VIA_F64 and e.type.bits == 32:
            f64 = hl.Float(64)
            return _Val(hl.cast(ht, _VIA_F64[e.fn](*[hl.cast(f64, x) for x in xs])))
        fn = {"exp": hl.exp, "log": hl.log, "sqrt": hl.sqrt, "sin": hl.sin, "cos": hl.cos, "tanh": hl.tanh,
              "pow": hl.pow, "floor": hl.floor, "ceil": hl.ceil, "round": hl.round}[e.fn]
        return _Val(fn(*xs))


# Halide's own f32 exp, log and pow are polynomials that are off by an ulp or two from the C library
# and wrong at special values (exp(inf) = 0, log(nan) = 89, denormals flushed); their f64 versions
# agree with the C library, so f32 calls run in f64 and round once — ir.semantics.VIA_F64, what every
# backend and the interpreter compute.
_VIA_F64 = {"exp": hl.exp, "log": hl.log, "pow": hl.pow}
assert set(_VIA_F64) == VIA_F64


# -- semantic fixes ------------------------------------------------------------------------------


def _wrapped(x: hl.Expr, bits: int) -> hl.Expr:
    """x modulo 2**bits into the signed range of `bits`, as int64 when bits == 32: what a wrapping cast to a signed
    type computes, in arithmetic whose bounds Halide's analysis derives (bits == 64: the unsigned cast, reinterpreted;
    nothing wider exists to wrap in)."""
    if bits >= 64:
        return hl.reinterpret(hl.Int(64), hl.cast(hl.UInt(64), x))
    half = 1 << (bits - 1)
    wide = hl.cast(hl.Int(64), x) if not x.type().is_uint() or x.type().bits() < 64 else \
        hl.reinterpret(hl.Int(64), x)
    return ((wide + half) & ((1 << bits) - 1)) - half


def _as(x: hl.Expr, ht: hl.Type) -> hl.Expr:
    return x if x.type() == ht else hl.cast(ht, x)


def _f32(v) -> float:
    import numpy as np

    return float(np.float32(v))


def _f64_const(v: float) -> hl.Expr:
    """An f64 constant; Python floats become f32 in Halide's bindings, so build it from f32 halves."""
    hi = _f32(v)
    lo = _f32(v - hi)
    return hl.f64(hl.Expr(hi)) + hl.f64(hl.Expr(lo)) + hl.f64(hl.Expr(_f32(v - hi - lo)))


def _constant(e: Expr) -> float | None:
    """The value of an expression without Vars or loads (Halide folds it), else None."""
    if any(isinstance(n, (Var, RVar, Call)) for n in walk(e)):
        return None
    from ir.interpret import _Evaluator  # the reference semantics, on a constant

    return float(_Evaluator({}, "").eval(e, {}))


def _float_div(x: hl.Expr, y: hl.Expr, y_const: float | None) -> hl.Expr:
    """IEEE x / y; Halide rejects a division by constant zero, which is x times a signed infinity.

    A divisor that is not a constant here may become one in Halide's lowering: a padded Func (zero outside its
    input) inlined into the divisor folds to 0.0 where Halide proves a loop runs outside the input, and its code
    generator then refuses the whole pipeline (random pipeline 1080: every schedule that inlined the pad). Under
    strict_float the simplifier folds neither the comparison nor the division, so the divisor itself is guarded:
    x / select(y == 0, 1, y), and the signed infinity selected where y is zero."""
    bits = x.type().bits()

    def signed_inf(negative):
        pos, neg = (hl.Expr(math.inf), hl.Expr(-math.inf)) if bits == 32 else \
            (hl.f64(hl.Expr(math.inf)), hl.f64(hl.Expr(-math.inf)))
        return hl.select(negative, neg, pos)

    if y_const is not None:
        return x / y if y_const != 0 else x * signed_inf(hl.Expr(math.copysign(1.0, y_const) < 0))
    u = hl.UInt(bits)
    negative = (hl.reinterpret(u, y) >> hl.cast(u, hl.Expr(bits - 1))) != hl.cast(u, hl.Expr(0))
    is_zero = y == hl.cast(y.type(), hl.Expr(0.0))
    return hl.select(is_zero, x * signed_inf(negative), x / hl.select(is_zero, hl.cast(y.type(), hl.Expr(1.0)), y))


def _wrapping(op: str, x: hl.Expr, y: hl.Expr, a: _Val, b: _Val, t: Type) -> _Val:
    """+, -, * that wrap in t. Halide wraps unsigned and narrow signed types itself but assumes 32-bit
    signed arithmetic never overflows, so an i32 op that may overflow runs on the bits as u32."""
    lo, hi = _range_arith(op, a, b)  # the numba backend's exact-range rule (reads .lo/.hi)
    fn = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q}[op]
    if t.min <= lo and hi <= t.max:
        return _Val(fn(x, y), lo, hi)
    if t.is_int and t.bits >= 32:
        u = hl.UInt(t.bits)
        r = hl.reinterpret(halide_type(t), fn(hl.reinterpret(u, x), hl.reinterpret(u, y)))
        return _Val(r, t.min, t.max)
    return _Val(fn(x, y), t.min, t.max)


def _divide(x, y, a: _Val, b: _Val, t: Type) -> _Val:
    """Halide's / already rounds by the divisor's sign and gives 0 for a zero divisor; only
    INT_MIN / -1 (which traps on x86) needs a guard, and only where both can occur."""
    m = max(abs(a.lo), abs(a.hi))
    if t.is_int and a.lo <= t.min and b.lo <= -1 <= b.hi:
        minus1 = hl.cast(halide_type(t), hl.Expr(-1))
        one = hl.cast(halide_type(t), hl.Expr(1))
        neg = _wrapping("sub", hl.cast(halide_type(t), hl.Expr(0)), x, _Val(x, 0, 0), a, t).e
        return _Val(hl.select(y == minus1, neg, x / hl.select(y == minus1, one, y)), t.min, t.max)
    lo, hi = (-m, m) if not (b.lo > 0) else (math.floor(a.lo / b.lo) if a.lo < 0 else 0, max(a.hi, 0))
    return _Val(x / y, max(lo, t.min), min(hi, t.max))


def _modulo(x, y, a: _Val, b: _Val, t: Type) -> _Val:
    """Euclidean modulus, 0 for a zero divisor (Halide's); guarded against INT_MIN % -1."""
    m = max(abs(b.lo), abs(b.hi))
    hi = max(m - 1, 0) if not math.isinf(m) else t.max
    if t.is_int and a.lo <= t.min and b.lo <= -1 <= b.hi:
        minus1 = hl.cast(halide_type(t), hl.Expr(-1))
        one = hl.cast(halide_type(t), hl.Expr(1))
        zero = hl.cast(halide_type(t), hl.Expr(0))
        return _Val(hl.select(y == minus1, zero, x % hl.select(y == minus1, one, y)), 0, hi)
    return _Val(x % y, 0, hi)


def _float_to_int(v: hl.Expr, src: Type, dst: Type) -> hl.Expr:
    """schedlab's float->int cast: truncate toward zero, saturate to dst's range, NaN -> 0 (Halide
    leaves out-of-range conversions undefined). Comparisons run in the float type: a bound that
    rounds up there (2^31 - 1 as f32) still separates the values that fit."""
    ht, ft = halide_type(dst), halide_type(src)
    lo, hi = hl.cast(ht, hl.Expr(int(dst.min))), hl.cast(ht, hl.Expr(int(dst.max)))
    flo = hl.cast(ft, hl.Expr(float(dst.min))) if src.bits == 32 else hl.f64(hl.Expr(float(dst.min)))
    fhi = _float_bound(float(dst.max), src)
    zero = hl.cast(ht, hl.Expr(0))
    inner = hl.select(v <= flo, lo, hl.select(v >= fhi, hi, hl.cast(ht, v)))
    return hl.select(hl.is_nan(v), zero, inner)


def _float_bound(value: float, src: Type) -> hl.Expr:
    if src.bits == 32:
        return hl.Expr(_f32(value))
    return _f64_const(value)
