"""The exact meaning of every operation, on numpy arrays: the reference the interpreter evaluates
and every backend must reproduce.

Halide's rules: integer arithmetic wraps in its type; integer `/` rounds by the sign of the divisor
(floor for positive divisors) and `%` is Euclidean (never negative); division or modulus by zero is 0;
int->int casts wrap; float `%` is a - b*floor(a/b); min(a, b) is `b < a ? b : a`.
Where Halide leaves behaviour undefined schedlab pins it so all backends agree: a float->int cast
truncates toward zero and saturates to the target range, with NaN -> 0. Transcendental functions
(exp, log, sin, cos, tanh, pow) are the C library's, as LLVM calls them from compiled code; here they
run through numba so that reference and kernels use the very same routines. On f32, exp, log and pow are
the f64 routines rounded once to f32 (`VIA_F64`): Halide cannot call the C library's f32 versions (its own
are polynomials an ulp or two off), and any backend can compute in f64, so every backend agrees bit for bit.
"""

from __future__ import annotations

import functools

import numpy as np

from .types import Type

_I64 = np.int64


def cast(v: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    if src == dst:
        return v
    if dst.is_bool:
        return np.asarray(v != 0)
    if src.is_bool or (not src.is_float and not dst.is_float):
        return np.asarray(v).astype(_I64).astype(dst.dtype)
    if not src.is_float:  # int -> float
        return np.asarray(v).astype(dst.dtype)
    if dst.is_float:  # float -> float
        return np.asarray(v).astype(dst.dtype)
    x = np.asarray(v, dtype=np.float64)  # float -> int: truncate, saturate, NaN -> 0
    x = np.where(np.isnan(x), 0.0, x)
    x = np.clip(np.trunc(x), float(dst.min), float(dst.max))
    return x.astype(dst.dtype)


def cast_scalar(value, src: Type, dst: Type):
    r = cast(np.asarray(value, dtype=src.dtype), src, dst)
    return r.item()


def arith(op: str, a: np.ndarray, b: np.ndarray, t: Type) -> np.ndarray:
    if t.is_float:
        return _float_arith(op, a, b, t)
    if op == "min":
        return np.where(b < a, b, a)
    if op == "max":
        return np.where(b > a, b, a)
    x, y = np.asarray(a).astype(_I64), np.asarray(b).astype(_I64)
    if op == "add":
        r = x + y
    elif op == "sub":
        r = x - y
    elif op == "mul":
        with np.errstate(over="ignore"):
            r = x * y  # exact in the low 32 bits even if the int64 product wraps
    elif op == "div":
        r = int_div(x, y)
    elif op == "mod":
        r = int_mod(x, y)
    else:  # pragma: no cover
        raise ValueError(op)
    return r.astype(t.dtype)


def int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Halide division on int64 values: floor for y > 0, ceiling for y < 0, 0 for y == 0."""
    safe = np.where(y == 0, 1, y)
    q = np.where(safe > 0, x // safe, -(x // -safe))
    return np.where(y == 0, 0, q)


def int_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Euclidean modulus on int64 values: in [0, |y|), and 0 for y == 0."""
    safe = np.abs(np.where(y == 0, 1, y))
    return np.where(y == 0, 0, np.mod(x, safe))


def _float_arith(op: str, a, b, t: Type):
    a = np.asarray(a, dtype=t.dtype)
    b = np.asarray(b, dtype=t.dtype)
    with np.errstate(all="ignore"):
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "div":
            return a / b
        if op == "mod":
            return a - b * np.floor(a / b)
        if op == "min":
            return np.where(b < a, b, a)
        if op == "max":
            return np.where(b > a, b, a)
    raise ValueError(op)  # pragma: no cover


def compare(op: str, a, b) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                "gt": np.greater, "ge": np.greater_equal}[op](a, b)


def math_fn(fn: str, args: list[np.ndarray], t: Type, arg_type: Type) -> np.ndarray:
    if fn == "abs":
        a = args[0]
        if arg_type.is_float:
            return np.abs(a)
        return np.abs(np.asarray(a).astype(_I64)).astype(t.dtype)
    with np.errstate(all="ignore"):
        if fn == "sqrt":
            return np.sqrt(args[0])
        if fn == "floor":
            return np.floor(args[0])
        if fn == "ceil":
            return np.ceil(args[0])
        if fn == "round":
            return np.rint(args[0])
        if fn in VIA_F64 and t.bits == 32:  # the C library's f64 routine, rounded once to f32
            return libm_ufunc(fn, 64)(*[np.asarray(a, dtype=np.float64) for a in args]).astype(np.float32)
        return libm_ufunc(fn, t.bits)(*[np.asarray(a, dtype=t.dtype) for a in args])


VIA_F64 = frozenset({"exp", "log", "pow"})  # f32 calls computed in f64 and rounded once, on every backend


@functools.cache
def libm_ufunc(fn: str, bits: int):
    """A numpy ufunc over the exact C-library routine compiled kernels call for `fn`."""
    from numba import vectorize

    ty = "float32" if bits == 32 else "float64"
    if fn == "pow":
        return vectorize([f"{ty}({ty}, {ty})"])(_pow)
    return vectorize([f"{ty}({ty})"])(_UNARY[fn])


def _pow(a, b):
    return np.power(a, b)


def _exp(a):
    return np.exp(a)


def _log(a):
    return np.log(a)


def _sin(a):
    return np.sin(a)


def _cos(a):
    return np.cos(a)


def _tanh(a):
    return np.tanh(a)


_UNARY = {"exp": _exp, "log": _log, "sin": _sin, "cos": _cos, "tanh": _tanh}
