"""Writing schedules by hand: Halide-style decisions per Func, turned into a valid LoopNest.

    s = ScheduleBuilder(pipeline)
    s.root("blur_y", tiles=[{"x": 256, "y": 32}], vectorize="x", parallel=True)
    s.compute_at("blur_x", "blur_y", level=1, vectorize="x")
    loopnest = s.build()

Decisions are applied from the outputs toward the inputs, as the search makes them (adams2019
§3.1), so each Func's region at its chosen level is known when its loops are tiled. `tiles` lists
tile extents from the outermost level inwards; a vectorized dimension gets an innermost level of one
SIMD vector; `unroll` fully unrolls small innermost extents. Funcs given no decision are inlined when
they can be, and computed at root otherwise (Halide's default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .dag import FunctionDAG, Stage
from .errors import ScheduleError
from .loopnest import PARALLEL, SERIAL, UNROLLED, LoopNest
from .plan import Plan, _inlined_calls_cached
from .target import Target, get_target

try:
    import cython
except ImportError:  # pure Python without Cython: the typing decorators do nothing
    from .cython_pure import cython

if not cython.compiled:  # run as Python (compiled, ir/builder.pxd cimports it: a C call)
    from .symbolic import static_extent


@dataclass(slots=True)
class StageSpec:
    tiles: list[dict[str, int]] = field(default_factory=list)  # outermost first: Var -> tile extent
    vectorize: str | None = None  # the Var run as SIMD lanes
    vector_width: int | None = None  # default: the target's native width for the Func's type
    unroll: dict[str, int] = field(default_factory=dict)  # Var -> extent unrolled in the innermost level
    parallel: bool = False  # run the outermost level in parallel (compute_root Funcs only)


@dataclass(slots=True)
class FuncDecision:
    kind: str  # "root" | "at" | "inline"
    consumer: str | None = None
    consumer_stage: int = 0
    level: int = 0
    store_level: int | None = None  # a coarser level of the same consumer chain; -1 = root
    specs: dict[int, StageSpec] = field(default_factory=dict)  # per stage; stage 0's applies to all by default


class ScheduleBuilder:
    def __init__(self, pipeline, target: str | Target | None = None):
        self.pipeline = pipeline
        self.dag: FunctionDAG = pipeline.dag
        self.target = get_target(target)
        self.decisions: dict[str, FuncDecision] = {}
        self.applied: dict[str, FuncDecision] = {}  # what build() used for every Func
        self._shapes: dict[tuple, tuple] = {}  # _chain's levels by what they depend on (search asks again and again)
        self._sites: tuple | None = None  # (the plan placed on last, _site's answers on it by placement)

    # -- decisions -------------------------------------------------------------------------------

    def root(self, func: str, *, stages: dict[int, StageSpec] | None = None, **spec) -> ScheduleBuilder:
        """Compute (and store) `func` at root, over its whole required region."""
        self._decide(func, FuncDecision("root", specs=self._specs(func, stages, spec)))
        return self

    def compute_at(self, func: str, consumer: str, level: int, *, consumer_stage: int = 0,
                   store_level: int | None = None, stages: dict[int, StageSpec] | None = None,
                   **spec) -> ScheduleBuilder:
        """Compute `func` once per iteration of level `level` (0 = outermost) of `consumer`'s loops.

        store_level: allocate it at a coarser level of the same chain (-1 for root) to make it a
        sliding window along the one loop in between.
        """
        if consumer not in self.dag:
            raise ScheduleError(f"compute_at({func!r}, {consumer!r}): {consumer} is not a Func of the pipeline")
        self._decide(func, FuncDecision("at", consumer, consumer_stage, level, store_level,
                                        self._specs(func, stages, spec)))
        return self

    def inline(self, func: str) -> ScheduleBuilder:
        self._decide(func, FuncDecision("inline"))
        return self

    def _decide(self, func: str, d: FuncDecision) -> None:
        if func not in self.dag:
            raise ScheduleError(f"{func} is not a Func of the pipeline")
        self.decisions[func] = d

    def _specs(self, func: str, stages, spec: dict) -> dict[int, StageSpec]:
        try:
            base = StageSpec(**spec)
        except TypeError as e:
            raise ScheduleError(f"{func}: {e}") from None
        out = {0: base}
        for k, v in (stages or {}).items():
            out[k] = v if isinstance(v, StageSpec) else StageSpec(**v)
        return out

    # -- building --------------------------------------------------------------------------------

    def build(self, decide=None, attempts: int = 4) -> LoopNest:
        """The LoopNest of all decisions. `decide(func, tree)` may supply decisions not given
        explicitly (it is asked again, up to `attempts` times, when its decision is not legal);
        Funcs with no decision get Halide's default."""
        tree = LoopNest()
        inlined: set[str] = set()
        for node in self.dag.nodes:  # outputs first, as the search decides
            tree = self._decide_and_place(tree, node, inlined, decide, attempts)
        Plan(self.dag, tree, self.target)
        return tree

    def _decide_and_place(self, tree: LoopNest, node, inlined: set[str], decide, attempts: int) -> LoopNest:
        default = FuncDecision("inline") if node.inlinable else FuncDecision("root", specs={0: StageSpec()})
        given = self.decisions.get(node.name)
        tries = [given] if given is not None else []
        if given is None and decide is not None:
            tries = [decide(node.name, tree) for _ in range(attempts)]
        for k, d in enumerate(tries + [default]):
            if d is None:
                continue
            try:
                new = self._apply(tree, node, d, inlined)
                self.applied[node.name] = d
                return new
            except ScheduleError:
                if d is given or k == len(tries):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _apply(self, tree: LoopNest, node, d: FuncDecision, inlined: set[str]) -> LoopNest:
        new = self.place(tree, node.name, d, frozenset(inlined))
        if d.kind == "inline":
            inlined.add(node.name)
        else:
            Plan(self.dag, new, complete=False)  # reject a placement that is not legal (e.g. a bad slide)
        return new

    def place(self, tree: LoopNest, func: str, d: FuncDecision, inlined: frozenset[str],
              plan: Plan | None = None) -> LoopNest:
        """`tree` with one more Func placed by decision `d`, unchecked: the search validates the result with
        Plan.extend from `plan` (the partial plan of `tree`, reused here for the region at the site)."""
        if d.kind == "inline":
            if not self.dag.node(func).inlinable:
                raise ScheduleError(f"{func} cannot be inlined (it is an output or has updates)")
            return annotate_inlined(tree, self.dag, set(inlined) | {func})
        return self._place(tree, func, d, frozenset(inlined), plan)

    @cython.locals(plan="Plan", tree="LoopNest", site="LoopNest")
    def _place(self, tree: LoopNest, func: str, d: FuncDecision, inlined: frozenset[str],
               plan: Plan | None = None) -> LoopNest:
        plan = plan if plan is not None and plan.root is tree else Plan(self.dag, tree, complete=False)
        sites = self._sites
        if sites is None or sites[0] is not plan:  # a new parent: its plan's sites (siblings share theirs)
            sites = self._sites = (plan, {})
        where = (func, d.kind, d.consumer, d.consumer_stage, d.level, d.store_level)
        hit = sites[1].get(where)
        if hit is None:
            hit = sites[1][where] = self._site(tree, func, d, plan)
        site_path, store_path, extents = hit
        v = self._vector_dim(func, d)
        node = self.dag.node(func)
        calls = _inlined_calls_cached(self.dag, inlined)
        heads = [self._chain(func, s, d.specs.get(s.index, _for_update(d.specs[0], s)), extents, v, d.kind == "root",
                             tuple(sorted(calls.get((func, s.index), {}).items())))
                 for s in node.stages]
        tree = _insert(tree, site_path, store_path, heads, func, self.dag, inlined, plan)
        # with the plan's inlined Funcs every other innermost level's list was checked, and the new ones have theirs
        return tree if plan.inlined == inlined else annotate_inlined(tree, self.dag, inlined)

    @cython.locals(plan="Plan", tree="LoopNest", site="LoopNest")
    def _site(self, tree: LoopNest, func: str, d: FuncDecision, plan: Plan) -> tuple:
        """(nodes from the root down to the compute site, the same to the store site, the extents of the region
        computed there) of placing `func` by `d` in `tree`, whose plan is `plan`: what its tiling siblings share."""
        if d.kind == "root":
            site_path = [tree]
            store_path = site_path
        else:
            chain = _find_chain(plan, d.consumer, d.consumer_stage, func)
            if not 0 <= d.level < len(chain) - 1:
                raise ScheduleError(f"compute_at({func!r}, {d.consumer!r}, level={d.level}): {d.consumer} has "
                                    f"levels 0..{len(chain) - 2} to compute at (the innermost computes points)")
            site_path = tree.path_to(chain[d.level])
            if d.store_level is None:
                store_path = site_path
            elif d.store_level == -1:
                store_path = [tree]
            elif 0 <= d.store_level <= d.level:
                store_path = tree.path_to(chain[d.store_level])
            else:
                raise ScheduleError(f"{func}: store_level must be -1 (root) or 0..{d.level}")
        site = site_path[-1]
        region = plan.region_at(func, site)
        if region is None:
            raise ScheduleError(f"{func}: nothing reads it inside level {d.level} of {d.consumer}")
        node = self.dag.node(func)
        extents = [static_extent(lo, hi, node.region_extent(k)) for k, (lo, hi) in enumerate(region)]
        return site_path, store_path, extents

    def _vector_dim(self, func: str, d: FuncDecision) -> int:
        var = d.specs[0].vectorize
        if var is None:
            return -1
        dims = self.dag.node(func).dims
        if var not in dims:
            raise ScheduleError(f"{func}: cannot vectorize {var}; its dimensions are {dims}")
        return dims.index(var)

    def _chain(self, func: str, stage: Stage, spec: StageSpec, extents: list[int], v: int,
               at_root: bool, inlined: tuple[tuple[str, int], ...] = ()) -> LoopNest:
        """The levels of one stage: the region, the requested tiles, then one SIMD vector with the
        unrolled extents (or, with neither, the innermost level iterates the whole last tile); the innermost
        level lists `inlined` (annotate_inlined's list for it)."""
        key = (func, stage.index, tuple([tuple(t.items()) for t in spec.tiles]), spec.vectorize, spec.vector_width,
               tuple(spec.unroll.items()), spec.parallel, tuple(extents), v, at_root)
        shape = self._shapes.get(key)
        if shape is None:
            if len(self._shapes) >= 50_000:
                self._shapes.clear()
            shape = self._shapes[key] = self._chain_shape(func, stage, spec, extents, v, at_root)
        sizes, vj, inner_kind, outer_kind = shape
        node = None
        last = len(sizes) - 1
        for depth in range(last, -1, -1):
            innermost = depth == last
            kind = outer_kind if depth == 0 else inner_kind if innermost else SERIAL
            node = LoopNest(func=func, stage=stage.index, size=sizes[depth], children=() if innermost else (node,),
                            inlined=inlined if innermost else (), innermost=innermost, kind=kind, vector_dim=v,
                            vectorized_loop=vj if innermost else -1)
        assert node is not None
        return node

    def _chain_shape(self, func: str, stage: Stage, spec: StageSpec, extents: list[int], v: int,
                     at_root: bool) -> tuple:
        """(sizes per level outermost first, the SIMD loop, the innermost level's kind, the outermost's): what
        _chain builds, checked."""
        names = [l.name for l in stage.loop]
        pure = [l.pure for l in stage.loop]
        for var in [k for t in spec.tiles for k in t] + list(spec.unroll):
            if var not in names or not pure[names.index(var)]:
                raise ScheduleError(f"{func}.s{stage.index}: {var} is not a pure loop of this stage ({names})")
        full = [extents[l.func_dim] if l.pure else l.rdom_range[1] - l.rdom_range[0] + 1 for l in stage.loop]
        vj = stage.pure_loop_of_dim(v) if v >= 0 and spec.vectorize is not None else -1
        reqs = [full]
        for t in spec.tiles:
            reqs.append([min(t.get(n, reqs[-1][j]), reqs[-1][j]) if pure[j] else full[j] for j, n in enumerate(names)])
        if vj >= 0 or spec.unroll:
            inner = [1 if pure[j] else full[j] for j in range(len(names))]
            for var, k in spec.unroll.items():
                inner[names.index(var)] = min(k, full[names.index(var)])
            if vj >= 0:
                width = spec.vector_width or self.target.natural_vector_size(self.dag.node(func).type)
                if width > reqs[-1][vj]:
                    raise ScheduleError(f"{func}.s{stage.index}: vector width {width} exceeds the "
                                        f"{reqs[-1][vj]} points of {names[vj]} in its innermost tile")
                inner[vj] = width
            reqs.append(inner)
        if spec.parallel and len(reqs) < 2:
            raise ScheduleError(f"{func}: parallel needs at least one level of tiles to run in parallel")
        if spec.parallel and not at_root:
            raise ScheduleError(f"{func}: only Funcs computed at root run in parallel")
        sizes = [list(reqs[-1])]
        below = list(reqs[-1])
        for req in reversed(reqs[:-1]):
            level = []
            for j in range(len(names)):
                if not pure[j]:
                    level.append(1)
                    continue
                level.append(max(1, -(-req[j] // below[j])))  # the plan clamps a tile wider than its region
            sizes.insert(0, level)
            below = [b * k for b, k in zip(below, level)]
        # the outermost level runs as many tiles as cover the region (the last one shifted or clipped)
        sizes[0] = [-(-full[j] // (below[j] // sizes[0][j])) if pure[j] else sizes[0][j] for j in range(len(names))]
        inner_kind = UNROLLED if spec.unroll else SERIAL  # SERIAL + SIMD: VECTORIZED
        outer_kind = (PARALLEL if spec.parallel else
                      inner_kind if len(sizes) == 1 else SERIAL)
        return tuple(tuple(z) for z in sizes), vj, inner_kind, outer_kind


def _for_update(spec: StageSpec, stage: Stage) -> StageSpec:
    """Stage 0's spec, restricted to the loops an update has."""
    if stage.index == 0:
        return spec
    pure = {l.name for l in stage.loop if l.pure}
    return StageSpec(tiles=[{k: v for k, v in t.items() if k in pure} for t in spec.tiles],
                     vectorize=spec.vectorize if spec.vectorize in pure else None,
                     vector_width=spec.vector_width,
                     unroll={k: v for k, v in spec.unroll.items() if k in pure}, parallel=spec.parallel)


def _find_chain(plan: Plan, consumer: str, stage: int, func: str) -> list[LoopNest]:
    chain = plan.stage_levels(consumer, stage)
    if chain is None:
        raise ScheduleError(f"{func}: cannot compute at {consumer}.s{stage}, which is not computed (yet); "
                            "compute_at needs a consumer that is computed, not inlined")
    return chain


@cython.locals(tree="LoopNest", site="LoopNest", new="LoopNest", anc="LoopNest", store="LoopNest",
               old_child="LoopNest", dag="FunctionDAG", plan="Plan")
def _insert(tree: LoopNest, site_path: list[LoopNest], store_path: list[LoopNest], heads: list[LoopNest],
            func: str, dag: FunctionDAG, inlined: frozenset[str], plan: Plan) -> LoopNest:
    """Put `heads` in the site's children before the first child that reads `func`, and `func` in the
    store level's store_at. `plan` is the plan of `tree`."""
    site = site_path[-1]
    reading = readers(dag, func, inlined)
    holders = _children_holding(plan, site, reading)
    pos = None
    for i, c in enumerate(site.children):
        if id(c) in holders:
            pos = i
            break
    if pos is None and site.func is None and dag.node(func).is_output:
        pos = len(site.children)
    if pos is None:
        raise ScheduleError(f"{func}: nothing computed inside {'root' if site.func is None else site.func} reads it")
    kids = list(site.children[:pos]) + heads + list(site.children[pos:])
    new = site.with_children(kids)
    if store_path[-1] is site:
        new = new.replace(store_at=site.store_at + (func,))
    store = store_path[-1]
    for anc in reversed(site_path[:-1]):
        old_child = new
        kids = [old_child if c is site else c for c in anc.children]
        new = anc.with_children(kids)
        if anc is store:
            new = new.replace(store_at=anc.store_at + (func,))
        site = anc
    return new


@cython.locals(dag="FunctionDAG", memo=dict)
def readers(dag: FunctionDAG, func: str, inlined: set[str] | frozenset[str]) -> frozenset[tuple[str, int]]:
    """Stages that read `func`, directly or through inlined Funcs; remembered per DAG, Func and inlined set (search
    asks for every sibling placed at a site, and for every Func it offers placements of)."""
    memo = dag.analysis("ir.builder.readers", dict)
    key = (func, inlined if type(inlined) is frozenset else frozenset(inlined))
    hit = memo.get(key)
    if hit is None:
        if len(memo) >= 50_000:
            memo.clear()
        hit = memo[key] = frozenset(_readers(dag, func, inlined))
    return hit


@cython.locals(dag="FunctionDAG")
def _readers(dag: FunctionDAG, func: str, inlined) -> set[tuple[str, int]]:
    """readers' walk through the inlined Funcs."""
    out: set[tuple[str, int]] = set()
    for f, index in _direct_readers(dag).get(func, ()):
        if f in inlined:
            out |= _readers(dag, f, inlined)
        else:
            out.add((f, index))
    return out


def _direct_readers(dag: FunctionDAG) -> dict[str, tuple[tuple[str, int], ...]]:
    """Func -> the other Funcs' stages that call it, once per DAG (dag.accesses_to walks every stage)."""
    def compute():
        out: dict[str, dict[tuple[str, int], None]] = {}
        for n in dag.nodes:
            for s in n.stages:
                for a in s.accesses:
                    if a.kind != "self":
                        out.setdefault(a.producer, {})[(s.func, s.index)] = None
        return {f: tuple(v) for f, v in out.items()}

    return dag.analysis("ir.builder.direct_readers", compute)


@cython.locals(plan="Plan", site="LoopNest", fp="FuncPlan", ch="Chain", own="Level", m="LoopNest", p="LoopNest")
def _children_holding(plan: Plan, site: LoopNest, stages: set[tuple[str, int]]) -> set[int]:
    """Ids of the children of `site` whose subtrees compute one of `stages`: the next level of the stage when
    `site` is one of its levels, else its chain head walked up the plan's parent links (the tree's depth, not
    the subtrees' sizes)."""
    out: set[int] = set()
    parent, funcs = plan.parent, plan.funcs
    own = plan.levels.get(id(site))
    for f, index in stages:
        fp = funcs.get(f)
        if fp is None or fp.inlined:
            continue
        ch = fp.chains[index]
        if own is not None and own.chain is ch:
            out.add(id(ch.levels[own.depth + 1].node))
            continue
        m = ch.head
        p = parent[id(m)]
        while p is not None and p is not site:
            m, p = p, parent[id(p)]
        if p is site:
            out.add(id(m))
    return out


def annotate_inlined(tree: LoopNest, dag: FunctionDAG, inlined: set[str]) -> LoopNest:
    """Recompute the `inlined` lists of every innermost level."""
    return _annotated(tree, _inlined_calls_cached(dag, frozenset(inlined)))


def _annotated(n: LoopNest, calls: dict) -> LoopNest:
    """annotate_inlined's walk (a function, not a recursive closure, which would be a reference cycle)."""
    if n.innermost:
        want = tuple(sorted(calls.get((n.func, n.stage), {}).items()))
        return n if want == n.inlined else n.replace(inlined=want)
    kids = tuple([_annotated(c, calls) for c in n.children])
    return n if all(a is b for a, b in zip(kids, n.children)) else n.with_children(kids)


def x_tiling(extent: int, native_vector: int, target: int = 256) -> tuple[int, int]:
    """(tile, vector width) along x for a root Func over `extent` columns: tiles of whole vectors, about
    `target` wide, so that the last tile (shifted inwards) recomputes less than a vector per row. (Only a
    LoopNest's outermost level shifts its last tile, so a region that is not a multiple of the vector width
    would otherwise be split into two overlapping halves.)"""
    vw = min(native_vector, extent)
    n = -(-extent // target)
    tile = vw * -(-extent // (n * vw))
    return (tile if tile <= extent else vw), vw


def naive_schedule(pipeline) -> LoopNest:
    """Everything computed at root, serial, unvectorized, untiled: the baseline of every benchmark."""
    b = ScheduleBuilder(pipeline)
    for n in pipeline.dag.nodes:
        b.root(n.name)
    return b.build()


def simple_schedule(pipeline, target: str | Target | None = None) -> LoopNest:
    """Halide's trivial schedule: every Func at root, vectorized along x and parallel over rows where
    its sizes allow."""
    b = ScheduleBuilder(pipeline, target)
    for n in pipeline.dag.nodes:
        b.root(n.name, **_simple_spec(b, n))
    return b.build()


def _simple_spec(b: ScheduleBuilder, n) -> dict:
    dims = n.dims
    ext = [n.region_extent(d) for d in range(n.dimensions)]
    spec: dict = {}
    w = b.target.natural_vector_size(n.type)
    if ext[0] >= w:
        spec["vectorize"] = dims[0]
    if n.dimensions > 1 and ext[-1] >= 2:
        spec["tiles"] = [{dims[-1]: max(1, math.ceil(ext[-1] / (8 * b.target.cores)))}]
        spec["parallel"] = True
    return spec
