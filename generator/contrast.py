"""One-decision contrasts of a schedule: the same LoopNest with one level's parallel loop run serially, one
innermost level's SIMD lanes or unrolling turned off, or one computed Func inlined into its readers.

Why: a pipeline's beam and dropout samples differ in many decisions at once, so a model trained on them cannot
tell what one decision is worth. In the committed dataset the mostly-serial samples of a pipeline were not
slower than its mostly-parallel ones (1.08x), although serializing a pipeline's best schedule cost 1.0-1.9x
(docs/train.md). A contrast measured next to the schedule it came from is a labelled pair that differs in
exactly one decision, the kind of pair a ranking loss learns most from (adams2019 §5 samples near the beam
for the same reason: the model must rank the schedules a search actually compares).

Inlining is the decision models trained on the committed dataset got most wrong in search: the calibrated model
learned that inlined work costs 1.5x its analytical charge and computed camera_pipe's and bgu's Funcs instead,
2.1-2.7x slower measured (docs/train.md). An `inline` contrast inlines one computed Func whose levels hold no other
Func (a single pure definition that is not an output), so the pair prices what inlining it costs or saves. A
`compute` contrast is the other direction: one inlined Func computed instead, once per innermost tile of the one
stage that reads it (at root when that stage is not tiled), vectorized as the search would. With `inline` alone, a
dataset sampled by a model that computes what it should inline never shows that inlining was right: a beam sample
whose inlining is right yields no inline contrast, only its computed Funcs do.

Every contrast is a legal schedule of the same pipeline: each candidate is planned (ir.plan.Plan), and one
the plan rejects is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir.errors import ScheduleError
from ir.loopnest import LoopKind, LoopNest
from ir.symbolic import static_extent

# what a contrast changes, offered in turn: parallelism first (the decision the dataset could not separate),
# then inlining, then SIMD lanes, then unrolling: the default, which batches written before `compute` existed keep
DECISIONS = ("serial", "inline", "scalar", "rolled")
KINDS = ("serial", "inline", "compute", "scalar", "rolled")  # every kind a job may ask for (contrast_kinds)


def check_kinds(kinds) -> tuple[str, ...]:
    """`kinds` as a tuple of known contrast kinds, each once; a one-line ValueError naming what to fix."""
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds or len(set(kinds)) != len(kinds):
        raise ValueError(f"contrast_kinds must list distinct kinds among {', '.join(KINDS)}, got {list(kinds)}")
    return kinds


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


def _without(n: LoopNest, func: str) -> LoopNest:
    """`n` with every level of `func` and every allocation of it removed."""
    kids = tuple(_without(c, func) for c in n.children if c.func != func)
    store = tuple(f for f in n.store_at if f != func)
    if store == n.store_at and all(a is b for a, b in zip(kids, n.children)) and len(kids) == len(n.children):
        return n
    return n.replace(children=kids, store_at=store)


def _inline_contrasts(pipeline, loopnest: LoopNest) -> list[Contrast]:
    """`loopnest` with one computed Func inlined, for each one that can be inlined and whose levels hold no other
    Func (unplanned; `where` names the Func)."""
    from ir.builder import annotate_inlined

    dag = pipeline.dag
    inlined = loopnest.inlined_funcs()
    hosts = {p.func for n, p in loopnest.nodes() if p is not None and p.func is not None and n.func != p.func}
    return [Contrast("inline", f, annotate_inlined(_without(loopnest, f), dag, inlined | {f}))
            for f in loopnest.computed_funcs() if f not in hosts and dag.node(f).inlinable]


def _compute_contrasts(pipeline, loopnest: LoopNest, target) -> list[Contrast]:
    """`loopnest` with one inlined Func computed instead, for each inlined Func that one computed stage reads
    (directly or through other inlined Funcs): placed by the builder as the search places it, at that stage's
    innermost tiling level (at root when its chain has none), vectorized along its first dimension at least one
    native vector wide (unplanned; `where` names the Func)."""
    from ir.builder import FuncDecision, ScheduleBuilder, StageSpec, readers
    from ir.errors import ScheduleError
    from ir.plan import Plan

    dag = pipeline.dag
    inlined = loopnest.inlined_funcs()
    if not inlined:
        return []
    plan = Plan(dag, loopnest, target)
    builder = ScheduleBuilder(pipeline, target)
    out = []
    for f in sorted(inlined, key=lambda g: dag.nodes.index(dag.node(g))):  # consumers first, as decided
        rest = inlined - {f}
        reading = readers(dag, f, rest)
        if len(reading) != 1:
            continue
        ((consumer, cstage),) = reading
        chain = loopnest.find_chain(consumer, cstage)
        site = chain[-2] if len(chain) > 1 else loopnest
        region = plan.region_at(f, site)
        if region is None:
            continue
        node = dag.node(f)
        width = builder.target.natural_vector_size(node.type)
        v = next((d for d, (lo, hi) in enumerate(region) if static_extent(lo, hi, node.region_extent(d)) >= width), -1)
        specs = {0: StageSpec(vectorize=node.dims[v] if v >= 0 else None)}
        d = FuncDecision("at", consumer, cstage, len(chain) - 2, specs=specs) if len(chain) > 1 else \
            FuncDecision("root", specs=specs)
        try:
            out.append(Contrast("compute", f, builder.place(loopnest, f, d, frozenset(rest), plan=plan)))
        except ScheduleError:
            continue
    return out


def one_decision_contrasts(pipeline, loopnest: LoopNest, target, limit: int | None = None,
                           kinds: tuple[str, ...] = DECISIONS) -> list[Contrast]:
    """Legal schedules that each differ from `loopnest` in one decision: one level's loop kind, one Func inlined or
    one inlined Func computed; taken in turn from each of `kinds` (default DECISIONS: serial, inline, scalar,
    rolled), each in pre-order; at most `limit` (None: all)."""
    from ir.plan import Plan

    kinds = check_kinds(kinds)
    found: dict[str, list[Contrast]] = {d: [] for d in KINDS}
    depth: dict[int, int] = {}
    for n, p in loopnest.nodes():
        if n.is_root:
            continue
        same = p is not None and (p.func, p.stage) == (n.func, n.stage)
        depth[id(n)] = depth[id(p)] + 1 if same else 0
        for decision, variant in _variants(n):
            found[decision].append(Contrast(decision, f"{n.func}.s{n.stage} depth {depth[id(n)]}",
                                            loopnest.replace_node(n, variant)))
    if "inline" in kinds:
        found["inline"] = _inline_contrasts(pipeline, loopnest)
    if "compute" in kinds:
        found["compute"] = _compute_contrasts(pipeline, loopnest, target)
    out: list[Contrast] = []
    seen = {loopnest.fingerprint}
    # round robin over the kinds, so that a few contrasts cover several kinds of decision
    ordered = [found[d][k] for k in range(max(map(len, found.values()))) for d in kinds if k < len(found[d])]
    for c in ordered:
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
