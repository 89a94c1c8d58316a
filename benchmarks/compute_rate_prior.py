"""What does an arithmetic operation cost? The analytical prior's compute terms against what compiled code spends.

The analytical model charges a stage's compute as (vector lanes computed) x (operations per point, the pipeline
features' op histogram) x a fixed rate per lane-op (train.analytical.COEFFICIENTS: compute_vectors and
compute_vectors_inlined), and nothing in the random pipelines pins that rate: scaling it by 1/8 to 1 moved held-out
pairwise accuracy by under 0.005 (docs/train.md, "Prior 7"). This measures it on this machine, the way
line_cost_prior.py measures a line: one f32 stage of `--ops` operations per point (a chain of multiply-adds with a
min every fourth step, distinct constants so nothing folds) over a full-size image, at root, parallel over rows,
vectorized along x; and the same chain inlined into a consumer that reads it at two taps (so it is computed twice
per output point, the recompute an inlined producer costs). Memory traffic is the same at every op count, so the
measured extra time between the shortest chain and each longer one is compute alone. For each it prints that
extra, what the prior predicts extra (all terms), and the factor on the compute terms that would make the prior
predict the measured extra:

    factor = measured extra / predicted extra        (only the compute terms change between op counts)

With `--chains N` the operations are split into N independent chains summed at the end: one chain waits on each
result (latency-bound), eight keep the SIMD units busy (throughput-bound, as a register tile's accumulators or a
stencil's taps do). Each schedule is measured `--repeats` times and its best time kept; read the factors' spread.

    python benchmarks/compute_rate_prior.py                    # ~15 seconds
    python benchmarks/compute_rate_prior.py --chains 8 --backend llvm
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZE = (1536, 2560)  # the apps' full-size images (nl_means, camera_pipe's output)


def build(ops: int, inlined: bool, chains: int = 1):
    """An f32 computation of about `ops` operations per point on one input image, as `chains` independent chains
    summed at the end (1: each operation waits on the one before; 8: eight in flight, as a register tile's
    accumulators are); `inlined`: read at two taps by a consumer `out` (the chains are then the producer `chain`,
    inlined by the schedule)."""
    from ir import Func, Input, Pipeline, Var, f32, min

    x, y = Var("x"), Var("y")
    inp = Input("input", f32, 2)
    w, h = SIZE
    vs = [inp[x, y] * (1.0 + 0.01 * c) for c in range(chains)]
    for i in range(max(1, ops // (2 * chains))):  # each step a multiply and an add; every fourth also a min
        for c in range(chains):
            vs[c] = vs[c] * (0.999 - 1e-4 * i - 1e-6 * c) + (1e-3 * (i + 1))
            if i % 4 == 3:
                vs[c] = min(vs[c], 4.0 + i)
    v = vs[0]
    for other in vs[1:]:
        v = v + other
    chain = Func("chain")
    chain[x, y] = v
    if not inlined:
        return Pipeline([chain], {chain: (w, h)}, name=f"chain{ops}")
    out = Func("out")
    out[x, y] = chain[x, y] + chain[x + 1, y]
    return Pipeline([out], {out: (w - 1, h)}, name=f"chain{ops}_inlined")


def schedule(p, target):
    """The output at root in row tasks of 32 rows, parallel, vectorized along x; every other Func inlined."""
    from ir.builder import ScheduleBuilder

    b = ScheduleBuilder(p, target)
    out = p.outputs[0].name
    for n in p.dag.nodes:
        if n.name != out:
            b.inline(n.name)
    node = p.dag.node(out)
    b.root(out, tiles=[{"x": node.region_extent(0), "y": 32}], vectorize="x", parallel=True)
    return b.build()


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="16,64,128,256", help="operations per point, comma-separated; the first is the base")
    ap.add_argument("--backend", default="halide")
    ap.add_argument("--repeats", type=int, default=3, help="measure each batch this many times; the best of each")
    ap.add_argument("--chains", type=int, default=1,
                    help="independent chains the operations are split into (1: latency-bound; 8: throughput-bound)")
    a = ap.parse_args(argv)

    from featurize import featurize
    from ir.target import get_target
    from scheduler.modes import measure_loopnests, reference
    from train.analytical import COMPUTE_TERMS, PRIOR, analytical_term_costs

    try:
        counts = sorted({int(k) for k in a.ops.split(",")})
    except ValueError:
        ap.error(f"--ops: comma-separated integers, got {a.ops!r}")
    if len(counts) < 2 or counts[0] < 2:
        ap.error("--ops: at least two counts, each >= 2")
    if a.chains < 1 or counts[0] < 2 * a.chains:
        ap.error(f"--chains: at least 1, and at most half the smallest --ops ({counts[0]})")
    target = get_target("host")
    print(f"f32 chains ({a.chains} independent) over {SIZE[0]} x {SIZE[1]}, row tasks, vectorized, parallel, compiled by {a.backend}, "
          f"{target.cores} cores; prior {PRIOR}")
    print(f"{'chain':28s} {'ops/point':>9s} {'measured':>10s} {'extra':>10s} {'predicted extra':>16s} "
          f"{'of it compute':>14s} {'factor':>8s}")
    factors: dict[bool, list[float]] = {False: [], True: []}
    for inlined in (False, True):
        rows = []
        for k in counts:
            p = build(k, inlined, a.chains)
            ln = schedule(p, target)
            inputs, expected = reference(p)
            best = min(min(measure_loopnests(p, [ln], target, inputs, expected, backend=a.backend))
                       for _ in range(a.repeats))
            f = featurize(p, ln, target)
            terms = analytical_term_costs(f.pipeline, f.schedule, target.cores, PRIOR)
            rows.append((p, k, best, terms))
        base = rows[0]
        for p, k, t, terms in rows:
            label = "inlined into 2 taps" if inlined else "at root"
            if p is base[0]:
                print(f"{label:28s} {k:9d} {t * 1e3:8.2f} ms")
                continue
            extra, d = t - base[2], terms - base[3]
            compute = d[COMPUTE_TERMS].sum()
            factor = extra / d.sum() if d.sum() > 0 else float("nan")
            factors[inlined].append(factor)
            print(f"{label:28s} {k:9d} {t * 1e3:8.2f} ms {extra * 1e3:7.2f} ms {d.sum() * 1e3:13.2f} ms "
                  f"{compute * 1e3:11.2f} ms {factor:7.2f}x", flush=True)
    for inlined, fs in factors.items():
        finite = [f for f in fs if np.isfinite(f)]
        if finite:
            print(f"compute factor, {'inlined' if inlined else 'at root'}: median {statistics.median(finite):.2f}x "
                  f"over {len(finite)} op counts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
