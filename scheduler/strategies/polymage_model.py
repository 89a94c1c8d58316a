"""jangda2020's model, in schedlab's words: expression inlining (§5.1), the cost of a group of fused stages
with its tile sizes from the cache sizes (Algorithm 2, §4), and the DP over the pipeline's groupings (§3).

A group is a group output, computed at root in tiles, and members computed inside each of its tiles (Halide's
compute_at), so a member's consumers must all lie in its group. Simplifications (stated, also in
docs/scheduler.md): the DP walks the DAG from the outputs to the inputs (schedlab's decision order) and keeps
the "open" groups a producer may still join as its memo key; Funcs with update definitions are groups of
their own; a group has at most `group_limit` stages (the paper's bounded DP, Algorithm 5); the paper's
normalized weights (Table 3, Intel Xeon) with every term scaled to about 0..1; regions, live-ins and the
redundant computation (overlap) are computed exactly by schedlab's bounds relations for one tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ir.dag import FunctionDAG
from ir.target import CpuTarget

Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CostWeights:
    """w1 (live-in + live-out per computed point), w2 (clean-up tiles), w3 (relative overlap), w4 (relative
    difference of the members' sizes): jangda2020 Table 3, Intel Xeon."""

    w1: float = 47.04
    w2: float = 1.0
    w3: float = 13.18
    w4: float = 33.57


@dataclass(frozen=True)
class GroupCost:
    """COST(H): the cost, the tile sizes of the group output (Var -> extent) and what went into the cost."""

    members: frozenset[str]
    output: str
    cost: float
    tiles: dict[str, int]
    cache: str  # "L1" | "L2": the cache the tile was sized for
    livein_bytes: int = 0
    liveout_bytes: int = 0
    comp_vol: int = 0  # points computed per tile, over all stages of the group
    n_tiles: int = 1
    overlap: int = 0  # points computed redundantly per tile (overlapped tiling)
    dim_diff: float = 0.0


@dataclass
class Grouping:
    """The DP's answer: the groups (output first in each), their costs, the inlined Funcs, the total cost."""

    groups: list[GroupCost]
    inlined: frozenset[str]
    cost: float
    states: int = 0  # DP table entries
    group_of: dict[str, str] = field(default_factory=dict)  # Func -> its group's output

    def as_sets(self) -> list[set[str]]:
        return [set(g.members) for g in self.groups]


# -- expression inlining (§5.1, Algorithm 3, simplified) ---------------------------------------------


def is_pointwise(dag: FunctionDAG, func: str) -> bool:
    """Whether every point of `func` reads one point of each producer (so inlining it recomputes nothing)."""
    node = dag.node(func)
    center = tuple(((lo + hi) // 2, (lo + hi) // 2) for lo, hi in node.region)
    for p in node.producers:
        try:
            box = dag.required_region(p, func, center)
        except Exception:  # noqa: BLE001 - an access bounds cannot bound: not pointwise
            return False
        if any(hi - lo + 1 > 1 for lo, hi in box):
            return False
    return True


def inline_set(dag: FunctionDAG) -> frozenset[str]:
    """The paper's inlining: every pointwise Func with a single pure definition that is not an output."""
    return frozenset(n.name for n in dag.nodes if n.inlinable and is_pointwise(dag, n.name))


def effective_consumers(dag: FunctionDAG, func: str, inlined: frozenset[str]) -> set[str]:
    """The computed Funcs that read `func`, directly or through inlined ones."""
    out: set[str] = set()
    for c in dag.node(func).consumers:
        out |= effective_consumers(dag, c, inlined) if c in inlined else {c}
    return out


# -- tile sizes (§4.2, ComputeTileSizes) -------------------------------------------------------------


def compute_tile_sizes(tile_footprint: float, num_buffers: int, bytes_per_point: float, dim_sizes: list[int],
                       dim_reuse: list[float], innermost: int) -> list[int]:
    """Algorithm 2 lines 25-38, dimension 0 innermost (Halide's x): tileVol = footprint / buffers (in
    points here); the innermost tile is min(size, innermost); the others are tau * gamma_i with
    gamma_i = reuse_i / max reuse and tau^(n-1) * prod(gamma) = tileVol / innermost tile."""
    n = len(dim_sizes)
    tile_vol = tile_footprint / (num_buffers * bytes_per_point)
    tiles = [0] * n
    tiles[0] = max(1, min(dim_sizes[0], innermost))
    if n == 1:
        return tiles
    tau = tile_vol / tiles[0]
    outer = dim_reuse[1:]
    max_reuse = max(outer)
    gammas = [r / max_reuse for r in outer]
    for g in gammas:
        tau /= g
    tau = max(tau, 1.0) ** (1.0 / (n - 1))
    for i, g in enumerate(gammas, start=1):
        tiles[i] = max(1, min(dim_sizes[i], int(tau * g)))
    return tiles


def innermost_tile(target: CpuTarget, bytes_per_point: int) -> int:
    """The paper's innerMostTileSize (128 or 256): 16 SIMD vectors of the type (128 f32 on AVX2)."""
    return 16 * max(1, target.vector_bytes // bytes_per_point)


# -- the cost of a group (§4.1, Algorithm 2) ---------------------------------------------------------


class GroupModel:
    """COST(H) for the groups of one pipeline on one target, memoized by the group's members."""

    def __init__(self, dag: FunctionDAG, target: CpuTarget, inlined: frozenset[str],
                 weights: CostWeights | None = None):
        self.dag, self.target, self.inlined = dag, target, inlined
        self.w = weights or CostWeights()
        self._memo: dict[frozenset[str], GroupCost] = {}

    def output_of(self, members: frozenset[str]) -> str:
        outs = [m for m in members if not (effective_consumers(self.dag, m, self.inlined) & members)]
        assert len(outs) == 1, f"a group has one output, got {outs}"
        return outs[0]

    def cost(self, members: frozenset[str]) -> GroupCost:
        if members not in self._memo:
            self._memo[members] = self._cost(members)
        return self._memo[members]

    def _cost(self, members: frozenset[str]) -> GroupCost:
        out = self.output_of(members)
        if len(members) > 1 and any(len(self.dag.node(m).stages) > 1 for m in members):
            return GroupCost(members, out, math.inf, {}, "none")  # updates: a group of their own
        t = self.target
        l1 = self._for_cache(members, out, t.l1_bytes, "L1")
        if l1.overlap > l1.comp_vol - l1.overlap:  # Algorithm 2 line 5: more redundant work than the tile's
            return self._for_cache(members, out, t.l2_bytes, "L2")
        return l1

    def _for_cache(self, members: frozenset[str], out: str, cache_bytes: int, cache: str) -> GroupCost:
        dag, node = self.dag, self.dag.node(out)
        sizes = {m: _points(dag.node(m).region) * dag.node(m).bytes_per_point for m in members}
        total = sum(sizes.values())  # intermediate buffers + live-outs
        cores = max(1, self.target.cores)
        tile_fp = min(total / cores, cache_bytes)
        bpp = total / sum(_points(dag.node(m).region) for m in members)
        dim_sizes = [node.region_extent(d) for d in range(node.dimensions)]
        tiles = compute_tile_sizes(tile_fp, len(members), bpp, dim_sizes, self.dim_reuse(members, out),
                                   innermost_tile(self.target, node.bytes_per_point))
        regions, liveins = self.tile_regions(members, out, tiles)
        comp_vol = sum(_points(regions[m]) * len(dag.node(m).stages) for m in members)
        overlap = 0
        n_tiles = math.prod(-(-s // k) for s, k in zip(dim_sizes, tiles))
        for m in members - {out}:
            overlap += max(0, _points(regions[m]) - _points(dag.node(m).region) // n_tiles)
        livein = sum(_points(b) * self._bytes(p) for p, b in liveins.items())
        liveout = _points(regions[out]) * node.bytes_per_point
        dim_diff = self.dim_diff(members)
        w = self.w
        cost = (w.w1 * (livein + liveout) / max(1, comp_vol)
                - w.w2 * ((n_tiles + cores - 1) % cores) / cores
                + w.w3 * overlap * bpp / max(1.0, tile_fp)
                + w.w4 * dim_diff)
        return GroupCost(members, out, cost, dict(zip(node.dims, tiles)), cache, livein, liveout, comp_vol,
                         n_tiles, overlap, dim_diff)

    def _bytes(self, producer: str) -> int:
        if producer in self.dag:
            return self.dag.node(producer).bytes_per_point
        return self.dag.inputs[producer].type.bytes

    def tile_regions(self, members: frozenset[str], out: str, tiles: list[int]) -> tuple[dict[str, Box], dict[str, Box]]:
        """The region of every member (and inlined Func) one tile of `out` needs, and the live-in regions
        (inputs and other groups' outputs) it reads. The tile sits in the middle of the output."""
        dag = self.dag
        node = dag.node(out)
        box = []
        for (lo, hi), k in zip(node.region, tiles):
            start = lo + max(0, (hi - lo + 1 - k) // 2)
            box.append((start, start + k - 1))
        regions: dict[str, Box] = {out: tuple(box)}
        liveins: dict[str, Box] = {}
        order = [n.name for n in dag.nodes]  # consumers first
        inside = set(members) | set(self.inlined)
        for f in order:
            if f not in regions:
                continue
            for p in dag.node(f).producers:
                need = dag.required_region(p, f, regions[f])
                if p in dag and p in inside and (p in members or p in self.inlined):
                    regions[p] = _union(regions.get(p), need)
                else:
                    liveins[p] = _union(liveins.get(p), need)
        return {m: regions.get(m, ()) for m in members}, liveins

    def dim_reuse(self, members: frozenset[str], out: str) -> list[float]:
        """Reuse along each dimension of the group output: 1 + the stencil widths (points read per point,
        minus one) along it, over every access of the group's stages (self-, group- and input reuse)."""
        dag = self.dag
        n = dag.node(out).dimensions
        reuse = [1.0] * n
        for m in members | {f for f in self.inlined if effective_consumers(dag, f, self.inlined) & members}:
            node = dag.node(m)
            center = tuple(((lo + hi) // 2, (lo + hi) // 2) for lo, hi in node.region)
            for p in node.producers:
                try:
                    box = dag.required_region(p, m, center)
                except Exception:  # noqa: BLE001
                    continue
                for d, (lo, hi) in enumerate(box[:n]):
                    reuse[d] += hi - lo
        return reuse

    def dim_diff(self, members: frozenset[str]) -> float:
        """The relative standard deviation of the members' extents, averaged over dimensions."""
        if len(members) < 2:
            return 0.0
        dims = max(self.dag.node(m).dimensions for m in members)
        total = 0.0
        for d in range(dims):
            ext = [self.dag.node(m).region_extent(d) for m in members if d < self.dag.node(m).dimensions]
            mean = sum(ext) / len(ext)
            total += math.sqrt(sum((e - mean) ** 2 for e in ext) / len(ext)) / mean if mean else 0.0
        return total / dims


def _points(box: Box) -> int:
    return math.prod(hi - lo + 1 for lo, hi in box) if box else 0


def _union(a: Box | None, b: Box) -> Box:
    if a is None:
        return tuple(b)
    return tuple((min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(a, b))


# -- the DP over groupings (§3, Algorithm 1) ---------------------------------------------------------


class _TableFull(Exception):
    pass


def dp_grouping(dag: FunctionDAG, target: CpuTarget, *, inline: bool = True, group_limit: int = 8,
                weights: CostWeights | None = None, max_states: int = 50_000) -> Grouping:
    """`_dp` with the group limit halved while the DP table outgrows `max_states` (the paper's bounded DP,
    Algorithm 5, which also lowers the limit on large DAGs); a limit of 1 is always small."""
    while True:
        try:
            return _dp(dag, target, inline, group_limit, weights, max_states if group_limit > 1 else None)
        except _TableFull:
            group_limit //= 2


def _dp(dag: FunctionDAG, target: CpuTarget, inline: bool, group_limit: int, weights: CostWeights | None,
        max_states: int | None) -> Grouping:
    """The minimum-cost grouping of the pipeline's computed Funcs. Each Func, taken from the outputs toward
    the inputs, either starts a group (as its output) or joins the one open group holding all its
    consumers (Case I / Case II of Figure 5); a group closes, and its COST is added, once no Func left can
    join it. F(i, open groups) is memoized."""
    inlined = inline_set(dag) if inline else frozenset()
    model = GroupModel(dag, target, inlined, weights)
    order = [n.name for n in dag.nodes if n.name not in inlined]
    cons = {f: effective_consumers(dag, f, inlined) for f in order}
    # a group can gain a Func from order[i:] only while some member reads one of them
    producers = {f: {p for p in order if f in cons[p]} for f in order}
    pos = {f: i for i, f in enumerate(order)}
    memo: dict[tuple[int, frozenset[frozenset[str]]], tuple[float, tuple[frozenset[str], ...]]] = {}

    def can_join(f: str) -> bool:
        node = dag.node(f)
        return not node.is_output and len(node.stages) == 1 and bool(cons[f])

    def close(i: int, groups: frozenset[frozenset[str]]) -> tuple[float, frozenset[frozenset[str]], list]:
        still, done, cost = [], [], 0.0
        for g in sorted(groups, key=lambda g: min(pos[m] for m in g)):
            if any(pos[p] >= i for m in g for p in producers[m]):
                still.append(g)
            else:
                done.append(g)
                cost += model.cost(g).cost
        return cost, frozenset(still), done

    def solve(i: int, open_groups: frozenset[frozenset[str]]) -> tuple[float, tuple[frozenset[str], ...]]:
        key = (i, open_groups)
        if key in memo:
            return memo[key]
        if max_states is not None and len(memo) > max_states:
            raise _TableFull
        if i == len(order):
            c, _, done = close(i, open_groups)
            best = (c, tuple(done))
            memo[key] = best
            return best
        f = order[i]
        options = [frozenset(open_groups | {frozenset({f})})]  # Case II: f starts a group
        if can_join(f):
            for g in sorted(open_groups, key=lambda g: min(pos[m] for m in g)):
                if cons[f] <= g and len(g) < group_limit and len(dag.node(next(iter(g))).stages) == 1 \
                        and all(len(dag.node(m).stages) == 1 for m in g):
                    options.append(frozenset((open_groups - {g}) | {g | {f}}))  # Case I: f joins g
        best = (math.inf, ())
        for groups in options:
            c, still, done = close(i + 1, groups)
            if c == math.inf:
                continue
            rest_cost, rest = solve(i + 1, still)
            if c + rest_cost < best[0]:
                best = (c + rest_cost, tuple(done) + rest)
        memo[key] = best
        return best

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(order) + 1000))
    try:
        total, groups = solve(0, frozenset())
    finally:
        sys.setrecursionlimit(limit)
    costs = sorted((model.cost(g) for g in groups), key=lambda c: pos[c.output])
    group_of = {m: c.output for c in costs for m in c.members}
    return Grouping(costs, inlined, total, len(memo), group_of)
