"""Symbolic integer bounds: affine combinations of runtime symbols, floor divisions and min/max.

Bounds inference describes the region a stage needs as intervals whose ends are `Lin` forms over
symbols that are only known at run time (the position of the current tile). The same forms are
  * rendered to code by the backends (the region a tile computes),
  * evaluated to numbers by the interpreter and by featurization, and
  * compared statically (`upper_diff`) to size allocations: hi - lo is bounded even when hi and lo
    are not, because the unknown parts cancel.
Every symbol carries the static range it can take, so any form also has a static range: the fallback
bound that is always sound.
"""

from __future__ import annotations

import math
from dataclasses import FrozenInstanceError
from typing import Callable, Iterable, Union

try:
    import cython
except ImportError:  # pure Python without Cython: the typing decorators do nothing
    from .cython_pure import cython
from .cython_pure import set_frozen_fields

INF = math.inf
Number = Union[int, float]  # float only for +-inf


# The atoms below are frozen values, compared and hashed by their fields, with their sort key and hash computed once
# (plain slotted classes, not dataclasses: ir/symbolic.pxd declares them as Cython extension types, which the
# compiled hot modules make in C and hash through a C field; a search makes and hashes hundreds of thousands).
# Compiled, __init__ sets the fields as struct members (read-only to Python); as Python, through object.__setattr__,
# as a frozen dataclass does (the classes refuse assignment).


class Sym:
    """A runtime integer, e.g. the first coordinate of the current tile, in [lo, hi]."""

    __slots__ = ("name", "lo", "hi", "key", "_hash")  # key: sort_key(); _hash: __hash__'s (neither part of the value)

    def __init__(self, name: str, lo: Number, hi: Number):
        if cython.compiled:
            self.name, self.lo, self.hi, self.key, self._hash = name, lo, hi, (0, name), hash((name, lo, hi))
        else:
            set_frozen_fields(self, self.__slots__, (name, lo, hi, (0, name), hash((name, lo, hi))))

    @cython.locals(o="Sym")
    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        o = other
        return self.name == o.name and self.lo == o.lo and self.hi == o.hi

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Sym(name={self.name!r}, lo={self.lo!r}, hi={self.hi!r})"

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return (Sym, (self.name, self.lo, self.hi))

    def sort_key(self):
        return self.key

    def range(self) -> tuple[Number, Number]:
        return self.lo, self.hi


class FloorDiv:
    """floor(num / q) for an integer q >= 2; num's constant is normalized into [0, q)."""

    __slots__ = ("num", "q", "key", "_hash")

    def __init__(self, num: "Lin", q: int):
        if cython.compiled:
            self.num, self.q, self.key, self._hash = num, q, (1, q, num.sort_key()), hash((num, q))
        else:
            set_frozen_fields(self, self.__slots__, (num, q, (1, q, num.sort_key()), hash((num, q))))

    @cython.locals(o="FloorDiv")
    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        o = other
        return self.num == o.num and self.q == o.q

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"FloorDiv(num={self.num!r}, q={self.q!r})"

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return (FloorDiv, (self.num, self.q))

    def sort_key(self):
        return self.key

    def range(self) -> tuple[Number, Number]:
        lo, hi = self.num.range()
        return _fdiv(lo, self.q), _fdiv(hi, self.q)


class MinMax:
    """min(args) or max(args) of two or more forms."""

    __slots__ = ("kind", "args", "key", "_hash")

    def __init__(self, kind: str, args: tuple["Lin", ...]):
        key = (2, kind, tuple([a.sort_key() for a in args]))
        if cython.compiled:
            self.kind, self.args, self.key, self._hash = kind, args, key, hash((kind, args))
        else:
            set_frozen_fields(self, self.__slots__, (kind, args, key, hash((kind, args))))

    @cython.locals(o="MinMax")
    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        o = other
        return self.kind == o.kind and self.args == o.args

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"MinMax(kind={self.kind!r}, args={self.args!r})"

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return (MinMax, (self.kind, self.args))

    def sort_key(self):
        return self.key

    def range(self) -> tuple[Number, Number]:
        rs = [a.range() for a in self.args]
        f = min if self.kind == "min" else max
        return f([r[0] for r in rs]), f([r[1] for r in rs])


Atom = Union[Sym, FloorDiv, MinMax]


class Lin:
    """const + sum(coef * atom): an affine form over atoms. A frozen value, compared and hashed by (terms, const)
    (a plain slotted class, not a dataclass: ir/symbolic.pxd declares it as a Cython extension type, which the
    compiled hot modules make and read as a C struct)."""

    __slots__ = ("terms", "const", "_hashed")  # _hashed: __hash__'s value, remembered only compiled

    def __init__(self, terms: tuple[tuple[Atom, int], ...] = (), const: int = 0):
        _fill_lin(self, terms, const)

    # type(x) and a typed `o`: compiled, C reads of both forms' fields (`__class__` and an untyped operand's fields
    # are attribute look-ups; a search compares ~100 k forms)
    @cython.locals(o="Lin")
    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        o = other
        return self.terms == o.terms and self.const == o.const

    @cython.locals(o="Lin")
    def __ne__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        o = other
        return self.terms != o.terms or self.const != o.const

    @cython.locals(h=cython.Py_hash_t)
    def __hash__(self) -> int:
        """Remembered once computed, compiled (a search hashes the same region forms as memo keys hundreds of
        thousands of times); as Python, computed on every call (the `_hashed` slot stays unset)."""
        if cython.compiled:
            h = self._hashed  # a C integer, 0 until computed (a form whose hash is 0 computes it each time)
            if h == 0:
                h = self._hashed = hash((self.terms, self.const))
            return h
        return hash((self.terms, self.const))

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return (Lin, (self.terms, self.const))

    # -- construction ----------------------------------------------------------------------------

    @staticmethod
    def of(v: "LinLike") -> "Lin":
        if isinstance(v, Lin):
            return v
        if isinstance(v, (Sym, FloorDiv, MinMax)):
            return Lin(((v, 1),), 0)
        if isinstance(v, int):
            return const(v)
        raise TypeError(f"not a symbolic integer: {v!r}")

    @staticmethod
    def _make(coefs: dict, const: int) -> "Lin":
        terms = [(a, c) for a, c in coefs.items() if c != 0]
        if len(terms) > 1:
            terms.sort(key=_term_key)
        return Lin(tuple(terms), const)

    def sort_key(self):
        return (tuple([(a.sort_key(), c) for a, c in self.terms]), self.const)

    # -- queries ---------------------------------------------------------------------------------

    @property
    def is_const(self) -> bool:
        return not self.terms

    def range(self) -> tuple[Number, Number]:
        lo = hi = self.const
        for a, c in self.terms:
            alo, ahi = a.range()
            if c > 0:
                lo, hi = lo + c * alo, hi + c * ahi
            else:
                lo, hi = lo + c * ahi, hi + c * alo
        return lo, hi

    def evaluate(self, env: dict[str, int]) -> int:
        v = self.const
        for a, c in self.terms:
            v += c * evaluate_atom(a, env)
        return v

    def symbols(self) -> set[str]:
        out: set[str] = set()
        for a, _ in self.terms:
            out |= atom_symbols(a)
        return out

    # -- arithmetic ------------------------------------------------------------------------------

    @cython.locals(f="Lin")
    def __add__(self, o: "LinLike") -> "Lin":
        if type(o) is int:
            return Lin(self.terms, self.const + o) if o else self
        f = _as_lin(o)
        if not f.terms:
            return Lin(self.terms, self.const + f.const)
        if not self.terms:
            return Lin(f.terms, self.const + f.const)
        terms = _merged_terms(self.terms, f.terms, 1)
        if terms is not None:
            return Lin(terms, self.const + f.const)
        coefs = dict(self.terms)
        for a, c in f.terms:
            coefs[a] = coefs.get(a, 0) + c
        return Lin._make(coefs, self.const + f.const)

    def __radd__(self, o: "LinLike") -> "Lin":
        return self.__add__(o)

    def __neg__(self) -> "Lin":
        return Lin(tuple([(a, -c) for a, c in self.terms]), -self.const)

    @cython.locals(f="Lin")
    def __sub__(self, o: "LinLike") -> "Lin":
        if type(o) is int:
            return Lin(self.terms, self.const - o) if o else self
        f = _as_lin(o)
        if not f.terms:
            return Lin(self.terms, self.const - f.const)
        if not self.terms:
            return Lin(tuple([(a, -c) for a, c in f.terms]), self.const - f.const)
        terms = _merged_terms(self.terms, f.terms, -1)
        if terms is not None:
            return Lin(terms, self.const - f.const)
        coefs = dict(self.terms)
        for a, c in f.terms:
            coefs[a] = coefs.get(a, 0) - c
        return Lin._make(coefs, self.const - f.const)

    def __rsub__(self, o: "LinLike") -> "Lin":
        return Lin.of(o) - self

    def __mul__(self, k: int) -> "Lin":
        if type(k) is not int:
            if not isinstance(k, int):
                raise TypeError("Lin can only be scaled by an int")
        if k == 1:
            return self
        if k == 0:
            return Lin((), 0)
        return Lin(tuple([(a, c * k) for a, c in self.terms]), self.const * k)

    def __rmul__(self, k: int) -> "Lin":
        return self.__mul__(k)

    def __repr__(self) -> str:
        return to_code(self, lambda s: s.name)


LinLike = Union[Lin, Sym, FloorDiv, MinMax, int]


def _as_lin(v: LinLike) -> Lin:
    """`v` as a form: itself when it is one, the common case, tested before paying Lin.of's call (compiled, a C
    function: ir/symbolic.pxd)."""
    return v if type(v) is Lin else Lin.of(v)


@cython.locals(x="Lin")
def _fill_lin(x, terms, const) -> None:
    """Set the fields of a new form: as struct members when compiled (read-only to Python), through
    object.__setattr__ as Python (the class refuses assignment: a form is a frozen value)."""
    if cython.compiled:
        x.terms, x.const = terms, const
    else:
        set_frozen_fields(x, ("terms", "const"), (terms, const))


@cython.locals(i=cython.Py_ssize_t, j=cython.Py_ssize_t, na=cython.Py_ssize_t, nb=cython.Py_ssize_t, out=list)
def _merged_terms(a: tuple, b: tuple, sign: int) -> tuple | None:
    """The terms of a + sign * b, both sorted by their atoms' keys as every form's are (Lin._make sorts them; the
    other constructors keep an order or make one term): one merge, as Lin._make's dict and sort would give them.
    None where two different atoms share a key (a Sym's key is its name, its range aside): Lin._make then keeps
    their order of insertion, which the caller reproduces."""
    out = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        ta, tb = a[i], b[j]
        ka, kb = ta[0].key, tb[0].key
        if ka == kb:
            if ta[0] is not tb[0] and ta[0] != tb[0]:
                return None
            c = ta[1] + sign * tb[1]
            if c != 0:
                out.append((ta[0], c))
            i += 1
            j += 1
        elif ka < kb:
            out.append(ta)
            i += 1
        else:
            out.append(tb if sign == 1 else (tb[0], -tb[1]))
            j += 1
    while i < na:
        out.append(a[i])
        i += 1
    while j < nb:
        tb = b[j]
        out.append(tb if sign == 1 else (tb[0], -tb[1]))
        j += 1
    return tuple(out)


def _term_key(t: tuple) -> tuple:
    return t[0].key


def _lin_sort_key(x: Lin):
    return x.sort_key()


_CONSTS: dict = {}  # int -> Lin: forms are immutable, so one object per constant will do


def const(v: int) -> Lin:
    c = _CONSTS.get(v)
    if c is None:
        c = Lin((), v)
        if len(_CONSTS) < 100_000:
            _CONSTS[v] = c
    return c


def sym(name: str, lo: Number, hi: Number) -> Lin:
    return Lin(((Sym(name, lo, hi), 1),), 0)


def _fdiv(v: Number, q: int) -> Number:
    if v in (INF, -INF):
        return v
    return v // q


def floordiv(x: LinLike, q: int) -> Lin:
    """floor(x / q) for a positive int q."""
    x = Lin.of(x)
    if q <= 0:
        raise ValueError("floordiv by a non-positive constant")
    if q == 1:
        return x
    if not x.terms:
        return const(x.const // q)
    whole: dict = {}
    rest: dict = {}
    for a, c in x.terms:
        if c % q == 0:
            whole[a] = c // q
        else:
            rest[a] = c
    m, r = divmod(x.const, q)
    base = Lin._make(whole, m)
    if not rest:
        return base  # floor((q*A + c)/q) = A + floor(c/q)
    return base + Lin(((FloorDiv(Lin._make(rest, r), q), 1),), 0)


def halide_div(x: LinLike, k: int) -> Lin:
    """Halide's x / k for a constant k: floor for k > 0, ceiling (= -floor(x / -k)) for k < 0, 0 for 0."""
    if k == 0:
        return const(0)
    if k > 0:
        return floordiv(x, k)
    return -floordiv(x, -k)


@cython.locals(af="Lin", bf="Lin")
def minmax(kind: str, a: LinLike, b: LinLike) -> Lin:
    af = _as_lin(a)
    bf = _as_lin(b)
    if not af.terms and not bf.terms:
        return const(min(af.const, bf.const) if kind == "min" else max(af.const, bf.const))
    if af == bf:
        return af
    # drop an argument that can never win
    both = _sym_upper_diffs(af, bf)
    ab, ba = both if both is not None else (upper_diff(af, bf), upper_diff(bf, af))
    if ab <= 0:  # a <= b always
        return af if kind == "min" else bf
    if ba <= 0:
        return bf if kind == "min" else af
    args: list[Lin] = []
    for x in (af, bf):
        atom = _single_atom(x)
        if isinstance(atom, MinMax) and atom.kind == kind:
            args.extend(atom.args)
        else:
            args.append(x)
    uniq = sorted(set(args), key=_lin_sort_key)
    if len(uniq) == 1:
        return uniq[0]
    return Lin(((MinMax(kind, tuple(uniq)), 1),), 0)


@cython.locals(x="Lin")
def _sym_upper_diffs(a: Lin, b: Lin) -> tuple[int, int] | None:
    """(upper_diff(a, b), upper_diff(b, a)) when a and b are sums of symbols with finite ranges (a tile's base and
    extent forms): _upper's answer for such a difference is its range, found here without building the form
    (minmax asks it of every loop the search plans). None otherwise."""
    coefs: dict = {}
    for x, sign in ((a, 1), (b, -1)):
        for atom, c in x.terms:
            if type(atom) is not Sym or type(atom.lo) is not int or type(atom.hi) is not int:
                return None
            coefs[atom] = coefs.get(atom, 0) + sign * c
    ab = a.const - b.const
    ba = -ab
    for atom, c in coefs.items():
        if c > 0:
            ab += c * atom.hi
            ba -= c * atom.lo
        elif c < 0:
            ab += c * atom.lo
            ba -= c * atom.hi
    return ab, ba


def lmin(a: LinLike, b: LinLike) -> Lin:
    return minmax("min", a, b)


def lmax(a: LinLike, b: LinLike) -> Lin:
    return minmax("max", a, b)


def clamp(x: LinLike, lo: LinLike, hi: LinLike) -> Lin:
    return lmax(lmin(x, hi), lo)


def _single_atom(x: Lin) -> Atom | None:
    if x.const == 0 and len(x.terms) == 1 and x.terms[0][1] == 1:
        return x.terms[0][0]
    return None


# -- static comparison ---------------------------------------------------------------------------

_EXPANSION_BUDGET = 64


_UPPER_MEMO: dict = {}  # h - l -> upper_diff: search asks the same differences of every candidate


@cython.locals(d="Lin")
def upper_diff(h: LinLike, l: LinLike) -> Number:
    """A static upper bound on h - l over every value the symbols can take (INF if none is known)."""
    d = _as_lin(h) - _as_lin(l)
    if not d.terms:
        return d.const
    return _upper_memo(d)


def _upper_memo(d: Lin) -> Number:
    """_upper of a form with unknowns, remembered."""
    r = _UPPER_MEMO.get(d)
    if r is None:
        if len(_UPPER_MEMO) > 200_000:
            _UPPER_MEMO.clear()
        r = _UPPER_MEMO[d] = _upper(d, [_EXPANSION_BUDGET])
    return r


@cython.locals(hf="Lin", lf="Lin", d="Lin")
def static_extent(lo: LinLike, hi: LinLike, cap: int) -> int:
    """Points in [lo, hi] for every value of the symbols: hi - lo + 1 where that is a number, else its static upper
    bound, at most `cap` (cap where no bound is known). What exact_diff and upper_diff give, with h - l formed once:
    search asks it of every region and loop it plans and featurizes."""
    hf = _as_lin(hi)
    lf = _as_lin(lo)
    if hf.terms == lf.terms:  # the common case: the same unknowns on both sides
        return hf.const - lf.const + 1
    d = hf - lf
    if not d.terms:
        return d.const + 1
    u = _upper_memo(d)
    return cap if u == INF else int(min(u + 1, cap))


@cython.locals(hf="Lin", lf="Lin", d="Lin")
def exact_diff(h: LinLike, l: LinLike) -> int | None:
    """h - l if it is the same number for every value of the symbols, else None."""
    hf = _as_lin(h)
    lf = _as_lin(l)
    if hf.terms == lf.terms:  # the common case: the same unknowns on both sides
        return hf.const - lf.const
    d = hf - lf
    return None if d.terms else d.const


def _upper(d: Lin, budget: list[int]) -> Number:
    if d.is_const:
        return d.const
    # expand one min/max atom: the bound of a max is the max of the bounds, etc.
    for i, (a, c) in enumerate(d.terms):
        if isinstance(a, MinMax) and budget[0] > 0:
            budget[0] -= len(a.args)
            rest = Lin(d.terms[:i] + d.terms[i + 1:], d.const)
            bounds = [_upper(rest + arg * c, budget) for arg in a.args]
            exact_max = (a.kind == "max") == (c > 0)
            return max(bounds) if exact_max else min(bounds)
    # pair floor divisions with the same divisor and opposite coefficients
    total = d.const
    terms = list(d.terms)
    used = [False] * len(terms)
    for i, (a, c) in enumerate(terms):
        if used[i] or not isinstance(a, FloorDiv) or c <= 0:
            continue
        for j, (b, e) in enumerate(terms):
            if not used[j] and j != i and isinstance(b, FloorDiv) and b.q == a.q and e == -c:
                inner = _upper(a.num - b.num, budget)
                if inner == INF:
                    continue
                used[i] = used[j] = True
                total += c * _ceil_div(inner, a.q)
                break
    for k, (a, c) in enumerate(terms):
        if used[k]:
            continue
        lo, hi = a.range()
        total += c * hi if c > 0 else c * lo
    return total


def _ceil_div(v: int, q: int) -> int:
    return -((-v) // q)


def monotonicity(x: LinLike, s: str) -> int | None:
    """+1 if x never decreases as symbol s grows, -1 if never increases, 0 if it does not depend on s,
    None if it may go both ways."""
    return _mono(Lin.of(x), s)


def _mono(x: Lin, s: str) -> int | None:
    sign = 0
    for a, c in x.terms:
        if isinstance(a, Sym):
            m = 1 if a.name == s else 0
        elif isinstance(a, FloorDiv):
            m = _mono(a.num, s)
        else:
            ms = {_mono(arg, s) for arg in a.args} - {0}
            m = None if None in ms or len(ms) > 1 else (ms.pop() if ms else 0)
        if m is None:
            return None
        m *= 1 if c > 0 else -1
        if m != 0:
            if sign != 0 and m != sign:
                return None
            sign = m
    return sign


# -- evaluation and rendering --------------------------------------------------------------------


def evaluate_atom(a: Atom, env: dict[str, int]) -> int:
    if isinstance(a, Sym):
        return env[a.name]
    if isinstance(a, FloorDiv):
        return a.num.evaluate(env) // a.q
    vals = [x.evaluate(env) for x in a.args]
    return min(vals) if a.kind == "min" else max(vals)


def atom_symbols(a: Atom) -> set[str]:
    if isinstance(a, Sym):
        return {a.name}
    if isinstance(a, FloorDiv):
        return a.num.symbols()
    out: set[str] = set()
    for x in a.args:
        out |= x.symbols()
    return out


def substitute(x: Lin, subst: Callable[[Sym], Lin | None]) -> Lin:
    """Replace symbols by forms (subst returns None to keep a symbol)."""
    out = const(x.const)
    for a, c in x.terms:
        out = out + _subst_atom(a, subst) * c
    return out


def _subst_atom(a: Atom, subst) -> Lin:
    if isinstance(a, Sym):
        r = subst(a)
        return Lin.of(a) if r is None else r
    if isinstance(a, FloorDiv):
        return floordiv(substitute(a.num, subst), a.q)
    args = [substitute(x, subst) for x in a.args]
    r = args[0]
    for x in args[1:]:
        r = minmax(a.kind, r, x)
    return r


def to_code(x: LinLike, name: Callable[[Sym], str]) -> str:
    """Python source for x (integer arithmetic, floor division, min/max builtins)."""
    x = Lin.of(x)
    parts: list[str] = []
    for a, c in x.terms:
        s = _atom_code(a, name)
        if c == 1:
            parts.append(s)
        elif c == -1:
            parts.append(f"-{s}")
        else:
            parts.append(f"{c} * {s}")
    if x.const or not parts:
        parts.append(str(x.const))
    out = " + ".join(parts).replace("+ -", "- ")
    return out


def _atom_code(a: Atom, name) -> str:
    if isinstance(a, Sym):
        return name(a)
    if isinstance(a, FloorDiv):
        return f"(({to_code(a.num, name)}) // {a.q})"
    return f"{a.kind}({', '.join(to_code(x, name) for x in a.args)})"


def hull(intervals: Iterable[tuple[Lin, Lin]]) -> tuple[Lin, Lin]:
    """The smallest interval (as forms) containing all the given ones."""
    it = iter(intervals)
    lo, hi = next(it)
    for l, h in it:
        lo, hi = lmin(lo, l), lmax(hi, h)
    return lo, hi
