"""Search algorithms over the space of scheduler.space.

* beam search (adams2019 §3.2): each step expands the beam, scores every child in one batch and keeps
  the `beam_size` cheapest. With beam > 1 it runs coarse-to-fine passes: in pass p a state's cost is
  multiplied by how often its depth-(p+1) structural hash was already taken this step, and +10 when its
  depth-(p-1) hash was not blessed by the previous pass (the ancestors of the states within 1.2x of that
  pass's best). Greedy is beam 1, one pass.
* random dropout (adams2019 §4.3): each state about to be kept is dropped with probability
  1 - (d/100)^(1/2N), so `d` % is the chance that a whole run is the model's greedy choice; with beam 1 this
  is the model-biased random walk that generates training data.
* hierarchical sampling (anderson2021 §3-4): children are bucketed by structural hash before they are
  planned or featurized, and only floor(log2 n) (at least 1) random members of a bucket of n are kept.
* freezing (anderson2021 §6.5): a pre-pass restricted to inline or compute_root; the cheapest
  N - floor(log2 N) Funcs by predicted cost keep that decision, the remaining passes search the others.

States are immutable: the costs, stage costs and penalties of a pass live in its own tables, and what a
search ends with is `Scored` states. The registered SearchStrategy wrappers are in scheduler/strategies/.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections import Counter
from dataclasses import dataclass, field, replace

from ir.collector import collector_paused

from .cost import CostModel, timed_score
from .space import SearchError, SearchSpace, SpaceOptions, State, Timing, make_space

BLESS_RATIO = 1.2  # adams2019: ancestors of states within 1.2x of the best are permitted next pass
NOT_PERMITTED_PENALTY = 10.0


@dataclass
class SearchConfig:
    beam_size: int = 32
    passes: int = 5  # coarse-to-fine passes when beam_size > 1 (greedy: 1)
    seed: int = 0
    dropout: float = 100.0  # % chance of the run being fully greedy; 100 = no dropout
    hierarchical: bool = False  # bucket children by structural hash, score log2(n) per bucket
    freeze: bool = False  # anderson2021's inline/root pre-pass freezing the cheapest stages (beam > 1)

    def __post_init__(self):
        if self.beam_size < 1:
            raise SearchError(f"beam_size must be at least 1, got {self.beam_size}")
        if self.passes < 1:
            raise SearchError(f"passes must be at least 1, got {self.passes}")
        if not 0 < self.dropout <= 100:
            raise SearchError(f"dropout must be a percentage in (0, 100], got {self.dropout}")


@dataclass
class SearchStats:
    states_evaluated: int
    seconds: float
    enumerate_s: float
    featurize_s: float
    model_s: float
    passes: int
    frozen: list[str] = field(default_factory=list)  # Funcs the freezing pre-pass fixed
    algorithm: str = "beam"
    model: str = ""
    measured: dict[str, float] = field(default_factory=dict)  # top-k / autotune: fingerprint -> seconds
    replayed: int = 0  # successor lists and children taken from remembered states (SearchSpace.remember_replays)
    retiled: int = 0  # tiling siblings featurized from their first sibling's plan, not planned (SearchSpace._retiled)

    @property
    def us_per_state(self) -> float:
        return 1e6 * self.seconds / max(1, self.states_evaluated)

    def __str__(self) -> str:
        from ir.units import format_seconds as t

        return (f"{self.algorithm} with {self.model}: {self.states_evaluated} states in {t(self.seconds)} "
                f"({t(self.seconds / max(1, self.states_evaluated))}/state: enumerate {t(self.enumerate_s)}, "
                f"featurize {t(self.featurize_s)}, model {t(self.model_s)}"
                + (f"; {self.replayed} replayed" if self.replayed else "")
                + (f"; {self.retiled} retiled" if self.retiled else "") + ")")


@dataclass(frozen=True)
class Scored:
    """A state and what the model predicted for it (the search's bookkeeping, kept off the State)."""

    state: State
    cost: float
    stage_costs: dict[tuple[str, int], float] | None = None

    @property
    def tree(self):
        return self.state.tree


@dataclass
class SearchResult:
    best: Scored
    finals: list[Scored]  # every distinct complete state any pass ended with, cheapest first
    stats: SearchStats
    runtime: float | None = None  # seconds: best's measured runtime, when a strategy measured in the loop


class BeamSearch:
    def __init__(self, pipeline, target, model: CostModel, config: SearchConfig, progress=None,
                 fixed: dict | None = None, options: SpaceOptions | None = None, space: SearchSpace | None = None):
        self.pipeline = pipeline
        # what the spaces it makes offer (derivation, register tiles: the calling space's options), with `fixed`,
        # Func -> FuncDecision the user imposes (a partial schedule), when given
        base = options or SpaceOptions()
        self.options = replace(base, frozen=dict(base.frozen if fixed is None else fixed))
        self.fixed = self.options.frozen
        self.target = target
        self.model = model
        self.config = config
        self.rng = random.Random(config.seed)
        self.progress = progress
        self.evaluated = 0
        # a space other searches of the same pipeline and options used before (dropout_walks): what it remembers
        # of their states is replayed, the schedules are the same as with a space of its own
        self.space = space

    def run(self) -> SearchResult:
        with collector_paused():  # a search makes no reference cycles: reference counting frees what it drops
            return self._run()

    def _run(self) -> SearchResult:
        t0 = time.perf_counter()
        cfg = self.config
        space = self.space or make_space(self.pipeline, self.target, self.options)
        space.timing = Timing()  # this search's own split, also on a space that searched before
        replayed_before = space.replayed
        passes = cfg.passes if cfg.beam_size > 1 else 1
        spaces = [space]
        finals: list[Scored] = []
        frozen: list[str] = []
        first = 0
        if cfg.freeze and cfg.beam_size > 1 and len(space.nodes) > 1:
            pre_space = make_space(self.pipeline, self.target, replace(self.options, root_or_inline_only=True))
            spaces.append(pre_space)
            pre = self._pass(pre_space, -1, set())
            finals.extend(pre)
            decisions, frozen = _freeze(space, pre[0])
            space = make_space(self.pipeline, self.target, replace(self.options, frozen={**decisions, **self.fixed}))
            spaces.append(space)
            first = 1
        permitted: set[int] = set()
        if passes - first > 1:  # later passes replay much of the earlier ones: remember their states
            space.remember_replays()
        for p in range(first, passes):
            ends = self._pass(space, p if passes > 1 else -1, permitted)
            finals.extend(ends)
            permitted |= _bless(ends, p, cfg.beam_size)
        finals = _distinct(finals)
        if not finals:
            raise SearchError(f"no legal schedule exists for pipeline {self.pipeline.name!r} on "
                              f"{space.target.name}: every candidate was illegal or pruned")
        timing = [s.timing for s in spaces]
        stats = SearchStats(self.evaluated, time.perf_counter() - t0, sum(t.enumerate_s for t in timing),
                            sum(t.featurize_s for t in timing), sum(t.model_s for t in timing), passes, frozen,
                            model=self.model.name, replayed=sum(s.replayed for s in spaces) - replayed_before,
                            retiled=sum(t.retiled for t in timing))
        return SearchResult(finals[0], finals, stats)

    # -- one pass --------------------------------------------------------------------------------

    def _pass(self, space: SearchSpace, p: int, permitted: set[int]) -> list[Scored]:
        cfg = self.config
        keep = (cfg.dropout / 100.0) ** (1.0 / max(1, space.total_decisions))
        beam = [space.initial()]
        cost: dict[State, float] = {beam[0]: 0.0}  # this step's predicted costs, by state identity
        stages: dict[State, dict | None] = {beam[0]: None}
        while beam and not space.is_complete(beam[0]):
            children = self._children(space, beam, p)
            fresh = []
            for c in children:
                if c.tree is c.parent.tree:  # a decision passed on: the parent's cost
                    cost[c], stages[c] = cost[c.parent], stages[c.parent]
                else:
                    fresh.append(c)
            if fresh:
                costs, stage_costs = timed_score(self.model, space.dag, fresh, space.timing)
                self.evaluated += len(fresh)
                for c, total, sc in zip(fresh, costs, stage_costs):
                    cost[c], stages[c] = float(total), sc
            beam = self._select(children, cost, p, permitted, keep)
            cost, stages = {s: cost[s] for s in beam}, {s: stages[s] for s in beam}
            if self.progress is not None:
                self.progress(p, beam[0].num_decisions if beam else 0, space.total_decisions, self.evaluated)
        return sorted((Scored(s, cost[s], stages[s]) for s in beam), key=lambda x: (x.cost, x.state.order))

    def _children(self, space: SearchSpace, beam: list[State], p: int) -> list[State]:
        out: list[State] = []
        for s in beam:
            candidates = space.successors(s)
            if self.config.hierarchical and len(candidates) > 1:
                candidates = self._sample(candidates, max(p, 0))
            kids = space.realize_all(candidates)
            if not kids:  # every shortcut option was pruned: offer the whole space at this step
                kids = space.expand(s, shortcuts=False)
            out.extend(kids)
        return out

    def _sample(self, candidates, depth: int):
        """anderson2021's hierarchical sampling: log2(n) random members of each structural-hash bucket."""
        buckets: dict[int, list] = {}
        for c in candidates:
            buckets.setdefault(c.tree.structural_hash(depth), []).append(c)
        out = []
        for members in buckets.values():
            self.rng.shuffle(members)
            out.extend(members[:max(1, int(math.log2(len(members))))])
        return out

    def _select(self, children: list[State], costs: dict[State, float], p: int, permitted: set[int],
                keep: float) -> list[State]:
        cfg = self.config
        penalize = cfg.beam_size > 1 and p >= 0
        heap = [(costs[c], c.order, c) for c in children]
        heapq.heapify(heap)
        seen: Counter[int] = Counter()  # visit counts of structural hashes this step
        penalized: set[State] = set()
        chosen: list[State] = []
        dropped: State | None = None
        while heap and len(chosen) < cfg.beam_size:
            cost, order, s = heapq.heappop(heap)
            if penalize and s not in penalized:
                h = _hash(s, p + 1)
                seen[h] += 1
                mult = float(seen[h])
                if p > 0 and _hash(s, p - 1) not in permitted:
                    mult += NOT_PERMITTED_PENALTY
                if mult > 1:
                    penalized.add(s)
                    heapq.heappush(heap, (cost * mult, order, s))
                    continue
            if keep < 1 and self.rng.random() > keep:
                dropped = s
                continue
            chosen.append(s)
        if not chosen and dropped is not None:  # everything dropped: the walk goes on with the last one seen
            chosen.append(dropped)
        return chosen


def dropout_walks(pipeline, target, model: CostModel, seeds, dropout: float, options: SpaceOptions | None = None):
    """One random-dropout walk (beam 1, `dropout` % fully greedy) per seed, lazily, over one space that
    remembers the states it realized. Walks share the greedy prefix until their first drop (with dropout 1 over 20
    decisions a state is dropped with probability 0.11), and each walk replays what the walks before realized; each
    gives the schedule a walk over a space of its own gives (tests/test_scheduler.py)."""
    space = make_space(pipeline, target, options)
    space.remember_replays(generations=False)
    for seed in seeds:
        config = SearchConfig(beam_size=1, passes=1, seed=seed, dropout=dropout)
        yield BeamSearch(pipeline, space.target, model, config, options=space.options, space=space).run()


def _hash(s: State, depth: int) -> int:
    return hash((s.num_decisions, s.tree.structural_hash(max(depth, 0))))


def _bless(ends: list[Scored], p: int, beam_size: int) -> set[int]:
    if not ends:
        return set()
    best = ends[0].cost
    out: set[int] = set()
    for s in ends[:beam_size]:
        if s.cost > BLESS_RATIO * best:
            break
        out.update(_hash(a, p) for a in s.state.ancestors())
    return out


def _distinct(states: list[Scored]) -> list[Scored]:
    """The cheapest of each distinct schedule, cheapest first. Trees compare by value (the same equality as their
    fingerprints, without writing each one out as JSON)."""
    seen: set = set()
    out = []
    for s in sorted(states, key=lambda s: (s.cost, s.state.order)):
        k = s.tree
        if k not in seen:
            seen.add(k)
            out.append(s)
    return out


def _freeze(space: SearchSpace, pre: Scored) -> tuple[dict, list[str]]:
    """The pre-pass decisions of the cheapest N - floor(log2 N) Funcs (by their stages' predicted costs)."""
    costs: dict[str, float] = {}
    for (func, _), c in (pre.stage_costs or {}).items():
        costs[func] = costs.get(func, 0.0) + c
    names = [n.name for n in space.nodes]
    n_free = max(1, int(math.log2(len(names))))
    ranked = sorted(names, key=lambda f: (costs.get(f, 0.0), names.index(f)))
    frozen = ranked[:max(0, len(names) - n_free)]
    return {f: pre.state.decision(f) for f in frozen if pre.state.decision(f) is not None}, frozen
