"""Tile sizes the search may choose (adams2019 §3.2, Halide's `generate_tilings`).

Inner tile extents are log-spaced (1, 2, 4, ...) per dimension and the full extent; a size whose last tile
would waste more than 1/7 of the work to rounding is dropped; when the combinations across dimensions are
too many, every other power of two is dropped (coarser spacing) until they fit. Parallel tilings are
judged by their task count: between the core count and 16 x cores, ordered by idle-core wastage.
Register tilings (a reduction's innermost tile: one to four vectors by a few unrolled points of one or two other
dimensions) are offered beside them, because tiles of log-spaced sizes spread over a large region rarely include
one.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

from ir.plan import MAX_VECTOR, UNROLL_LIMIT  # the unroll heuristic offers exactly what Plan accepts

MAX_TILINGS = 16  # inner tilings kept per Func (Halide: 100 x factor before coarsening; ours feed a beam)
MAX_PARALLEL = 4  # parallel tilings kept per root Func, the least idle-core wastage first
MAX_IDLE_WASTAGE = 1.2  # adams2019: take options until the wastage exceeds this


def _rounds_well(extent: int, size: int) -> bool:
    """Whether tiles of `size` cover `extent` wasting at most 1/7 of the work to rounding up the last one."""
    return -(-extent // size) * size * 7 <= extent * 8


def _sizes(extent: int, multiple: int, stride: int) -> list[int]:
    """Log-spaced tile extents for one dimension, multiples of `multiple`, that round with little waste."""
    out = []
    s = multiple
    k = 0
    while s < extent:
        if k % stride == 0 and _rounds_well(extent, s):
            out.append(s)
        s *= 2
        k += 1
    out.append(extent)
    return out


def inner_tilings(extents: list[int], vector_dim: int = -1, vector_width: int = 1,
                  limit: int = MAX_TILINGS) -> list[tuple[int, ...]]:
    """Inner tile extents over `extents` (one per pure dimension), excluding the trivial ones (the whole
    region, or single points). The vectorized dimension keeps whole vectors."""
    return list(_inner_tilings(tuple(extents), vector_dim, vector_width, limit))


def _tiling_count(extents: tuple[int, ...], per_dim: list[list[int]]) -> int:
    """How many of the combinations of `per_dim` are tilings (not the whole region, not single points), counted
    without listing them: each dimension's sizes hold its extent once, so the whole region is one combination,
    and the single-point ones are the products of the dimensions' sizes of 1 (the two coincide when every
    extent is 1)."""
    whole = math.prod([len(sizes) for sizes in per_dim])
    points = math.prod([sizes.count(1) for sizes in per_dim])
    return whole - 1 - points + (1 if all(e <= 1 for e in extents) else 0)


@functools.lru_cache(maxsize=4096)
def _inner_tilings(extents: tuple[int, ...], vector_dim: int, vector_width: int, limit: int) -> tuple:
    """inner_tilings, memoized: search asks for the same regions over and over."""
    stride = 1
    while True:
        per_dim = [_sizes(e, vector_width if d == vector_dim else 1, stride) for d, e in enumerate(extents)]
        if stride > 8 or _tiling_count(extents, per_dim) <= limit:
            break
        stride *= 2
    combos = [t for t in itertools.product(*per_dim) if t != extents and max(t) > 1]
    if len(combos) > limit:  # still too many on many dimensions: keep an even spread
        step = len(combos) / limit
        combos = [combos[int(i * step)] for i in range(limit)]
    return tuple(combos)


@dataclass(frozen=True)
class ParallelTiling:
    outer: tuple[int, ...]  # tile extents of the parallel outermost level
    tasks: int
    idle_core_wastage: float


def parallel_tilings(extents: list[int], cores: int, vector_dim: int = -1, vector_width: int = 1,
                     limit: int = MAX_PARALLEL) -> list[ParallelTiling]:
    """Outer tilings into parallel tasks, cores <= tasks <= 16 x cores, least idle-core wastage first.

    Outer dimensions (the last) are split first, as Halide parallelizes the outermost loops; the vectorized
    dimension keeps whole vectors in each task."""
    return list(_parallel_tilings(tuple(extents), cores, vector_dim, vector_width, limit))


@functools.lru_cache(maxsize=4096)
def _parallel_tilings(extents: tuple[int, ...], cores: int, vector_dim: int, vector_width: int,
                      limit: int) -> tuple[ParallelTiling, ...]:
    """parallel_tilings, memoized: every state that places a root Func asks it of the same region (a product over
    every dimension's sizes, sorted)."""
    per_dim = []
    for d, e in enumerate(extents):
        m = vector_width if d == vector_dim else 1
        per_dim.append(sorted({e} | {s for s in _sizes(e, m, 1)}))
    out = []
    for t in itertools.product(*per_dim):
        tasks = math.prod(-(-e // s) for e, s in zip(extents, t))
        if not cores <= tasks <= 16 * cores:
            continue
        per_core = tasks / cores
        wastage = math.ceil(per_core) / per_core
        if wastage > MAX_IDLE_WASTAGE:
            continue
        out.append(ParallelTiling(tuple(t), tasks, wastage))
    # least wastage, then fewer tasks (less overhead), then splitting outer dimensions rather than x
    out.sort(key=lambda p: (round(p.idle_core_wastage, 3), p.tasks, [-s for s in p.outer[:1]]))
    return tuple(out[:limit])


REGISTER_UNROLLS = (4, 8, UNROLL_LIMIT)  # points of the unrolled dimension in a register tile of one vector
REGISTER_PAIRS = ((2, 4), (4, 2))  # points of two unrolled dimensions: 8 accumulators, as conv_layer's expert
# wider register tiles: native vectors along the vector dimension -> points of one other dimension, and pairs of
# points of two, keeping at most MAX_ACCUMULATORS vectors of accumulators (x86-64 with AVX2 has 16 vector
# registers): matmul's expert tile is 4 vectors x 4 columns, conv_layer's 2 vectors x 2 rows x 4 channels
REGISTER_WIDE = {2: ((4, 8), REGISTER_PAIRS), 4: ((2, 4), ())}
MAX_ACCUMULATORS = 16
REGISTER_VECTORS = (1, *REGISTER_WIDE)  # the widths (in native vectors) register_tilings offers, SpaceOptions accepts


class WideTile(tuple):
    """A register tile whose SIMD loop spans its whole extent along the vector dimension, several native vectors
    (Halide vectorizes a loop of 32 f32 lanes as four 8-lane vectors, all live at once). A plain tuple of the same
    extents is a tile whose SIMD loop is one native vector, the rest a serial loop around the reduction."""


def register_tilings(extents: list[int], vector_dim: int = -1, vector_width: int = 1,
                     dims: int = 2, vectors: int = 4) -> list[tuple[int, ...]]:
    """Innermost tiles that keep a reduction's accumulators in registers (register blocking): one SIMD vector
    (or one point without SIMD) along `vector_dim` by k unrolled points of one other dimension, or by k1 x k2
    points of two others (REGISTER_PAIRS; dims=1: not those), 1 elsewhere; and, up to `vectors` native vectors
    wide (REGISTER_WIDE; vectors=1: not those), two or four vectors by fewer points.

    Why: an update that iterates an RVar inside its pure loops carries its accumulator across the RVar loop.
    With one vector innermost that is one chain of dependent adds, bound by the add's latency, and every load of
    an operand invariant along another dimension is repeated; k unrolled points give k independent chains and
    amortize those loads k-fold (matmul: 3.2x, measured with Halide; docs/scheduler.md). Two dimensions share
    loads both ways: conv_layer's 2 rows x 4 output channels load 2 input vectors and 4 weights per 8
    multiply-adds, where 8 rows load 8 vectors and 1 weight (2.3-2.7x faster, measured with Halide). Several
    vectors wide share each broadcast operand among them: matmul's 4 vectors x 4 columns load one element of B
    per 4 multiply-adds instead of per one. The unroll heuristic (unroll_extents) unrolls exactly these tiles, so
    points stay within UNROLL_LIMIT; a k or a width that wastes more than 1/7 of its dimension to rounding
    (_rounds_well) is not offered."""
    return list(_register_tilings(tuple(extents), vector_dim, vector_width, dims, vectors))


@functools.lru_cache(maxsize=4096)
def _register_tilings(extents: tuple[int, ...], vector_dim: int, vector_width: int, dims: int,
                      vectors: int) -> tuple[tuple[int, ...], ...]:
    """register_tilings, memoized (its tiles are tuples, WideTile ones included: immutable)."""
    if vector_dim >= 0 and vector_width > extents[vector_dim]:
        return ()  # no whole vector fits
    out = []

    def add(lanes: int, points: dict[int, int]) -> None:
        tile = [1] * len(extents)
        if vector_dim >= 0:
            tile[vector_dim] = lanes
        for d, k in points.items():
            tile[d] = k
        if tile != list(extents):  # the whole region is no tiling
            out.append(WideTile(tile) if lanes > vector_width else tuple(tile))

    def fits(d: int, k: int) -> bool:
        return k < extents[d] and _rounds_well(extents[d], k)

    others = [d for d in range(len(extents)) if d != vector_dim]
    widths = {1: (REGISTER_UNROLLS, REGISTER_PAIRS)} | (REGISTER_WIDE if vector_dim >= 0 else {})
    for v, (ks, pairs) in widths.items():
        lanes = v * vector_width
        if v > 1 and (v > vectors or lanes > min(MAX_VECTOR, extents[vector_dim]) or
                      not _rounds_well(extents[vector_dim], lanes)):
            continue
        for d in others:
            e = extents[d]
            chosen = {k for k in ks if fits(d, k)}
            if 1 < e <= UNROLL_LIMIT and v * e <= MAX_ACCUMULATORS:
                chosen.add(e)  # the whole dimension (e.g. three channels)
            for k in sorted(chosen):
                add(lanes, {d: k})
        if dims >= 2:
            for d1, d2 in itertools.combinations(others, 2):
                for k1, k2 in pairs:
                    if fits(d1, k1) and fits(d2, k2):
                        add(lanes, {d1: k1, d2: k2})
    return tuple(out)


def unroll_extents(tile: tuple[int, ...], vector_dim: int) -> dict[int, int]:
    """adams2019 §3.3: the innermost tile's non-vector dimensions are unrolled when their product is small."""
    return dict(_unroll_extents(tile, vector_dim))


@functools.lru_cache(maxsize=4096)
def _unroll_extents(tile: tuple[int, ...], vector_dim: int) -> tuple[tuple[int, int], ...]:
    """unroll_extents as (dimension, extent) pairs, memoized: a search asks it of every child's innermost tile."""
    dims = [(d, s) for d, s in enumerate(tile) if d != vector_dim and s > 1]
    if dims and math.prod([s for _, s in dims]) <= UNROLL_LIMIT:
        return tuple(dims)
    return ()
