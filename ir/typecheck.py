"""Elaboration: give every node of a definition its type, inserting Halide's implicit casts.

Runs when a definition is attached to a Func (or, if it calls Funcs not yet defined, when the
Pipeline is built), so every type error is a `PipelineError` that names the Func.
"""

from __future__ import annotations

from .errors import PipelineError
from .expr import (AsFuncType, BinOp, Call, Cast, Cmp, Const, Expr, FloorDiv, Logical, Math, Not, RVar,
                   Select, Var, _ClampBound, walk)
from .func import Definition, Func
from .types import Type, f32, i32, literal_type, match_types


def try_typecheck(func: Func, index: int) -> None:
    """Typecheck definition `index` now if everything it calls already has a type; else defer."""
    if any(not d.typed for d in func.definitions[:index]):
        return
    for n in walk_definition(func.definitions[index]):
        if isinstance(n, Call) and isinstance(n.target, Func) and n.target is not func:
            if n.target.type is None:
                return
    typecheck_definition(func, index)


def typecheck_definition(func: Func, index: int) -> None:
    d = func.definitions[index]
    if d.typed:
        return
    el = _Elaborator(func)
    if index == 0:
        value = el.root(d.value, None)
        lhs = d.lhs
    else:
        ftype = func.type
        assert ftype is not None
        lhs = tuple(el.index(a, f"coordinate {k} of the update") for k, a in enumerate(d.lhs))
        value = el.root(d.value, ftype)
        if value.type != ftype:
            raise PipelineError(
                f"{func.name}: update {index} computes {value.type} but {func.name} has type {ftype}; cast the value")
    func.definitions[index] = Definition(lhs, value, d.rdom, typed=True)


def walk_definition(d: Definition):
    """Every node of a definition: its value, then its left-hand side coordinates."""
    for part in (d.value, *d.lhs):
        yield from walk(part)


def lossless(src: Type, dst: Type) -> bool:
    """Whether every value of src converts exactly to dst (Halide's lossless_cast, for types)."""
    if src == dst:
        return True
    if src.is_bool:
        return not dst.is_bool
    if dst.is_float:
        if src.is_float:
            return dst.bits >= src.bits
        return src.bits < (24 if dst.bits == 32 else 53)
    if src.is_float:
        return False
    if src.is_uint and dst.is_uint:
        return dst.bits >= src.bits
    if src.is_uint and dst.is_int:
        return dst.bits > src.bits
    if src.is_int and dst.is_int:
        return dst.bits >= src.bits
    return False


def typed_const(value, t: Type) -> Const:
    """A constant of type t, normalized exactly as every backend will hold it."""
    import numpy as np

    if t.is_bool:
        return Const(bool(value), t)
    if t.is_float:
        v = float(value)
        if t.bits == 32:
            v = float(np.float32(v))
        return Const(v, t)
    return Const(t.wrap(int(value)), t)


class _Elaborator:
    def __init__(self, func: Func):
        self.func = func

    def fail(self, msg: str):
        raise PipelineError(f"{self.func.name}: {msg}")

    # -- entry points ----------------------------------------------------------------------------

    def root(self, e: Expr, want: Type | None) -> Expr:
        t = self.expr(e)
        if _untyped(t):
            return self.literal(t, want or literal_type(t.value), e)
        return t

    def index(self, e: Expr, what: str) -> Expr:
        t = self.expr(e)
        if _untyped(t):
            return self.literal(t, i32, e)
        if t.type.is_bool or t.type.is_float:
            self.fail(f"{what} {e!r} has type {t.type}; coordinates must be integers (cast them)")
        return t if t.type == i32 else Cast(i32, t)

    # -- helpers ---------------------------------------------------------------------------------

    def literal(self, c: Const, t: Type, where: Expr) -> Const:
        if not t.can_represent(c.value):
            self.fail(f"literal {c.value} does not fit {t} in {where!r}; cast explicitly")
        return typed_const(c.value, t)

    def match(self, a: Expr, b: Expr, where: Expr, what: str) -> tuple[Expr, Expr]:
        if _untyped(a) and _untyped(b):
            return self.literal(a, i32, where), self.literal(b, i32, where)
        if _untyped(a):
            return self.literal(a, b.type, where), b
        if _untyped(b):
            return a, self.literal(b, a.type, where)
        t = match_types(a.type, b.type)
        if t is None:
            if a.type.is_bool and b.type.is_bool:
                self.fail(f"cannot {what} two bool values in {where!r}; cast them to an integer type first")
            self.fail(f"cannot {what} {a.type} and {b.type} in {where!r}; cast the bool explicitly")
        return _cast(t, a), _cast(t, b)

    # -- the recursion ---------------------------------------------------------------------------

    def expr(self, e: Expr) -> Expr:
        m = getattr(self, "_" + type(e).__name__, None)
        if m is None:
            self.fail(f"unsupported expression {e!r}")
        return m(e)

    def _Const(self, e: Const) -> Expr:
        if e.type is None:
            return e
        return typed_const(e.value, e.type)

    def _Var(self, e: Var) -> Expr:
        return e

    def _RVar(self, e: RVar) -> Expr:
        return e

    def _Cast(self, e: Cast) -> Expr:
        v = self.expr(e.value)
        if _untyped(v):
            v = self.literal(v, i32, e)
        return v if v.type == e.target else Cast(e.target, v)

    def _BinOp(self, e: BinOp) -> Expr:
        a = self.expr(e.a)
        if isinstance(e.b, _ClampBound):
            return self._clamp_side(e, a)
        b = self.expr(e.b)
        a, b = self.match(a, b, e, _VERB[e.op])
        if a.type.is_bool:
            self.fail(f"cannot {_VERB[e.op]} bool values in {e!r}; cast them to an integer type first")
        return BinOp(e.op, a, b, a.type)

    def _clamp_side(self, e: BinOp, a: Expr) -> Expr:
        bound = self.expr(e.b.value)
        if _untyped(a):
            a = self.literal(a, i32, e)
        if _untyped(bound):
            bound = self.literal(bound, a.type, e)
        elif bound.type != a.type:
            if isinstance(bound, Const) and a.type.can_represent(bound.value):
                bound = typed_const(bound.value, a.type)
            elif lossless(bound.type, a.type):
                bound = Cast(a.type, bound)
            else:
                self.fail(f"clamp of a {a.type} value by a {bound.type} bound in {e!r}; cast the bound explicitly")
        if a.type.is_bool:
            self.fail(f"cannot clamp a bool value in {e!r}")
        return BinOp(e.op, a, bound, a.type)

    def _FloorDiv(self, e: FloorDiv) -> Expr:
        a, b = self.match(self.expr(e.a), self.expr(e.b), e, "divide")
        if a.type.is_bool:
            self.fail(f"cannot divide bool values in {e!r}")
        q = BinOp("div", a, b, a.type)
        return Math("floor", (q,), a.type) if a.type.is_float else q

    def _Cmp(self, e: Cmp) -> Expr:
        a, b = self.expr(e.a), self.expr(e.b)
        if not _untyped(a) and not _untyped(b) and a.type.is_bool and b.type.is_bool:
            if e.op not in ("eq", "ne"):
                self.fail(f"cannot order bool values in {e!r}")
            return Cmp(e.op, a, b)
        a, b = self.match(a, b, e, "compare")
        return Cmp(e.op, a, b)

    def _Logical(self, e: Logical) -> Expr:
        a, b = self._bool(e.a, e), self._bool(e.b, e)
        return Logical(e.op, a, b)

    def _Not(self, e: Not) -> Expr:
        return Not(self._bool(e.a, e))

    def _bool(self, x: Expr, where: Expr) -> Expr:
        v = self.expr(x)
        if _untyped(v) or not v.type.is_bool:
            t = "an int literal" if _untyped(v) else str(v.type)
            self.fail(f"logical operators need bool operands, got {t} in {where!r}; compare it first")
        return v

    def _Select(self, e: Select) -> Expr:
        c = self.expr(e.cond)
        if _untyped(c) or not c.type.is_bool:
            self.fail(f"select condition {e.cond!r} must be bool, got {'an int literal' if _untyped(c) else c.type}")
        t, f = self.expr(e.t), self.expr(e.f)
        if _untyped(t) and _untyped(f):
            t, f = self.literal(t, i32, e), self.literal(f, i32, e)
        elif _untyped(t):
            t = self.literal(t, f.type, e)
        elif _untyped(f):
            f = self.literal(f, t.type, e)
        if t.type != f.type:
            self.fail(f"select branches have types {t.type} and {f.type} in {e!r}; cast one of them")
        return Select(c, t, f, t.type)

    def _Call(self, e: Call) -> Expr:
        target = e.target
        dims = target.dimensions
        if len(e.args) != dims:
            self.fail(f"calls {target.name} with {len(e.args)} arguments but {target.name} has {dims} dimensions")
        args = tuple(self.index(a, f"argument {k} of the call to {target.name}") for k, a in enumerate(e.args))
        if isinstance(target, Func):
            if not target.defined:
                self.fail(f"calls {target.name}, which has no definition")
            t = target.type
            if t is None:
                self.fail(f"calls {target.name} before its type is known")
        else:
            t = target.type
        return Call(target, args, t)

    def _Math(self, e: Math) -> Expr:
        args = [self.expr(a) for a in e.args]
        if e.fn == "abs":
            a = args[0]
            if _untyped(a):
                a = self.literal(a, i32, e)
            if a.type.is_bool:
                self.fail(f"abs of a bool in {e!r}")
            rt = Type("uint", a.type.bits) if a.type.is_int else a.type
            return Math("abs", (a,), rt)
        out = []
        for a in args:
            if _untyped(a):
                a = typed_const(a.value, f32)
            elif a.type.is_bool:
                self.fail(f"{e.fn} of a bool in {e!r}")
            elif not a.type.is_float:
                a = Cast(f32, a)
            out.append(a)
        if len(out) == 2 and out[0].type != out[1].type:
            t = match_types(out[0].type, out[1].type)
            out = [_cast(t, a) for a in out]
        return Math(e.fn, tuple(out), out[0].type)

    def _AsFuncType(self, e: AsFuncType) -> Expr:
        t = e.func.type
        v = self.expr(e.value)
        if _untyped(v):
            return self.literal(v, t, e.value)
        return _cast(t, v)

    def __ClampBound(self, e):  # pragma: no cover - only reachable inside min/max
        self.fail(f"misplaced clamp bound {e!r}")


_VERB = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "mod": "take the modulus of",
         "min": "take the min of", "max": "take the max of"}


def _untyped(e: Expr) -> bool:
    return isinstance(e, Const) and e.type is None


def _cast(t: Type, e: Expr) -> Expr:
    if e.type == t:
        return e
    if isinstance(e, Const):
        from .semantics import cast_scalar

        return typed_const(cast_scalar(e.value, e.type, t), t)
    return Cast(t, e)
