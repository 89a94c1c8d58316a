"""Statements that compute one point of a stage, as C shared by CUDA and the CPU emulation.

The same scheme as the numba backend's `exprgen` (whose range helpers it reuses): one `const` temporary per
subexpression, integers of every width carried in 64 bits and wrapped back into their type only where their
static range can leave it, products in unsigned arithmetic (signed overflow is undefined in C and CUDA C),
floats in their own type with no contraction (the CPU side is built with -ffp-contract=off), and Halide's
division, modulus and saturating float->int cast from the prelude.
"""

from __future__ import annotations

import math
from typing import Callable

from ir.expr import BinOp, Call, Cast, Cmp, Const, Expr, Logical, Math, Not, RVar, Select, Var
from ir.semantics import VIA_F64
from ir.types import Type

from ..numba.exprgen import INF, Frame, Value, _literal_int, _range_arith, _range_div_const

CTYPES = {"bool": "bool", "u8": "sl_u8", "i8": "sl_i8", "u16": "sl_u16", "i16": "sl_i16", "u32": "sl_u32",
          "i32": "sl_i32", "f32": "float", "f64": "double"}


def ctype(t: Type) -> str:
    """The C type a Func of type t is stored in."""
    return CTYPES[t.name]


def carrier(t: Type) -> str:
    """The C type a value of type t is computed in."""
    return "sl_i64" if t.is_integer else ctype(t)


class CPointEmitter:
    def __init__(self, emit_line: Callable[[str], None], load: Callable[[Call, list[Value]], str],
                 inlined: dict[str, object], fresh: Callable[[], str]):
        self.emit_line = emit_line
        self.load = load
        self.inlined = inlined
        self.fresh = fresh
        self.memo: dict[tuple, Value] = {}
        self.keys: dict[int, tuple] = {}

    def value(self, e: Expr, frame: Frame) -> Value:
        if isinstance(e, (Var, RVar)):
            return frame.env[e.name]
        if isinstance(e, Const):
            return _const(e)
        k = (frame.sig, self._key(e))
        v = self.memo.get(k)
        if v is None:
            v = self._emit(e, frame)
            self.memo[k] = v
        return v

    def _key(self, e: Expr) -> tuple:
        k = self.keys.get(id(e))
        if k is None:
            k = self.keys[id(e)] = e.key()
        return k

    def _assign(self, ty: str, code: str, lo: float = -INF, hi: float = INF) -> Value:
        name = self.fresh()
        self.emit_line(f"const {ty} {name} = {code};")
        return Value(name, lo, hi)

    def _emit(self, e: Expr, f: Frame) -> Value:
        if isinstance(e, Cast):
            return self._cast(e, f)
        if isinstance(e, BinOp):
            return self._binop(e, f)
        if isinstance(e, Cmp):
            a, b = self.value(e.a, f), self.value(e.b, f)
            return self._assign("bool", f"({a.code} {_CMP[e.op]} {b.code})", 0, 1)
        if isinstance(e, Logical):
            a, b = self.value(e.a, f), self.value(e.b, f)
            return self._assign("bool", f"({a.code} {'&&' if e.op == 'and' else '||'} {b.code})", 0, 1)
        if isinstance(e, Not):
            return self._assign("bool", f"(!{self.value(e.a, f).code})", 0, 1)
        if isinstance(e, Select):
            c, t, fv = self.value(e.cond, f), self.value(e.t, f), self.value(e.f, f)
            return self._assign(carrier(e.type), f"({c.code} ? {t.code} : {fv.code})", min(t.lo, fv.lo),
                                max(t.hi, fv.hi))
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
            return self._assign("sl_i64", f"(sl_i64){code}", t.min, t.max)
        return self._assign(carrier(t), code, 0, 1) if t.is_bool else self._assign(carrier(t), code)

    def _cast(self, e: Cast, f: Frame) -> Value:
        src, dst = e.value.type, e.target
        v = self.value(e.value, f)
        if dst.is_bool:
            return self._assign("bool", f"({v.code} != 0)", 0, 1)
        if dst.is_float:
            return self._assign(ctype(dst), f"({ctype(dst)}){v.code}")
        if src.is_float:  # float -> int: truncate, saturate, NaN -> 0
            return self._assign("sl_i64", f"sl_f2i((double){v.code}, {int(dst.min)}LL, {int(dst.max)}LL)",
                                dst.min, dst.max)
        if src.is_bool:
            return self._assign("sl_i64", f"(sl_i64){v.code}", 0, 1)
        return self._wrap(v, dst)

    def _wrap(self, v: Value, t: Type) -> Value:
        if t.min <= v.lo and v.hi <= t.max:
            return v
        mask = (1 << t.bits) - 1
        if t.is_uint:
            return self._assign("sl_i64", f"sl_wrap_u({v.code}, {mask}ULL)", 0, mask)
        half = 1 << (t.bits - 1)
        return self._assign("sl_i64", f"sl_wrap_s({v.code}, {mask}ULL, {half}ULL)", -half, half - 1)

    def _binop(self, e: BinOp, f: Frame) -> Value:
        a, b = self.value(e.a, f), self.value(e.b, f)
        t = e.type
        if t.is_float:
            ty = ctype(t)
            if e.op == "min":
                return self._assign(ty, f"({b.code} < {a.code} ? {b.code} : {a.code})")
            if e.op == "max":
                return self._assign(ty, f"({b.code} > {a.code} ? {b.code} : {a.code})")
            if e.op == "mod":
                fl = "floorf" if t.bits == 32 else "floor"
                q = self._assign(ty, f"{fl}({a.code} / {b.code})")
                p = self._assign(ty, f"{b.code} * {q.code}")
                return self._assign(ty, f"{a.code} - {p.code}")
            return self._assign(ty, f"({a.code} {_ARITH[e.op]} {b.code})")
        op = e.op
        if op in ("add", "sub", "mul"):
            lo, hi = _range_arith(op, a, b)
            code = f"sl_mul({a.code}, {b.code})" if op == "mul" else f"({a.code} {_ARITH[op]} {b.code})"
            return self._wrap(self._assign("sl_i64", code, lo, hi), t)
        if op in ("min", "max"):
            f_ = min if op == "min" else max
            return self._assign("sl_i64", f"sl_{op}({a.code}, {b.code})", f_(a.lo, b.lo), f_(a.hi, b.hi))
        k = _literal_int(b.code)
        if op == "div":
            if k is not None:
                if k == 0:
                    return Value("0", 0, 0)
                code = f"sl_floordiv({a.code}, {k})" if k > 0 else f"(-sl_floordiv({a.code}, {-k}))"
                lo, hi = _range_div_const(a, k)
            else:
                code = f"sl_idiv({a.code}, {b.code})"
                m = max(abs(a.lo), abs(a.hi))
                lo, hi = -m, m
            return self._wrap(self._assign("sl_i64", code, lo, hi), t)
        if op == "mod":
            if k is not None:
                if k == 0:
                    return Value("0", 0, 0)
                return self._assign("sl_i64", f"sl_imod({a.code}, {abs(k)})", 0, abs(k) - 1)
            m = max(abs(b.lo), abs(b.hi))
            return self._assign("sl_i64", f"sl_imod({a.code}, {b.code})", 0, max(m - 1, 0))
        raise ValueError(op)  # pragma: no cover

    def _math(self, e: Math, f: Frame) -> Value:
        args = [self.value(a, f) for a in e.args]
        t = e.type
        if e.fn == "abs":
            a = args[0]
            if e.args[0].type.is_float:
                return self._assign(ctype(e.args[0].type), f"{'fabsf' if e.args[0].type.bits == 32 else 'fabs'}({a.code})")
            m = max(abs(a.lo), abs(a.hi))
            lo = 0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
            return self._assign("sl_i64", f"({a.code} < 0 ? -{a.code} : {a.code})", lo, m)
        fn = {"round": "rint"}.get(e.fn, e.fn)
        if e.fn in VIA_F64 and t.bits == 32:  # ir.semantics: the f64 routine, rounded once
            inner = ", ".join(f"(double){a.code}" for a in args)
            return self._assign("float", f"(float){fn}({inner})")
        suffix = "f" if t.bits == 32 else ""
        return self._assign(ctype(t), f"{fn}{suffix}({', '.join(a.code for a in args)})")


_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _const(e: Const) -> Value:
    t = e.type
    if t.is_bool:
        return Value("true" if e.value else "false", int(e.value), int(e.value))
    if t.is_float:
        v = float(e.value)
        if math.isnan(v):
            code = "(0.0 / 0.0)"
        elif math.isinf(v):
            code = "(1.0 / 0.0)" if v > 0 else "(-1.0 / 0.0)"
        else:
            code = repr(v)
        return Value(f"(({ctype(t)}){code})")
    v = int(e.value)
    code = str(v) if -(1 << 31) < v < (1 << 31) else f"{v}LL"  # plain when it fits an int (read back by _literal_int)
    return Value(code if v >= 0 else f"({code})", v, v)
