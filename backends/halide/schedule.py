"""A LoopNest as Halide scheduling directives on the Funcs of `translate`.

Read off the `Plan` (the one bounds inference): each stage's levels become nested splits of its pure
Vars (level d of Var x is the Halide Var `x_d`), ordered level by level as the plan orders them;
the innermost level's SIMD loop is vectorized and its pure loops unrolled; a parallel outermost level
fuses its loops into one parallel loop; compute and storage sites become `compute_at` / `store_at`
on the innermost loop of the level (Halide slides windows by itself). Halide schedules never change
results, so where a construct has no exact Halide form the nearest legal directive is used (each
one is listed in docs/halide.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import halide as hl

from ir.gpu import SHARED, memory_space
from ir.loopnest import LoopKind
from ir.plan import Chain, Plan

from .translate import HalidePipeline


@dataclass
class _StageLoops:
    """The Halide loop variables of one scheduled stage, per level (outermost level first)."""

    innermost_of_level: list[hl.Var | None] = field(default_factory=list)  # what compute_at refers to


def apply(hp: HalidePipeline, plan: Plan) -> None:
    """Schedule hp's Funcs as `plan` says (Funcs not in the plan keep Halide's default: inlined)."""
    loops: dict[int, _StageLoops] = {}
    bounded = _bounded_by_outputs(hp, plan.dag)
    for name, fp in plan.funcs.items():
        f = hp.funcs[name]
        if fp.inlined:
            f.compute_inline()
            continue
        for ch in fp.chains:
            loops[id(ch)] = _schedule_chain(hp, fp, ch, name in bounded)
        _storage_order(hp, fp)
    for name, fp in plan.funcs.items():
        if fp.inlined:
            continue
        f = hp.funcs[name]
        site = _loop_level(hp, plan, fp.site, loops)
        if site is None:
            f.compute_root()
        else:
            f.compute_at(site)
        if plan.target.kind == "cuda" and memory_space(plan, fp) == SHARED:
            f.store_in(hl.MemoryType.GPUShared)
        if fp.store is not fp.site:
            store = _loop_level(hp, plan, fp.store, loops)
            if store is None:
                f.store_root()
            else:
                f.store_at(store)


def _stage(f: hl.Func, index: int):
    return f if index == 0 else f.update(index - 1)


def _bounded_by_outputs(hp: HalidePipeline, dag) -> set[str]:
    """The Funcs whose values past their region would be computed from a caller's buffer beyond its bounds: the
    outputs realized straight into their buffers, and every Func that reads one (directly or through other
    Funcs; an Input's reads are clamped to its buffer, see translate)."""
    direct = {name for name, f in hp.outputs.items() if hp.funcs[name] is f}
    out: set[str] = set()
    for node in reversed(dag.nodes):  # producers first
        if node.name in direct or any(p in out for p in node.producers):
            out.add(node.name)
    return out


def _tail(ch: Chain, j: int, depth: int, bounded: bool, first: bool = True) -> hl.TailStrategy:
    """ShiftInwards for pure definitions, as schedlab; GuardWithIf for a region whose size varies between site
    iterations (a shifted tile could then read an Input before its region). An update's pure loop, at its first
    split, rounds its region up to whole tiles (Halide's own default there) unless that could change a result:
    the extra points would read a caller's buffer past its bounds (`_bounded_by_outputs`), the update reads its
    own values at other points of that dimension, or the split is of a tile already split (the rounded tail
    would redo points of the next tile).
    GuardWithIf there would put the tail's guard inside the RVar loops (a register tile's accumulators then go
    through memory at every step: conv_layer's 100-wide rows in 16-wide tiles ran 2.5x slower than 96-wide)."""
    if ch.stage.index == 0:
        return hl.TailStrategy.ShiftInwards if depth > 0 or ch.exact[j] else hl.TailStrategy.GuardWithIf
    if bounded or not first or not _pointwise_in(ch.stage, j):
        return hl.TailStrategy.GuardWithIf
    return hl.TailStrategy.RoundUp


def _pointwise_in(stage, j: int) -> bool:
    """Whether every read of the stage's own Func takes the pure loop j's point unchanged in its dimension, so
    that points computed past the region never feed a point inside it."""
    d = stage.loop[j].func_dim
    own = stage.lhs[d]
    return all(a.args[d].key() == own.key() for a in stage.accesses if a.kind == "self")


def _schedule_chain(hp: HalidePipeline, fp, ch: Chain, bounded: bool) -> _StageLoops:
    f = hp.funcs[fp.name]
    st = _stage(f, ch.stage.index)
    n = len(ch.levels)
    pure_vars = hp.vars[fp.name]
    rdom = hp.rdoms.get((fp.name, ch.stage.index))
    by_level: list[dict[int, object]] = [{} for _ in range(n)]  # level -> loop index -> Halide var
    split: set[int] = set()
    tag = "" if ch.stage.index == 0 else f"_u{ch.stage.index - 1}"  # loop names unique across stages
    for j, l in enumerate(ch.stage.loop):
        if not l.pure:
            by_level[n - 1][j] = rdom[l.rvar.index]
            continue
        cur = pure_vars[l.func_dim]
        for d in range(n - 1):
            lp = ch.levels[d].loops[j]
            if lp.count > 1:
                outer, inner = hl.Var(f"{l.name}{tag}_{d}"), hl.Var(f"{l.name}{tag}_{d + 1}")
                st.split(cur, outer, inner, lp.tile, _tail(ch, j, d, bounded, j not in split))
                by_level[d][j] = outer
                cur = inner
                split.add(j)
        by_level[n - 1][j] = cur
    grid = _one_block_grid(st, ch, by_level, tag)
    order = [(d, by_level[d][j]) for d in range(n) for j in ch.levels[d].order if j in by_level[d]]
    if len(order) > 1 or (ch.stage.index > 0 and order):
        # an update's loop order is stated even when it has one loop (a scan over an RDom such as
        # hist_eq's cdf): Halide warns of an update left unscheduled while the pure definition has
        # directives, and the order is what the LoopNest says for it
        st.reorder([hl.VarOrRVar(v) for _, v in reversed(order)])
    elif ch.stage.index > 0:
        st.unscheduled()  # an update of one point (no loops): there is nothing to schedule
    _innermost(st, ch, by_level[n - 1], split, bounded)
    _gpu_loops(st, ch, by_level, tag, grid)
    out = _StageLoops([None] * n)
    for d, v in order:
        out.innermost_of_level[d] = v
    if ch.levels[0].node.parallel:
        out.innermost_of_level[0] = _parallel(st, [v for d, v in order if d == 0], tag)
    return out


def _innermost(st, ch: Chain, inner: dict[int, object], split: set[int], bounded: bool) -> None:
    node = ch.levels[-1].node
    depth = len(ch.levels) - 1
    for j, l in enumerate(ch.stage.loop):
        size = node.size[j]
        if not l.pure or size <= 1:
            continue
        v = inner[j]
        if j == node.vectorized_loop:
            st.vectorize(v) if j in split else st.vectorize(v, size, _tail(ch, j, depth, bounded))
        elif node.unrolled:
            st.unroll(v) if j in split else st.unroll(v, size, _tail(ch, j, depth, bounded))


def _one_block_grid(st, ch: Chain, by_level: list[dict[int, object]], tag: str) -> set[int]:
    """A BLOCK level whose loops all run once has no Halide loop, and Halide wants thread loops (the stage's
    own, or its producers') inside a block loop: split the outermost pure loop by its whole extent, and the
    outer loop of one iteration is the grid. Returns the loops so made."""
    if not ch.levels or ch.levels[0].node.kind is not LoopKind.BLOCK or by_level[0]:
        return set()
    pure = [j for j in ch.levels[0].order if ch.stage.loop[j].pure]
    if not pure:
        return set()
    j = pure[0]
    d = min(d for d in range(len(by_level)) if j in by_level[d])
    outer, inner = hl.Var(f"{ch.stage.loop[j].name}{tag}_grid"), hl.Var(f"{ch.stage.loop[j].name}{tag}_all")
    st.split(by_level[d][j], outer, inner, ch.levels[0].loops[j].tile, hl.TailStrategy.GuardWithIf)
    by_level[d][j] = inner
    by_level[0][j] = outer
    return {j}


def _gpu_loops(st, ch: Chain, by_level: list[dict[int, object]], tag: str, grid: set[int]) -> None:
    """BLOCK levels' pure loops as gpu_blocks, THREAD levels' as gpu_threads (Halide takes at most three of
    each: the outer ones are fused first); a stage with no loop at all runs as one GPU thread."""
    kinds = {LoopKind.BLOCK: "gpu_blocks", LoopKind.THREAD: "gpu_threads"}
    used = set()
    for d, lvl in enumerate(ch.levels):
        kind = lvl.node.kind
        if kind not in kinds:
            continue
        vs = [by_level[d][j] for j in reversed(lvl.order) if j in by_level[d] and lvl.loops[j].pure
              and (lvl.loops[j].count > 1 or (d == 0 and j in grid))]  # innermost first, as Halide lists them
        while len(vs) > 3:
            fused = hl.Var(f"{vs[-1].name()}_f{tag}")
            st.fuse(vs[-2], vs[-1], fused)
            vs = vs[:-2] + [fused]
        if vs:
            getattr(st, kinds[kind])(*[hl.VarOrRVar(v) for v in vs])
            used.add(kind)
    if ch.levels and ch.levels[0].node.kind is LoopKind.BLOCK and not used:
        st.gpu_single_thread()  # one block of one thread (Halide runs thread loops outside blocks in one block)


def _parallel(st, level0: list, tag: str) -> hl.Var | None:
    """Fuse the outermost level's loops (outermost first) into one parallel loop, as schedlab runs them."""
    if not level0:
        return None
    fused = level0[0]
    for k, v in enumerate(level0[1:]):
        nxt = hl.Var(f"par{tag}_{k}")
        st.fuse(v, fused, nxt)
        fused = nxt
    st.parallel(fused)
    return fused


def _storage_order(hp: HalidePipeline, fp) -> None:
    """Non-outputs store their vectorized dimension innermost (ir.plan.storage_layout)."""
    if fp.node.is_output or len(fp.layout) < 2 or fp.layout[0] == 0:
        return
    vs = hp.vars[fp.name]
    hp.funcs[fp.name].reorder_storage([vs[d] for d in fp.layout])


def _loop_level(hp: HalidePipeline, plan: Plan, node, loops: dict[int, _StageLoops]) -> hl.LoopLevel | None:
    """The Halide loop level of a LoopNest node (None: root). A level whose loops all run once has no
    Halide loop; the nearest enclosing loop is the same place."""
    while not node.is_root:
        lvl = plan.level(node)
        ch = lvl.chain
        sl = loops[id(ch)]
        for d in range(lvl.depth, -1, -1):
            v = sl.innermost_of_level[d]
            if v is not None:
                # stage_index -1: Halide 21's legality check rejects an explicit index; the loop's
                # name, unique across the Func's stages, picks the stage
                return hl.LoopLevel(hp.funcs[ch.func], hl.VarOrRVar(v), -1)
        node = ch.site
    return None
