"""Funcs, Inputs and reduction domains: the objects a user defines a pipeline with.

A Func has one pure definition (`f[x, y] = e`) and any number of update definitions
(`f[x] += g[x + r]`, `hist[clamp(...)] += 1`), as in Halide. Each definition is checked when it is
made: structural rules here, types in `typecheck`. Errors are `PipelineError`s naming the Func.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

from .errors import PipelineError
from .expr import AsFuncType, Call, Const, Expr, RVar, Var, as_expr, walk
from .types import Type

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or keyword.iskeyword(name):
        raise PipelineError(f"{kind} name {name!r} is not a valid identifier (letters, digits, _)")
    if name.startswith("_"):
        raise PipelineError(f"{kind} name {name!r} may not start with '_' (reserved for generated code)")
    return name


class RDom:
    """A reduction domain: RDom((min0, extent0), (min1, extent1), ..., name="r").

    Its first dimension is the innermost when iterated (Halide's order). A one-dimensional RDom can
    be used directly as an expression.
    """

    def __init__(self, *ranges: tuple[int, int], name: str = "r"):
        if len(ranges) == 1 and isinstance(ranges[0], list):
            ranges = tuple(ranges[0])
        if not ranges:
            raise PipelineError("RDom needs at least one (min, extent) range")
        self.name = check_name("RDom", name)
        for i, rng in enumerate(ranges):
            if not (isinstance(rng, tuple) and len(rng) == 2 and all(isinstance(v, int) for v in rng)):
                raise PipelineError(f"RDom {name}: range {i} must be a (min, extent) pair of ints, got {rng!r}")
            if rng[1] <= 0:
                raise PipelineError(f"RDom {name}: range {i} has extent {rng[1]}; it must be positive")
        self.rvars: tuple[RVar, ...] = tuple(RVar(name, i, tuple(ranges)) for i in range(len(ranges)))

    @property
    def dimensions(self) -> int:
        return len(self.rvars)

    def __getitem__(self, i: int) -> RVar:
        return self.rvars[i]

    def __len__(self) -> int:
        return len(self.rvars)

    @property
    def x(self) -> RVar:
        return self.rvars[0]

    @property
    def y(self) -> RVar:
        return self.rvars[1]

    @property
    def z(self) -> RVar:
        return self.rvars[2]

    @property
    def w(self) -> RVar:
        return self.rvars[3]

    def as_rvar(self) -> RVar:
        if len(self.rvars) != 1:
            raise PipelineError(f"RDom {self.name} has {len(self.rvars)} dimensions; use {self.name}.x, .y, ...")
        return self.rvars[0]

    def __repr__(self) -> str:
        return f"RDom({', '.join(f'({v.min}, {v.extent})' for v in self.rvars)}, name={self.name!r})"

    # A 1-D RDom behaves as its RVar in arithmetic.
    def __add__(self, o):
        return self.as_rvar() + o

    def __radd__(self, o):
        return o + self.as_rvar()

    def __sub__(self, o):
        return self.as_rvar() - o

    def __rsub__(self, o):
        return o - self.as_rvar()

    def __mul__(self, o):
        return self.as_rvar() * o

    def __rmul__(self, o):
        return o * self.as_rvar()


class Input:
    """A typed n-dimensional input buffer; its required region is inferred from the pipeline."""

    def __init__(self, name: str, type: Type, dimensions: int):
        self.name = check_name("Input", name)
        if not isinstance(type, Type):
            raise PipelineError(f"Input {name}: type must be an ir type such as f32, got {type!r}")
        if not isinstance(dimensions, int) or dimensions < 1:
            raise PipelineError(f"Input {name}: dimensions must be a positive int, got {dimensions!r}")
        self.type = type
        self.dimensions = dimensions

    def __getitem__(self, args) -> Call:
        return Call(self, _as_args(args))

    def __repr__(self) -> str:
        return f"Input({self.name!r}, {self.type}, {self.dimensions})"


@dataclass
class Definition:
    """One definition of a Func: `lhs` are the stored coordinates, `value` the computed value.

    For the pure definition lhs is the Func's Vars; for updates lhs may hold RVars and expressions.
    `value` is typed once the definition is elaborated (see typecheck).
    """

    lhs: tuple[Expr, ...]
    value: Expr
    rdom: tuple[RVar, ...] = ()  # the RVars of the update's reduction domain, in RDom order
    typed: bool = False


@dataclass(eq=False)
class Func:
    """A pure function of integer coordinates, defined once and optionally updated."""

    name: str
    definitions: list[Definition] = field(default_factory=list, repr=False)

    def __post_init__(self):
        check_name("Func", self.name)

    def __hash__(self):
        return id(self)

    @property
    def defined(self) -> bool:
        return bool(self.definitions)

    @property
    def args(self) -> tuple[str, ...]:
        """Names of the pure Vars, in dimension order."""
        if not self.definitions:
            return ()
        return tuple(v.name for v in self.definitions[0].lhs)  # type: ignore[attr-defined]

    @property
    def dimensions(self) -> int:
        return len(self.definitions[0].lhs) if self.definitions else 0

    @property
    def type(self) -> Type | None:
        if not self.definitions or not self.definitions[0].typed:
            return None
        return self.definitions[0].value.type

    @property
    def updates(self) -> list[Definition]:
        return self.definitions[1:]

    def __getitem__(self, args) -> Call:
        return Call(self, _as_args(args))

    def __setitem__(self, args, value) -> None:
        lhs = _as_args(args)
        value = as_expr(value)
        if not self.definitions:
            self._define_pure(lhs, value)
        else:
            self._define_update(lhs, value)
        from .typecheck import try_typecheck

        try_typecheck(self, len(self.definitions) - 1)

    # -- definition rules -------------------------------------------------------------------------

    def _define_pure(self, lhs: tuple[Expr, ...], value: Expr) -> None:
        names = []
        for a in lhs:
            if not isinstance(a, Var):
                raise PipelineError(
                    f"{self.name}: the pure definition's arguments must be Vars, got {a!r} "
                    "(write an update definition to store at computed coordinates)")
            names.append(a.name)
        if len(set(names)) != len(names):
            raise PipelineError(f"{self.name}: pure definition repeats a Var among its arguments {tuple(names)}")
        for n in walk(value):
            if isinstance(n, RVar):
                raise PipelineError(
                    f"{self.name}: pure definition uses RVar {n.name}; reductions need an update definition "
                    f"({self.name}[...] += ...)")
            if isinstance(n, Var) and n.name not in names:
                raise PipelineError(
                    f"{self.name}: Var {n.name} is used on the right-hand side but is not an argument of "
                    f"{self.name}{tuple(names)}")
            if isinstance(n, Call) and n.target is self:
                raise PipelineError(f"{self.name}: the pure definition calls {self.name} itself (a cycle)")
            if isinstance(n, AsFuncType):
                raise PipelineError(f"{self.name}: compound assignment (+=, ...) needs a pure definition first")
        self.definitions.append(Definition(lhs, value))

    def _define_update(self, lhs: tuple[Expr, ...], value: Expr) -> None:
        pure = self.args
        if len(lhs) != len(pure):
            raise PipelineError(
                f"{self.name}: update stores at {len(lhs)} coordinates but {self.name} has {len(pure)} dimensions")
        pure_here = set()
        for d, a in enumerate(lhs):
            if isinstance(a, Var):
                if a.name != pure[d]:
                    raise PipelineError(
                        f"{self.name}: in an update, pure Var {a.name} must stay in its own position "
                        f"(dimension {d} is {pure[d]})")
                pure_here.add(a.name)
        rvars: dict[str, RVar] = {}
        for part in (*lhs, value):
            for n in walk(part):
                if isinstance(n, RVar):
                    rvars[n.name] = n
                elif isinstance(n, Var) and n.name not in pure_here:
                    raise PipelineError(
                        f"{self.name}: Var {n.name} is used in an update but is not stored at its own position "
                        "on the left-hand side, so nothing iterates it; use an RDom")
        if len({(r.rdom, r.ranges) for r in rvars.values()}) > 1:
            raise PipelineError(f"{self.name}: an update may use RVars of one RDom only")
        for n in walk(value):
            if isinstance(n, Call) and n.target is self:
                self._check_self_call(n, lhs)
        rdom_vars: tuple[RVar, ...] = ()
        if rvars:
            # every dimension of the RDom is iterated, used or not (Halide semantics)
            some = next(iter(rvars.values()))
            rdom_vars = tuple(RVar(some.rdom, i, some.ranges) for i in range(len(some.ranges)))
        self.definitions.append(Definition(lhs, value, rdom_vars))

    def _check_self_call(self, call: Call, lhs: tuple[Expr, ...]) -> None:
        if len(call.args) != len(lhs):
            raise PipelineError(
                f"{self.name}: calls itself with {len(call.args)} arguments but has {len(lhs)} dimensions")
        for d, (a, l) in enumerate(zip(call.args, lhs)):
            if isinstance(l, Var) and not (isinstance(a, Var) and a.name == l.name):
                raise PipelineError(
                    f"{self.name}: an update may read {self.name} only at its own pure coordinate {l.name} in "
                    f"dimension {d}, got {a!r}")

    def __repr__(self) -> str:
        return f"Func({self.name!r})"


def _as_args(args) -> tuple[Expr, ...]:
    if not isinstance(args, tuple):
        args = (args,)
    out = []
    for a in args:
        e = as_expr(a)
        if isinstance(e, Const) and not isinstance(e.value, int):
            raise PipelineError(f"coordinate {a!r} is not an integer")
        out.append(e)
    return tuple(out)
