"""Expression nodes of the DSL and the operators that build them.

Operators build *untyped* trees: a Python int stays a literal until its context gives it a type. Types
are assigned, and Halide's coercions inserted, when a definition is attached to a Func (`typecheck`),
so a type error can name the Func it occurs in. Nodes are immutable; `==` on an Expr builds a
comparison (as in Halide), so structural identity uses `key()` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from .types import Type, f32, i32

if TYPE_CHECKING:
    from .func import RDom

ARITH_OPS = ("add", "sub", "mul", "div", "mod", "min", "max")
CMP_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
LOGIC_OPS = ("and", "or")
MATH_FUNCS = ("exp", "log", "sqrt", "sin", "cos", "tanh", "pow", "floor", "ceil", "round", "abs")


class Expr:
    """Base of expression nodes; carries Python operator overloading."""

    __slots__ = ()
    type: Type | None

    def __add__(self, o):
        return BinOp("add", self, as_expr(o))

    def __radd__(self, o):
        return BinOp("add", as_expr(o), self)

    def __sub__(self, o):
        return BinOp("sub", self, as_expr(o))

    def __rsub__(self, o):
        return BinOp("sub", as_expr(o), self)

    def __mul__(self, o):
        return BinOp("mul", self, as_expr(o))

    def __rmul__(self, o):
        return BinOp("mul", as_expr(o), self)

    def __truediv__(self, o):
        return BinOp("div", self, as_expr(o))

    def __rtruediv__(self, o):
        return BinOp("div", as_expr(o), self)

    def __floordiv__(self, o):
        return FloorDiv(self, as_expr(o))

    def __rfloordiv__(self, o):
        return FloorDiv(as_expr(o), self)

    def __mod__(self, o):
        return BinOp("mod", self, as_expr(o))

    def __rmod__(self, o):
        return BinOp("mod", as_expr(o), self)

    def __pow__(self, o):
        return Math("pow", (self, as_expr(o)))

    def __rpow__(self, o):
        return Math("pow", (as_expr(o), self))

    def __neg__(self):
        return BinOp("sub", Const(0), self)

    def __pos__(self):
        return self

    def __abs__(self):
        return Math("abs", (self,))

    def __lt__(self, o):
        return Cmp("lt", self, as_expr(o))

    def __le__(self, o):
        return Cmp("le", self, as_expr(o))

    def __gt__(self, o):
        return Cmp("gt", self, as_expr(o))

    def __ge__(self, o):
        return Cmp("ge", self, as_expr(o))

    def __eq__(self, o):  # type: ignore[override]
        return Cmp("eq", self, as_expr(o))

    def __ne__(self, o):  # type: ignore[override]
        return Cmp("ne", self, as_expr(o))

    def __and__(self, o):
        return Logical("and", self, as_expr(o))

    def __rand__(self, o):
        return Logical("and", as_expr(o), self)

    def __or__(self, o):
        return Logical("or", self, as_expr(o))

    def __ror__(self, o):
        return Logical("or", as_expr(o), self)

    def __invert__(self):
        return Not(self)

    def __bool__(self):
        raise TypeError("an Expr has no truth value at definition time; use select(cond, a, b)")

    __hash__ = object.__hash__

    def key(self) -> tuple:
        """Structural identity, usable as a dict key (== builds a comparison node)."""
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        return ()

    def __repr__(self) -> str:
        from .printer import expr_to_str

        return expr_to_str(self)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Const(Expr):
    """A constant. type None marks a Python int literal that takes its type from context."""

    value: int | float | bool
    type: Type | None = None

    def key(self):
        return ("const", self.value, self.type)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Var(Expr):
    """A pure dimension of a Func (Halide's Var); identified by name."""

    name: str

    @property
    def type(self) -> Type:
        return i32

    def key(self):
        return ("var", self.name)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class RVar(Expr):
    """One dimension of a reduction domain; iterates serially from min over extent."""

    rdom: str
    index: int
    ranges: tuple[tuple[int, int], ...]  # (min, extent) of every dimension of the RDom

    @property
    def name(self) -> str:
        return f"{self.rdom}_{'xyzw'[self.index] if self.index < 4 else self.index}"

    @property
    def min(self) -> int:
        return self.ranges[self.index][0]

    @property
    def extent(self) -> int:
        return self.ranges[self.index][1]

    @property
    def type(self) -> Type:
        return i32

    def key(self):
        return ("rvar", self.rdom, self.index, self.ranges)


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Cast(Expr):
    target: Type
    value: Expr

    @property
    def type(self) -> Type:
        return self.target

    def children(self):
        return (self.value,)

    def key(self):
        return ("cast", self.target, self.value.key())


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class BinOp(Expr):
    op: str  # one of ARITH_OPS
    a: Expr
    b: Expr
    type: Type | None = None

    def children(self):
        return (self.a, self.b)

    def key(self):
        return (self.op, self.type, self.a.key(), self.b.key())


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class FloorDiv(Expr):
    """Python's `//`: integer division for ints (Halide's, rounding by the sign of the divisor);
    floor(a / b) for floats. Exists only before typechecking."""

    a: Expr
    b: Expr
    type: Type | None = None

    def children(self):
        return (self.a, self.b)

    def key(self):
        return ("floordiv", self.a.key(), self.b.key())


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Cmp(Expr):
    op: str  # one of CMP_OPS
    a: Expr
    b: Expr

    @property
    def type(self) -> Type:
        from .types import bool_

        return bool_

    def children(self):
        return (self.a, self.b)

    def key(self):
        return (self.op, self.a.key(), self.b.key())


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Logical(Expr):
    op: str  # "and" | "or"
    a: Expr
    b: Expr

    @property
    def type(self) -> Type:
        from .types import bool_

        return bool_

    def children(self):
        return (self.a, self.b)

    def key(self):
        return (self.op, self.a.key(), self.b.key())


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Not(Expr):
    a: Expr

    @property
    def type(self) -> Type:
        from .types import bool_

        return bool_

    def children(self):
        return (self.a,)

    def key(self):
        return ("not", self.a.key())


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Select(Expr):
    cond: Expr
    t: Expr
    f: Expr
    type: Type | None = None

    def children(self):
        return (self.cond, self.t, self.f)

    def key(self):
        return ("select", self.type, self.cond.key(), self.t.key(), self.f.key())


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Call(Expr):
    """A load from a Func or an Input at the given coordinates."""

    target: Any  # Func | Input
    args: tuple[Expr, ...]
    type: Type | None = None

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def is_input(self) -> bool:
        from .func import Input

        return isinstance(self.target, Input)

    def children(self):
        return self.args

    def key(self):
        return ("call", self.target.name, tuple(a.key() for a in self.args))

    # Compound assignment (`f[x] += e`) casts e to the Func's type, as Halide's FuncRef does.
    def __iadd__(self, o):
        return BinOp("add", self, AsFuncType(self.target, as_expr(o)))

    def __isub__(self, o):
        return BinOp("sub", self, AsFuncType(self.target, as_expr(o)))

    def __imul__(self, o):
        return BinOp("mul", self, AsFuncType(self.target, as_expr(o)))

    def __itruediv__(self, o):
        return BinOp("div", self, AsFuncType(self.target, as_expr(o)))


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class Math(Expr):
    """A math intrinsic; integer arguments are converted to f32 (Halide), abs keeps integers."""

    fn: str  # one of MATH_FUNCS
    args: tuple[Expr, ...]
    type: Type | None = None

    def children(self):
        return self.args

    def key(self):
        return ("math", self.fn, self.type, tuple(a.key() for a in self.args))


@dataclass(frozen=True, eq=False, repr=False, slots=True)
class AsFuncType(Expr):
    """Placeholder from compound assignment: cast `value` to the type of Func `func`."""

    func: Any
    value: Expr
    type: Type | None = None

    def children(self):
        return (self.value,)

    def key(self):
        return ("asfunctype", self.func.name, self.value.key())


ExprLike = Union[Expr, int, float, bool, "RDom"]


def as_expr(v: Any) -> Expr:
    """Convert a Python number, an Expr or a one-dimensional RDom to an Expr."""
    from .func import RDom

    if isinstance(v, Expr):
        return v
    if isinstance(v, bool):
        from .types import bool_

        return Const(v, bool_)
    if isinstance(v, int):
        return Const(v)
    if isinstance(v, float):
        return Const(float(_round_f32(v)), f32)
    if isinstance(v, RDom):
        return v.as_rvar()
    try:
        import numpy as np

        if isinstance(v, np.generic):
            from .types import type_of_dtype

            t = type_of_dtype(v.dtype)
            return Const(v.item(), t)
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"cannot use {type(v).__name__} {v!r} in an expression")


def _round_f32(v: float) -> float:
    import numpy as np

    return float(np.float32(v))


# ----------------------------------------------------------------------------------------------
# Constructors (Halide's free functions)


def cast(t: Type, e: ExprLike) -> Expr:
    return Cast(t, as_expr(e))


def select(cond: ExprLike, t: ExprLike, f: ExprLike, *more: ExprLike) -> Expr:
    """select(c, a, b), or the multi-way select(c1, v1, c2, v2, ..., default)."""
    if more:  # here f is the second condition: (c1, v1, c2, v2, ..., default)
        if len(more) % 2 != 0:
            raise TypeError("multi-way select takes (cond, value) pairs and a final default")
        return Select(as_expr(cond), as_expr(t), select(f, *more))
    return Select(as_expr(cond), as_expr(t), as_expr(f))


def min(a: ExprLike, b: ExprLike, *more: ExprLike) -> Expr:  # noqa: A001 - Halide's name
    r = BinOp("min", as_expr(a), as_expr(b))
    for m in more:
        r = BinOp("min", r, as_expr(m))
    return r


def max(a: ExprLike, b: ExprLike, *more: ExprLike) -> Expr:  # noqa: A001 - Halide's name
    r = BinOp("max", as_expr(a), as_expr(b))
    for m in more:
        r = BinOp("max", r, as_expr(m))
    return r


def clamp(e: ExprLike, lo: ExprLike, hi: ExprLike) -> Expr:
    """max(min(e, hi), lo), with the bounds converted losslessly to e's type (checked later)."""
    return BinOp("max", BinOp("min", as_expr(e), _ClampBound(as_expr(hi))), _ClampBound(as_expr(lo)))


class _ClampBound(Expr):
    """Marks a clamp bound, which must convert to the clamped value's type without loss."""

    __slots__ = ("value",)

    def __init__(self, value: Expr):
        self.value = value

    @property
    def type(self):
        return None

    def children(self):
        return (self.value,)

    def key(self):
        return ("clampbound", self.value.key())


def _math(fn: str, *args: ExprLike) -> Expr:
    return Math(fn, tuple(as_expr(a) for a in args))


def exp(e):
    return _math("exp", e)


def log(e):
    return _math("log", e)


def sqrt(e):
    return _math("sqrt", e)


def sin(e):
    return _math("sin", e)


def cos(e):
    return _math("cos", e)


def tanh(e):
    return _math("tanh", e)


def pow(a, b):  # noqa: A001 - Halide's name
    return _math("pow", a, b)


def floor(e):
    return _math("floor", e)


def ceil(e):
    return _math("ceil", e)


def round(e):  # noqa: A001 - Halide's name; rounds half to even
    return _math("round", e)


def abs(e):  # noqa: A001 - Halide's name; signed ints give the unsigned type of the same width
    return _math("abs", e)


def walk(e: Expr):
    """Pre-order traversal."""
    stack = [e]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children()))
