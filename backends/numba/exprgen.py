"""Statements that compute one point of a stage, as numba-compilable Python.

Every subexpression becomes one SSA temporary (`_t12 = ...`), so shared work is computed once and
inlined Funcs cost no code blow-up for repeated calls. Values are carried in machine types chosen so
that the result equals `ir.semantics` exactly: floats in their own type; integers of every width in
int64, wrapped back into their type's range only where the static range of a result can leave it
(so index arithmetic stays plain int64 and LLVM still sees consecutive loads); bools as bools.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ir.expr import BinOp, Call, Cast, Cmp, Const, Expr, Logical, Math, Not, RVar, Select, Var
from ir.types import Type
from ir.semantics import VIA_F64

INF = math.inf

# helpers every generated module defines (see HELPERS)
HELPERS = '''
@njit(inline="always")
def _idiv(a, b):
    if b == 0:
        return 0
    return a // b if b > 0 else -(a // -b)


@njit(inline="always")
def _imod(a, b):
    if b == 0:
        return 0
    return a % abs(b)


@njit(inline="always")
def _f2i(v, lo, hi):
    x = np.float64(v)
    if x != x:
        return 0
    if x <= lo:
        return lo
    if x >= hi:
        return hi
    return np.int64(x)
'''


@dataclass
class Value:
    code: str  # a temporary's name or a literal
    lo: float = -INF  # static range of an integer value (exact math, before any wrap)
    hi: float = INF


@dataclass
class Frame:
    """Variable bindings while emitting one definition (the stage's own, or an inlined Func's)."""

    env: dict[str, Value]
    sig: tuple


class PointEmitter:
    def __init__(self, emit_line: Callable[[str], None], load: Callable[[Call, list[Value]], str],
                 inlined: dict[str, object], fresh: Callable[[], str], constant: Callable[[str], str]):
        self.emit_line = emit_line  # writes one statement at the current indentation
        self.load = load  # code of a load from a computed Func or Input, given argument values
        self.inlined = inlined  # name -> Func, for Funcs substituted at their call sites
        self.fresh = fresh  # a new temporary's name, unique in the whole kernel (numba types per name)
        self.constant = constant  # a module-level global holding a typed constant (numba freezes globals)
        self.memo: dict[tuple, Value] = {}
        self.keys: dict[int, tuple] = {}

    def reset(self) -> None:
        self.memo.clear()

    def value(self, e: Expr, frame: Frame) -> Value:
        if isinstance(e, (Var, RVar)):
            return frame.env[e.name]
        if isinstance(e, Const):
            v = _const(e)
            if e.type.is_float:
                v = Value(self.constant(v.code), v.lo, v.hi)
            return v
        k = (frame.sig, self._key(e))
        v = self.memo.get(k)
        if v is None:
            v = self._emit(e, frame)
            self.memo[k] = v
        return v

    def _key(self, e: Expr) -> tuple:
        k = self.keys.get(id(e))
        if k is None:
            k = e.key()
            self.keys[id(e)] = k
        return k

    def _assign(self, code: str, lo: float = -INF, hi: float = INF) -> Value:
        name = self.fresh()
        self.emit_line(f"{name} = {code}")
        return Value(name, lo, hi)

    # -- nodes -----------------------------------------------------------------------------------

    def _emit(self, e: Expr, f: Frame) -> Value:
        if isinstance(e, Cast):
            return self._cast(e, f)
        if isinstance(e, BinOp):
            return self._binop(e, f)
        if isinstance(e, Cmp):
            a, b = self.value(e.a, f), self.value(e.b, f)
            return self._assign(f"({a.code} {_CMP[e.op]} {b.code})", 0, 1)
        if isinstance(e, Logical):
            a, b = self.value(e.a, f), self.value(e.b, f)
            return self._assign(f"({a.code} {'&' if e.op == 'and' else '|'} {b.code})", 0, 1)
        if isinstance(e, Not):
            a = self.value(e.a, f)
            return self._assign(f"(not {a.code})", 0, 1)
        if isinstance(e, Select):
            c, t, fv = self.value(e.cond, f), self.value(e.t, f), self.value(e.f, f)
            return self._assign(f"({t.code} if {c.code} else {fv.code})", min(t.lo, fv.lo), max(t.hi, fv.hi))
        if isinstance(e, Call):
            return self._call(e, f)
        if isinstance(e, Math):
            return self._math(e, f)
        raise TypeError(f"cannot generate code for {e!r}")  # pragma: no cover

    def _call(self, e: Call, f: Frame) -> Value:
        args = [self.value(a, f) for a in e.args]
        if e.target.name in self.inlined and not e.is_input:
            func = self.inlined[e.target.name]
            env = {name: a for name, a in zip(func.args, args)}
            sub = Frame(env, ("inline", e.target.name, tuple(a.code for a in args)))
            return self.value(func.definitions[0].value, sub)
        code = self.load(e, args)
        t = e.type
        if t.is_integer:
            return self._assign(f"np.int64({code})", t.min, t.max)
        if t.is_bool:
            return self._assign(code, 0, 1)
        return self._assign(code)

    def _cast(self, e: Cast, f: Frame) -> Value:
        src, dst = e.value.type, e.target
        v = self.value(e.value, f)
        if dst.is_bool:
            return self._assign(f"({v.code} != 0)", 0, 1)
        if dst.is_float:
            return self._assign(f"np.{dst.dtype.name}({v.code})")
        if src.is_float:  # float -> int: truncate, saturate, NaN -> 0
            return self._assign(f"_f2i({v.code}, {int(dst.min)}, {int(dst.max)})", dst.min, dst.max)
        if src.is_bool:
            return self._assign(f"np.int64({v.code})", 0, 1)
        return self._wrap(v, dst)

    def _wrap(self, v: Value, t: Type) -> Value:
        """An int64 carrier holding v wrapped into t's range (a no-op when v already fits)."""
        if t.min <= v.lo and v.hi <= t.max:
            return v
        mask = (1 << t.bits) - 1
        if t.is_uint:
            return self._assign(f"({v.code} & {mask})", 0, mask)
        half = 1 << (t.bits - 1)
        return self._assign(f"((({v.code} + {half}) & {mask}) - {half})", -half, half - 1)

    def _binop(self, e: BinOp, f: Frame) -> Value:
        a, b = self.value(e.a, f), self.value(e.b, f)
        t = e.type
        if t.is_float:
            if e.op in ("min", "max"):
                return self._assign(f"{e.op}({a.code}, {b.code})")
            if e.op == "mod":
                return self._assign(f"({a.code} - {b.code} * np.floor({a.code} / {b.code}))")
            return self._assign(f"({a.code} {_ARITH[e.op]} {b.code})")
        op = e.op
        if op in ("add", "sub", "mul"):
            lo, hi = _range_arith(op, a, b)
            return self._wrap(self._assign(f"({a.code} {_ARITH[op]} {b.code})", lo, hi), t)
        if op in ("min", "max"):
            f_ = min if op == "min" else max
            return self._assign(f"{op}({a.code}, {b.code})", f_(a.lo, b.lo), f_(a.hi, b.hi))
        k = _literal_int(b.code)
        if op == "div":
            if k is not None:
                if k == 0:
                    return Value("0", 0, 0)
                code = f"({a.code} // {k})" if k > 0 else f"(-({a.code} // {-k}))"
                lo, hi = _range_div_const(a, k)
            else:
                code = f"_idiv({a.code}, {b.code})"
                m = max(abs(a.lo), abs(a.hi))
                lo, hi = -m, m
            return self._wrap(self._assign(code, lo, hi), t)
        if op == "mod":
            if k is not None:
                if k == 0:
                    return Value("0", 0, 0)
                return self._assign(f"({a.code} % {abs(k)})", 0, abs(k) - 1)
            m = max(abs(b.lo), abs(b.hi))
            return self._assign(f"_imod({a.code}, {b.code})", 0, max(m - 1, 0))
        raise ValueError(op)  # pragma: no cover

    def _math(self, e: Math, f: Frame) -> Value:
        args = [self.value(a, f) for a in e.args]
        if e.fn == "abs":
            a = args[0]
            if e.args[0].type.is_float:
                return self._assign(f"np.abs({a.code})")
            m = max(abs(a.lo), abs(a.hi))
            return self._assign(f"abs({a.code})", 0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi)), m)
        fn = {"round": "rint", "pow": "power"}.get(e.fn, e.fn)
        if e.fn in VIA_F64 and e.type.bits == 32:  # ir.semantics: the f64 routine, rounded once
            return self._assign(f"np.float32(np.{fn}({', '.join(f'np.float64({a.code})' for a in args)}))")
        return self._assign(f"np.{fn}({', '.join(a.code for a in args)})")


_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _const(e: Const) -> Value:
    t = e.type
    if t.is_bool:
        return Value("True" if e.value else "False", int(e.value), int(e.value))
    if t.is_float:
        return Value(f"np.{t.dtype.name}({float(e.value)!r})")
    v = int(e.value)
    return Value(str(v) if v >= 0 else f"({v})", v, v)


def _literal_int(code: str) -> int | None:
    try:
        return int(code.strip("()"))
    except ValueError:
        return None


def _range_arith(op: str, a: Value, b: Value) -> tuple[float, float]:
    if op == "add":
        return a.lo + b.lo, a.hi + b.hi
    if op == "sub":
        return a.lo - b.hi, a.hi - b.lo
    c = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi) if not (math.isinf(x) and y == 0 or math.isinf(y) and x == 0)]
    c = c or [0]
    if any(math.isnan(v) for v in c):
        return -INF, INF
    return min(c), max(c)


def _range_div_const(a: Value, k: int) -> tuple[float, float]:
    def q(v):
        if math.isinf(v):
            return v if k > 0 else -v
        return v // k if k > 0 else -(v // -k)

    x, y = q(a.lo), q(a.hi)
    return min(x, y), max(x, y)
