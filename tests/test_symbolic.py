"""Symbolic bounds: the shortcuts the search's hot path takes agree with the general algebra."""

from __future__ import annotations

import random

import pytest

from ir.symbolic import (INF, FloorDiv, Lin, Sym, _sym_upper_diffs, const, exact_diff, floordiv, lmax, lmin, static_extent,
                         upper_diff)


def _random_form(rng: random.Random, syms: list[Sym]) -> Lin:
    coefs: dict = {}
    for _ in range(rng.randint(0, 3)):
        s = rng.choice(syms)
        coefs[s] = coefs.get(s, 0) + rng.randint(-4, 4)
    return Lin._make(coefs, rng.randint(-30, 30))


@pytest.mark.parametrize("seed", range(4))
def test_sums_of_symbols_compare_as_upper_diff_does(seed):
    """minmax's shortcut for sums of symbols gives both upper_diff answers, on forms that cancel, share symbols
    and differ only in constants."""
    rng = random.Random(seed)
    syms = [Sym(f"i{k}", rng.randint(-5, 3), rng.randint(3, 40)) for k in range(4)]
    for _ in range(3000):
        a, b = _random_form(rng, syms), _random_form(rng, syms)
        if rng.random() < 0.2:
            b = a + rng.randint(-3, 3)
        assert _sym_upper_diffs(a, b) == (upper_diff(a, b), upper_diff(b, a)), (a, b)


def test_other_atoms_take_the_general_path():
    """Floor divisions, min/max atoms and unbounded symbols are left to upper_diff (None), and lmin / lmax still
    drop the argument that cannot win through it."""
    i = Sym("i", 0, 9)
    tile = Lin(((i, 8),), 0)
    fd = Lin(((FloorDiv(Lin(((i, 1),), 3), 2), 1),), 0)
    unbounded = Lin(((Sym("n", 0, INF), 1),), 0)
    assert _sym_upper_diffs(tile, fd) is None
    assert _sym_upper_diffs(tile, lmin(tile, const(40))) is None
    assert _sym_upper_diffs(unbounded, tile) is None
    assert _sym_upper_diffs(tile, const(100)) == (-28, 100)
    assert lmin(tile, const(100)) == tile and lmax(tile, const(-1)) == tile
    m = lmin(tile, const(40))
    assert m != tile and lmin(m, tile) == m


@pytest.mark.parametrize("seed", range(3))
def test_static_extent_is_what_exact_diff_and_upper_diff_give(seed):
    """static_extent forms hi - lo once; it must give what the two comparisons give: hi - lo + 1 where that is a
    number (uncapped), else the upper bound + 1 capped, or the cap where no bound is known (an unbounded symbol)."""
    rng = random.Random(seed)
    syms = [Sym(f"i{k}", rng.randint(-5, 3), rng.randint(3, 40)) for k in range(3)] + [Sym("n", 0, INF)]
    kinds = {"exact": 0, "bounded": 0, "unknown": 0}
    for _ in range(2000):
        lo, hi = _random_form(rng, syms), _random_form(rng, syms)
        if rng.random() < 0.3:
            hi = lo + rng.randint(0, 9)
        elif rng.random() < 0.3:
            hi = lmin(hi, lo + rng.randint(0, 50))
        elif rng.random() < 0.2:
            hi = lo + Lin(((FloorDiv(_random_form(rng, syms[:3]), rng.randint(2, 8)), 1),), 0)
        cap = rng.randint(1, 64)
        e = exact_diff(hi, lo)
        if e is not None:
            want, kind = e + 1, "exact"
        else:
            u = upper_diff(hi, lo)
            want, kind = (cap, "unknown") if u == INF else (int(min(u + 1, cap)), "bounded")
        kinds[kind] += 1
        assert static_extent(lo, hi, cap) == want, (lo, hi, cap)
    assert min(kinds.values()) > 50, kinds  # every branch taken


def test_atoms_are_frozen_values_with_their_hash_and_sort_key_remembered():
    """Sym, FloorDiv and MinMax (extension types in the builds, slotted classes as Python) behave as the frozen
    dataclasses they replaced: equal and hashed by their fields (hash of the same tuple as before, so sets and dicts
    iterate forms in the same order), compared only with their own kind, refusing assignment, printed with their
    fields, pickled to equal values; sort keys as before."""
    import pickle
    from dataclasses import FrozenInstanceError

    from ir.symbolic import MinMax

    i = Sym("i", 0, 15)
    a, b = Lin.of(i) * 8, const(92)
    fd = FloorDiv(Lin.of(i) * 3 + 1, 4)
    mm = MinMax("min", (a, b))
    cases = [(i, Sym("i", 0, 15), Sym("i", 0, 16), ("i", 0, 15), (0, "i"), "Sym(name='i', lo=0, hi=15)"),
             (fd, FloorDiv(Lin.of(i) * 3 + 1, 4), FloorDiv(Lin.of(i) * 3 + 1, 5), (Lin.of(i) * 3 + 1, 4),
              (1, 4, (Lin.of(i) * 3 + 1).sort_key()), "FloorDiv(num=3 * i + 1, q=4)"),
             (mm, MinMax("min", (a, b)), MinMax("max", (a, b)), ("min", (a, b)), (2, "min", (a.sort_key(), b.sort_key())),
              "MinMax(kind='min', args=(8 * i, 92))")]
    for atom, same, other, fields, key, text in cases:
        assert atom == same and hash(atom) == hash(same) == hash(fields) and not atom != same
        assert atom != other and not atom == other and atom != fields and atom is not same
        assert atom.sort_key() == key and repr(atom) == text
        assert pickle.loads(pickle.dumps(atom)) == atom
        assert len({atom, same, other}) == 2
        for name in ("key", "_hash", type(atom).__slots__[0]):
            with pytest.raises((FrozenInstanceError, AttributeError)):
                setattr(atom, name, 1)
    assert lmin(a, b) == Lin(((MinMax("min", (b, a)), 1),), 0) and Lin(((mm, 1),), 0).range() == (0, 92)
    assert fd.range() == (0, 11) and i.range() == (0, 15)
    for form in (a, b, a + b, Lin(((fd, 2), (mm, -1)), 7)):  # a form's hash, remembered in the builds, is the tuple's
        assert hash(form) == hash(form) == hash((form.terms, form.const)) == hash(Lin(form.terms, form.const))


def _sum_by_dict(a: Lin, b: Lin, sign: int) -> Lin:
    """a + sign * b as Lin._make forms it: coefficients gathered in a dict, terms sorted by their atoms' keys."""
    coefs = dict(a.terms)
    for x, c in b.terms:
        coefs[x] = coefs.get(x, 0) + sign * c
    return Lin._make(coefs, a.const + sign * b.const)


@pytest.mark.parametrize("seed", range(3))
def test_sums_and_differences_merge_their_terms_as_the_dict_and_sort_did(seed):
    """Lin's + and - merge two sorted term lists (ir.symbolic._merged_terms); the terms, their order and their
    coefficients are what gathering and sorting give, also where two Syms share a name but not a range (a tie of keys:
    the dict's order decides) and where terms cancel."""
    rng = random.Random(seed)
    syms = [Sym(f"v{i}", 0, rng.randint(1, 9)) for i in range(5)] + [Sym("v1", 0, 99), Sym("w", -3, 3)]

    def form(depth: int = 0) -> Lin:
        x = const(rng.randint(-5, 5))
        for _ in range(rng.randint(0, 4)):
            r = rng.random()
            if r < 0.7 or depth > 1:
                a = Lin.of(rng.choice(syms))
            elif r < 0.85:
                a = floordiv(form(depth + 1), rng.randint(2, 4))
            else:
                a = lmin(form(depth + 1), form(depth + 1))
            x = x + a * rng.choice([-2, -1, 1, 3])
        return x

    cancelled = 0
    for _ in range(2000):
        a, b = form(), form()
        for x, y, sign, got in ((a, b, 1, a + b), (a, b, -1, a - b), (a, a, -1, a - a)):
            want = _sum_by_dict(x, y, sign)
            assert got.terms == want.terms and got.const == want.const, (x, y, sign)
            cancelled += bool(x.terms) and not got.terms
    assert cancelled > 0
