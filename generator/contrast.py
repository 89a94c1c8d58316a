"""One-decision contrasts of a schedule: the same LoopNest with one level's parallel loop run serially, or one
innermost level's SIMD lanes or unrolling turned off.

Why: a pipeline's beam and dropout samples differ in many decisions at once, so a model trained on them cannot
tell what one decision is worth. In the committed dataset the mostly-serial samples of a pipeline were not
slower than its mostly-parallel ones (1.08x), although serializing a pipeline's best schedule cost 1.0-1.9x
(docs/train.md). A contrast measured next to the schedule it came from is a labelled pair that differs in
exactly one decision, the kind of pair a ranking loss learns most from (adams2019 §5 samples near the beam
for the same reason: the model must rank the schedules a search actually compares).

Every contrast is a legal schedule of the same pipeline: each candidate is planned (ir.plan.Plan), and one
the plan rejects is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir.errors import ScheduleError
from ir.loopnest import LoopKind, LoopNest

# what a contrast turns off, in the order they are offered: parallelism first (the decision the dataset
# could not separate), then SIMD lanes, then unrolling
DECISIONS = ("serial", "scalar", "rolled")


@dataclass(frozen=True)
class Contrast:
    decision: str  # one of DECISIONS
    where: str  # the level changed: <func>.s<stage> at depth <d> of its chain
    loopnest: LoopNest


def _variants(n: LoopNest) -> list[tuple[str, LoopNest]]:
    out = []
    if n.kind is LoopKind.PARALLEL:  # a vectorized innermost level stays vectorized (normalized by LoopNest)
        out.append(("serial", n.replace(kind=LoopKind.SERIAL)))
    if n.innermost and n.vectorized_loop >= 0:
        kind = LoopKind.SERIAL if n.kind is LoopKind.VECTORIZED else n.kind
        out.append(("scalar", n.replace(vectorized_loop=-1, kind=kind)))  # storage layout (vector_dim) kept
    if n.kind is LoopKind.UNROLLED:
        out.append(("rolled", n.replace(kind=LoopKind.SERIAL)))  # its SIMD loop, if any, stays
    return out


def one_decision_contrasts(pipeline, loopnest: LoopNest, target, limit: int | None = None) -> list[Contrast]:
    """Legal schedules that each differ from `loopnest` in one level's loop kind, parallel levels first, then
    pre-order; at most `limit` (None: all)."""
    from ir.plan import Plan

    found: dict[str, list[Contrast]] = {d: [] for d in DECISIONS}
    depth: dict[int, int] = {}
    for n, p in loopnest.nodes():
        if n.is_root:
            continue
        same = p is not None and (p.func, p.stage) == (n.func, n.stage)
        depth[id(n)] = depth[id(p)] + 1 if same else 0
        for decision, variant in _variants(n):
            found[decision].append(Contrast(decision, f"{n.func}.s{n.stage} depth {depth[id(n)]}",
                                            loopnest.replace_node(n, variant)))
    out: list[Contrast] = []
    seen = {loopnest.fingerprint}
    for c in (c for d in DECISIONS for c in found[d]):
        if limit is not None and len(out) >= limit:
            break
        if c.loopnest.fingerprint in seen:
            continue
        try:
            Plan(pipeline.dag, c.loopnest, target)
        except ScheduleError:
            continue
        seen.add(c.loopnest.fingerprint)
        out.append(c)
    return out
