"""What does a line cost? The analytical prior's line terms against what Halide-compiled code spends on them.

A "line" in adams2019's features is a contiguous run of a buffer along its innermost storage dimension: a
stage that writes (or reads) its region in column strips starts a new line every row of every strip, where
row-major tasks start one per row. The analytical model charges lines through five terms
(`train.analytical.LINE_TERMS`: lines read per realization and per task, lines written by parallel, output and
other stages). This measures what they stand for on this machine: a chain of `--stages` 5x5 stencils
(generator/apps/stencil_chain.py at full size, every stage at root, parallel, vectorized along x) with row
tasks, then with column strips of each `--widths`, each compiled by `--backend`, checked against the interpreter
and measured with the full protocol. For each strip width it prints the measured extra time over row tasks,
what each prior predicts extra, and the factor on the line terms that would make prior 2 predict the measured
extra (other terms as they are):

    factor = (measured extra - prior 2's extra from the other terms) / prior 2's extra from the line terms

Prior 3 (train.analytical) multiplies the line terms by LINE_SCALE, the median of those factors measured here.
The batch is measured `--repeats` times and each schedule's best time kept: on this shared machine the same schedule
measured 78 ms in one batch and 120 ms in the next. Read the factors' spread, not their last digit.

    python benchmarks/line_cost_prior.py                      # ~3 minutes
    python benchmarks/line_cost_prior.py --stages 4 --widths 32,64
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def schedule(p, target, width: int | None):
    """Every stage at root, parallel and vectorized along x: row tasks of 64 rows (width None) or column strips
    `width` wide and the whole height tall."""
    from ir.builder import ScheduleBuilder

    b = ScheduleBuilder(p, target)
    for n in p.dag.nodes:
        w, h = n.region_extent(0), n.region_extent(1)
        tile = {"x": w, "y": 64} if width is None else {"x": width, "y": h}
        b.root(n.name, tiles=[tile], vectorize="x", parallel=True)
    return b.build()


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=32)
    ap.add_argument("--widths", default="32,64,96")
    ap.add_argument("--backend", default="halide")
    ap.add_argument("--repeats", type=int, default=3, help="measure the batch this many times; the best of each")
    a = ap.parse_args(argv)

    from featurize import featurize
    from generator.apps import stencil_chain
    from ir.target import get_target
    from scheduler.modes import measure_loopnests, reference
    from train.analytical import LINE_SCALE, LINE_TERMS, analytical_term_costs
    from train.model import TERMS

    target = get_target("host")
    p = stencil_chain.build("full", stages=a.stages)
    widths = [int(w) for w in a.widths.split(",")]
    loopnests = [schedule(p, target, None)] + [schedule(p, target, w) for w in widths]
    inputs, expected = reference(p)
    batches = [measure_loopnests(p, loopnests, target, inputs, expected, backend=a.backend) for _ in range(a.repeats)]
    runtimes = [min(ts) for ts in zip(*batches)]  # the first schedule of a batch measured slow in some batches

    def terms(ln, prior):
        f = featurize(p, ln, target)
        return analytical_term_costs(f.pipeline, f.schedule, target.cores, prior)

    line = np.zeros(len(TERMS), dtype=bool)
    line[list(LINE_TERMS)] = True
    base2, base3 = terms(loopnests[0], 2), terms(loopnests[0], 3)
    print(f"{p.name} at full size ({a.stages} stages of 5x5), every stage at root, compiled by {a.backend}, "
          f"{target.cores} cores")
    print(f"{'schedule':22s} {'measured':>10s} {'extra':>10s} {'prior 2 extra':>14s} {'of it lines':>12s} "
          f"{'prior 3 extra':>14s} {'line factor':>12s}")
    print(f"{'row tasks (64 rows)':22s} {runtimes[0] * 1e3:8.2f} ms")
    factors = []
    for w, ln, t in zip(widths, loopnests[1:], runtimes[1:]):
        d2, d3 = terms(ln, 2) - base2, terms(ln, 3) - base3
        extra = t - runtimes[0]
        lines, other = d2[line].sum(), d2[~line].sum()
        factor = (extra - other) / lines if lines > 0 else float("nan")
        factors.append(factor)
        print(f"{f'strips {w} wide':22s} {t * 1e3:8.2f} ms {extra * 1e3:7.2f} ms {d2.sum() * 1e3:11.2f} ms "
              f"{lines * 1e3:9.2f} ms {d3.sum() * 1e3:11.2f} ms {factor:11.1f}x")
    finite = [f for f in factors if np.isfinite(f)]
    if finite:
        print(f"line factor: median {statistics.median(finite):.1f}x over {len(finite)} widths "
              f"(prior 3's LINE_SCALE: {LINE_SCALE:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
