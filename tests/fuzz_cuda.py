"""Differential fuzzing of the CUDA backend without a GPU: random pipelines x random GPU schedules.

    python -m tests.fuzz_cuda --n 500 --seed 0

Each pair is a random pipeline (tests/fuzz_pipelines) and a random GPU LoopNest of it for an H100
(ir.gpu_schedule); its CUDA text is compiled by NVRTC for sm_80 and sm_90 and run on the CPU by the plain and
the racecheck g++ builds, and the outputs are compared with `ir.interpret` (bit-exact for integers). These are
CPU runs of the lowering, not GPU measurements.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from ir.errors import ScheduleError
from ir.gpu_schedule import random_gpu_loopnest

from .fuzz_pipelines import random_test_pipeline

TARGET = "h100"


def check_pair(pipeline_seed: int, schedule_seed: int, worker=None):
    from backends.cuda import EmulationCheck, check

    p = random_test_pipeline(pipeline_seed)
    try:
        ln = random_gpu_loopnest(p, schedule_seed, TARGET)
    except ScheduleError as e:
        return EmulationCheck("invalid_schedule", str(e)), p, None
    return check(p, ln, TARGET, seed=pipeline_seed, worker=worker), p, ln


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100, help="pairs to check")
    ap.add_argument("--seed", type=int, default=0, help="first pipeline seed (pair k uses seed + k)")
    args = ap.parse_args(argv)
    counts: Counter = Counter()
    t0 = time.perf_counter()
    failures = []
    for k in range(args.n):
        s = args.seed + k
        r, p, ln = check_pair(s, s)
        counts[r.status] += 1
        if r.status not in ("ok",):
            failures.append((s, r))
            print(f"pair {s}: {r.status}: {r.error}", flush=True)
        if (k + 1) % 10 == 0:
            print(f"[{k + 1}/{args.n}] {dict(counts)} {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"seeds {args.seed}..{args.seed + args.n - 1}: {dict(counts)} in {time.perf_counter() - t0:.0f} s")
    bad = [s for s, r in failures if r.status != "invalid_schedule"]
    if bad:
        print(f"failing seeds: {bad}; reproduce one with: python -m tests.fuzz_cuda --n 1 --seed {bad[0]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
