"""Monte Carlo tree search (protuner2020 §3-4): UCT over the space's decision sequence, rollouts completed
greedily or randomly and scored by the cost model, an ensemble of trees whose root children are combined to
commit one decision at a time. "mcts-real" also measures the best leaves and backs the runtimes up the tree.

Value of a rollout: best_cost_seen / cost, in (0, 1]. Each node keeps its visits and the sum of 1/cost, so
its mean value is best_now * mean(1/cost): every backup is normalized by the current best, not a stale one.
Like ProTuner, UCT selects by the mean value and a level's decision commits the child with the best cost
found under it (the best of every tree's best child), ties broken by visits.

Memory: a State carries its plan and features (~1.5 KB per stage) and pins its parent, so the search keeps
States only where it will use them again: the expansions of tree nodes (states some tree has visited), the
latest rollout expansions (up to RECENT_STAGE_STATES) and the cheapest FINALS_KEPT complete states. What it
learns of the others is keyed by a node id, the state's place in the (deterministic) expansion order: costs,
the cheapest leaf below, the leaves scored. A dropped state met again is expanded again and gets the same ids,
so nothing is scored twice and the search is the one it would be with everything kept (ties are broken by node
id, which is creation order), at the price of the repeated expansions. local_laplacian at 41,825 evaluations
peaks at 1.8 GB (it grew past 24 GB before, at beam 32 x 5's budget).
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from ir.collector import collector_paused

from ..cost import timed_score
from ..search import Scored, SearchResult, SearchStats
from ..space import SearchError, State
from ..strategy import Measured, SearchStrategy, register_strategy

ROLLOUTS = ("greedy", "random")
IDLE_ITERATIONS = 16  # per root child: iterations in a row that score nothing new end a tree's turn
MAX_PASSES = 64  # passes from the root (each spends what the last one left over; most searches need 1-4)
FINALS_KEPT = 64  # complete states kept whole (the cheapest); the others are rebuilt from their node ids
# the rollouts' latest expansions are kept up to this many (children x the pipeline's stages): a State costs ~1.5 KB
# per stage (its plan and features), so ~1.5 GB; greedy rollouts walk the same paths, random ones overlap deep down
RECENT_STAGE_STATES = 1_000_000


@dataclass
class NodeStats:
    """One tree's statistics of a state: visits, sum of 1/cost of the rollouts through it, best cost."""

    visits: int = 0
    inv_sum: float = 0.0
    best: float = math.inf


@dataclass
class Tree:
    """One member of the ensemble: its own random stream and statistics (the states are shared)."""

    rng: random.Random
    stats: dict[State, NodeStats] = field(default_factory=dict)
    iterations: int = 0


def check_config(c) -> None:
    """One-line errors for option values MCTS cannot run with."""
    if c.rollout not in ROLLOUTS:
        raise SearchError(f"unknown rollout {c.rollout!r}; choose one of {', '.join(ROLLOUTS)}")
    if c.trees < 1:
        raise SearchError(f"trees must be at least 1, got {c.trees}")
    if c.budget < 1:
        raise SearchError(f"budget must be at least 1 cost-model evaluation, got {c.budget}")
    if c.budget_seconds < 0:
        raise SearchError(f"budget_seconds must be >= 0 (0: no time limit), got {c.budget_seconds}")
    if not c.exploration >= 0:
        raise SearchError(f"exploration must be >= 0, got {c.exploration}")


@dataclass
class Leaf:
    """A complete state scored: its cost, node id (the tie-breaker: ids follow creation order) and the State
    itself while it is among the cheapest FINALS_KEPT (None after: rebuilt from the node id when asked for)."""

    cost: float
    node: int
    state: State | None


@dataclass(frozen=True)
class Commit:
    """One committed decision: the root searched from, the ensemble's visits of it and of its children then,
    the child."""

    root: State
    visits: dict[State, int]
    chosen: State
    root_visits: int = 0


@register_strategy("mcts")
class MCTS(SearchStrategy):
    """`trees` trees, `budget` cost-model evaluations (and/or `budget_seconds`), UCT constant `exploration`,
    `rollout` greedy (the cheapest child at each step) or random (only the complete leaf is scored)."""

    def initialize(self, space, model, config) -> None:
        check_config(config)
        super().initialize(space, model, config)
        self.evaluated = 0
        # node ids: 0 is the initial state; a state's children have consecutive ids from first_child[its id]
        self.up: list[int] = []  # node id -> its parent's node id (-1: the initial state)
        self.first_child: dict[int, int] = {}
        self.node_of: weakref.WeakKeyDictionary[State, int] = weakref.WeakKeyDictionary()  # live States' ids
        self.cost: dict[int, float] = {}  # node id -> predicted cost, shared by the trees
        self.kids: dict[int, list[State]] = {}  # node id -> expansion, kept for tree nodes, shared by the trees
        self.recent: OrderedDict[int, list[State]] = OrderedDict()  # the latest other expansions, oldest first
        self.recent_states = 0
        self.recent_limit = max(1000, RECENT_STAGE_STATES // max(1, len(space.dag.nodes)))
        self.leaves: dict[str, Leaf] = {}  # fingerprint -> the complete state scored
        self.whole_leaves = 0  # leaves holding their State
        self.best_cost = math.inf
        self.best_under: dict[int, float] = {}  # node id -> the cheapest complete state scored below it
        self.trees = [Tree(random.Random(config.seed * 1000003 + t)) for t in range(config.trees)]
        self.max_iteration = 0  # the most evaluations one iteration used (the budget's overshoot bound)
        self.result: SearchResult | None = None
        self.commits: list[Commit] = []  # the decisions searched for, pass after pass (not the single-child ones)
        self.passes = 0  # passes from the root so far

    # -- the space and the model -------------------------------------------------------------------

    def _children(self, s: State, keep: bool = True) -> list[State]:
        """The expansion of `s`, kept for later if `keep` (a tree node's), else dropped after its use."""
        sid = self.node_of[s]
        kids = self.kids.get(sid)
        if kids is not None:
            return kids
        kids = self.recent.pop(sid, None)
        if kids is None:
            kids = self.space.expand(s) or self.space.expand(s, shortcuts=False)
            first = self.first_child.get(sid)
            if first is None:
                first = self.first_child[sid] = len(self.up)
                self.up.extend([sid] * len(kids))
            for i, k in enumerate(kids):
                self.node_of[k] = first + i
        else:
            self.recent_states -= len(kids)
        if keep:
            self.kids[sid] = kids
        else:
            self.recent[sid] = kids  # the newest, last
            self.recent_states += len(kids)
            while self.recent_states > self.recent_limit:
                self.recent_states -= len(self.recent.popitem(last=False)[1])
        return kids

    def _ancestors(self, sid: int):
        while sid >= 0:
            yield sid
            sid = self.up[sid]

    def _state(self, leaf: Leaf) -> State:
        """The leaf's State, rebuilt along its node ids from the initial state if it was dropped."""
        if leaf.state is not None:
            return leaf.state
        path = list(self._ancestors(leaf.node))[::-1]
        s = self.initial
        for parent, sid in zip(path, path[1:]):
            s = self._children(s, keep=False)[sid - self.first_child[parent]]
        return s

    def _score(self, states: list[State]) -> None:
        fresh = []
        for s in states:
            sid = self.node_of[s]
            if sid in self.cost:
                continue
            p = self.up[sid]
            if p >= 0 and s.tree is s.parent.tree and p in self.cost:
                self.cost[sid] = self.cost[p]  # a decision passed on: the parent's cost
            else:
                fresh.append(s)
        if fresh:
            costs, _ = timed_score(self.model, self.space.dag, fresh, self.space.timing)
            self.evaluated += len(fresh)
            for s, c in zip(fresh, costs):
                self.cost[self.node_of[s]] = float(c)

    def _leaf(self, s: State) -> float:
        self._score([s])
        sid = self.node_of[s]
        c = self.cost[sid]
        fp = s.tree.fingerprint
        old = self.leaves.get(fp)
        if old is None or c < old.cost:
            if old is not None and old.state is not None:
                self.whole_leaves -= 1
            self.leaves[fp] = Leaf(c, sid, s)
            self.whole_leaves += 1
            if self.whole_leaves > 2 * FINALS_KEPT:
                self._drop_states()
        self.best_cost = min(self.best_cost, c)
        for a in self._ancestors(sid):
            if c >= self.best_under.get(a, math.inf):
                break  # the ancestors above already know a leaf at least as cheap
            self.best_under[a] = c
        return c

    def _drop_states(self) -> None:
        """Keeps the States of the cheapest FINALS_KEPT leaves; the others keep their node ids only."""
        whole = sorted((x for x in self.leaves.values() if x.state is not None), key=lambda x: (x.cost, x.node))
        for x in whole[FINALS_KEPT:]:
            x.state = None
        self.whole_leaves = min(len(whole), FINALS_KEPT)

    # -- one iteration: select, expand, roll out, back up ----------------------------------------------

    def _value(self, st: NodeStats) -> float:
        best = self.best_cost if math.isfinite(self.best_cost) else 1.0
        return best * st.inv_sum / st.visits

    def _select(self, tree: Tree, root: State) -> list[State]:
        path, s = [root], root
        while not self.space.is_complete(s):
            kids = self._children(s)
            if not kids:
                break
            fresh = [k for k in kids if k not in tree.stats]
            if fresh:
                path.append(tree.rng.choice(fresh))
                break
            log_n = math.log(tree.stats[s].visits)
            c = self.config.exploration
            s = max(kids, key=lambda k: self._value(tree.stats[k]) + c * math.sqrt(log_n / tree.stats[k].visits))
            path.append(s)
        return path

    def _rollout(self, tree: Tree, s: State) -> State | None:
        keep = True  # the first state is the selected one, a tree node from this iteration on
        while not self.space.is_complete(s):
            kids = self._children(s, keep)
            keep = False
            if not kids:
                return None  # a dead end: no legal completion
            if self.config.rollout == "greedy":
                self._score(kids)
                s = min(kids, key=lambda k: (self.cost[self.node_of[k]], k.order))
            else:
                s = tree.rng.choice(kids)
        return s

    def _iterate(self, tree: Tree, root: State) -> None:
        before = self.evaluated
        path = self._select(tree, root)
        leaf = self._rollout(tree, path[-1])
        cost = self._leaf(leaf) if leaf is not None else math.inf
        for s in path:
            st = tree.stats.setdefault(s, NodeStats())
            st.visits += 1
            st.inv_sum += 1.0 / cost if cost > 0 else 1.0
            st.best = min(st.best, cost)
        tree.iterations += 1
        self.max_iteration = max(self.max_iteration, self.evaluated - before)

    # -- committing one level at a time --------------------------------------------------------------

    def _out_of_budget(self, target: float, deadline: float) -> bool:
        return self.evaluated >= target or time.perf_counter() >= deadline

    def search(self) -> State:
        """Passes from the root: each commits the winning child level by level until the state is complete.
        A level gets (budget left) / (decisions left); a level whose subtree is scored out ends early, and
        late levels' subtrees are small, so a pass leaves budget over. The next pass spends it from the root
        with the trees' statistics kept (an anytime search, as UCT is), until the budget or the clock is
        spent or a pass scores nothing new. The cyclic collector is paused as in beam search (plans and the
        trees' tables are acyclic)."""
        with collector_paused():
            return self._search()

    def _search(self) -> State:
        c = self.config
        t_end = time.perf_counter() + c.budget_seconds if c.budget_seconds > 0 else math.inf
        self.initial = self.space.initial()
        self.node_of[self.initial] = len(self.up)
        self.up.append(-1)
        self.cost[0] = 0.0
        while True:
            before = self.evaluated
            root = self._search_pass(self.initial, t_end)
            self.passes += 1
            if (self.evaluated >= c.budget or self.evaluated == before or time.perf_counter() >= t_end
                    or self.passes >= MAX_PASSES):
                break
        self._leaf(root)
        return root

    def _search_pass(self, root: State, t_end: float) -> State:
        """One pass: search from `root`, commit the winning child, repeat until the root is complete."""
        c, space = self.config, self.space
        while not space.is_complete(root):
            kids = self._children(root)
            if not kids:
                raise SearchError(f"no legal schedule exists for pipeline {space.pipeline.name!r} on "
                                  f"{space.target.name}: every candidate was illegal or pruned")
            if len(kids) > 1:
                levels = max(1, space.total_decisions - root.num_decisions)
                level_end = self.evaluated + (c.budget - self.evaluated) / levels
                now = time.perf_counter()
                slice_s = (t_end - now) / levels if math.isfinite(t_end) else math.inf
                for t, tree in enumerate(self.trees):  # sequential: the same result for the same seed
                    # what the level has left, shared among the trees still to search: a tree's last iteration
                    # may overshoot its share, and the next trees get that much less, so the level (and the
                    # search) ends at most one iteration past its budget however many trees there are
                    share = max(level_end - self.evaluated, 0.0)
                    target = self.evaluated + share / (len(self.trees) - t)
                    deadline = time.perf_counter() + slice_s / (len(self.trees) - t)
                    first, idle = not self.leaves, 0
                    while first or not self._out_of_budget(target, min(deadline, t_end)):
                        before = self.evaluated
                        self._iterate(tree, root)
                        first = False
                        idle = idle + 1 if self.evaluated == before else 0
                        if idle >= IDLE_ITERATIONS * len(kids):  # everything under the root is scored already
                            break
                root = self._commit(root, kids)
            else:
                root = kids[0]
            if c.progress is not None:
                c.progress(self.passes, root.num_decisions, space.total_decisions, self.evaluated)
        return root

    def _commit(self, root: State, kids: list[State]) -> State:
        """The best child of every tree's best children (protuner2020 §4): lowest best cost found below it
        (by any tree, rollouts included), then the ensemble's visits."""
        def key(k: State):
            best = self.best_under.get(self.node_of[k], math.inf)
            visits = sum(t.stats[k].visits for t in self.trees if k in t.stats)
            return (best, -visits, k.order)
        chosen = min(kids, key=key)
        self.commits.append(Commit(root, {k: self.visits(k) for k in kids}, chosen, self.visits(root)))
        return chosen

    def visits(self, s: State) -> int:
        """The ensemble's visits of a state (the trees' sum)."""
        return sum(t.stats[s].visits for t in self.trees if s in t.stats)

    def finish(self) -> SearchResult:
        if self.result is None:
            t0 = time.perf_counter()
            final = self.search()
            cheapest = sorted(self.leaves.values(), key=lambda x: (x.cost, x.node))[:FINALS_KEPT]
            finals = [Scored(self._state(x), x.cost) for x in cheapest]
            timing = self.space.timing
            stats = SearchStats(self.evaluated, time.perf_counter() - t0, timing.enumerate_s, timing.featurize_s,
                                timing.model_s, sum(t.iterations for t in self.trees), model=self.model.name,
                                retiled=timing.retiled)
            self.final = Scored(final, self.cost[self.node_of[final]])
            self.result = SearchResult(finals[0], finals, stats)
        return self.result


@register_strategy("mcts-real")
class MCTSReal(MCTS):
    """MCTS, then up to `measurements` of its best leaves compiled and measured in batches of `trees`; each
    measured runtime backs up through the tree (visits and value of every ancestor) and the next batch is
    the unmeasured leaves under the fastest measured prefixes. Returns the fastest measured."""

    measures = True

    def initialize(self, space, model, config) -> None:
        if config.measurements < 1:
            raise SearchError(f"measurements must be at least 1, got {config.measurements}")
        super().initialize(space, model, config)
        self.real: dict[int, NodeStats] = {}  # node id -> measured statistics, backed up from the leaves
        self.measured: dict[str, tuple[float, Scored]] = {}
        self.best_time = math.inf

    def generate_candidates(self) -> list[State]:
        MCTS.finish(self)
        left = self.config.measurements - len(self.measured)
        if left <= 0:
            return []
        todo = [x for fp, x in self.leaves.items() if fp not in self.measured]  # every leaf scored
        todo.sort(key=lambda x: (-self._real_value(x.node), x.cost, x.node))
        batch = [Scored(self._state(x), x.cost) for x in todo[:min(left, len(self.trees))]]
        self.pending = {id(s.state): s for s in batch}
        return [s.state for s in batch]

    def _real_value(self, sid: int) -> float:
        """The measured mean value of the deepest measured ancestor (0 when none was measured)."""
        for a in self._ancestors(sid):
            st = self.real.get(a)
            if st is not None and st.visits:
                return self.best_time * st.inv_sum / st.visits
        return 0.0

    def notify(self, measured: list[Measured]) -> None:
        for s, t in measured:
            self.measured[s.tree.fingerprint] = (t, self.pending[id(s)])
            if math.isfinite(t):
                self.best_time = min(self.best_time, t)
            for a in self._ancestors(self.node_of[s]):
                st = self.real.setdefault(a, NodeStats())
                st.visits += 1
                st.inv_sum += 1.0 / t if math.isfinite(t) and t > 0 else 0.0
                st.best = min(st.best, t)

    def finish(self) -> SearchResult:
        if self.generate_candidates():  # nobody measured: the caller's loop did not run
            raise SearchError("mcts-real measures its leaves: run it through autoschedule, which measures them")
        res = self.result
        timed = [(t, s) for t, s in self.measured.values()]
        if not timed or not any(math.isfinite(t) for t, _ in timed):
            raise SearchError(f"none of the {len(timed)} measured MCTS leaves of {self.space.pipeline.name!r} "
                              "compiled and ran correctly")
        best_time, best = min(timed, key=lambda x: (x[0], x[1].cost))
        stats = dataclasses.replace(res.stats, measured={s.tree.fingerprint: t for t, s in timed})
        return dataclasses.replace(res, best=best, stats=stats, runtime=best_time)
