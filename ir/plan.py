"""The concrete loops, regions and allocations a LoopNest stands for, and the checks that it is valid.

`Plan(dag, loopnest)` walks the tree once, outputs first, and answers for every level of every stage
how many iterations it runs, where each iteration's tile starts and how wide it is, and for every Func
the region it computes at its site and the region its storage covers. All of these are symbolic forms
over the loop indices (`symbolic.Lin`), so the backends render them as code, featurization evaluates
them to numbers, and their static bounds size the allocations. This is the one bounds inference of
the system (DESIGN §3.2): every consumer of schedules reads regions from here.

A tree that is not a valid schedule of its pipeline raises `ScheduleError` with the reason.
"""

from __future__ import annotations

from math import prod
from weakref import ref as weak_ref

try:
    import cython
except ImportError:  # pure Python without Cython: the typing decorators do nothing
    from .cython_pure import cython

from .bounds import Env
from .dag import FunctionDAG, Node, Stage
from .errors import ScheduleError
from .loopnest import KIND_VALUES, LoopNest
from .symbolic import Lin, Sym, const, floordiv, monotonicity
from .target import Target, get_target, target_kind

# Iterations of a fully unrolled innermost level: Halide's adams2019 LoopNest::apply unrolls the innermost pure
# loops when their product is <= 12 on CPU (16 on GPU; reference/halide-autoschedulers.md, "Applying the
# schedule"; the paper's §3.3 text says 16). One limit: Plan's legality check and scheduler.tilings' heuristic.
UNROLL_LIMIT = 12
MAX_VECTOR = 64  # lanes of one SIMD loop
# chains remembered per DAG during search (Plan.extend): beam and dropout searches plan the same stage with the
# same region forms and level shapes again and again (86 % of chains in a data-generation batch)
CHAIN_MEMO_LIMIT = 20_000
LOOP_MEMO_LIMIT = 50_000  # loops remembered per DAG during search (Plan._derive_chain)
SEARCH_REGION_MEMO_LIMIT = 50_000  # regions remembered per DAG during search, at the root and at levels (Plan.region_at)

Region = list[tuple[Lin, Lin]]  # inclusive (lo, hi) forms per dimension
_MISSING = object()  # a memo miss (None is a region: nothing reads the Func there)


def _id(o) -> int:
    """id(o). Compiled, a C cast where it is used: Cython calls the builtin `id` through Python's call machinery, and
    search asks for ids about 120 times a state (memo keys, node tables). The same number either way."""
    return cython.cast(cython.Py_ssize_t, cython.cast(cython.p_void, o))


# run as Python: _id is the builtin itself, and ir.symbolic's functions are imported (compiled, ir/plan.pxd cimports
# them: C calls)
if not cython.compiled:
    _id = id  # noqa: F811
    from .symbolic import exact_diff, lmax, lmin, static_extent


class Loop:
    """One loop of one level of a stage.

    Plain slotted classes, not dataclasses, here and below: ir/plan.pxd declares them as Cython extension types,
    whose fields the compiled hot modules read as struct members (Cython's own dataclass takes no `slots`)."""

    __slots__ = ("name", "pure", "count", "count_form", "index", "base", "ext", "tile", "tail")

    def __init__(self, name: str, pure: bool, count: int, count_form: Lin, index: Lin, base: Lin, ext: Lin, tile: int,
                 tail: str):
        self.name = name  # the stage's loop variable (a pure Var or an RVar)
        self.pure = pure
        self.count = count  # iterations at most
        self.count_form = count_form  # iterations at run time (const(count) unless only then is the size known)
        self.index = index  # the iteration number: a symbol in [0, count - 1], or 0 for a single iteration
        self.base = base  # first coordinate of the box one iteration covers
        self.ext = ext  # extent of that box: const(tile), or a form when tails are guarded or sizes vary
        self.tile = tile  # static bound of ext
        self.tail = tail  # "exact" (tiles divide), "shift" (last tile shifted inwards), "guard" (last tile clipped)

    def _fields(self) -> tuple:
        return (self.name, self.pure, self.count, self.count_form, self.index, self.base, self.ext, self.tile,
                self.tail)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # mutable, compared by value (as the dataclass it was)

    def __repr__(self) -> str:
        return (f"Loop(name={self.name!r}, pure={self.pure!r}, count={self.count!r}, count_form={self.count_form!r}, "
                f"index={self.index!r}, base={self.base!r}, ext={self.ext!r}, tile={self.tile!r}, tail={self.tail!r})")

    @property
    def static(self) -> bool:
        return self.count_form.is_const and self.ext.is_const


class Level:
    """One node of a stage chain: a tiling level (or the innermost, point level).

    It refers to its chain weakly (the chain, which lists its levels, lives as long as its plan): with a strong
    reference every plan would be a reference cycle, which only the cyclic garbage collector frees, and searches
    pause that collector (ir.collector.collector_paused)."""

    __slots__ = ("node", "_chain", "depth", "loops", "order")

    def __init__(self, node: LoopNest, chain: "Chain", depth: int, loops: list[Loop], order: tuple[int, ...]):
        self.node = node
        self._chain = weak_ref(chain)
        self.depth = depth
        self.loops = loops  # in the stage's loop order (pure Vars, then RVars)
        self.order = order  # loop indices from outermost to innermost within this level

    @property
    def chain(self) -> "Chain":
        return self._chain()  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Level({describe(self.node)}, depth={self.depth}, loops={self.loops!r}, order={self.order})"

    @cython.locals(l="Loop")
    def box(self) -> Env:
        """The box of loop coordinates one iteration of this level covers."""
        return {l.name: (l.base, l.base + l.ext - 1) for l in self.loops}


class Chain:
    """All levels of one stage, computed at `site`."""

    __slots__ = ("func", "stage", "head", "site", "bounds", "extents", "exact", "levels", "__weakref__")

    def __init__(self, func: str, stage: Stage, head: LoopNest, site: LoopNest, bounds: Region, extents: list[int],
                 exact: list[bool], levels: list[Level] | None = None):
        self.func = func
        self.stage = stage
        self.head = head
        self.site = site
        self.bounds = bounds  # per loop: the range the stage iterates at its site
        self.extents = extents  # static bound of each loop's range
        self.exact = exact  # whether that range's size is the same at every site iteration
        self.levels = [] if levels is None else levels

    def __repr__(self) -> str:
        return (f"Chain(func={self.func!r}, stage={self.stage!r}, head={self.head!r}, site={self.site!r}, "
                f"bounds={self.bounds!r}, extents={self.extents!r}, exact={self.exact!r}, levels={self.levels!r})")


class FuncPlan:
    __slots__ = ("name", "node", "inlined", "site", "store", "chains", "region", "extents", "storage",
                 "storage_extents", "layout", "strides", "sliding", "level_ids")

    def __init__(self, name: str, node: Node, inlined: bool = False, site: LoopNest | None = None,
                 store: LoopNest | None = None, chains: list[Chain] | None = None):
        self.name = name
        self.node = node
        self.inlined = inlined
        self.site = site  # compute site
        self.store = store  # store site (the site, or a coarser level for sliding windows)
        self.chains = [] if chains is None else chains
        self.region: Region = []  # computed per site iteration
        self.extents: list[int] = []
        self.storage: Region = []  # covered by one allocation
        self.storage_extents: list[int] = []
        self.layout: tuple[int, ...] = ()  # dimensions from innermost (stride 1) outward
        self.strides: tuple[int, ...] = ()
        self.sliding: Sliding | None = None
        # id(node) -> Level of every level of its chains, built when a child plan first reuses this plan as it is
        self.level_ids: dict[int, Level] | None = None

    def __repr__(self) -> str:
        return (f"FuncPlan(name={self.name!r}, inlined={self.inlined!r}, site={self.site!r}, store={self.store!r}, "
                f"chains={self.chains!r}, region={self.region!r}, extents={self.extents!r}, "
                f"storage={self.storage!r}, storage_extents={self.storage_extents!r}, layout={self.layout!r}, "
                f"strides={self.strides!r}, sliding={self.sliding!r})")

    @property
    def vector_dim(self) -> int:
        return self.chains[0].head.vector_dim if self.chains else -1

    @property
    def allocation_points(self) -> int:
        return prod(self.storage_extents)


class Sliding:
    """A Func stored outside the loop it is computed in: each iteration computes only new rows."""

    __slots__ = ("dim", "loop", "level")

    def __init__(self, dim: int, loop: Loop, level: Level):
        self.dim = dim  # the Func dimension that advances
        self.loop = loop  # the one serial loop between storage and computation
        self.level = level

    def __repr__(self) -> str:
        return f"Sliding(dim={self.dim!r}, loop={self.loop!r}, level={self.level!r})"


class Plan:
    def __init__(self, dag: FunctionDAG, root: LoopNest, target: Target | None = None, complete: bool = True):
        if root.func is not None:
            raise ScheduleError("a LoopNest must start at the root (func None)")
        self.dag = dag
        self.root = root
        self.target = get_target(target)  # None: the host; loop kinds and limits are checked against it
        self._kind = target_kind(self.target)
        self.complete = complete
        self.funcs: dict[str, FuncPlan] = {}
        self.levels: dict[int, Level] = {}
        self.parent: dict[int, LoopNest | None] = {}
        self.keys: dict[int, tuple] = {}  # node id -> (func, stage, depth in its chain): stable across trees
        self.by_key: dict[tuple, LoopNest] = {}
        self._walk: _Walk | None = None  # what _index collected on its one walk of the tree
        self._memo: dict[tuple[str, tuple], Region | None] = {}
        self._chains: dict | None = None  # a fresh plan derives every chain itself; extend() shares a search-wide memo
        self.replanned: set[str] = set()  # Funcs whose loops and regions this plan derived (not reused)
        self.changed: set[str] | None = None  # after extend(): Funcs scheduled differently from the parent
        self._index(None)
        self._group_chains(complete)
        self._check_inlined()
        for n in dag.nodes:  # consumers before producers
            fp = self.funcs.get(n.name)
            if fp is not None and not fp.inlined:
                self._check_placement(fp)
                self._plan_func(fp)
                self.replanned.add(n.name)
        self._check_annotations()
        self._check_limits()

    @classmethod
    @cython.locals(self="Plan", parent="Plan", fp="FuncPlan", old="FuncPlan", ch="Chain", och="Chain", lvl="Level",
                   funcs="dict", old_funcs="dict", levels="dict", changed="set", stale="set")
    def extend(cls, parent: "Plan", root: LoopNest) -> "Plan":
        """The plan of `root`, a (partial) schedule that differs from `parent`'s by a few decisions —
        a successor during search. Funcs whose own levels and whose readers are unchanged keep their
        loops and regions; the others are planned afresh. Same result as Plan(dag, root, complete=False),
        much faster."""
        self = cls.__new__(cls)
        self.dag, self.root, self.target, self.complete = parent.dag, root, parent.target, False
        self._kind = parent._kind
        self.funcs, self.levels, self.parent, self.keys, self.by_key = {}, {}, {}, {}, {}
        self.replanned = set()
        self._memo = {}
        self._chains = dag_chain_memo(self.dag)
        self._index(parent)
        self._group_chains(False, parent)
        self._check_inlined(parent)
        changed: set[str] = set()
        stale: set[str] = set()  # Funcs a reader of which (directly or through inlined Funcs) is scheduled differently
        funcs, old_funcs, levels = self.funcs, parent.funcs, self.levels
        # readers that make a Func stale: scheduled here or in the parent only, or changed (stale inlined ones are)
        touched = funcs.keys() ^ old_funcs.keys()
        for n in self.dag.nodes:  # consumers before producers: a reader's status is final when its producers ask
            name = n.name
            rc = not touched.isdisjoint(n.consumers)
            if rc:
                stale.add(name)
            fp = funcs.get(name)
            if fp is None:
                continue
            old = old_funcs.get(name)
            if old is None or old.inlined != fp.inlined or rc:
                changed.add(name)
                touched.add(name)
            if fp.inlined:
                continue
            replan = name in changed or not self._same_geometry(fp, old, parent)
            if not replan and fp.site is old.site and fp.store is old.store and \
                    all(ch.head is och.head for ch, och in zip(fp.chains, old.chains)) and \
                    (old.sliding is None or levels.get(_id(old.sliding.level.node)) is old.sliding.level):
                funcs[name] = old  # the same nodes, loops and regions: the parent's plan of it, levels and all
                ids = old.level_ids
                if ids is None:
                    ids = old.level_ids = {_id(lvl.node): lvl for ch in old.chains for lvl in ch.levels}
                levels.update(ids)
                continue
            if fp is old:  # _group_chains handed over the parent's plan of it: fill in a copy, never that
                fp = funcs[name] = _unplanned(old)
            if replan:
                changed.add(name)
                touched.add(name)
                self._check_placement(fp)
                if not rc:
                    self._seed_regions(fp, parent)
                self._plan_func(fp)
                self.replanned.add(name)
            else:
                self._reuse(fp, old)
        stale |= changed
        self._inherit_regions(parent, stale)
        self.changed = changed
        for name in self.replanned:
            fp = self.funcs[name]
            for ch in fp.chains:
                for lvl in ch.levels:
                    self._check_level_flags(fp, ch, lvl)
        self._check_limits()
        return self

    def _seed_regions(self, fp: FuncPlan, parent: "Plan") -> None:
        """A Func placed anew whose readers are the parent's: its region at its site and storage levels is the
        parent's (a region depends on the readers' loops, not on the Func's own), which the builder asked the
        parent plan for when it placed it. Only when every reader is scheduled: with one that is not, the parent
        skipped it and this plan must raise."""
        if not all(c in self.funcs for c in fp.node.consumers):
            return
        for n in (fp.site, fp.store):
            key = (fp.name, self.keys[_id(n)])
            v = parent._memo.get(key, _MISSING)
            if v is not _MISSING:
                self._memo.setdefault(key, v)

    def _inherit_regions(self, parent: "Plan", stale: set[str]) -> None:
        """The parent's region forms that nothing they depend on changed (neither the Func nor the stage
        owning the node they were asked at)."""
        # a copy and the few stale keys deleted, not a comprehension of the rest: a dict's copy keeps its keys'
        # hashes, and the keys are nested tuples, which Python hashes afresh on every insert (~13 % go)
        memo = dict(parent._memo)
        for k in [k for k in memo if k[0] in stale or k[1][0] in stale]:
            del memo[k]
        memo.update(self._memo)  # what this plan derived itself stands
        self._memo = memo

    def _check_limits(self) -> None:
        """The target kind's limits (threads per block, shared memory, ...): a ScheduleError with the reason."""
        if self._kind.check_limits is not None:
            why = self._kind.check_limits(self)
            if why is not None:
                raise ScheduleError(why)

    @cython.locals(fp="FuncPlan", old="FuncPlan", parent="Plan", ch="Chain", och="Chain")
    def _same_geometry(self, fp: FuncPlan, old: FuncPlan, parent: "Plan") -> bool:
        if self.keys[_id(fp.site)] != parent.keys[_id(old.site)] or \
                self.keys[_id(fp.store)] != parent.keys[_id(old.store)] or len(fp.chains) != len(old.chains):
            return False
        for ch, och in zip(fp.chains, old.chains):
            if ch.head is och.head:  # the same (immutable) subtree: the same levels
                continue
            a, b = ch.head.chain(), och.head.chain()
            if len(a) != len(b):
                return False
            for x, y in zip(a, b):  # a loop, not any(): no closure in a cpdef method
                if _geometry(x) != _geometry(y):
                    return False
        return True

    @cython.locals(fp="FuncPlan", old="FuncPlan", ch="Chain", och="Chain", olvl="Level", lvl="Level", old_lvl="Level",
                   levels="dict")
    def _reuse(self, fp: FuncPlan, old: FuncPlan) -> None:
        fp.region, fp.extents = old.region, old.extents
        fp.storage, fp.storage_extents = old.storage, old.storage_extents
        fp.layout, fp.strides = old.layout, old.strides
        levels = self.levels
        for ch, och in zip(fp.chains, old.chains):
            # the parent's own chain would grow while read (for ever): extend copies a handed-over FuncPlan first
            assert ch is not och, f"{fp.name}: relinking the parent plan's own chain"
            ch.bounds, ch.extents, ch.exact = och.bounds, och.extents, och.exact
            append = ch.levels.append
            if ch.head is och.head:  # the same (immutable) subtree has the same nodes: no walk down the chain
                for olvl in och.levels:
                    n = olvl.node
                    append(lvl := Level(n, ch, olvl.depth, olvl.loops, olvl.order))
                    levels[_id(n)] = lvl
                continue
            for n, olvl in zip(ch.head.chain(), och.levels):
                append(lvl := Level(n, ch, olvl.depth, olvl.loops, olvl.order))
                levels[_id(n)] = lvl
        if old.sliding is not None:  # the sliding loop belongs to a level planned before this Func
            old_lvl = old.sliding.level
            key = (old_lvl.chain.func, old_lvl.chain.stage.index, old_lvl.depth)
            fp.sliding = Sliding(old.sliding.dim, old.sliding.loop, self.levels[_id(self.by_key[key])])

    @cython.locals(old="FuncPlan", v="Plan", och="Chain", fp="FuncPlan", ch="Chain", lvl="Level")
    def retiled(self, func: str, heads: list[LoopNest]) -> "Plan":
        """This plan with `func`'s stage chains planned afresh from `heads`: new chain heads at the same site, one
        per stage in stage order, whose subtrees are `func`'s own levels only — a tiling sibling's (another tiling
        of the same placement; retiled_heads finds them). Everything else is this plan's, node for node, so the
        result is not the plan of any one tree: search featurizes `func`'s stages from it (whatever reads its
        producers' regions, its loops' counts and its allocation's working sets gets the sibling's values: the
        tiling of a Func whose producers are not scheduled changes no other Func's loops or regions) and plans the
        sibling's own tree only if it expands it (scheduler.space). Raises ScheduleError for what Plan.extend
        would reject of the new levels. Only for a partial plan of a target kind without limits to check."""
        old = self.funcs[func]
        assert not old.inlined and self._kind.check_limits is None and len(heads) == len(old.chains)
        v = Plan.__new__(Plan)
        v.dag, v.root, v.target, v._kind, v.complete = self.dag, self.root, self.target, self._kind, False
        v.funcs, v.levels, v.parent = dict(self.funcs), dict(self.levels), dict(self.parent)
        v.keys, v.by_key, v._walk = dict(self.keys), dict(self.by_key), self._walk
        # region forms asked at `func`'s own levels depend on its tiling; the others on its region alone
        v._memo = memo = dict(self._memo)  # copied with its keys' hashes, then the few of `func`'s levels deleted
        for k in [k for k in memo if k[1][0] == func]:
            del memo[k]
        v._chains = self._chains
        v.replanned, v.changed = {func}, self.changed
        site = old.site
        assert site is not None
        calls = _inlined_calls_cached(self.dag, frozenset(self._walk.inlined))
        chains = []
        for och, head in zip(old.chains, heads):
            nodes = head.chain()
            p = site
            for depth, n in enumerate(nodes):
                v._check_node(n, p)
                v.parent[_id(n)] = p
                v.keys[_id(n)] = key = (func, och.stage.index, depth)
                v.by_key[key] = n
                p = n
            _check_inlined_calls(nodes[-1], calls)
            chains.append(Chain(func, och.stage, head, site, [], [], []))
        fp = v.funcs[func] = FuncPlan(func, old.node, False, site, old.store, chains)
        v._plan_func_retiled(fp, old)
        for ch in fp.chains:
            for lvl in ch.levels:
                v._check_level_flags(fp, ch, lvl)
        return v

    # -- public queries --------------------------------------------------------------------------

    def level(self, node: LoopNest) -> Level:
        return self.levels[_id(node)]

    def func(self, name: str) -> FuncPlan:
        return self.funcs[name]

    def stage_levels(self, func: str, stage: int) -> list[LoopNest] | None:
        """The nodes of `func`'s stage chain, outermost first, from the plan's index of chain heads (no walk of the
        tree, as LoopNest.find_chain makes); None where the stage is not computed (unscheduled or inlined)."""
        head = self.by_key.get((func, stage, 0))
        return None if head is None else head.chain()

    def innermost_nodes(self) -> list[LoopNest]:
        """The innermost levels of the tree, in pre-order (LoopNest.nodes()'s order), as the plan's walk found them."""
        assert self._walk is not None
        return self._walk.innermost

    @property
    def inlined(self) -> set[str]:
        return {f for f, p in self.funcs.items() if p.inlined}

    @cython.locals(cp="FuncPlan", ch="Chain", n="LoopNest", lvl="Level", lp="Loop", shared=dict)
    def region_at(self, func: str, n: LoopNest) -> Region | None:
        """The region of `func` read during one iteration of node `n` (None if nothing there reads it).

        Forms are over the indices of `n` and its ancestors' loops: what a Func computed at `n` must
        produce each time round (Halide's `LoopNest::get_bounds`).
        """
        key = (func, self.keys[_id(n)])
        hit = self._memo.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        shared = skey = None
        if self._chains is not None:
            # search: a region at node n is the union of the reads of the stages that run inside n, over n's own
            # loop box (for n's stage) and over their own regions at n (for the stages computed inside it), down to n's
            # box; so it depends only on n's stage and box, on which stages run inside n, and on which Funcs are
            # scheduled and inlined. At the root (no box, every stage inside) only the last two: the plans of one beam
            # step share it. Remembered for the whole search by those (_SearchRegions).
            regions = dag_search_regions(self.dag)
            walk = self._walk
            if walk.scheduled is None:
                walk.scheduled = frozenset(self.funcs)
                walk.inlined_set = frozenset(walk.inlined)
            if n.func is None:
                shared = regions.at_root
                skey = (func, walk.scheduled)
            else:
                lvl = self.levels.get(_id(n))
                if lvl is not None:
                    shared = regions.at_levels
                    skey = (func, key[1], tuple([(lp.base, lp.ext) for lp in lvl.loops]), n.stages_within(),
                            walk.scheduled, walk.inlined_set)
            if shared is not None:
                hit = shared.get(skey, _MISSING)
                if hit is not _MISSING:
                    self._memo[key] = hit
                    return hit
        node = self.dag.node(func)
        box: Region | None = None
        if node.is_output and n.func is None:
            box = [(const(0), const(e - 1)) for e in self.dag.pipeline.output_sizes[func]]
        for c in node.consumers:
            cp = self.funcs.get(c)
            if cp is None:
                if not self.complete and func not in self.funcs:
                    continue  # partial schedule: an unscheduled Func's unscheduled readers are not counted yet
                raise ScheduleError(f"{func} is scheduled but its consumer {c} is not; schedule consumers first")
            if cp.inlined:
                creg = self.region_at(c, n)
                envs = [] if creg is None else [cp.node.stages[0].loop_env(tuple(creg))]
                stages = cp.node.stages[:1]
            else:
                envs, stages = [], []
                for ch in cp.chains:
                    env = self._stage_env_within(ch, n)
                    if env is not None:
                        envs.append(env)
                        stages.append(ch.stage)
            for s, env in zip(stages, envs):
                r = self.dag.stage_requires(s, func, env)
                if r is None:
                    continue
                r = [(lo, hi) for lo, hi in r]  # bounded: the DAG checked every access
                box = r if box is None else [(lmin(a[0], b[0]), lmax(a[1], b[1])) for a, b in zip(box, r)]
        if box is not None:
            for d in node.update_dims:
                lo, hi = node.region[d]
                box[d] = (const(lo), const(hi))
        self._memo[key] = box
        if shared is not None:
            if len(shared) >= SEARCH_REGION_MEMO_LIMIT:
                shared.clear()
            shared[skey] = box
        return box

    # -- indexing and structure ------------------------------------------------------------------

    def _index(self, old: "Plan | None") -> None:
        """One pre-order walk: parents, stable keys, and what _group_chains and _check_inlined need. With `old` (the
        parent plan, during extend), a child of the root that is the parent's own node brings its subtree's index
        from there (_Subtree: a root child's keys do not depend on what surrounds it), and nodes of the parent's
        tree (alive with it, so their ids are theirs) passed _check_node already."""
        walk = self._walk = _Walk()
        root = self.root
        rid = _id(root)
        checked = old.keys if old is not None else None
        self.parent[rid] = None
        self.keys[rid] = key = ("", -1, -1)
        self.by_key[key] = root
        if checked is None or rid not in checked:
            self._check_node(root, None)
        stored = walk.stored
        for f in root.store_at:
            if f in stored:
                raise ScheduleError(f"{f} is stored at two levels")
            stored[f] = root
        old_subtrees = old._walk.subtrees if old is not None and old._walk is not None else {}
        keys, parent, by_key, subtrees = self.keys, self.parent, self.by_key, walk.subtrees
        heads, inlined, innermost = walk.heads, walk.inlined, walk.innermost
        for c in root.children:
            parent[_id(c)] = root
            heads.append((c, root))
            sub = old_subtrees.get(_id(c))
            if sub is None:
                sub = self._index_subtree(c, checked, stored)
            elif not stored.keys().isdisjoint(sub.stored):
                f = next(f for f in sub.stored if f in stored)
                raise ScheduleError(f"{f} is stored at two levels")
            subtrees[_id(c)] = sub
            keys.update(sub.keys)
            parent.update(sub.parent)
            by_key.update(sub.by_key)
            heads.extend(sub.heads)
            inlined.update(sub.inlined)
            stored.update(sub.stored)
            innermost.extend(sub.innermost)

    @cython.locals(parent="dict", keys="dict", by_key="dict", heads="list", inlined="dict", stored="dict",
                   innermost="list", stack="list", kids=tuple, k="Py_ssize_t")
    @cython.locals(n="LoopNest", p="LoopNest", root="LoopNest")
    def _index_subtree(self, head: LoopNest, checked: dict[int, tuple] | None, stored_above: dict) -> "_Subtree":
        """The index of a child of the root and everything below it, walked in pre-order; `stored_above` is what
        the walk found stored before this subtree (a Func stored twice raises where the walk meets the second)."""
        sub = _Subtree()
        parent, keys, by_key = sub.parent, sub.keys, sub.by_key
        heads, inlined, stored, innermost = sub.heads, sub.inlined, sub.stored, sub.innermost
        root = self.root
        stack: list[tuple[LoopNest, LoopNest]] = [(head, root)]
        while stack:
            n, p = stack.pop()
            i = _id(n)
            if p is root:
                key = (n.func, n.stage, 0)
            else:
                parent[i] = p
                pk = keys[_id(p)]
                if p.func == n.func and p.stage == n.stage and p.func is not None:
                    key = (n.func, n.stage, pk[2] + 1)
                else:
                    key = (n.func, n.stage, 0)
                    heads.append((n, p))
            keys[i] = key
            by_key[key] = n
            if checked is None or i not in checked:
                self._check_node(n, p)
            for f, _ in n.inlined:
                inlined[f] = None
            if n.innermost:
                innermost.append(n)
            for f in n.store_at:
                if f in stored or f in stored_above:
                    raise ScheduleError(f"{f} is stored at two levels")
                stored[f] = n
            kids = n.children
            for k in range(len(kids) - 1, -1, -1):  # pre-order: the first child popped first
                stack.append((kids[k], n))
        return sub

    @cython.locals(m="LoopNest")
    def _encloses(self, outer: LoopNest, n: LoopNest) -> bool:
        """Whether `outer` is a strict ancestor of node n."""
        m = self.parent[_id(n)]
        while m is not None:
            if m is outer:
                return True
            m = self.parent[_id(m)]
        return False

    @cython.locals(n="LoopNest", c="LoopNest")
    def _check_node(self, n: LoopNest, p: LoopNest | None) -> None:
        if n.func is None:
            if p is not None:
                raise ScheduleError("only the root may have func None")
            if n.innermost or n.size or KIND_VALUES[n.kind] != "serial" or n.inlined:
                raise ScheduleError("the root node carries no loops or annotations")
            return
        if n.func not in self.dag:
            raise ScheduleError(f"the loop nest schedules {n.func}, which is not a Func of the pipeline")
        if KIND_VALUES[n.kind] not in self._kind.loop_kinds:
            raise ScheduleError(f"{n.func}.s{n.stage}: {n.kind.value} loops are not legal on {self.target.name}, a "
                                f"{self._kind.name} target (legal: {', '.join(sorted(self._kind.loop_kinds))})")
        node = self.dag.node(n.func)
        if not 0 <= n.stage < len(node.stages):
            raise ScheduleError(f"{n.func} has no stage {n.stage}")
        stage = node.stages[n.stage]
        if len(n.size) != len(stage.loop):
            raise _stage_error(n.func, n.stage, f"size {n.size} has {len(n.size)} entries for {len(stage.loop)} loops "
                                                f"({', '.join([l.name for l in stage.loop])})")
        for s in n.size:  # a loop, not any(): this runs for every new node of every searched state
            if not isinstance(s, int) or s < 1:
                raise _stage_error(n.func, n.stage, f"loop sizes must be positive ints, got {n.size}")
        if n.innermost:
            if n.children:
                raise _stage_error(n.func, n.stage, "the innermost level computes points and can contain nothing")
            if n.store_at:
                raise _stage_error(n.func, n.stage, "nothing can be stored inside the innermost level")
        else:
            if n.inlined:
                raise _stage_error(n.func, n.stage, "only the innermost level lists inlined Funcs")
            if n.vectorized_loop >= 0 or n.unrolled:
                raise _stage_error(n.func, n.stage, "only the innermost level is vectorized or unrolled")
            own = 0
            for c in n.children:
                if c.func == n.func and c.stage == n.stage:
                    own += 1
            if own != 1:
                raise _stage_error(n.func, n.stage, "a tiling level needs exactly one inner level of its own stage, "
                                                    f"found {own}")
            for i, l in enumerate(stage.loop):
                if not l.pure and n.size[i] != 1:
                    raise _stage_error(n.func, n.stage, f"RVar {l.name} is iterated only by the innermost level; "
                                                        "size it 1 at outer levels")
        for c in n.children:
            if c.func == n.func and c.stage != n.stage:
                raise _stage_error(n.func, n.stage, f"stage {c.stage} of {n.func} is nested inside stage {n.stage}")

    @cython.locals(parent="Plan", old="FuncPlan", fp="FuncPlan", funcs="dict", stored="dict", old_funcs="dict",
                   dag="FunctionDAG")
    def _group_chains(self, complete: bool, parent: "Plan | None" = None) -> None:
        """FuncPlans (unplanned) from the walk's chain heads. With `parent` (extend), a single-stage Func whose
        head, site and storage nodes are the parent's own gets the parent's FuncPlan object: extend keeps it as it
        is, or plans a copy (_unplanned)."""
        walk = self._walk
        old_funcs = parent.funcs if parent is not None else {}
        heads: dict[str, list[tuple[LoopNest, LoopNest]]] = {}
        for hs in walk.heads:
            heads.setdefault(hs[0].func, []).append(hs)
        inlined_plans = _inlined_func_plans(self.dag)
        for f in walk.inlined:
            if f not in self.dag:
                raise ScheduleError(f"the loop nest inlines {f}, which is not a Func of the pipeline")
            if f in heads:
                raise ScheduleError(f"{f} is both inlined and computed")
            fp = inlined_plans.get(f)
            if fp is None:
                node = self.dag.node(f)
                if node.is_output:
                    raise ScheduleError(f"{f} is an output; outputs are computed at root, never inlined")
                if not node.inlinable:
                    raise ScheduleError(f"{f} has update definitions and cannot be inlined")
                fp = inlined_plans[f] = FuncPlan(f, node, inlined=True)
            self.funcs[f] = fp
        stored, funcs, dag = walk.stored, self.funcs, self.dag
        for f, hs in heads.items():
            node = dag.node(f)
            head, site = hs[0]
            if len(hs) == 1 and len(node.stages) == 1 and head.stage == 0:  # the common case, checked at once
                old = old_funcs.get(f)
                if old is not None and old.site is site and old.chains and old.chains[0].head is head and \
                        old.store is stored.get(f):  # the parent checked this very placement
                    funcs[f] = old
                    continue
                chains = [Chain(f, node.stages[0], head, site, [], [], [])]
            else:
                stages = sorted(h.stage for h, _ in hs)
                if stages != list(range(len(node.stages))):
                    raise ScheduleError(f"{f}: each of its {len(node.stages)} stages must be computed exactly once, "
                                        f"found stages {stages}")
                sites = {_id(s) for _, s in hs}
                if len(sites) != 1:
                    raise ScheduleError(f"{f}: all its stages must be computed at the same level")
                ordered = sorted(hs, key=lambda t: t[0].stage)
                pos = [next(i for i, c in enumerate(site.children) if c is h) for h, _ in ordered]
                if pos != sorted(pos):
                    raise ScheduleError(f"{f}: its stages must be computed in order")
                chains = [Chain(f, node.stages[h.stage], h, site, [], [], []) for h, _ in ordered]
            if node.is_output and site.func is not None:
                raise ScheduleError(f"{f} is an output; outputs are computed at root")
            store = stored.get(f)
            if store is None:
                raise ScheduleError(f"{f} is computed but stored nowhere; list it in store_at of its compute level "
                                    "or a coarser one")
            funcs[f] = FuncPlan(f, node, False, site, store, chains)
        for f in stored:
            if f not in heads:
                raise ScheduleError(f"{f} is stored but never computed")
        if complete:
            missing = [n.name for n in self.dag.nodes if n.name not in self.funcs]
            if missing:
                raise ScheduleError(f"the schedule leaves {', '.join(missing)} unscheduled")

    def _check_inlined(self, parent: "Plan | None" = None) -> None:
        """Innermost levels must list exactly the inlined Funcs their stage calls, with call counts. With `parent`
        (extend) and the same Funcs inlined as there, only the new innermost levels: the parent checked the others
        against the same calls."""
        inlined = frozenset(self._walk.inlined)
        calls = _inlined_calls_cached(self.dag, inlined)
        nodes = self._walk.innermost
        if parent is not None and parent._walk is not None and inlined == parent._walk.inlined.keys():
            nodes = [n for n in nodes if _id(n) not in parent.keys]
        for n in nodes:
            _check_inlined_calls(n, calls)

    # -- loops of each stage ---------------------------------------------------------------------

    @cython.locals(fp="FuncPlan", ch="Chain")
    def _plan_func(self, fp: FuncPlan) -> None:
        node = fp.node
        region = self.region_at(fp.name, fp.site)
        if region is None:
            raise ScheduleError(f"{fp.name} is computed at a level where nothing reads it")
        fp.region = region
        fp.extents = [static_extent(lo, hi, node.region_extent(d)) for d, (lo, hi) in enumerate(region)]
        self._plan_levels(fp)
        storage = self.region_at(fp.name, fp.store)
        if storage is None or (fp.store is not fp.site and not self._encloses(fp.store, fp.site)):
            raise ScheduleError(f"{fp.name} must be stored at its compute level or a level enclosing it")
        fp.storage = storage
        fp.storage_extents = [static_extent(lo, hi, node.region_extent(d)) for d, (lo, hi) in enumerate(storage)]
        fp.strides = _strides(fp.layout, fp.storage_extents)
        if fp.store is not fp.site:
            fp.sliding = self._sliding(fp)

    @cython.locals(fp="FuncPlan", old="FuncPlan", ch="Chain")
    def _plan_func_retiled(self, fp: FuncPlan, old: FuncPlan) -> None:
        """_plan_func for a Func computed and stored at the same nodes as `old` (its plan in the plan this one is
        retiled from, Plan.retiled), with other levels of its own: its region, its storage and their extents depend on
        those nodes and on its readers, not on its own levels, so they are old's; its layout, strides, loops and
        sliding window are planned afresh."""
        fp.region, fp.extents = old.region, old.extents
        self._plan_levels(fp)
        fp.storage, fp.storage_extents = old.storage, old.storage_extents
        fp.strides = old.strides if fp.layout == old.layout else _strides(fp.layout, fp.storage_extents)
        if fp.store is not fp.site:
            fp.sliding = self._sliding(fp)

    @cython.locals(fp="FuncPlan", ch="Chain")
    def _plan_levels(self, fp: FuncPlan) -> None:
        """The layout and every chain's loops of a Func whose region is planned."""
        nodes = [ch.head.chain() for ch in fp.chains]  # each chain's levels, walked once
        fp.layout = storage_layout(fp.node, self._vector_dim(fp, nodes))
        for ch, ns in zip(fp.chains, nodes):
            self._plan_chain(fp, ch, ns)

    @cython.locals(fp="FuncPlan", ch="Chain", lvl="Level", n="LoopNest", shapes=list)
    def _plan_chain(self, fp: FuncPlan, ch: Chain, nodes: list[LoopNest]) -> None:
        if not nodes[-1].innermost:
            raise ScheduleError(f"{fp.name}.s{ch.stage.index}: its chain of levels does not end in an innermost level")
        memo = self._chains
        if memo is None:
            derived = self._derive_chain(fp, ch.stage, nodes)
        else:  # search: the same region forms and level shapes give the same loops, whatever the tree around
            shapes = []
            for n in nodes:
                shapes.append((n.size, n.innermost, n.vectorized_loop, n.unrolled))
            key = (fp.name, ch.stage.index, tuple(fp.region), fp.layout, tuple(shapes))
            derived = memo.get(key)
            if derived is None:
                derived = self._derive_chain(fp, ch.stage, nodes)
                if len(memo) >= CHAIN_MEMO_LIMIT:
                    memo.clear()
                memo[key] = derived
        ch.bounds, ch.extents, ch.exact, levels = derived
        for depth, (n, (loops, order)) in enumerate(zip(nodes, levels)):
            lvl = Level(n, ch, depth, loops, order)
            ch.levels.append(lvl)
            self.levels[_id(n)] = lvl

    @cython.locals(fp="FuncPlan", lp="Loop", loop="Loop", n="LoopNest", memo=dict)
    def _derive_chain(self, fp: FuncPlan, stage: Stage, nodes: list[LoopNest]) -> tuple:
        """(bounds, extents, exact, [(loops, order) per level]) of one stage's chain of levels: what depends
        only on its Func's region forms, its layout and its levels' shapes."""
        bounds: Region = []
        extents: list[int] = []
        exact: list[bool] = []
        for l in stage.loop:
            if l.pure:
                lo, hi = fp.region[l.func_dim]
                cap = fp.node.region_extent(l.func_dim)
            else:
                rlo, rhi = l.rdom_range
                lo, hi, cap = const(rlo), const(rhi), rhi - rlo + 1
            bounds.append((lo, hi))
            extents.append(static_extent(lo, hi, cap))
            exact.append(exact_diff(hi, lo) is not None)
        bases = [lo for lo, _ in bounds]
        exts = [const(e) if x else hi - lo + 1 for (lo, hi), e, x in zip(bounds, extents, exact)]
        bound = list(extents)
        below = [[]] * len(nodes)  # per level, per loop: the product of the deeper levels' sizes (its tile)
        t = [1] * len(stage.loop)
        for depth in range(len(nodes) - 1, -1, -1):
            below[depth] = t
            t = [a * b for a, b in zip(t, nodes[depth].size)]
        levels = []
        memo = None if self._chains is None else dag_loop_memo(self.dag)
        index = stage.index
        for depth, n in enumerate(nodes):
            loops = []
            tiles = below[depth]
            for j, l in enumerate(stage.loop):
                if memo is None:
                    loop = self._loop(fp.name, stage, n, depth, j, l.name, l.pure, bases[j], exts[j], bound[j],
                                      tiles[j])
                else:  # siblings tiled otherwise along another loop share this one's forms
                    key = (fp.name, index, depth, j, n.size[j], bases[j], exts[j], bound[j], tiles[j])
                    loop = memo.get(key)
                    if loop is None:
                        loop = self._loop(fp.name, stage, n, depth, j, l.name, l.pure, bases[j], exts[j], bound[j],
                                          tiles[j])
                        if len(memo) >= LOOP_MEMO_LIMIT:
                            memo.clear()
                        memo[key] = loop
                loops.append(loop)
            levels.append((loops, loop_order(stage, n, fp.layout)))
            bases = [lp.base for lp in loops]
            exts = [lp.ext for lp in loops]
            bound = [lp.tile for lp in loops]
        return bounds, extents, exact, levels

    @cython.locals(n="LoopNest")
    def _loop(self, func, stage: Stage, n: LoopNest, depth: int, j: int, name: str, pure: bool,
              pbase: Lin, pext: Lin, pbound: int, tile: int) -> Loop:
        # a tile wider than what its level splits is that whole extent: the inner level's last tile then
        # shifts inwards within it (Halide's behaviour for a vector that does not divide a row)
        tile = min(tile, pbound)
        count = -(-pbound // tile)
        if count != n.size[j]:
            what = "the region" if depth == 0 else "its tile"
            raise ScheduleError(f"{func}.s{stage.index} loop {name}: level {depth} must run {count} iterations to "
                                f"cover {what} of {pbound} with tiles of {tile}, not {n.size[j]}")
        i = Lin.of(Sym(f"{func}_s{stage.index}_{name}_{depth}", 0, count - 1)) if count > 1 else const(0)
        shift = pure and stage.index == 0
        if pext.is_const:
            p = pext.const
            if p % tile == 0:
                return Loop(name, pure, count, const(count), i, pbase + i * tile, const(tile), tile, "exact")
            if shift:
                return Loop(name, pure, count, const(count), i, pbase + lmin(i * tile, p - tile), const(tile), tile,
                            "shift")
            ext = lmin(const(tile), pext - i * tile)
            return Loop(name, pure, count, const(count), i, pbase + i * tile, ext, tile, "guard")
        runtime_count = floordiv(pext + (tile - 1), tile)
        if shift:
            base = pbase + lmin(i * tile, lmax(pext - tile, const(0)))
            return Loop(name, pure, count, runtime_count, i, base, lmin(const(tile), pext), tile, "shift")
        return Loop(name, pure, count, runtime_count, i, pbase + i * tile, lmin(const(tile), pext - i * tile), tile,
                    "guard")

    @cython.locals(ch="Chain", lvl="Level", fp="FuncPlan", n="LoopNest")
    def _stage_env_within(self, ch: Chain, n: LoopNest) -> Env | None:
        """Loop boxes of chain `ch` during one iteration of node n, or None if it runs outside n."""
        lvl = self.levels.get(_id(n))
        if lvl is not None and lvl.chain is ch:
            return lvl.box()
        if n is ch.site or self._encloses(n, ch.site):
            fp = self.funcs[ch.func]
            reg = self.region_at(ch.func, n)
            if reg is None:  # pragma: no cover - its consumers are inside n, so it is read there
                return None
            return ch.stage.loop_env(tuple(reg)) if fp.chains else None
        return None

    # -- placement, sliding windows, annotations -------------------------------------------------

    @cython.locals(fp="FuncPlan", lvl="Level")
    def _check_placement(self, fp: FuncPlan) -> None:
        """Every read of a Func happens inside its compute level, after it is computed there."""
        site = fp.site
        assert site is not None
        first_after = max(next(i for i, c in enumerate(site.children) if c is ch.head) for ch in fp.chains)
        lvl = self.levels.get(_id(site))
        for ch in self._reading_chains(fp.name):
            if not self._runs_inside(ch, site, lvl):
                raise ScheduleError(f"{fp.name} is computed inside {describe(site)} but {ch.func}.s{ch.stage.index} "
                                    "reads it outside that loop")
            if lvl is not None and lvl.chain is ch:
                child = ch.levels[lvl.depth + 1].node
            else:
                child = ch.head
                while self.parent[_id(child)] is not site:
                    child = self.parent[_id(child)]  # type: ignore[assignment]
            pos = next(i for i, c in enumerate(site.children) if c is child)
            if pos <= first_after:
                raise ScheduleError(f"{fp.name} must be computed before {ch.func}.s{ch.stage.index} reads it "
                                    f"(order of the children of {describe(site)})")

    def read_only_inside(self, func: str, site: LoopNest) -> bool:
        """Whether every computed stage that reads `func` (directly or through inlined Funcs) runs inside the loops
        of `site`, a node of this plan: the first rule of _check_placement, asked of a parent plan before a search
        places `func` at `site` (its readers are placed first and do not move). True when a reader is not
        scheduled yet: then the plan of the placed schedule decides."""
        try:
            chains = self._reading_chains(func)
        except KeyError:
            return True
        lvl = self.levels.get(_id(site))
        return all(self._runs_inside(ch, site, lvl) for ch in chains)

    @cython.locals(ch="Chain", lvl="Level")
    def _runs_inside(self, ch: Chain, site: LoopNest, lvl: Level | None) -> bool:
        """Whether stage chain `ch` runs inside the loops of `site` (whose level is `lvl`, None at the root): it is
        the chain `site` is a level of, or it is computed at `site` or inside it."""
        return (lvl is not None and lvl.chain is ch) or site is ch.site or self._encloses(site, ch.site)

    def _reading_chains(self, func: str) -> list[Chain]:
        """Chains of computed stages that read `func`, directly or through inlined Funcs."""
        out: list[Chain] = []
        self._visit_readers(func, out, set())
        return out

    @cython.locals(cp="FuncPlan")
    def _visit_readers(self, f: str, out: list[Chain], seen: set[str]) -> None:
        """_reading_chains' depth-first walk (a method: a closure that calls itself is a reference cycle)."""
        for c in self.dag.node(f).consumers:
            cp = self.funcs[c]
            if cp.inlined:
                if c not in seen:
                    seen.add(c)
                    self._visit_readers(c, out, seen)
                continue
            for ch in cp.chains:
                reads = any(a.producer == f and a.kind != "self" for a in ch.stage.accesses)
                if reads and all(ch is not o for o in out):
                    out.append(ch)

    def _sliding(self, fp: FuncPlan) -> Sliding | None:
        """A Func stored above its compute level: legal when the loops in between are one serial loop
        along which its region advances (adams2019 §3.2: single-dimension sliding windows)."""
        path = self.root.path_to(fp.site)
        assert path is not None and fp.store is not None
        between = path[next(i for i, p in enumerate(path) if p is fp.store) + 1:]
        moving = []
        for n in between:
            lvl = self.levels[_id(n)]
            for lp in lvl.loops:
                if lp.count > 1:
                    moving.append((lvl, lp))
        if not moving:
            return None
        if len(moving) > 1:
            raise ScheduleError(f"{fp.name} is stored outside {len(moving)} loops with more than one iteration; "
                                "a sliding window needs a single serial loop between storage and computation")
        lvl, lp = moving[0]
        if lvl.node.parallel:
            raise ScheduleError(f"{fp.name}: a sliding window cannot advance along a parallel loop")
        if len(fp.chains) > 1:
            raise ScheduleError(f"{fp.name} has update definitions; only pure Funcs slide")
        sym = next(iter(lp.index.symbols()))
        dims = []
        for d, (lo, hi) in enumerate(fp.region):
            mlo, mhi = monotonicity(lo, sym), monotonicity(hi, sym)
            if mlo == 0 and mhi == 0:
                continue
            if mlo not in (0, 1) or mhi != 1:
                raise ScheduleError(f"{fp.name}: its region does not advance monotonically along {lp.name}, so it "
                                    "cannot slide")
            dims.append(d)
        if len(dims) != 1:
            raise ScheduleError(f"{fp.name}: a sliding window must advance along exactly one dimension, "
                                f"found {len(dims)}")
        d = dims[0]
        if fp.vector_dim == d:
            raise ScheduleError(f"{fp.name}: cannot slide along its vectorized dimension")
        ch = fp.chains[0]
        j = ch.stage.pure_loop_of_dim(d)
        if any(lv.node.size[j] != 1 for lv in ch.levels[1:]):
            raise ScheduleError(f"{fp.name}: when sliding along dimension {d}, only its outermost level may "
                                "iterate that dimension")
        return Sliding(d, lp, lvl)

    def _vector_dim(self, fp: FuncPlan, chains: list[list[LoopNest]]) -> int:
        vd = {n.vector_dim for nodes in chains for n in nodes}
        if len(vd) != 1:
            raise ScheduleError(f"{fp.name}: all its levels must agree on vector_dim, found {sorted(vd)}")
        v = vd.pop()
        if not -1 <= v < fp.node.dimensions:
            raise ScheduleError(f"{fp.name}: vector_dim {v} is not a dimension")
        if fp.node.is_output and v > 0:
            raise ScheduleError(f"{fp.name} is an output stored with dimension 0 innermost; vectorize dimension 0")
        return v

    def _check_annotations(self) -> None:
        for fp in self.funcs.values():
            for ch in fp.chains:
                for lvl in ch.levels:
                    self._check_level_flags(fp, ch, lvl)

    @cython.locals(fp="FuncPlan", ch="Chain", lvl="Level", n="LoopNest")
    def _check_level_flags(self, fp: FuncPlan, ch: Chain, lvl: Level) -> None:
        n = lvl.node
        index = ch.stage.index
        if n.parallel:
            if ch.site.func is not None or lvl.depth != 0:
                raise _stage_error(fp.name, index,
                                   "only the outermost level of a Func computed at root runs in parallel")
            if n.innermost:
                raise _stage_error(fp.name, index, "the parallel level cannot also be the innermost; tile it first")
        if n.innermost and n.vectorized_loop >= 0:
            j = n.vectorized_loop
            if j >= len(ch.stage.loop):
                raise _stage_error(fp.name, index, f"vectorized_loop {j} is not a loop")
            l = ch.stage.loop[j]
            if not l.pure or l.func_dim != fp.vector_dim:
                raise _stage_error(fp.name, index, f"the SIMD loop must be the loop over vector_dim {fp.vector_dim}, "
                                                   f"not {l.name}")
            if not 2 <= n.size[j] <= MAX_VECTOR:
                raise _stage_error(fp.name, index, f"a SIMD loop needs 2 to {MAX_VECTOR} lanes, got {n.size[j]}")
        if n.unrolled:
            k = prod([s for j, s in enumerate(n.size) if j != n.vectorized_loop and ch.stage.loop[j].pure])
            if k > UNROLL_LIMIT:
                raise _stage_error(fp.name, index, f"unrolling {k} iterations exceeds {UNROLL_LIMIT}")


def _stage_error(func: str, index: int, what: str) -> ScheduleError:
    """`what` is wrong with stage `index` of `func`: the checks run for every new node of every searched state, so
    the stage's name is formatted only when one fails."""
    return ScheduleError(f"{func}.s{index}: {what}")


class _Walk:
    """What one walk of a plan's tree found. Plain slotted classes, as Loop's: a dataclass's generated __init__ would
    run interpreted, once per plan and per re-indexed subtree."""

    __slots__ = ("heads", "inlined", "stored", "innermost", "subtrees", "scheduled", "inlined_set")

    def __init__(self) -> None:
        self.heads: list = []  # (outermost node of a stage chain, its site), pre-order
        self.inlined: dict = {}  # Funcs inlined somewhere, in first-appearance order
        self.stored: dict = {}  # Func -> the node listing it in store_at
        self.innermost: list = []  # innermost nodes
        self.subtrees: dict = {}  # id(child of the root) -> its _Subtree
        self.scheduled: frozenset | None = None  # the plan's Funcs (its `funcs`), once region_at asks
        self.inlined_set: frozenset | None = None  # `inlined` as a frozenset, with it


class _Subtree:
    """What the walk found below one child of the root, that child included (but for its parent, the root, and its
    own entry in heads). A child plan whose root keeps that child takes all of it at once: a root child's key is
    (func, stage, 0) whatever the tree around it, so its subtree's keys are too."""

    __slots__ = ("keys", "parent", "by_key", "heads", "inlined", "stored", "innermost")

    def __init__(self) -> None:
        self.keys: dict = {}
        self.parent: dict = {}
        self.by_key: dict = {}
        self.heads: list = []
        self.inlined: dict = {}
        self.stored: dict = {}
        self.innermost: list = []


def _strides(layout: tuple[int, ...], extents: list[int]) -> tuple[int, ...]:
    """Each dimension's stride in an allocation of `extents` laid out as `layout` (innermost first)."""
    strides = [0] * len(extents)
    s = 1
    for d in layout:
        strides[d] = s
        s *= extents[d]
    return tuple(strides)


def storage_layout(node: Node, vector_dim: int) -> tuple[int, ...]:
    """Dimensions innermost first: outputs keep their natural layout; others put the vectorized
    dimension innermost and keep the relative order of the rest (adams2019 §3.3)."""
    dims = list(range(node.dimensions))
    if node.is_output or vector_dim < 0:
        return tuple(dims)
    return (vector_dim,) + tuple(d for d in dims if d != vector_dim)


def loop_order(stage: Stage, n: LoopNest, layout: tuple[int, ...]) -> tuple[int, ...]:
    """Loop indices of one level, outermost first: pure loops in storage order (the vectorized one
    innermost); RVars in RDom order, outside SIMD or unrolled loops and innermost otherwise."""
    key = (_id(stage), n.innermost and (n.vectorized_loop >= 0 or n.unrolled), layout)
    hit = _LOOP_ORDERS.get(key)
    if hit is not None and hit[0] is stage:
        return hit[1]
    order = _loop_order(stage, n, layout)
    if len(_LOOP_ORDERS) > 50_000:
        _LOOP_ORDERS.clear()
    _LOOP_ORDERS[key] = (stage, order)
    return order


_LOOP_ORDERS: dict = {}  # (stage, inner annotations, layout) -> loop_order; stage kept to pin its id


def _loop_order(stage: Stage, n: LoopNest, layout: tuple[int, ...]) -> tuple[int, ...]:
    rank = {d: k for k, d in enumerate(layout)}
    pure = sorted((j for j, l in enumerate(stage.loop) if l.pure), key=lambda j: -rank[stage.loop[j].func_dim])
    rvars = [j for j, l in enumerate(stage.loop) if not l.pure][::-1]
    if n.innermost and (n.vectorized_loop >= 0 or n.unrolled):
        return tuple(rvars + pure)
    return tuple(pure + rvars)


def inlined_calls(dag: FunctionDAG, inlined: set[str]) -> dict[tuple[str, int], dict[str, int]]:
    """For every stage, the inlined Funcs it calls (through other inlined Funcs too) and how many
    times per point."""
    memo: dict[str, dict[str, int]] = {}

    def within(stage: Stage) -> dict[str, int]:
        out: dict[str, int] = {}
        for a in stage.accesses:
            if a.kind == "func" and a.producer in inlined:
                out[a.producer] = out.get(a.producer, 0) + a.count
                for g, k in of_func(a.producer).items():
                    out[g] = out.get(g, 0) + a.count * k
        return out

    def of_func(f: str) -> dict[str, int]:
        if f not in memo:
            memo[f] = within(dag.node(f).stages[0])
        return memo[f]

    result = {}
    for n in dag.nodes:
        if n.name in inlined:
            continue
        for s in n.stages:
            calls = within(s)
            if calls:
                result[(n.name, s.index)] = calls
    return result


@cython.locals(fp="FuncPlan", ch="Chain")
def _unplanned(fp: FuncPlan) -> FuncPlan:
    """A fresh, unplanned FuncPlan on the same nodes as `fp` (what _group_chains builds for them)."""
    return FuncPlan(fp.name, fp.node, False, fp.site, fp.store,
                    [Chain(fp.name, ch.stage, ch.head, ch.site, [], [], []) for ch in fp.chains])


@cython.locals(dag="FunctionDAG")
def dag_chain_memo(dag: FunctionDAG) -> dict:
    """The search-wide memo of Plan._derive_chain results for `dag` (values only: no ids, no pins)."""
    return dag.analysis("ir.plan.chains", dict)


class _SearchRegions:
    """The search-wide memos of Plan.region_at for one DAG (values only: no ids, no pins)."""

    __slots__ = ("at_root", "at_levels")

    def __init__(self):
        self.at_root: dict = {}  # (Func, scheduled Funcs) -> region at the root
        # (Func, node key, the level's loop bases and extents, stages within it, scheduled, inlined) -> region there
        self.at_levels: dict = {}


@cython.locals(dag="FunctionDAG")
def dag_search_regions(dag: FunctionDAG) -> _SearchRegions:
    """The search-wide memos of regions (Plan.region_at) for `dag`."""
    return dag.analysis("ir.plan.regions", _SearchRegions)


def dag_loop_memo(dag: FunctionDAG) -> dict:
    """The search-wide memo of Plan._loop results for `dag`, by everything a loop's forms derive from: a chain
    tiled anew along one loop keeps the forms of the others (values only: no ids, no pins)."""
    return dag.analysis("ir.plan.loops", dict)


@cython.locals(n="LoopNest")
def _geometry(n: LoopNest) -> tuple:
    """What of a node shapes its own loops (not its children)."""
    return (n.func, n.stage, n.size, n.innermost, n.kind, n.vector_dim, n.vectorized_loop)


@cython.locals(dag="FunctionDAG")
def _inlined_func_plans(dag: FunctionDAG) -> dict[str, FuncPlan]:
    """One FuncPlan per inlined Func of `dag`, shared by every plan: an inlined Func has no loops, regions or
    storage of its own, so its plan is the same in every schedule (and nothing writes to it)."""
    return dag.analysis("ir.plan.inlined_func_plans", dict)


@cython.locals(n="LoopNest")
def _check_inlined_calls(n: LoopNest, calls: dict) -> None:
    """An innermost level must list exactly the inlined Funcs its stage calls (`calls`: inlined_calls), with counts."""
    want = calls.get((n.func, n.stage), {})
    have = dict(n.inlined)
    if have != want:
        raise ScheduleError(f"{n.func}.s{n.stage}: innermost level lists inlined {sorted(have.items())} "
                            f"but calls {sorted(want.items())}; rebuild it with the builder")


@cython.locals(dag="FunctionDAG")
def _inlined_calls_cached(dag: FunctionDAG, inlined: frozenset) -> dict:
    cache = dag.analysis("ir.plan.inlined_calls", dict)  # inlined set -> calls
    r = cache.get(inlined)
    if r is None:
        r = cache[inlined] = inlined_calls(dag, set(inlined))
    return r


@cython.locals(a="LoopNest", b="LoopNest")
def retiled_heads(old: LoopNest, new: LoopNest, func: str) -> list[LoopNest] | None:
    """`new`'s chain heads of `func` in `old`'s order when the two trees differ only below those heads (`new` tiles
    `func` otherwise at the same place: a tiling sibling, Plan.retiled), else None. Walks only where they differ."""
    found_old: list[LoopNest] = []
    found_new: list[LoopNest] = []
    stack = [(old, new)]
    while stack:
        a, b = stack.pop()
        if a is b:
            continue
        if a.func == func:
            if b.func != func or a.stage != b.stage or not (_bare_chain(a) and _bare_chain(b)):
                return None
            found_old.append(a)
            found_new.append(b)
            continue
        if a.func != b.func or a.stage != b.stage or a.size != b.size or a.kind is not b.kind or \
                a.innermost != b.innermost or a.vectorized_loop != b.vectorized_loop or a.vector_dim != b.vector_dim \
                or a.store_at != b.store_at or a.inlined != b.inlined or len(a.children) != len(b.children):
            return None
        stack.extend(zip(a.children, b.children))
    if not found_old:
        return None
    order = sorted(range(len(found_old)), key=lambda i: found_old[i].stage)
    return [found_new[i] for i in order]


@cython.locals(n="LoopNest")
def _bare_chain(head: LoopNest) -> bool:
    """Whether `head`'s subtree is its stage's levels alone: nothing else computed or stored inside."""
    n = head
    while not n.innermost:
        if n.store_at or len(n.children) != 1 or (n.children[0].func, n.children[0].stage) != (n.func, n.stage):
            return False
        n = n.children[0]
    return not n.store_at


def describe(n: LoopNest) -> str:
    return "root" if n.func is None else f"a level of {n.func}.s{n.stage}"
