"""How fast is featurization? Search evaluates candidates by the hundred thousand, and adams2019 §6.4
found compile time dominated by generating and featurizing them.

For a 20-stage random pipeline and the 32-stage stencil chain:
  * full: microseconds to plan and featurize one complete schedule from scratch;
  * per candidate: a search state with some Funcs decided, its successors for the next Func (root with
    several tilings, each level of each consumer, inlining), each planned with Plan.extend and
    featurized incrementally from the state's features — only stages whose features can change are
    recomputed — against planning and featurizing the same successor from scratch.
The compass (issue 4) is <= 50 us per candidate on a 20-stage pipeline on one core.

    python benchmarks/featurize_speed.py [--seeds 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from featurize import featurize  # noqa: E402
from featurize.schedule import schedule_features  # noqa: E402
from ir import LoopNest  # noqa: E402
from ir.builder import FuncDecision, ScheduleBuilder, StageSpec  # noqa: E402
from ir.errors import ScheduleError  # noqa: E402
from ir.plan import Plan  # noqa: E402
from ir.sampling import random_schedule  # noqa: E402
from ir.target import get_target  # noqa: E402

TARGET = get_target("i9-7960x")


def pipelines(seeds: int):
    from generator.apps import stencil_chain
    from generator.random_pipeline import random_pipeline

    for s in range(seeds):
        yield f"random20 seed {s}", random_pipeline(s, max_stages=20)
    yield "stencil_chain32", stencil_chain.build("full")


def candidates(b: ScheduleBuilder, node, tree: LoopNest) -> list[FuncDecision]:
    """A search step's options for one Func: inline, root with tilings, each level of each consumer."""
    dims = node.dims
    out = [FuncDecision("root", specs={0: StageSpec()})]
    if node.inlinable:
        out.append(FuncDecision("inline"))
    ext = [node.region_extent(d) for d in range(node.dimensions)]
    for t in (8, 32, 128):
        tiles = [{v: min(t, e) for v, e in zip(dims, ext)}]
        out.append(FuncDecision("root", specs={0: StageSpec(tiles=tiles, vectorize=dims[0], vector_width=8,
                                                            parallel=True)}))
    for c in node.consumers:
        try:
            chain = tree.find_chain(c, 0)
        except KeyError:
            continue
        for level in range(len(chain) - 1):
            out.append(FuncDecision("at", c, 0, level, None, {0: StageSpec(vectorize=dims[0], vector_width=8)}))
    return out


def measure_search_step(p, seed: int, repeat: int):
    """(us per candidate incremental, us per candidate from scratch, candidates, planning share)."""
    _, decisions = random_schedule(p, seed)
    nodes = p.dag.nodes
    k = len(nodes) // 2  # a state half-way through the search
    b = ScheduleBuilder(p, TARGET)
    tree, inlined = LoopNest(), set()
    for node in nodes[:k]:
        tree = b._apply(tree, node, decisions[node.name], inlined)
    base_plan = Plan(p.dag, tree, TARGET, complete=False)
    base_feats = schedule_features(base_plan, TARGET)
    succ = []
    for d in candidates(b, nodes[k], tree):
        try:
            succ.append(b._apply(tree, nodes[k], d, set(inlined)))
        except ScheduleError:
            pass
    incr, full, plan_share = [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        tp = 0.0
        for t in succ:
            a = time.perf_counter()
            plan = Plan.extend(base_plan, t)
            tp += time.perf_counter() - a
            schedule_features(plan, TARGET, parent=base_feats)
        incr.append((time.perf_counter() - t0) / len(succ))
        plan_share.append(tp / max(time.perf_counter() - t0, 1e-12))
        t0 = time.perf_counter()
        for t in succ:
            schedule_features(Plan(p.dag, t, TARGET, complete=False), TARGET)
        full.append((time.perf_counter() - t0) / len(succ))
    return min(incr) * 1e6, min(full) * 1e6, len(succ), statistics.median(plan_share)


def measure_full(p, seed: int, repeat: int) -> float:
    ln, _ = random_schedule(p, seed)
    featurize(p, ln, TARGET)  # warm the pipeline features (computed once per pipeline)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        featurize(p, ln, TARGET)
        times.append(time.perf_counter() - t0)
    return min(times) * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="featurization speed")
    ap.add_argument("--seeds", type=int, default=3, help="random 20-stage pipelines")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    print(f"{'pipeline':24s} {'stages':>6s} {'full us':>10s} {'us/stage':>9s} {'cands':>6s} "
          f"{'incr us/cand':>13s} {'scratch us/cand':>16s} {'speedup':>8s} {'plan share':>10s}")
    rows = []
    for name, p in pipelines(a.seeds):
        n = sum(len(node.stages) for node in p.dag.nodes)
        full = measure_full(p, 1, a.repeat)
        inc, scratch, cands, share = measure_search_step(p, 1, a.repeat)
        rows.append((name, inc))
        print(f"{name:24s} {n:6d} {full:10.0f} {full / n:9.0f} {cands:6d} {inc:13.0f} {scratch:16.0f} "
              f"{scratch / inc:7.1f}x {share * 100:9.0f}%", flush=True)
    rand = [inc for name, inc in rows if name.startswith("random20")]
    if rand:
        print(f"\nrandom 20-stage pipelines: {statistics.mean(rand):.0f} us per candidate incrementally "
              f"(compass: 50 us; Halide's C++ evaluates ~9 us per state, adams2019 §6.4)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
