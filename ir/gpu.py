"""The structure of GPU LoopNests (anderson2021 §5-6): where loops run and where Funcs live.

A Func computed at root on a CUDA target is one kernel per stage: the outermost level of its chain is its
BLOCK loops (the grid), and everything inside runs per block. Inside a block, a THREAD level's pure loops are
the threads of the block; code outside any THREAD level is block-level (uniform over the block's threads).
Storage follows from where a Func is allocated: at root, global memory; inside a block but outside any THREAD
level, shared memory (one tile per block); at or inside a THREAD level, registers (one tile per thread).

`cuda_rules(plan)` is the legality check `ir.target` registers for CUDA targets; the CUDA backend's lowering and
the GPU features read the same queries, so they never disagree about what runs where.
"""

from __future__ import annotations

import math

from .loopnest import LoopKind, LoopNest

GLOBAL, SHARED, REGISTER = "global", "shared", "register"


def in_thread(plan, n: LoopNest | None) -> bool:
    """n is a THREAD level or lies inside one: its code runs once per thread."""
    while n is not None and not n.is_root:
        if n.kind is LoopKind.THREAD:
            return True
        n = plan.parent[id(n)]
    return False


def memory_space(plan, fp) -> str:
    """Where a computed Func's allocation lives: global (stored at root), shared (inside a block, outside thread
    loops) or register (at or inside a thread level)."""
    store = fp.store
    if store is None or store.is_root:
        return GLOBAL
    return REGISTER if in_thread(plan, store) else SHARED


def threads_of(lvl) -> int:
    """Threads a THREAD level runs: the product of its pure loops' iterations."""
    return math.prod(l.count for l in lvl.loops if l.pure)


def cuda_rules(plan) -> str | None:
    """Why a plan is not a legal GPU schedule for its CUDA target, or None (anderson2021 §5: block loops outermost
    at root, one level of thread loops inside, storage by level; the target's threads and shared memory)."""
    t = plan.target
    shared: dict[int, int] = {}  # per kernel (the root chain a Func is stored in): bytes of shared memory
    for fp in plan.funcs.values():
        if fp.inlined:
            continue
        if fp.store is not None and fp.site is not None and fp.store is not fp.site:
            return (f"{fp.name}: storage hoisted out of its compute level (a sliding window) is not supported on "
                    f"{t.name}; store it where it is computed")
        for ch in fp.chains:
            where = f"{fp.name}.s{ch.stage.index}"
            for lvl in ch.levels:
                n = lvl.node
                if n.kind is LoopKind.BLOCK and not (ch.site.is_root and lvl.depth == 0):
                    return f"{where}: only the outermost level of a Func computed at root runs as GPU blocks"
                if n.kind is LoopKind.THREAD:
                    if ch.site.is_root and lvl.depth == 0:
                        return f"{where}: a Func computed at root starts with block loops, then thread loops"
                    if in_thread(plan, plan.parent[id(n)]):
                        return f"{where}: thread loops inside thread loops; one level per chain runs as threads"
                    threads = threads_of(lvl)
                    if threads > t.max_threads_per_block:
                        return (f"{where}: {threads} threads per block exceed {t.name}'s max_threads_per_block "
                                f"{t.max_threads_per_block}")
            head = ch.levels[0].node if ch.levels else None
            if head is not None and ch.site.is_root and head.kind is not LoopKind.BLOCK:
                return f"{where}: a Func computed at root on {t.name} starts with block loops (kind block), not {head.kind.value}"
        if memory_space(plan, fp) == SHARED:
            k = id(kernel_head(plan, fp.store))
            shared[k] = shared.get(k, 0) + fp.allocation_points * fp.node.type.bytes
    most = max(shared.values(), default=0)
    if most > t.shared_memory_per_block:
        return (f"the Funcs stored at block levels need {most} bytes of shared memory per block, more than "
                f"{t.name}'s shared_memory_per_block {t.shared_memory_per_block}")
    return None


def kernel_head(plan, n: LoopNest) -> LoopNest:
    """The outermost level (a child of the root) of the kernel n runs in."""
    while True:
        p = plan.parent[id(n)]
        if p is None or p.is_root:
            return n
        n = p
