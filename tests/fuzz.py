"""Differential fuzzing of the CPU backends (numba, llvm) against the reference interpreter.

    python -m tests.fuzz --n 500 --seed 1000        (also: make fuzz N=500)
    python -m tests.fuzz --backend llvm --n 1000 --seed 0

Each pair is a random pipeline (tests/fuzz_pipelines) and a random schedule of it (ir.sampling),
compiled and run in the worker process and compared with `ir.interpret` (bit-exact for integers).
A failing pair is minimized — schedule decisions simplified one at a time, output sizes shrunk, as
long as it still fails — and printed with the pipeline, the schedule and the command to reproduce it.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace

from backends import MeasureInput, measure_many
from backends.protocols import CHECK
from ir import interpret
from ir.builder import FuncDecision, ScheduleBuilder, StageSpec
from ir.errors import ScheduleError
from ir.sampling import random_schedule

from .fuzz_pipelines import random_test_pipeline

CHECK_ONLY = CHECK


@dataclass
class Outcome:
    status: str  # ok | invalid_schedule | compile_error | runtime_error | timeout | wrong_output
    error: str = ""


# how often a Func computed at a consumer's level is put at an enclosing Func's level instead (the search space's
# enclosing levels, SpaceOptions.enclosing_levels), so that the fuzzer checks those placements too
ENCLOSING = 0.2


def run_pair(pipeline, loopnest, seed: int, backend: str = "numba") -> Outcome:
    inputs = pipeline.random_inputs(seed)
    expected = interpret(pipeline, inputs)
    (m,) = measure_many([MeasureInput(pipeline, loopnest, inputs, expected)], backend=backend, protocol=CHECK_ONLY)
    return Outcome(m.status, m.error)


def check(pipeline_seed: int, schedule_seed: int, backend: str = "numba",
          enclosing: float = ENCLOSING) -> tuple[Outcome, object, object, dict]:
    p = random_test_pipeline(pipeline_seed)
    ln, decisions = random_schedule(p, schedule_seed, enclosing=enclosing)
    return run_pair(p, ln, pipeline_seed, backend), p, ln, decisions


def build(pipeline, decisions: dict[str, FuncDecision]):
    b = ScheduleBuilder(pipeline)
    b.decisions = dict(decisions)
    return b.build()


def _simpler(d: FuncDecision):
    """Decisions one step simpler than d."""
    if d.kind != "root" or d.specs[0] != StageSpec():
        yield FuncDecision("root", specs={0: StageSpec()})
    if d.kind == "at" and d.store_level is not None:
        yield replace(d, store_level=None)
    spec = d.specs.get(0)
    if spec is None:
        return
    for k in range(len(spec.tiles)):
        yield replace(d, specs={**d.specs, 0: replace(spec, tiles=spec.tiles[:k] + spec.tiles[k + 1:])})
    if spec.vectorize:
        yield replace(d, specs={**d.specs, 0: replace(spec, vectorize=None, vector_width=None)})
    if spec.unroll:
        yield replace(d, specs={**d.specs, 0: replace(spec, unroll={})})
    if spec.parallel:
        yield replace(d, specs={**d.specs, 0: replace(spec, parallel=False)})


def minimize(pipeline_seed: int, decisions: dict[str, FuncDecision], status: str, backend: str = "numba"):
    """Shrink a failing pair while it keeps failing with the same status."""
    p = random_test_pipeline(pipeline_seed)
    best = dict(decisions)
    changed = True
    while changed:
        changed = False
        for f in list(best):
            for cand in _simpler(best[f]):
                trial = {**best, f: cand}
                try:
                    ln = build(p, trial)
                except ScheduleError:
                    continue
                if run_pair(p, ln, pipeline_seed, backend).status == status:
                    best = trial
                    changed = True
                    break
    size = max(p.output_sizes.values())
    shrunk = True
    while shrunk:  # halve the output sizes while the pair keeps failing
        shrunk = False
        for cand in ((max(1, size[0] // 2), size[1]), (size[0], max(1, size[1] // 2))):
            if cand == tuple(size):
                continue
            try:
                q = random_test_pipeline(pipeline_seed, size=cand)
                ln = build(q, best)
            except Exception:  # noqa: BLE001 - a size the schedule does not fit
                continue
            if run_pair(q, ln, pipeline_seed, backend).status == status:
                p, size, shrunk = q, cand, True
                break
    return p, build(p, best), best


def report(pipeline_seed: int, schedule_seed: int, outcome: Outcome, decisions, backend: str = "numba",
           enclosing: float = ENCLOSING) -> str:
    p, ln, best = minimize(pipeline_seed, decisions, outcome.status, backend)
    again = run_pair(p, ln, pipeline_seed, backend)
    lines = [
        f"FAIL pipeline seed {pipeline_seed}, schedule seed {schedule_seed}: {outcome.status}: {outcome.error}",
        f"reproduce: python -m tests.fuzz --backend {backend} --pipeline-seed {pipeline_seed} "
        f"--schedule-seed {schedule_seed}" + (f" --enclosing {enclosing}" if enclosing != ENCLOSING else ""),
        "-- minimized pipeline --", str(p),
        "-- minimized schedule --", ln.to_str(p),
        f"-- minimized failure -- {again.status}: {again.error}",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500, help="pairs to check")
    ap.add_argument("--seed", type=int, default=1000, help="first pipeline seed")
    ap.add_argument("--pipeline-seed", type=int, help="check one pair (with --schedule-seed)")
    ap.add_argument("--schedule-seed", type=int, default=0)
    ap.add_argument("--backend", default="numba", help="the CPU backend checked: numba (default) or llvm")
    ap.add_argument("--enclosing", type=float, default=ENCLOSING,
                    help="probability that a compute_at goes to an enclosing Func's level where there is one")
    a = ap.parse_args(argv)
    pairs = ([(a.pipeline_seed, a.schedule_seed)] if a.pipeline_seed is not None
             else [(a.seed + i, (a.seed + i) * 31 + 7) for i in range(a.n)])
    counts: dict[str, int] = {}
    failures = []
    t0 = time.time()
    for k, (ps, ss) in enumerate(pairs, 1):
        outcome, p, ln, decisions = check(ps, ss, a.backend, a.enclosing)
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
        if outcome.status != "ok":
            print(report(ps, ss, outcome, decisions, a.backend, a.enclosing), flush=True)
            failures.append((ps, ss))
        if k % 10 == 0 or k == len(pairs):
            print(f"[{k}/{len(pairs)}] {time.time() - t0:.0f}s  " +
                  ", ".join(f"{s}: {c}" for s, c in sorted(counts.items())), flush=True)
    print(f"fuzz: {len(pairs)} pairs, {len(failures)} failing ({time.time() - t0:.0f}s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
