"""The search space: adams2019 §3.1's decision sequence over partial LoopNests.

Funcs are decided from the outputs back to the inputs, two decisions each:
  0. where to compute it — inlined; at root; or at any level of a (computed) stage that reads it, with its
     own loops tiled so that its producers can later be computed inside those tiles, optionally with its
     storage one level further out (a sliding window along that level's single moving loop). One branch per
     vectorizable dimension (extent >= the native vector width; outputs vectorize their stride-1 x).
  1. for a Func computed at root: its parallel outer tiling (cores <= tasks <= 16 x cores, least idle-core
     wastage) and an inner tiling, or serial. Other Funcs skip this decision.
  A reduction (a Func whose update iterates RVars) is also offered register tiles at each placement (its
  innermost tile one vector by a few unrolled points: scheduler.tilings.register_tilings).
schedlab chooses a Func's own tilings when the Func is placed (Halide retiles a consumer when a producer
is computed inside it); the set of reachable LoopNests is the same up to the tilings offered.

Every state holds its LoopNest, its plan and its features, derived incrementally from the parent's
(Plan.extend, featurize's memoized stages), so a successor costs one placement and the re-featurization
of the stages the decision can affect. A state reached again by the same decisions (every coarse-to-fine pass
of beam search replays much of the previous one) is not placed, planned or featurized again: a search that
asks for it (`remember_replays`) gets each state's candidates and realized children from `_Replays`.
Pruning (adams2019 §3.2): regions that do not shrink are not
descended into, points computed plus inlined calls beyond 8x the minimum are rejected except for
wrapper stages (pure copies), as are 256 inlined calls per point; tilings follow scheduler.tilings.
"""

from __future__ import annotations

from time import perf_counter
from dataclasses import FrozenInstanceError, dataclass, field

import numpy as np

try:
    import cython
except ImportError:  # pure Python without Cython: the typing decorators do nothing
    from ir.cython_pure import cython
from ir.cython_pure import set_frozen_fields

if not cython.compiled:  # run as Python (compiled, scheduler/space.pxd cimports it: a C call)
    from ir.symbolic import static_extent

from featurize.algorithm import access_classes
from featurize.schedule import allocations, retiled_features, schedule_features
from featurize.schema import SCHEDULE_INDEX
from ir.builder import FuncDecision, ScheduleBuilder, StageSpec, readers
from ir.errors import SchedlabError, ScheduleError
from ir.expr import Var
from ir.loopnest import LoopNest, common_path
from ir.plan import Plan, retiled_heads
from ir.target import CpuTarget, get_target, target_kind

from . import tilings

# Halide's adams2019 State::calculate_cost (reference/halide-autoschedulers.md, "Pruning rules"): a state is
# rejected when points computed + inlined calls > 8 x the minimum (wrappers exempt). The paper's §3.2 text says
# "more than ten times"; 10 is anderson2021's GPU value. We follow the CPU code.
MAX_RECOMPUTE = 8.0
MAX_INLINED_CALLS = 256  # same source: rejected at >= 256 inlined calls per point it must compute
AT_TILINGS = 3  # own tilings offered to a Func computed at a consumer's level (besides none)
ROOT_TILINGS = 4  # inner tilings offered per parallel tiling of a root Func (besides none)

_TOTAL = SCHEDULE_INDEX["points_computed_total"]
_MINIMUM = SCHEDULE_INDEX["points_computed_minimum"]
_INLINED = SCHEDULE_INDEX["inlined_calls"]


class SearchError(SchedlabError):
    """The search found no legal schedule, or was asked something it cannot do."""


class DeferredPlan:
    """The plan of a child's tree, made from its parent's plan the first time it is asked for. A tiling sibling is
    featurized from its first sibling's plan (Plan.retiled) and most of them are scored and dropped, never
    expanded: they never pay for a plan of their own."""

    __slots__ = ("parent", "tree", "_plan")

    def __init__(self, parent: Plan, tree: LoopNest):
        self.parent, self.tree, self._plan = parent, tree, None

    def plan(self) -> Plan:
        if self._plan is None:
            self._plan = Plan.extend(self.parent, self.tree)
            self.parent = None  # type: ignore[assignment]  # what it was made from need not live as long
        return self._plan


class State:
    """A partial schedule: the first `num_decisions` of the 2N decisions taken. Immutable: what a search
    learns about a state (its cost, penalties) lives in the search's own tables. (A plain slotted class, not a
    frozen dataclass: scheduler/space.pxd declares it as a Cython extension type, made and read as a C struct by
    the compiled search.)"""

    __slots__ = ("tree", "planned", "features", "num_decisions", "decisions", "inlined", "pending", "parent", "order",
                 "__weakref__")

    def __init__(self, tree: LoopNest, planned: "Plan | DeferredPlan", features: dict[tuple[str, int], np.ndarray],
                 num_decisions: int = 0, decisions: tuple[tuple[str, FuncDecision], ...] = (),
                 inlined: frozenset[str] = frozenset(), pending: frozenset[str] = frozenset(),
                 parent: "State | None" = None, order: int = 0):
        _fill_state(self, tree, planned, features, num_decisions, decisions, inlined, pending, parent, order)

    # tree: the LoopNest
    # planned: `plan`, or how to make it when asked (a tiling sibling's: SearchSpace.realize)
    # features: (func, stage) -> float32[41], scheduled stages only
    # decisions: per decided Func, as applied (root: with its tiling)
    # pending: root Funcs whose parallel tiling is still to be chosen
    # order: tie-breaker: creation order, so that equal costs sort deterministically

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        return (f"State(tree={self.tree!r}, planned={self.planned!r}, features={self.features!r}, "
                f"num_decisions={self.num_decisions!r}, decisions={self.decisions!r}, inlined={self.inlined!r}, "
                f"pending={self.pending!r}, parent={self.parent!r}, order={self.order!r})")

    @property
    def plan(self) -> Plan:
        p = self.planned
        return p if type(p) is Plan else p.plan()

    def decision(self, func: str) -> FuncDecision | None:
        for f, d in reversed(self.decisions):
            if f == func:
                return d
        return None

    def ancestors(self):
        s: State | None = self
        while s is not None:
            yield s
            s = s.parent


class Candidate:
    """A child before planning: the decision (None: phase 1 passed on) and the LoopNest it gives."""

    __slots__ = ("parent", "func", "decision", "tree", "pending")

    def __init__(self, parent: State, func: str, decision: FuncDecision | None, tree: LoopNest,
                 pending: frozenset[str]):
        self.parent = parent
        self.func = func
        self.decision = decision
        self.tree = tree
        self.pending = pending

    def __repr__(self) -> str:
        return (f"Candidate(parent={self.parent!r}, func={self.func!r}, decision={self.decision!r}, "
                f"tree={self.tree!r}, pending={self.pending!r})")


_STATE_FIELDS = State.__slots__[:-1]  # (all but __weakref__)


@cython.locals(s="State")
def _fill_state(s, tree, planned, features, num_decisions, decisions, inlined, pending, parent, order) -> None:
    """Set every field of a new State: as struct members when compiled (read-only to Python), through
    object.__setattr__ as Python (the class refuses assignment: a state is immutable)."""
    if cython.compiled:
        s.tree, s.planned, s.features, s.num_decisions = tree, planned, features, num_decisions
        s.decisions, s.inlined, s.pending, s.parent, s.order = decisions, inlined, pending, parent, order
    else:
        set_frozen_fields(s, _STATE_FIELDS, (tree, planned, features, num_decisions, decisions, inlined, pending,
                                             parent, order))


_SLOW = object()  # SearchSpace._retiled: not a tiling sibling, derive it by Plan.extend


@dataclass(eq=False, slots=True)
class _FirstSibling:
    """The first child of a placement and SIMD loops (SearchSpace._retiled): what its tiling siblings are derived
    from. Its plan is Plan.extend's for the placement's first child, and for the first of other SIMD loops the view
    retiled from that child's (a Plan of the same placement with this child's levels)."""

    tree: LoopNest
    plan: Plan
    features: dict[tuple[str, int], np.ndarray]
    allocations: dict[int, int] | None = None  # featurize.schedule.allocations(plan), once a sibling needs it


def _same_derivation(c: Candidate, fast, slow) -> None:
    """derivation="checked": a tiling sibling's (plan, features) from its first sibling equal Plan.extend's."""
    where = f"{c.func} ({c.decision}): tiling sibling"
    assert (fast is None) == (slow is None), f"{where} legal and acceptable {fast is not None} by retiling, " \
                                             f"{slow is not None} by Plan.extend"
    if fast is None:
        return
    a, b = fast[1], slow[1]
    assert a.keys() == b.keys(), f"{where}: stages {sorted(a.keys() ^ b.keys())} differ"
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), f"{where}: features of {k} differ"
    assert fast[0].plan().changed == slow[0].changed, f"{where}: changed Funcs differ"


# entries per generation of remembered states (0: none; benchmarks/search_speed.py compares): ~30 KB each (a plan
# and its features; camera_pipe beam 32 x 5 peaked at 1.19 GB with them, 0.49 GB without), so at most ~2 GB
REPLAY_LIMIT = 30_000


class _Replays:
    """What the space derived for states it may meet again, in two generations: the current search pass's and
    the one before's (what a pass finds of the previous pass's work moves on to the next). A generation takes at
    most `limit` entries, the first ones of its pass (the early decisions, where passes overlap most), so memory
    stays bounded.

    A state is known by its tree's identity, its decision count and its pending set: every tree the space
    places is made once, by one placement on one parent, so the same tree object means the same decisions.
    Entries keep the trees they are keyed by, so no other object can take their ids while an entry lives."""

    def __init__(self, limit: int = 0):
        self.limit = limit  # 0: remember nothing
        self.rotate = True  # False: one generation for all searches (the first `limit` entries of all of them)
        self.current: dict[tuple, tuple] = {}
        self.previous: dict[tuple, tuple] = {}
        self.hits = 0

    def get(self, key: tuple) -> tuple | None:
        """The entry (pins, value) remembered under `key`, or None."""
        if not self.limit:
            return None
        hit = self.current.get(key)
        if hit is None:
            hit = self.previous.get(key)
            if hit is None:
                return None
            if len(self.current) < self.limit:
                self.current[key] = hit
        self.hits += 1
        return hit

    def put(self, key: tuple, pins: tuple, value) -> None:
        if len(self.current) < self.limit:
            self.current[key] = (pins, value)

    def next_generation(self) -> None:
        if self.rotate:
            self.previous, self.current = self.current, {}


@dataclass(slots=True)
class Timing:
    """Where search time goes (benchmarks/search_speed.py): placing and planning, featurizing, the model."""

    enumerate_s: float = 0.0
    featurize_s: float = 0.0
    model_s: float = 0.0
    retiled: int = 0  # tiling siblings featurized from their first sibling's plan (SearchSpace._retiled)


@dataclass
class SpaceOptions:
    """What the space offers; the hierarchical search's freezing pre-pass narrows it."""

    root_or_inline_only: bool = False  # anderson2021 §6.5's pre-pass: only inline or compute_root
    frozen: dict[str, FuncDecision] = field(default_factory=dict)  # Funcs whose decision is fixed
    # how a child's plan and features are derived: "incremental" (Plan.extend and featurization memoized from
    # the parent's, and a tiling sibling's features from its first sibling's plan, its own plan made only if it is
    # expanded; what searches use), "extend" (every child by Plan.extend), "fresh" (a new Plan and every stage
    # featurized: the reference the others must agree with, which tests and benchmarks/search_speed.py compare them
    # to) or "checked" (incremental, every tiling sibling derived both ways and the two compared: for tests)
    derivation: str = "incremental"
    # a reduction's register tiles (scheduler.tilings.register_tilings) beside its other tilings; False gives the
    # space before they were offered (benchmarks/space_ab.py measures the two side by side)
    register_tiles: bool = True
    # how many dimensions besides the vector's a register tile's unrolled points span: 1, or up to 2 (2 x 4 and
    # 4 x 2 points as well); 1 gives the space before two-dimensional ones were offered
    register_tile_dims: int = 2
    # how many native vectors wide a register tile may be: 1, 2 or 4 (tilings.REGISTER_WIDE); 1 gives the space
    # before wider ones were offered
    register_tile_vectors: int = 4
    # a Func may also be computed at a level of another Func's loops that encloses every stage reading it (a level
    # on the way from the root down to its readers, outside their own loops): adams2019's compute_in_tiles descends
    # through every loop that contains all the consumers. Without it, a Func whose reader is computed inside an
    # output's tiles can only be computed at root or inside that reader's own loops (depthwise_separable_conv's
    # depthwise stage could not be fused into the output's tiles). False gives the space before it was offered.
    enclosing_levels: bool = True

    def __post_init__(self):
        if self.register_tile_dims not in REGISTER_TILE_DIMS:
            raise SearchError(f"register_tile_dims={self.register_tile_dims!r}: choose 1 or 2 (the dimensions besides "
                              f"the vector's that a register tile's unrolled points span)")
        if self.register_tile_vectors not in tilings.REGISTER_VECTORS:
            raise SearchError(f"register_tile_vectors={self.register_tile_vectors!r}: choose 1, 2 or 4 (how many "
                              f"native vectors wide a register tile may be)")


DERIVATIONS = ("incremental", "extend", "fresh", "checked")
REGISTER_TILE_DIMS = (1, 2)


_SPACES: dict[str, type] = {}  # target kind -> the search space of that kind's schedules


def register_space(kind: str):
    """Class decorator: the search space of targets of `kind` (what differs per kind — legal loop kinds,
    tilings, pruning — is a space of its own, not a refusal in the searches)."""
    def register(cls):
        _SPACES[kind] = cls
        cls.target_kind = kind
        return cls
    return register


def space_class(target="host") -> type:
    """The search space registered for `target`'s kind; a kind with none is a one-line SearchError."""
    tgt = get_target(target)
    cls = _SPACES.get(tgt.kind)
    if cls is None:
        raise SearchError(f"no search space for {tgt.kind} targets ({tgt.name}); kinds with one: "
                          f"{', '.join(sorted(_SPACES))}")
    return cls


def make_space(pipeline, target="host", options: "SpaceOptions | None" = None):
    """The registered search space for `target`'s kind, over `pipeline`."""
    tgt = get_target(target)
    return space_class(tgt)(pipeline, tgt, options)


@register_space("cpu")
class SearchSpace:
    """The CPU space of adams2019 §3.1 (the decisions, tilings and pruning described in this module)."""

    def __init__(self, pipeline, target="host", options: SpaceOptions | None = None):
        self.pipeline = pipeline
        self.dag = pipeline.dag
        self.target: CpuTarget = get_target(target)
        if self.target.kind != self.target_kind:
            raise SearchError(f"the {self.target_kind} search space got {self.target.name}, a {self.target.kind} "
                              "target; use make_space(pipeline, target)")
        self.options = options or SpaceOptions()
        if self.options.derivation not in DERIVATIONS:
            raise SearchError(f"unknown derivation {self.options.derivation!r}; choose one of "
                              f"{', '.join(DERIVATIONS)}")
        self._fresh = self.options.derivation == "fresh"
        # tiling siblings from their first sibling's plan (Plan.retiled): a space of a kind with limits to check
        # plans every child
        self._retile = (self.options.derivation in ("incremental", "checked")
                        and target_kind(self.target).check_limits is None)
        self._checked = self.options.derivation == "checked"
        # the last parent realized and its first child of each placement (_sibling_key) and SIMD loops (_simd_loops)
        self._siblings: tuple[State | None, dict[tuple, dict[tuple, _FirstSibling]]] = (None, {})
        self.builder = ScheduleBuilder(pipeline, self.target)
        self.nodes = list(self.dag.nodes)
        self.total_decisions = 2 * len(self.nodes)
        self._must_inline = {n.name for n in self.nodes if _must_inline(self.dag, n)}
        self._wrappers = {n.name for n in self.nodes if _is_wrapper(n)}
        # Funcs with producers that can be computed inside them: worth offering tilings of their own loops
        self._tileable = {n.name for n in self.nodes
                          if any(p in self.dag and p not in self._must_inline for p in n.producers)}
        # Funcs with an update that iterates RVars: offered register tiles for the accumulators it carries
        self._reductions = {n.name for n in self.nodes if self.options.register_tiles and _is_reduction(n)}
        self._counter = 0
        self.timing = Timing()
        self._replays = _Replays()
        self._root: State | None = None

    # -- states ----------------------------------------------------------------------------------

    def initial(self) -> State:
        """The empty schedule; every call (a new search pass) starts a new generation of remembered states."""
        if self._root is None:
            tree = LoopNest()
            self._root = State(tree, Plan(self.dag, tree, self.target, complete=False), {})
        self._replays.next_generation()
        r = self._root
        return State(r.tree, r.plan, r.features)

    def remember_replays(self, generations: bool = True) -> None:
        """Remember states for searches that meet them again (beam's coarse-to-fine passes); a search that
        keeps its own states (MCTS's trees) would only pay the memory. generations=False: what every search
        since realized, up to REPLAY_LIMIT entries in all (dropout walks, whose greedy prefixes meet at random)."""
        self._replays.limit = REPLAY_LIMIT
        self._replays.rotate = generations

    @property
    def replayed(self) -> int:
        """Successor lists and children served from earlier work instead of placed, planned and featurized."""
        return self._replays.hits

    def is_complete(self, s: State) -> bool:
        return s.num_decisions >= self.total_decisions

    def func_of(self, s: State):
        return self.nodes[s.num_decisions // 2]

    def expand(self, s: State, shortcuts: bool = True) -> list[State]:
        """The legal children of `s`, featurized, not yet scored."""
        return self.realize_all(self.successors(s, shortcuts))

    def realize_all(self, candidates: list[Candidate]) -> list[State]:
        return [c for c in map(self.realize, candidates) if c is not None]

    @cython.locals(s="State")
    def successors(self, s: State, shortcuts: bool = True) -> list[Candidate]:
        """The children of `s` as placed LoopNests, not yet planned or featurized: what hierarchical
        sampling buckets by structural hash before paying for the rest."""
        if self.is_complete(s):
            return []
        key = ("successors", id(s.tree), s.num_decisions, s.pending, shortcuts)
        hit = self._replays.get(key)
        if hit is not None:
            return [Candidate(s, func, d, tree, pending) for func, d, tree, pending in hit[1]]
        node = self.func_of(s)
        if s.num_decisions % 2 == 0:
            out = self._place_options(s, node, shortcuts)
        elif node.name not in s.pending:  # phase 1 applies to root Funcs only: pass the decision on
            out = [Candidate(s, node.name, None, s.tree, s.pending)]
        else:
            out = self._parallel_options(s, node)
        out = [c for c in out if c is not None]
        self._replays.put(key, (s.tree,), [(c.func, c.decision, c.tree, c.pending) for c in out])
        return out

    @cython.locals(c="Candidate", s="State")
    def realize(self, c: Candidate) -> State | None:
        """Plan and featurize a candidate; None when it is illegal or pruned."""
        s = c.parent
        self._counter += 1
        if c.decision is None:
            return State(s.tree, s.planned, s.features, s.num_decisions + 1, s.decisions, s.inlined, s.pending,
                         parent=s, order=self._counter)
        key = ("child", id(s.tree), s.num_decisions, s.pending, id(c.tree), c.pending)
        hit = self._replays.get(key)
        if hit is not None:
            done = hit[1]
        else:
            done = self._retiled(c) if self._retile else _SLOW
            if done is _SLOW:
                done = self._plan_and_featurize(c)
            self._replays.put(key, (s.tree, c.tree), done)
        if done is None:
            return None
        plan, feats = done
        decisions = tuple([(f, x) for f, x in s.decisions if f != c.func]) + ((c.func, c.decision),)
        inlined = s.inlined | {c.func} if c.decision.kind == "inline" else s.inlined
        return State(c.tree, plan, feats, s.num_decisions + 1, decisions, inlined, c.pending, parent=s,
                     order=self._counter)

    @cython.locals(c="Candidate")
    def _plan_and_featurize(self, c: Candidate):
        """(plan, features) of a placed candidate; None when it is illegal or pruned."""
        return self._judged(self._planned(c))

    def _judged(self, done):
        """`done`, a (plan, features) planned in full, unless it is None or adams2019's rules prune it."""
        if done is None or not self._acceptable(done[1], None if self._fresh else done[0].changed or set()):
            return None
        return done

    @cython.locals(c="Candidate", s="State", plan="Plan")
    def _planned(self, c: Candidate):
        """(plan, features) of a placed candidate, pruned or not; None when it is illegal."""
        s = c.parent
        t0 = perf_counter()
        try:
            plan = (Plan(self.dag, c.tree, self.target, complete=False) if self._fresh else
                    Plan.extend(s.plan, c.tree))
        except ScheduleError:
            self.timing.enumerate_s += perf_counter() - t0
            return None
        t1 = perf_counter()
        self.timing.enumerate_s += t1 - t0
        if self._fresh:
            feats = schedule_features(plan, self.target, c.pending)
        else:
            feats = schedule_features(plan, self.target, c.pending, parent=s.features, parent_pending=s.pending)
        self.timing.featurize_s += perf_counter() - t1
        return plan, feats

    # -- tiling siblings -------------------------------------------------------------------------

    @staticmethod
    def _sibling_key(c: Candidate) -> tuple:
        """What tiling siblings share: the Func, its placement and the pending set (their SIMD loops may differ:
        _simd_loops)."""
        d = c.decision
        return (c.func, d.kind, d.consumer, d.consumer_stage, d.level, d.store_level, c.pending)

    @staticmethod
    def _simd_loops(c: Candidate) -> tuple:
        """The dimension each stage of the decided Func vectorizes: a sibling that vectorizes another lays the Func
        out otherwise, so its readers are featurized again (retiled_features' relayout)."""
        return tuple(sorted([(k, sp.vectorize) for k, sp in c.decision.specs.items()]))

    @cython.locals(c="Candidate", s="State", plan="Plan", view="Plan")
    def _retiled(self, c: Candidate):
        """(plan, features) of `c` from the first child of its parent placed the same way (Plan.retiled): only the
        decided Func's stages are featurized (and its readers', where it vectorizes another dimension than that
        child), and its own plan is made when it is asked for (DeferredPlan). None when it is illegal or pruned;
        _SLOW when its tree differs from that child's elsewhere too (realize then plans it with Plan.extend)."""
        s = c.parent
        parent, firsts = self._siblings
        if parent is not s:
            firsts = {}
            self._siblings = (s, firsts)
        key = self._sibling_key(c)
        simd = self._simd_loops(c)
        group = firsts.get(key)
        if group is None:
            # a first child that adams2019's rules prune is still legal: its siblings are retiled from it, as they
            # would be from an accepted one (each is then judged by the rules on its own features)
            done = self._planned(c)
            if done is None:
                return None
            firsts[key] = {simd: _FirstSibling(c.tree, done[0], done[1])}
            return self._judged(done)
        first = group.get(simd)
        relayout = first is None
        if relayout:  # the first of its SIMD loops: from the placement's first child, then the base of its own
            first = next(iter(group.values()))
        plan = first.plan
        t0 = perf_counter()
        heads = retiled_heads(first.tree, c.tree, c.func)
        if heads is None:
            self.timing.enumerate_s += perf_counter() - t0
            return _SLOW
        try:
            view = plan.retiled(c.func, heads)
        except ScheduleError:
            view = None
        t1 = perf_counter()
        self.timing.enumerate_s += t1 - t0
        done = None
        self.timing.retiled += 1
        if view is not None:
            if first.allocations is None:
                first.allocations = allocations(plan)
            out = retiled_features(view, self.target, c.pending, first.features, c.func, first.allocations,
                                   relayout)
            if relayout:  # its view is a plan of the placement like the first child's, with this child's levels;
                # their allocations() differ only at the Func's levels, which allocate nothing and which
                # retiled_features walks afresh for every sibling
                group[simd] = _FirstSibling(c.tree, view, out, first.allocations)
            if self._acceptable(out, plan.changed or set()):
                done = (DeferredPlan(s.plan, c.tree), out)
        self.timing.featurize_s += perf_counter() - t1
        if self._checked:
            _same_derivation(c, done, self._plan_and_featurize(c))
        return done

    @cython.locals(s="State", base="State")
    def _try(self, s: State, func: str, d: FuncDecision, *, base: State | None = None,
             pending: frozenset[str] | None = None) -> Candidate | None:
        """Decision `d` for `func` placed on `base` (default `s`); None when it cannot be placed."""
        base = base or s
        t0 = perf_counter()
        try:
            tree = self.builder.place(base.tree, func, d, base.inlined, plan=base.plan)
        except ScheduleError:
            return None
        finally:
            self.timing.enumerate_s += perf_counter() - t0
        return Candidate(s, func, d, tree, s.pending if pending is None else pending)

    def _acceptable(self, feats, changed: set[str] | None) -> bool:
        """adams2019's calculate_cost rejections: points computed plus inlined calls beyond 8x the minimum
        (wrappers exempt), or 256 inlined calls per point needed. Checked for the Funcs scheduled differently
        from the parent (`changed`; the others passed when they last changed), or for all (None)."""
        for (func, stage), v in feats.items():
            if changed is not None and func not in changed:
                continue
            minimum = max(float(v[_MINIMUM]), 1.0)
            if v[_INLINED] >= MAX_INLINED_CALLS * minimum:
                return False
            if func not in self._wrappers and v[_TOTAL] + v[_INLINED] > MAX_RECOMPUTE * minimum:
                return False
        return True

    # -- decision 0: where to compute ------------------------------------------------------------

    def _place_options(self, s: State, node, shortcuts: bool = True) -> list[Candidate | None]:
        frozen = self.options.frozen.get(node.name)
        if frozen is not None:
            return [self._try(s, node.name, frozen, pending=s.pending - {node.name})]
        out: list[Candidate | None] = []
        if node.inlinable:
            out.append(self._try(s, node.name, FuncDecision("inline")))
            if shortcuts and node.name in self._must_inline:
                return out
        for v in self._vector_choices(node, [node.region_extent(d) for d in range(node.dimensions)]):
            out.append(self._try(s, node.name, FuncDecision("root", specs={0: StageSpec(vectorize=v)}),
                                 pending=s.pending | {node.name}))
        if not self.options.root_or_inline_only and not node.is_output:
            out.extend(self._compute_at_options(s, node))
        return out

    def _compute_at_options(self, s: State, node) -> list[Candidate | None]:
        out: list[Candidate | None] = []
        tiled = node.name in self._tileable
        heads: list[LoopNest] = []  # each computed reader's head
        offered: set[int] = set()  # the levels of the readers' own loops, offered here (or skipped as not shrinking)
        plan = s.plan
        for consumer, cstage in sorted(readers(self.dag, node.name, s.inlined)):
            chain = plan.stage_levels(consumer, cstage)
            if chain is None:
                continue
            heads.append(chain[0])
            offered.update(id(n) for n in chain)
            previous = None
            inside = True  # every other reader runs inside this level (once false, false deeper too)
            for level in range(len(chain) - 1):
                ext = self._extents_at(s.plan, node, chain[level])
                if ext is None or ext == previous:  # descending here does not shrink what is computed
                    continue
                previous = ext
                # a level some other reader runs outside of: every placement there would fail Plan's check
                # (None, as _try would give, so the candidate lists and what draws from them stay the same)
                inside = inside and _readers_inside(s.plan, node.name, chain[level])
                for v in self._vector_choices(node, ext):
                    out.extend(self._at_level(s, node, consumer, cstage, level, ext, v, tiled, inside))
                    if self._can_slide(node, chain[level]):
                        d = FuncDecision("at", consumer, cstage, level, level - 1,
                                         specs={0: StageSpec(vectorize=v)})
                        out.append(self._try(s, node.name, d) if inside else None)
        if self.options.enclosing_levels and heads:
            out.extend(self._enclosing_options(s, node, heads, offered, tiled))
        return out

    def _enclosing_options(self, s: State, node, heads: list[LoopNest], offered: set[int],
                           tiled: bool) -> list[Candidate | None]:
        """Placements at the levels of other Funcs' loops that enclose every reader (outermost first): the
        levels common to the paths from the root down to each reader's head, less the root (compute_root is
        offered already) and the readers' own levels. Every reader runs inside such a level, so it is legal
        wherever the readers are."""
        plan = s.plan
        paths = []
        for h in heads:  # the nodes above each head, the root excluded, outermost first
            path = []
            m = plan.parent[id(h)]
            while m is not None and not m.is_root:
                path.append(m)
                m = plan.parent[id(m)]
            paths.append(path[::-1])
        out: list[Candidate | None] = []
        previous = None
        for m in common_path(paths):
            if id(m) in offered:
                continue
            ext = self._extents_at(plan, node, m)
            if ext is None or ext == previous:  # descending here does not shrink what is computed
                continue
            previous = ext
            func, stage, depth = plan.keys[id(m)]
            for v in self._vector_choices(node, ext):
                out.extend(self._at_level(s, node, func, stage, depth, ext, v, tiled, True))
        return out

    @staticmethod
    def _extents_at(plan: Plan, node, n: LoopNest) -> list[int] | None:
        """The extents of what `node` computes once per iteration of `n` (None: nothing there reads it)."""
        region = plan.region_at(node.name, n)
        if region is None:
            return None
        return [static_extent(lo, hi, node.region_extent(k)) for k, (lo, hi) in enumerate(region)]

    def _at_level(self, s: State, node, func: str, stage: int, level: int, ext: list[int], v: str | None,
                  tiled: bool, legal: bool) -> list[Candidate | None]:
        """compute_at(node, func.s<stage>, level) vectorized along `v`, without and with each own tiling; None for
        each where the placement is known to be illegal (`legal` false)."""
        vd, width = self._vector(node, v)
        out: list[Candidate | None] = []
        for tile in [None] + self._own_tilings(node, ext, vd, width, AT_TILINGS, tiled):
            spec = self._spec(node, v, [tile] if tile else [], parallel=False)
            out.append(self._try(s, node.name, FuncDecision("at", func, stage, level, specs={0: spec}))
                       if legal else None)
        return out

    def _can_slide(self, node, level: LoopNest) -> bool:
        moving = [j for j, k in enumerate(level.size) if k > 1]
        return len(node.stages) == 1 and len(moving) == 1

    # -- decision 1: parallel tiling of a root Func ----------------------------------------------

    def _parallel_options(self, s: State, node) -> list[Candidate | None]:
        placed = s.decision(node.name)
        assert placed is not None and s.parent is not None
        v = placed.specs[0].vectorize
        vd, width = self._vector(node, v)
        ext = [node.region_extent(d) for d in range(node.dimensions)]
        tiled = node.name in self._tileable
        out: list[Candidate | None] = []
        for par in tilings.parallel_tilings(ext, self.target.cores, vd, width) + [None]:
            task = list(par.outer) if par else ext
            inner = self._own_tilings(node, task, vd, width, ROOT_TILINGS, tiled)
            for tile in [None] + inner:
                tiles = ([par.outer] if par else []) + ([tile] if tile else [])
                spec = self._spec(node, v, tiles, parallel=par is not None)
                out.append(self._try(s, node.name, FuncDecision("root", specs={0: spec}), base=s.parent,
                                     pending=s.pending - {node.name}))
        return out

    # -- helpers ---------------------------------------------------------------------------------

    def _own_tilings(self, node, ext: list[int], vd: int, width: int, limit: int, tiled: bool) -> list[tuple]:
        """A Func's own tilings over `ext`: log-spaced ones if producers may be computed inside its tiles, and a
        reduction's register tiles (each offered once)."""
        out = tilings.inner_tilings(ext, vd, width, limit) if tiled else []
        if node.name in self._reductions:
            regs = tilings.register_tilings(ext, vd, width, self.options.register_tile_dims,
                                            self.options.register_tile_vectors)
            out = out + [t for t in regs if isinstance(t, tilings.WideTile) or t not in out]
        return out

    def _vector_choices(self, node, extents: list[int]) -> list[str | None]:
        w = self.target.natural_vector_size(node.type)
        dims = [0] if node.is_output else range(node.dimensions)
        out = [node.dims[d] for d in dims if extents[d] >= w]
        return out or [None]

    def _vector(self, node, v: str | None) -> tuple[int, int]:
        if v is None:
            return -1, 1
        return node.dims.index(v), self.target.natural_vector_size(node.type)

    def _spec(self, node, v: str | None, tiles: list[tuple[int, ...]], parallel: bool) -> StageSpec:
        """A stage spec from tile extents per dimension (outermost first), with the unroll heuristic."""
        vd = node.dims.index(v) if v is not None else -1
        spec = StageSpec(tiles=[dict(zip(node.dims, t)) for t in tiles], vectorize=v, parallel=parallel)
        if tiles:
            last = list(tiles[-1])
            if vd >= 0:
                if isinstance(tiles[-1], tilings.WideTile):  # a register tile of several vectors: one SIMD loop
                    spec.vector_width = last[vd]
                last[vd] = 1
            spec.unroll = {node.dims[d]: k for d, k in tilings.unroll_extents(tuple(last), vd).items()}
        return spec


def _is_reduction(node) -> bool:
    """A Func with an update stage that iterates an RVar (matmul's sum, a histogram, a scan)."""
    return any(not l.pure for s in node.stages[1:] for l in s.loop)


def _is_wrapper(node) -> bool:
    """A single pure definition that only copies (or casts) one call: exempt from the recompute limit.

    Op histograms are keyed by (op, type bucket) (ir.dag.op_histogram); the op is what matters here."""
    if len(node.stages) != 1:
        return False
    ops: dict[str, int] = {}
    for (op, _bucket), v in node.stages[0].op_histogram.items():
        if v:
            ops[op] = ops.get(op, 0) + v
    calls = sum(ops.get(k, 0) for k in ("FuncCall", "ImageCall"))
    return calls == 1 and set(ops) <= {"FuncCall", "ImageCall", "Cast", "Variable", "Const"}


def _must_inline(dag, node) -> bool:
    """adams2019's shortcut: a pointwise Func with one pointwise consumer and pointwise producers.

    Pointwise as Halide's FunctionDAG means it: each call reads the single point the caller computes (an
    identity Jacobian and no offsets), so a stencil's producer is not a must-inline."""
    if not node.inlinable or len(node.consumers) != 1:
        return False
    uses = list(dag.accesses_to(node.name))
    own = [(node.stages[0], a) for a in node.stages[0].accesses]
    return all(_pointwise(stage, a) for stage, a in uses + own)


def _pointwise(stage, a) -> bool:
    """The access reads, per dimension, the caller's own coordinate (f(x, y) from g(x, y), not f(x + 1, y))."""
    if a.jacobian is None or not access_classes(a.jacobian)["pointwise"]:
        return False
    return all(isinstance(arg, Var) and isinstance(v, Var) and arg.name == v.name
               for arg, v in zip(a.args, stage.lhs))


def _readers_inside(plan: Plan, func: str, site: LoopNest) -> bool:
    """Plan.read_only_inside, as the placement rule asks it (a module function: tests turn the rule off here, since
    the compiled Plan is an extension type whose methods cannot be patched)."""
    return plan.read_only_inside(func, site)
