"""Bounds relations: the region of a producer a stage reads, as a function of the stage's loop boxes.

Most accesses are affine in the loop variables, possibly under a floor division by a constant (down-
and upsampling) and a clamp to constant bounds (boundary conditions); the accesses of one stage to one
producer usually share their linear part and differ only in constant offsets (the taps of a stencil).
For each producer dimension such a group is summarized once, when the FunctionDAG is built, as

    clamp(floor((sum_j c_j * v_j + k) / q), a, b)   for k in [kmin, kmax]

so that the region needed for a box of loop coordinates is one affine evaluation at the box's
corners, whatever the number of taps. Anything else falls back to interval evaluation of each access.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from .bounds import Env, interval
from .cython_pure import set_frozen_fields
from .expr import BinOp, Cast, Const, Expr, RVar, Var, walk
from .symbolic import FloorDiv, Lin, Sym, floordiv, lmax, lmin
from .types import i32


@dataclass(frozen=True, slots=True)
class AffineDim:
    coefs: tuple[tuple[str, int], ...]  # (loop variable, coefficient)
    kmin: int
    kmax: int
    q: int = 1  # floor division
    lo: int | None = None  # clamp bounds
    hi: int | None = None

    def apply(self, env: Env) -> tuple[Lin, Lin]:
        lo_sum = hi_sum = None
        for v, c in self.coefs:
            vlo, vhi = env[v]
            a, b = (vlo * c, vhi * c) if c > 0 else (vhi * c, vlo * c)
            lo_sum = a if lo_sum is None else lo_sum + a
            hi_sum = b if hi_sum is None else hi_sum + b
        lo = (lo_sum + self.kmin) if lo_sum is not None else Lin((), self.kmin)
        hi = (hi_sum + self.kmax) if hi_sum is not None else Lin((), self.kmax)
        if self.q > 1:
            lo, hi = floordiv(lo, self.q), floordiv(hi, self.q)
        if self.hi is not None:
            lo, hi = lmin(lo, Lin((), self.hi)), lmin(hi, Lin((), self.hi))
        if self.lo is not None:
            lo, hi = lmax(lo, Lin((), self.lo)), lmax(hi, Lin((), self.lo))
        return lo, hi


@dataclass(frozen=True, slots=True)
class Relation:
    """How one stage reads one producer: per producer dimension an AffineDim, or None to evaluate the
    raw access arguments (kept in `args`) with interval arithmetic."""

    dims: tuple[AffineDim | None, ...]
    args: tuple[tuple[Expr, ...], ...]  # the arguments of every access, for the fallback
    # the loop variables the intervals depend on: those of the AffineDims, and every variable of a fallback dimension
    loop_vars: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        names: dict[str, None] = {}
        for d, rel in enumerate(self.dims):
            if rel is not None:
                for v, _ in rel.coefs:
                    names[v] = None
                continue
            for args in self.args:
                for e in walk(args[d]):
                    if isinstance(e, (Var, RVar)):
                        names[e.name] = None
        object.__setattr__(self, "loop_vars", tuple(names))

    def __getstate__(self) -> dict:
        """The fields by name: the form a Relation pickled in before it had slots, so __setstate__ reads one form."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict) -> None:
        set_frozen_fields(self, tuple(state), tuple(state.values()))
        if "loop_vars" not in state:  # pickled before the field existed
            self.__post_init__()

    def apply(self, env: Env) -> list[tuple[Lin | None, Lin | None]]:
        """Per producer dimension, the interval read over the loop boxes `env`, memoized by the boxes of the loop
        variables it depends on (search asks the same boxes of every candidate that leaves a stage's loops as
        they were; a box of another loop of the stage changes nothing here)."""
        key = (id(self), tuple([env[v] for v in self.loop_vars]))
        hit = _APPLIED.get(key)
        if hit is not None and hit[0] is self:
            return list(hit[1])
        out = self._apply(env)
        if len(_APPLIED) > 100_000:
            _APPLIED.clear()
        _APPLIED[key] = (self, tuple(out))
        return out

    def _apply(self, env: Env) -> list[tuple[Lin | None, Lin | None]]:
        out: list = []
        for d, rel in enumerate(self.dims):
            if rel is not None:
                out.append(rel.apply(env))
                continue
            box = None
            for args in self.args:
                lo, hi = interval(args[d], env)
                if box is None:
                    box = (lo, hi)
                else:
                    box = (None if box[0] is None or lo is None else lmin(box[0], lo),
                           None if box[1] is None or hi is None else lmax(box[1], hi))
            out.append(box)
        return out


_APPLIED: dict = {}  # (relation id, env) -> (relation, intervals); the relation is kept to pin its id


def build_relation(args_list: list[tuple[Expr, ...]], loop_vars: list[str]) -> Relation:
    ndim = len(args_list[0])
    dims = []
    for d in range(ndim):
        parts = [_affine(args[d], loop_vars) for args in args_list]
        dims.append(_merge(parts))
    return Relation(tuple(dims), tuple(args_list))


def _merge(parts: list) -> AffineDim | None:
    if any(p is None for p in parts):
        return None
    coefs, q, lo, hi = parts[0][0], parts[0][2], parts[0][3], parts[0][4]
    if any((p[0], p[2], p[3], p[4]) != (coefs, q, lo, hi) for p in parts):
        return None
    ks = [p[1] for p in parts]
    return AffineDim(coefs, min(ks), max(ks), q, lo, hi)


def _affine(e: Expr, loop_vars: list[str]):
    """(coefs, k, q, lo, hi) if e is clamp(floor((sum c v + k) / q), lo, hi) over the loop variables."""
    lo = hi = None
    e = _strip_index_cast(e)
    if isinstance(e, BinOp) and e.op == "max" and _const(e.b) is not None:
        inner = _strip_index_cast(e.a)
        if isinstance(inner, BinOp) and inner.op == "min" and _const(inner.b) is not None:
            lo, hi, e = _const(e.b), _const(inner.b), _strip_index_cast(inner.a)
    q = 1
    if isinstance(e, BinOp) and e.op == "div" and (_const(e.b) or 0) > 1:
        q, e = _const(e.b), _strip_index_cast(e.a)
    # loop coordinates are far below 2^20; an index that could leave i32 over that range falls back
    env = {v: (Lin(((Sym(v, -(1 << 20), 1 << 20), 1),), 0),) * 2 for v in loop_vars}
    try:
        a, b = interval(e, env)
    except (KeyError, TypeError):
        return None
    if a is None or a != b:
        return None
    if q == 1 and len(a.terms) == 1 and isinstance(a.terms[0][0], FloorDiv) and a.terms[0][1] == 1:
        fd = a.terms[0][0]  # floor((A + r) / q) + m == floor((A + r + m q) / q)
        q, a = fd.q, fd.num + a.const * fd.q
    if any(not isinstance(atom, Sym) for atom, _ in a.terms):
        return None
    coefs = tuple(sorted((atom.name, c) for atom, c in a.terms))
    return coefs, a.const, q, lo, hi


def _strip_index_cast(e: Expr) -> Expr:
    """Widening integer casts to i32 change no value."""
    while isinstance(e, Cast) and e.target == i32 and e.value.type is not None and e.value.type.is_integer \
            and e.value.type.bits < 32:
        e = e.value
    return e


def _const(e: Expr) -> int | None:
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


__all__ = ["Relation", "AffineDim", "build_relation", "Var", "RVar"]
