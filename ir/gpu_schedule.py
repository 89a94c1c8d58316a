"""GPU LoopNests: hand-written ones (GpuScheduleBuilder), random ones for the CUDA fuzzer, from tiled schedules.

A schedule is tiled with the CPU builder (the shapes are the same on both kinds of machines), then its levels
are given GPU loop kinds by anderson2021 §5's rules (`gpu_kinds`): a Func computed at root runs its outermost
level as blocks and its first level below that which fits in a block as threads; a Func computed inside a block
but outside thread loops runs its first level that fits as threads (its tile then lives in shared memory); a
Func computed inside a thread runs serially in that thread (registers). SIMD stays at the innermost level of a
thread. `random_gpu_loopnest` draws random tilings, placements and inlining and keeps what is legal on the
target, as `ir.sampling` does for CPUs.
"""

from __future__ import annotations

import math
import random

from .builder import FuncDecision, ScheduleBuilder, StageSpec
from .errors import ScheduleError
from .loopnest import LoopKind, LoopNest
from .plan import Plan
from .target import get_target


def gpu_kinds(tree: LoopNest, target) -> LoopNest:
    """`tree` (any kinds) with GPU loop kinds: blocks, threads, serial, SIMD, by where each level runs."""
    limit = get_target(target).max_threads_per_block

    def visit(n: LoopNest, ctx: str) -> LoopNest:
        # ctx: where n's code runs: "root", "block" (inside a block, outside thread loops) or "thread"
        pure_threads = math.prod(n.size)
        if n.is_root:
            return n.with_children(tuple(visit(c, "root") for c in n.children))
        if ctx == "root":
            kind, inner = LoopKind.BLOCK, "block"
        elif ctx == "block" and pure_threads <= limit and not (n.innermost and n.vectorized_loop >= 0):
            kind, inner = LoopKind.THREAD, "thread"
        else:
            inner = ctx
            if n.innermost and n.vectorized_loop >= 0:
                kind = LoopKind.SIMD if ctx == "thread" else LoopKind.SERIAL
            elif n.innermost and n.kind is LoopKind.UNROLLED:
                kind = LoopKind.UNROLLED
            else:
                kind = LoopKind.SERIAL
        vec = n.vectorized_loop if kind in (LoopKind.SIMD, LoopKind.UNROLLED) else -1
        children = [visit(c, inner) for c in n.children]
        return LoopNest(func=n.func, stage=n.stage, size=n.size, children=tuple(children), inlined=n.inlined,
                        store_at=n.store_at, innermost=n.innermost, kind=kind, vector_dim=n.vector_dim,
                        vectorized_loop=vec)

    return visit(tree, "root")


class GpuScheduleBuilder:
    """Hand-written GPU schedules in Halide's vocabulary (gpu_tile, compute_at a block or a thread):

        s = GpuScheduleBuilder(p, "h100")
        s.gpu_tile("blur_y", {"x": 32, "y": 16}, per_thread={"y": 2})  # 32x16-point blocks, 32x8 threads, 2 rows each
        s.compute_at_block("blur_x", "blur_y")  # one tile per block in shared memory, a point per thread
        loopnest = s.build()

    Funcs given no decision are inlined when they can be, and computed at root otherwise; `build` checks the
    result against the target (threads per block, shared memory) with `Plan`.
    """

    def __init__(self, pipeline, target="h100"):
        self.pipeline = pipeline
        self.target = get_target(target)
        self.builder = ScheduleBuilder(pipeline)  # tile shapes are the same on every kind of target

    def gpu_tile(self, func: str, block: dict[str, int], per_thread: dict[str, int] | None = None,
                 stages: dict[int, StageSpec] | None = None) -> "GpuScheduleBuilder":
        """Compute `func` at root in blocks of `block` points; each thread computes `per_thread` of them (one
        point by default; 1 along the block's dimensions per_thread does not name). `stages` overrides the tiling of update stages (their RVars run inside the thread)."""
        tiles = [block] + ([{**{v: 1 for v in block}, **per_thread}] if per_thread else [])
        self.builder.root(func, stages=stages, tiles=tiles)
        return self

    def compute_at_block(self, func: str, consumer: str, per_thread: dict[str, int] | None = None,
                         consumer_stage: int = 0) -> "GpuScheduleBuilder":
        """Compute the tile of `func` each block of `consumer` needs, by the block's threads, into shared memory."""
        self.builder.compute_at(func, consumer, 0, consumer_stage=consumer_stage,
                                tiles=[per_thread] if per_thread else [])
        return self

    def compute_at_thread(self, func: str, consumer: str, consumer_stage: int = 0) -> "GpuScheduleBuilder":
        """Compute what each thread of `consumer` needs of `func`, serially in that thread, into registers
        (`consumer` must have been tiled with per_thread)."""
        self.builder.compute_at(func, consumer, 1, consumer_stage=consumer_stage)
        return self

    def inline(self, func: str) -> "GpuScheduleBuilder":
        self.builder.inline(func)
        return self

    def build(self) -> LoopNest:
        tree = gpu_kinds(self.builder.build(), self.target)
        Plan(self.pipeline.dag, tree, self.target)
        return tree


def random_gpu_loopnest(pipeline, seed: int, target="h100", attempts: int = 20) -> LoopNest:
    """A random GPU LoopNest that `Plan` accepts for `target` (drawn again, up to `attempts` times, when its
    shared memory or threads exceed the target's limits)."""
    t = get_target(target)
    last = None
    for k in range(attempts):
        rng = random.Random(seed * 7919 + k)
        tree = _random_tiled(pipeline, rng)
        gpu = gpu_kinds(tree, t)
        try:
            Plan(pipeline.dag, gpu, t)
            return gpu
        except ScheduleError as e:
            last = e
    raise ScheduleError(f"no legal GPU schedule for {t.name} in {attempts} draws from seed {seed}: {last}")


def _random_tiled(pipeline, rng: random.Random) -> LoopNest:
    dag = pipeline.dag
    b = ScheduleBuilder(pipeline)

    def decide(func: str, tree: LoopNest) -> FuncDecision:
        node = dag.node(func)
        r = rng.random()
        if node.inlinable and r < 0.3:
            return FuncDecision("inline")
        computed = [c for c in node.consumers if tree.scheduled_funcs() and _has_chain(tree, c)]
        if not node.is_output and computed and r < 0.7:
            consumer = rng.choice(computed)
            stages = [s.index for s in dag.node(consumer).stages if any(a.producer == func for a in s.accesses)] or [0]
            cs = rng.choice(stages)
            chain = tree.find_chain(consumer, cs)
            if len(chain) > 1:
                level = rng.randrange(len(chain) - 1)
                return FuncDecision("at", consumer, cs, level, None, {0: _spec(rng, node, root=False)})
        return FuncDecision("root", specs={0: _spec(rng, node, root=True)})

    return b.build(decide=decide, attempts=6)


def _has_chain(tree: LoopNest, func: str) -> bool:
    try:
        tree.find_chain(func, 0)
        return True
    except KeyError:
        return False


def _spec(rng: random.Random, node, root: bool) -> StageSpec:
    """Random tiles: at root, block tiles and usually thread tiles inside them; elsewhere zero to two levels."""
    dims = node.dims
    prev = [node.region_extent(d) for d in range(node.dimensions)]
    tiles = []
    levels = rng.choice([1, 2, 2]) if root else rng.choice([0, 1, 1, 2])
    for _ in range(levels):
        t = {}
        for d, v in enumerate(dims):
            if rng.random() < 0.8:
                t[v] = max(1, min(rng.choice([1, 2, 3, 4, 8, 16, 32, max(1, prev[d] // 2)]), prev[d]))
        if t:
            tiles.append(t)
            prev = [t.get(v, prev[d]) for d, v in enumerate(dims)]
    spec = StageSpec(tiles=tiles)
    if rng.random() < 0.3:
        d = 0 if node.is_output else rng.randrange(node.dimensions)
        spec.vectorize = dims[d]
        spec.vector_width = rng.choice([2, 4])
    elif rng.random() < 0.2:
        spec.unroll = {dims[rng.randrange(node.dimensions)]: rng.choice([2, 3])}
    return spec
