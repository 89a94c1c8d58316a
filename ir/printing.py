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
    """Halide scheduling directives that express the same schedule (C++ syntax), for reading and for
    the Halide backend. Level k of a stage's loops are the Vars suffixed _k."""
    from .plan import Plan

    plan = Plan(pipeline.dag, root)
    out: list[str] = []
    for f in plan.inlined:
        out.append(f"{f}.compute_inline();")
    for name, fp in plan.funcs.items():
        if fp.inlined:
            continue
        site = "compute_root()" if fp.site.is_root else _at(plan, fp.site, "compute_at")
        store = ""
        if fp.store is not fp.site:
            store = ".store_root()" if fp.store.is_root else "." + _at(plan, fp.store, "store_at")
        out.append(f"{name}.{site}{store};")
        for ch in fp.chains:
            s = name if ch.stage.index == 0 else f"{name}.update({ch.stage.index - 1})"
            parts = []
            for lvl in ch.levels[:-1]:
                for j, lp in enumerate(lvl.loops):
                    if lp.count > 1 and ch.stage.loop[j].pure:
                        v = ch.stage.loop[j].name
                        parts.append(f"split({v}_{lvl.depth}, {v}_{lvl.depth}, {v}_{lvl.depth + 1}, {lp.tile}, "
                                     f"TailStrategy::{'ShiftInwards' if lp.tail == 'shift' else 'GuardWithIf'})")
            inner = ch.levels[-1].node
            if inner.vectorized_loop >= 0:
                v = ch.stage.loop[inner.vectorized_loop].name
                parts.append(f"vectorize({v}_{len(ch.levels) - 1})")
            if inner.unrolled:
                for j, l in enumerate(ch.stage.loop):
                    if j != inner.vectorized_loop and inner.size[j] > 1:
                        parts.append(f"unroll({l.name}_{len(ch.levels) - 1})")
            if ch.levels[0].node.parallel:
                for j, l in enumerate(ch.stage.loop):
                    if ch.levels[0].loops[j].count > 1:
                        parts.append(f"parallel({l.name}_0)")
            if parts:
                out.append(f"{s}." + ".".join(parts) + ";")
    return "\n".join(out)


def _at(plan, node: LoopNest, verb: str) -> str:
    lvl = plan.level(node)
    loops = [j for j in lvl.order if lvl.loops[j].count > 1]
    v = lvl.chain.stage.loop[loops[-1]].name if loops else lvl.chain.stage.loop[0].name
    return f"{verb}({node.func}, {v}_{lvl.depth})"
