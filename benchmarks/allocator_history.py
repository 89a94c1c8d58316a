"""Does a kernel's measured runtime depend on what its worker process ran before? glibc's adaptive malloc
thresholds against the settings schedlab's workers can pin (backends.worker.ALLOCATORS), side by side in one run.

For each app at full size and each of its schedules (naive, expert, beam 8 x 2 with the built-in model), the same
compiled kernel is measured three times under each allocator setting, settings interleaved kernel by kernel:
- fresh: in a new worker process that has run nothing before (what Halide's RunGen measures: one process per
  benchmark);
- fresh again: in another new one (the protocol's own run-to-run noise);
- shared: in one worker per setting that measures every schedule of every app in turn, as evaluate's and the
  data job's benchmarkers do, so each kernel runs after all the kernels before it.
Per setting it prints each schedule's best runtime and the minor page faults per run (the worker's, over the
whole measurement), then two factors, geometric mean and largest over the schedules: fresh against fresh again
(noise) and fresh against shared (how much a label depends on the worker's past). Every measurement checks the
outputs against the interpreter (the full protocol). About 15 minutes for the default apps and two settings on
the 2-core machine.

    python benchmarks/allocator_history.py
    python benchmarks/allocator_history.py --apps camera_pipe,interpolate --allocators adaptive,pinned
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

APPS = "camera_pipe,interpolate,local_laplacian,bilateral_grid,stencil_chain,harris,unsharp,max_filter"
HISTORIES = ("fresh", "fresh again", "shared")


@dataclass
class Timed:
    """One measurement of one schedule in one worker."""

    runtime_s: float
    faults_per_run: float
    status: str


def minor_faults(pid: int | None) -> int:
    """A process's minor page faults so far (Linux /proc; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except (OSError, ValueError, IndexError, TypeError):
        return 0


def measure(built, inputs, expected, worker) -> Timed:
    from backends import run
    from backends.kernel import Protocol

    f0 = minor_faults(worker.pid)
    m = run(built, inputs, "full", expected=expected, worker=worker)
    runs = max(1, m.iterations + Protocol().warmup)
    return Timed(m.min_s if m.ok else math.nan, (minor_faults(worker.pid) - f0) / runs, m.status)


def schedules(app, pipeline, target, backend: str) -> list[tuple[str, object]]:
    from ir.builder import naive_schedule
    from scheduler import autoschedule

    out = [("naive", naive_schedule(pipeline))]
    if app.schedule is not None:
        out.append(("expert", app.schedule(pipeline, target)))
    s = autoschedule(pipeline, target, model="builtin", algorithm="beam", beam_size=8, passes=2, backend=backend,
                     allow_mismatch=True)
    out.append(("beam", s.loopnest))
    return out


def spread(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """(geometric mean, largest) factor between the two histories' runtimes, over the schedules both measured."""
    logs = [abs(math.log(b / a)) for a, b in pairs if a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)]
    if not logs:
        return math.nan, math.nan
    return math.exp(sum(logs) / len(logs)), math.exp(max(logs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=APPS)
    ap.add_argument("--backend", default="halide")
    ap.add_argument("--size", default="full")
    ap.add_argument("--allocators", default="adaptive,pinned", help="settings of backends.worker.ALLOCATORS")
    a = ap.parse_args(argv)

    from backends import build
    from backends.worker import Worker
    from generator.apps import app_list, get_app
    from ir.target import get_target
    from ir.units import format_seconds
    from scheduler.modes import reference

    try:
        apps = app_list(a.apps)
    except ValueError as e:
        ap.error(f"--apps: {e}")

    target = get_target("host")
    allocators = a.allocators.split(",")
    shared = {alloc: Worker(allocator=alloc) for alloc in allocators}  # a wrong name fails here, before any work
    rows: list[tuple[str, str, dict[tuple[str, str], Timed]]] = []
    t_start = time.perf_counter()
    order = ", ".join(f"{h}/{alloc}" for alloc in allocators for h in HISTORIES)
    print(f"backend {a.backend}, size {a.size}; each kernel: {order}", flush=True)
    for name in apps:
        app = get_app(name)
        pipeline = app.build(a.size)
        inputs, expected = reference(pipeline)
        for label, ln in schedules(app, pipeline, target, a.backend):
            built = build(pipeline, ln, target, backend=a.backend)
            if not built.ok:
                print(f"{name} {label}: {built.status}: {built.error}", flush=True)
                continue
            got: dict[tuple[str, str], Timed] = {}
            for alloc in allocators:
                for h in HISTORIES[:2]:
                    fresh = Worker(allocator=alloc)
                    got[(alloc, h)] = measure(built, inputs, expected, fresh)
                    fresh.close()
                got[(alloc, "shared")] = measure(built, inputs, expected, shared[alloc])
            rows.append((name, label, got))
            for alloc in allocators:
                cells = "  ".join(f"{h}: {format_seconds(got[(alloc, h)].runtime_s):>8s} "
                                  f"{got[(alloc, h)].faults_per_run:7.0f} faults" for h in HISTORIES)
                print(f"{name:16s} {label:7s} {alloc:9s} {cells}", flush=True)
    for w in shared.values():
        w.close()
    print()
    print(f"{'allocator':10s} {'schedules':>9s} {'fresh/fresh again':>18s} {'fresh/shared':>13s} "
          f"{'largest':>8s} {'faults/run, median':>19s}")
    for alloc in allocators:
        noise = spread([(g[(alloc, 'fresh')].runtime_s, g[(alloc, 'fresh again')].runtime_s) for _, _, g in rows])
        history = spread([(g[(alloc, 'fresh')].runtime_s, g[(alloc, 'shared')].runtime_s) for _, _, g in rows])
        faults = sorted(g[(alloc, h)].faults_per_run for _, _, g in rows for h in HISTORIES)
        med = faults[len(faults) // 2] if faults else math.nan
        print(f"{alloc:10s} {len(rows):9d} {noise[0]:17.3f}x {history[0]:12.3f}x {history[1]:7.2f}x {med:19.0f}")
    print("(a factor: the larger of two measurements' best runtimes over the smaller, per schedule; geometric mean; "
          f"largest: of fresh/shared; {time.perf_counter() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
