"""Every app at full size, naive and expert schedules, on every backend: equal to the interpreter?

The data generator takes its labels from whichever backend is fastest, and the small sizes the tests use do
not reach every value a full-size run computes (local_laplacian under Halide was wrong on 4 of 11.8 M
outputs only at full size). This builds each app at its full size, computes the interpreter's outputs
once, builds and runs the naive and expert schedules on each backend through backends.measure_many (the
check protocol: one run, outputs compared bit-exact for integers, rtol 1e-5 for floats) and prints one row
per (app, backend, schedule) with the status and, when wrong, the first differing value. Exit status 1 if any
schedule is not ok. Not a timing benchmark: run it whenever a backend's code generation or the semantics
change, before resolving work on them.

    python benchmarks/full_size_check.py --backends halide                 # all 17 apps, ~15 minutes here
    python benchmarks/full_size_check.py --apps blur,local_laplacian --backends numba,halide

numba at full size is slow to compile (minutes for the 30-Func apps) and its worker held 14.6 GB while
compiling the largest apps: give it the machine to itself.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends import MeasureInput, measure_many
from generator.apps import APPS, get_app
from ir.builder import naive_schedule
from scheduler.modes import reference

BACKENDS = ("llvm", "numba", "halide")


def csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", type=csv, default=list(APPS), help="comma-separated apps (default: all)")
    ap.add_argument("--backends", type=csv, default=list(BACKENDS), help="comma-separated backends")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per compilation")
    a = ap.parse_args(argv)
    bad = [x for x in a.apps if x not in APPS] + [b for b in a.backends if b not in BACKENDS]
    if bad:
        ap.error(f"unknown app or backend {bad[0]!r}; apps: {', '.join(APPS)}; backends: {', '.join(BACKENDS)}")
    print(f"{'app':16s} {'backend':8s} {'schedule':8s} {'status':14s} {'compile':>9s}  first difference")
    failed = total = 0
    t_all = time.time()
    for name in a.apps:
        app = get_app(name)
        p = app.build("full")
        t0 = time.time()
        inputs, expected = reference(p)
        ref_s = time.time() - t0
        schedules = [("naive", naive_schedule(p))] + ([("expert", app.schedule(p, "host"))] if app.schedule else [])
        for backend in a.backends:
            ms = measure_many([MeasureInput(p, ln, inputs, expected) for _, ln in schedules], "host",
                              backend=backend, protocol="check", compile_timeout=a.timeout)
            for (kind, _), m in zip(schedules, ms):
                total += 1
                failed += m.status != "ok"
                note = "" if m.ok else m.error.splitlines()[0][:160] if m.error else ""
                print(f"{name:16s} {backend:8s} {kind:8s} {m.status:14s} {m.compile_s:8.1f}s  {note}", flush=True)
        print(f"{'':16s} (interpreter {ref_s:.1f} s, outputs {', '.join(f'{k} {v.shape}' for k, v in expected.items())})",
              flush=True)
    print(f"{total - failed} of {total} schedules equal the interpreter at full size ({time.time() - t_all:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
