"""Interval bounds of typed expressions over a box of loop variables (Halide's bounds inference).

`interval(e, env)` maps each variable to an interval of symbolic forms (see `symbolic`) and returns
the interval e can take, exact for the affine index expressions of stencils, resampling and
transposes, and a sound over-approximation otherwise (static ranges for products of variables,
data-dependent values and anything computed in floating point). An end that cannot be bounded at all
is None: the caller reports an unbounded access.
"""

from __future__ import annotations

import math
from typing import Optional

from .expr import BinOp, Call, Cast, Cmp, Const, Expr, Logical, Math, Not, RVar, Select, Var
from .symbolic import INF, Lin, const, halide_div, lmax, lmin
from .types import Type

Bound = Optional[Lin]
Interval = tuple[Bound, Bound]
Env = dict[str, tuple[Lin, Lin]]

# Values of these types are too wide to index with: an access through them is unbounded.
_INDEXABLE_BITS = 16


def interval(e: Expr, env: Env) -> Interval:
    """Bounds of an integer (or bool) valued expression."""
    t = e.type
    if t is not None and t.is_float:
        raise TypeError("interval() of a float expression; use float_range")
    return _int(e, env)


def _int(e: Expr, env: Env) -> Interval:
    if isinstance(e, Const):
        v = int(e.value)
        return const(v), const(v)
    if isinstance(e, (Var, RVar)):
        return env[e.name]
    if isinstance(e, Cast):
        return _cast(e, env)
    if isinstance(e, BinOp):
        return _binop(e, env)
    if isinstance(e, (Cmp, Logical, Not)):
        return const(0), const(1)
    if isinstance(e, Select):
        lt, ht = _int(e.t, env)
        lf, hf = _int(e.f, env)
        return _min(lt, lf), _max(ht, hf)
    if isinstance(e, Call):
        return _type_range(e.type)
    if isinstance(e, Math):
        if e.fn == "abs" and not e.args[0].type.is_float:
            lo, hi = _int(e.args[0], env)
            if lo is None or hi is None:
                return const(0), _type_range(e.type)[1]
            rlo, rhi = lo.range()[0], hi.range()[1]
            m = max(abs(rlo), abs(rhi))
            return const(0), (const(m) if m != INF else None)
        return _type_range(e.type)
    raise TypeError(f"no bounds for {e!r}")  # pragma: no cover


def _type_range(t: Type) -> Interval:
    if t.is_bool:
        return const(0), const(1)
    if t.is_integer and t.bits <= _INDEXABLE_BITS:
        return const(int(t.min)), const(int(t.max))
    return None, None


def _static(b: Bound, end: int) -> float:
    if b is None:
        return -INF if end == 0 else INF
    return b.range()[end]


def _fits(iv: Interval, t: Type) -> bool:
    return _static(iv[0], 0) >= t.min and _static(iv[1], 1) <= t.max


def _cast(e: Cast, env: Env) -> Interval:
    src, dst = e.value.type, e.target
    if dst.is_bool:
        return const(0), const(1)
    if src.is_float:
        lo, hi = float_range(e.value, env)
        return _from_float(lo, hi, dst)
    iv = _int(e.value, env)
    if _fits(iv, dst):
        return iv
    return _type_range(dst)


def _from_float(lo: float, hi: float, dst: Type) -> Interval:
    """A float->int cast truncates and saturates, and NaN gives 0."""
    if dst.bits > _INDEXABLE_BITS and (math.isinf(lo) or math.isinf(hi) or math.isnan(lo) or math.isnan(hi)):
        return None, None
    if math.isnan(lo) or math.isnan(hi):
        return const(int(dst.min)), const(int(dst.max))
    l = int(max(min(math.trunc(lo) if not math.isinf(lo) else lo, dst.max), dst.min))
    h = int(max(min(math.trunc(hi) if not math.isinf(hi) else hi, dst.max), dst.min))
    return const(min(l, 0)), const(max(h, 0))


def _min(a: Bound, b: Bound) -> Bound:
    return None if a is None or b is None else lmin(a, b)


def _max(a: Bound, b: Bound) -> Bound:
    return None if a is None or b is None else lmax(a, b)


def _binop(e: BinOp, env: Env) -> Interval:
    la, ha = _int(e.a, env)
    lb, hb = _int(e.b, env)
    op = e.op
    if op == "min":  # None is -inf as a lower end and +inf as an upper end
        return _min(la, lb), (hb if ha is None else ha if hb is None else lmin(ha, hb))
    if op == "max":
        return (lb if la is None else la if lb is None else lmax(la, lb)), _max(ha, hb)
    if op == "add":
        r = (None if la is None or lb is None else la + lb, None if ha is None or hb is None else ha + hb)
    elif op == "sub":
        r = (None if la is None or hb is None else la - hb, None if ha is None or lb is None else ha - lb)
    elif op == "mul":
        r = _mul(la, ha, lb, hb)
    elif op == "div":
        r = _div(la, ha, lb, hb)
    elif op == "mod":
        r = _mod(la, ha, lb, hb)
    else:  # pragma: no cover
        raise ValueError(op)
    return r if _fits(r, e.type) else _type_range(e.type)  # else the result may wrap around its type


def _const_of(lo: Bound, hi: Bound) -> int | None:
    if lo is not None and hi is not None and lo.is_const and hi.is_const and lo.const == hi.const:
        return lo.const
    return None


def _mul(la, ha, lb, hb) -> Interval:
    k = _const_of(lb, hb)
    if k is not None and la is not None and ha is not None:
        return (la * k, ha * k) if k >= 0 else (ha * k, la * k)
    k = _const_of(la, ha)
    if k is not None and lb is not None and hb is not None:
        return (lb * k, hb * k) if k >= 0 else (hb * k, lb * k)
    corners = [x * y for x in (_static(la, 0), _static(ha, 1)) for y in (_static(lb, 0), _static(hb, 1))
               if not (x == 0 and math.isinf(y)) and not (y == 0 and math.isinf(x))] or [0]
    return _static_interval(min(corners), max(corners))


def _div(la, ha, lb, hb) -> Interval:
    k = _const_of(lb, hb)
    if k is not None and la is not None and ha is not None:
        if k == 0:
            return const(0), const(0)
        return (halide_div(la, k), halide_div(ha, k)) if k > 0 else (halide_div(ha, k), halide_div(la, k))
    # |a / b| <= |a| for |b| >= 1, and a / 0 == 0
    m = max(abs(_static(la, 0)), abs(_static(ha, 1)))
    lo = 0 if _static(la, 0) >= 0 and _static(lb, 0) >= 0 else -m
    return _static_interval(lo, m)


def _mod(la, ha, lb, hb) -> Interval:
    k = _const_of(lb, hb)
    a = _const_of(la, ha)
    if k is not None and a is not None:
        r = 0 if k == 0 else a % abs(k)
        return const(r), const(r)
    if k is not None:
        return const(0), const(max(abs(k) - 1, 0))
    m = max(abs(_static(lb, 0)), abs(_static(hb, 1)))
    return _static_interval(0, m - 1 if m != INF else INF)


def _static_interval(lo: float, hi: float) -> Interval:
    return (None if lo == -INF else const(int(lo))), (None if hi == INF else const(int(hi)))


# -- floating point subexpressions (only through casts back to integers) --------------------------


def float_range(e: Expr, env: Env) -> tuple[float, float]:
    """Static range of a float expression (NaN ends mean 'may be NaN')."""
    if isinstance(e, Const):
        v = float(e.value)
        return v, v
    if isinstance(e, Cast):
        if e.value.type.is_float:
            return float_range(e.value, env)
        lo, hi = _int(e.value, env)
        return _static(lo, 0), _static(hi, 1)
    if isinstance(e, BinOp):
        a, b = float_range(e.a, env), float_range(e.b, env)
        return _float_binop(e.op, a, b)
    if isinstance(e, Select):
        a, b = float_range(e.t, env), float_range(e.f, env)
        return min(a[0], b[0]), max(a[1], b[1])
    if isinstance(e, Math):
        return _float_math(e, env)
    return -INF, INF  # calls and anything else


def _float_binop(op: str, a, b) -> tuple[float, float]:
    if op == "add":
        return a[0] + b[0], a[1] + b[1]
    if op == "sub":
        return a[0] - b[1], a[1] - b[0]
    if op == "mul":
        c = [x * y for x in a for y in b]
        if any(math.isnan(v) for v in c):
            return -INF, INF
        return min(c), max(c)
    if op == "min":
        return min(a[0], b[0]), min(a[1], b[1])
    if op == "max":
        return max(a[0], b[0]), max(a[1], b[1])
    if op == "div" and (b[0] > 0 or b[1] < 0):
        c = [x / y for x in a for y in b if y != 0]
        if c and not any(math.isnan(v) for v in c):
            return min(c), max(c)
    return -INF, INF


def _float_math(e: Math, env: Env) -> tuple[float, float]:
    lo, hi = float_range(e.args[0], env)
    fn = e.fn
    if fn in ("floor", "ceil", "round"):
        f = {"floor": math.floor, "ceil": math.ceil, "round": round}[fn]
        return (f(lo) if math.isfinite(lo) else lo), (f(hi) if math.isfinite(hi) else hi)
    if fn == "abs":
        m = max(abs(lo), abs(hi))
        return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), m
    if fn in ("sin", "cos"):
        return -1.0, 1.0
    if fn == "tanh":
        return -1.0, 1.0
    if fn == "exp":
        return 0.0, (math.exp(hi) if hi < 700 else INF)
    if fn == "sqrt" and lo >= 0:
        return math.sqrt(lo), (math.sqrt(hi) if math.isfinite(hi) else INF)
    return -INF, INF
