"""LoopNests as readable loops, in the style of seeds/adams2019 Fig. 2, and as Halide directives.

    parallel for blur_y.y.0 in [0, 80):      # 32 rows per tile
     for blur_y.x.0 in [0, 6):
      allocate blur_x[256 x 34]
      for blur_x.y in [0, 34):
       simd for blur_x.x in [0, 256):
        blur_x(...) = ...
      ...

Without a pipeline only the tree's own numbers are shown; with one, allocation sizes and tile
extents come from the plan.
"""

from __future__ import annotations

from .loopnest import LoopNest


def loopnest_to_str(root: LoopNest, pipeline=None) -> str:
    plan = None
    if pipeline is not None:
        from .plan import Plan

        plan = Plan(pipeline.dag, root, complete=False)
    lines: list[str] = []
    _node(root, plan, lines, 0, pipeline)
    return "\n".join(lines)


def _loop_names(n: LoopNest, plan, pipeline) -> list[str]:
    if pipeline is not None:
        return [l.name for l in pipeline.dag.stage(n.func, n.stage).loop]
    return [f"d{j}" for j in range(len(n.size))]


def _node(n: LoopNest, plan, lines: list[str], depth: int, pipeline) -> None:
    pad = " " * depth
    for f in n.store_at:
        if plan is not None:
            fp = plan.func(f)
            dims = " x ".join(str(e) for e in fp.storage_extents)
            note = " (sliding window)" if fp.sliding is not None else ""
            lines.append(f"{pad}allocate {f}[{dims}]{note}")
        else:
            lines.append(f"{pad}allocate {f}")
    for c in n.children:  # producers computed here, then this stage's next level
        _level(c, plan, lines, depth, pipeline)


def _level(n: LoopNest, plan, lines: list[str], depth: int, pipeline) -> None:
    names = _loop_names(n, plan, pipeline)
    stage = f"{n.func}" + (f".update({n.stage - 1})" if n.stage else "")
    lvl = plan.level(n) if plan is not None else None
    order = lvl.order if lvl is not None else tuple(reversed(range(len(n.size))))
    loops = [j for j in order if n.size[j] > 1]
    d = depth
    if n.parallel and loops:
        fused = " ".join(f"{stage}.{names[j]}" for j in loops)
        counts = " x ".join(str(n.size[j]) for j in loops)
        lines.append(f"{' ' * d}parallel for {fused} in [{counts}]:")
        d += 1
        loops = []
    for j in loops:
        kind = "for"
        if n.innermost and j == n.vectorized_loop:
            kind = "simd for"
        elif n.innermost and n.unrolled:
            kind = "unrolled for"
        elif n.kind.value in ("block", "thread"):  # GPU: the loop is a grid or block dimension
            kind = f"gpu_{n.kind.value} for"
        tile = ""
        if lvl is not None and lvl.loops[j].tile > 1:
            tile = f"   # tiles of {lvl.loops[j].tile}"
        lines.append(f"{' ' * d}{kind} {stage}.{names[j]} in [0, {n.size[j]}):{tile}")
        d += 1
    if n.innermost:
        inl = "".join(f", inlining {f} x{k}" for f, k in n.inlined)
        lines.append(f"{' ' * d}compute {stage}{inl}")
    else:
        _node(n, plan, lines, d, pipeline)


def to_halide_schedule(root: LoopNest, pipeline) -> str:
    """Halide scheduling directives (C++ syntax) for the schedule the Halide backend builds: the same
    splits, reorders, fused parallel loop, vectorize / unroll and compute / store sites as
    backends/halide/schedule.py, so what `python -m scheduler halide_schedule=true` prints is what runs.
    A split of loop `x` at level d makes `x_d` (outer) and `x_{d+1}` (inner); an update stage's names
    carry `_u<k>`; a level whose loop runs once makes no Var, and later levels keep the last name."""
    from .plan import Plan

    plan = Plan(pipeline.dag, root)
    loops = {id(ch): _chain_directives(ch) for fp in plan.funcs.values() if not fp.inlined for ch in fp.chains}
    out: list[str] = []
    for f in plan.inlined:
        out.append(f"{f}.compute_inline();")
    for name, fp in plan.funcs.items():
        if fp.inlined:
            continue
        site = "compute_root()" if fp.site.is_root else _at(plan, fp.site, "compute_at", loops)
        store = ""
        if fp.store is not fp.site:
            store = ".store_root()" if fp.store.is_root else "." + _at(plan, fp.store, "store_at", loops)
        out.append(f"{name}.{site}{store};")
        for ch in fp.chains:
            parts = loops[id(ch)][0]
            if parts:
                s = name if ch.stage.index == 0 else f"{name}.update({ch.stage.index - 1})"
                out.append(f"{s}." + ".".join(parts) + ";")
    return "\n".join(out)


def _chain_directives(ch) -> tuple[list[str], list[str | None]]:
    """(the directives of one stage, the innermost Var of each of its levels: None where no loop runs)."""
    n = len(ch.levels)
    tag = "" if ch.stage.index == 0 else f"_u{ch.stage.index - 1}"
    by_level: list[dict[int, str]] = [{} for _ in range(n)]
    split: set[int] = set()
    parts: list[str] = []

    def tail(j: int, d: int) -> str:  # as backends.halide.schedule._tail
        shift = ch.stage.index == 0 and (d > 0 or ch.exact[j])
        return f"TailStrategy::{'ShiftInwards' if shift else 'GuardWithIf'}"

    for j, loop in enumerate(ch.stage.loop):
        cur = loop.name
        if loop.pure:
            for d in range(n - 1):
                lp = ch.levels[d].loops[j]
                if lp.count > 1:
                    outer, inner = f"{loop.name}{tag}_{d}", f"{loop.name}{tag}_{d + 1}"
                    parts.append(f"split({cur}, {outer}, {inner}, {lp.tile}, {tail(j, d)})")
                    by_level[d][j] = outer
                    cur = inner
                    split.add(j)
        by_level[n - 1][j] = cur
    order = [(d, by_level[d][j]) for d in range(n) for j in ch.levels[d].order if j in by_level[d]]
    if len(order) > 1:
        parts.append(f"reorder({', '.join(v for _, v in reversed(order))})")
    node = ch.levels[-1].node
    for j, loop in enumerate(ch.stage.loop):
        size = node.size[j]
        if not loop.pure or size <= 1 or (j != node.vectorized_loop and not node.unrolled):
            continue
        verb = "vectorize" if j == node.vectorized_loop else "unroll"
        v = by_level[n - 1][j]
        parts.append(f"{verb}({v})" if j in split else f"{verb}({v}, {size}, {tail(j, n - 1)})")
    innermost: list[str | None] = [None] * n
    for d, v in order:
        innermost[d] = v
    level0 = [v for d, v in order if d == 0]
    if ch.levels[0].node.parallel and level0:
        fused = level0[0]
        for k, v in enumerate(level0[1:]):
            parts.append(f"fuse({v}, {fused}, par{tag}_{k})")
            fused = f"par{tag}_{k}"
        parts.append(f"parallel({fused})")
        innermost[0] = fused
    return parts, innermost


def _at(plan, node: LoopNest, verb: str, loops: dict) -> str:
    """compute_at / store_at the loop of `node`: the innermost Var of its level, or of the nearest enclosing
    level that has one (a level whose loops all run once has no Halide loop; the enclosing one is the same
    place), as backends.halide.schedule._loop_level; store_root / compute_root when none has one."""
    while not node.is_root:
        lvl = plan.level(node)
        innermost = loops[id(lvl.chain)][1]
        for d in range(lvl.depth, -1, -1):
            if innermost[d] is not None:
                return f"{verb}({lvl.chain.func}, {innermost[d]})"
        node = lvl.chain.site
    return verb.replace("_at", "_root") + "()"