"""Uniformly random valid LoopNests over the whole CPU schedule space, for property tests and fuzzing.

Each Func, from the outputs back, is inlined, computed at root, or computed at a random level of a
random computed consumer or (with `enclosing` > 0, the differential fuzzer's choice) of another Func's loops
enclosing all its computed consumers (the search space's enclosing levels), sometimes with its storage
hoisted outward (a sliding window), with random
multi-level tiles (sizes that do and do not divide their region), a random vectorized dimension and
width, small unrolled extents and, at root, a parallel outer level. Decisions that turn out illegal are
redrawn. The cost-model-guided sampler used for training data lives in the scheduler.
"""

from __future__ import annotations

import random

from .builder import FuncDecision, ScheduleBuilder, StageSpec
from .loopnest import LoopNest, common_path


def random_loopnest(pipeline, seed: int, target=None, enclosing: float = 0.0) -> LoopNest:
    return random_schedule(pipeline, seed, target, enclosing)[0]


def random_schedule(pipeline, seed: int, target=None,
                    enclosing: float = 0.0) -> tuple[LoopNest, dict[str, FuncDecision]]:
    """A random valid LoopNest and the per-Func decisions it was built from. `enclosing`: the probability that a Func
    computed at a consumer's level goes to an enclosing Func's level instead, where there is one; 0 draws the same
    schedules for a seed as before such levels were sampled (the synthetic training sets of the tests rest on them)."""
    rng = random.Random(seed)
    b = ScheduleBuilder(pipeline, target)
    dag = pipeline.dag

    def decide(func: str, tree: LoopNest) -> FuncDecision:
        node = dag.node(func)
        r = rng.random()
        if node.inlinable and r < 0.3:
            return FuncDecision("inline")
        specs = {0: _random_spec(rng, node)}
        computed = [c for c in node.consumers if _chain_or_none(tree, c) is not None]
        if not node.is_output and computed and r < 0.75:
            consumer = rng.choice(computed)
            stages = [s.index for s in dag.node(consumer).stages
                      if any(a.producer == func for a in s.accesses)] or [0]
            cs = rng.choice(stages)
            chain = _chain_or_none(tree, consumer, cs)
            if chain is not None and enclosing and rng.random() < enclosing:
                around = _enclosing_levels(tree, [c for c in computed if c != consumer], chain)
                if around:
                    specs[0].parallel = False
                    return FuncDecision("at", *rng.choice(around), None, specs)
            if chain is not None and len(chain) > 1:
                level = rng.randrange(len(chain) - 1)
                store = None
                specs[0].parallel = False
                moving = sum(s > 1 for s in chain[level].size)
                if moving == 1 and len(node.stages) == 1 and rng.random() < 0.5:
                    # a sliding window: storage one level out, along the level's single moving loop
                    store = level - 1
                    specs[0].tiles = []
                elif rng.random() < 0.2:
                    store = rng.choice([-1] + list(range(level + 1)))
                return FuncDecision("at", consumer, cs, level, store, specs)
        return FuncDecision("root", specs=specs)

    tree = b.build(decide=decide, attempts=6)
    return tree, dict(b.applied)


def _chain_or_none(tree: LoopNest, func: str, stage: int = 0):
    try:
        return tree.find_chain(func, stage)
    except KeyError:
        return None


def _enclosing_levels(tree: LoopNest, others: list[str], chain: list[LoopNest]) -> list[tuple[str, int, int]]:
    """(func, stage, level) of the levels of other Funcs' loops above `chain` (a consumer's) that also enclose every
    stage of the `others` (the remaining computed consumers); the root excluded."""
    heads = [chain[0]] + [head for head, _ in tree.chain_heads() if head.func in others]
    out = []
    for m in common_path([tree.path_to(h)[1:-1] for h in heads]):
        levels = tree.find_chain(m.func, m.stage)
        out.append((m.func, m.stage, next(i for i, x in enumerate(levels) if x is m)))
    return out


def _random_spec(rng: random.Random, node) -> StageSpec:
    dims = node.dims
    ext = [node.region_extent(d) for d in range(node.dimensions)]
    tiles = []
    prev = list(ext)
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        t = {}
        for d, v in enumerate(dims):
            if rng.random() < 0.6:
                choice = rng.choice([1, 2, 3, 4, 5, 7, 8, 16, max(1, prev[d] // 2), prev[d]])
                t[v] = max(1, min(choice, prev[d]))
        if t:
            tiles.append(t)
            prev = [t.get(v, prev[d]) for d, v in enumerate(dims)]
    spec = StageSpec(tiles=tiles)
    vec_dims = [0] if node.is_output else list(range(node.dimensions))
    if rng.random() < 0.6:
        d = rng.choice(vec_dims)
        spec.vectorize = dims[d]
        spec.vector_width = rng.choice([2, 4, 8, 16])
    if rng.random() < 0.25:
        d = rng.randrange(node.dimensions)
        if dims[d] != spec.vectorize:
            spec.unroll = {dims[d]: rng.choice([2, 3, 4])}
    spec.parallel = bool(tiles) and rng.random() < 0.5
    return spec
