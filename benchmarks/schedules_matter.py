"""Does the schedule space make a difference? Naive vs expert schedules, measured side by side.

For blur, unsharp mask, an 8-stage 3x3 stencil chain (the suite's is 32 stages of 5x5) and a 512 x 512 matmul at their full sizes:
the runtime under a naive schedule (everything computed at root, serial, unvectorized, untiled) and
under the app's hand-written expert schedule (tiled, fused, parallel, vectorized), their ratio, and
the compile time of each kernel. Every kernel's output is checked against the reference interpreter
before it is timed: a benchmark of wrong code is worthless.

    python benchmarks/schedules_matter.py            # full protocol
    python benchmarks/schedules_matter.py --demo     # shorter timing, same table (make demo)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import backends  # noqa: E402
from backends import Protocol  # noqa: E402
from generator.apps import get_app  # noqa: E402
from ir import interpret  # noqa: E402
from ir.builder import naive_schedule  # noqa: E402
from ir.target import host_target  # noqa: E402

APPS = ("blur", "unsharp", "stencil_chain", "matmul")


def build(app_name: str):
    """The four pipelines of the issue: the stencil chain is 8 stages of 3x3 here."""
    if app_name == "stencil_chain":
        from generator.apps import stencil_chain

        return stencil_chain.build("full", stages=8, radius=1)
    return get_app(app_name).build("full")


def run(app_name: str, protocol: Protocol, show: bool) -> dict:
    app = get_app(app_name)
    p = build(app_name)
    inputs = p.random_inputs(seed=0)
    t = time.perf_counter()
    expected = interpret(p, inputs)
    interp_s = time.perf_counter() - t
    row = {"app": app_name, "funcs": len(p.funcs), "interpret_s": interp_s}
    for kind, loopnest in (("naive", naive_schedule(p)), ("expert", app.schedule(p))):
        if show and kind == "expert":
            print(f"\n{app_name}, expert schedule:\n{loopnest.to_str(p)}\n")
        t = time.perf_counter()
        kernel = backends.compile(p, loopnest)
        compile_s = time.perf_counter() - t
        m = backends.measure(kernel, inputs, protocol, expected=expected)
        if not m.ok:
            raise SystemExit(f"{app_name} {kind}: {m.status}: {m.error}")
        row[kind] = m
        row[f"{kind}_compile_s"] = compile_s
    row["speedup"] = row["naive"].min_s / row["expert"].min_s
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="naive vs expert schedules, side by side")
    ap.add_argument("--demo", action="store_true", help="shorter timing protocol")
    ap.add_argument("--apps", nargs="*", default=list(APPS))
    ap.add_argument("--show", action="store_true", help="print each expert schedule")
    a = ap.parse_args(argv)
    protocol = Protocol(max_seconds=1.0 if a.demo else 3.0, min_seconds=0.2 if a.demo else 0.5)
    tgt = host_target()
    print(f"host: {tgt.cores} cores, {tgt.vector_bytes * 8}-bit SIMD; numba threads: "
          f"{os.environ.get('NUMBA_NUM_THREADS', 'default')}; outputs checked against ir.interpret\n")
    header = (f"{'app':14s} {'funcs':>5s} {'naive ms':>10s} {'expert ms':>10s} {'speedup':>8s} "
              f"{'spread':>7s} {'compile naive s':>16s} {'compile expert s':>17s}")
    print(header)
    print("-" * len(header))
    rows = []
    for name in a.apps:
        r = run(name, protocol, a.show)
        rows.append(r)
        n, e = r["naive"], r["expert"]
        print(f"{name:14s} {r['funcs']:5d} {n.min_s * 1e3:10.2f} {e.min_s * 1e3:10.2f} {r['speedup']:7.2f}x "
              f"{max(n.spread, e.spread) * 100:6.1f}% {r['naive_compile_s']:16.1f} {r['expert_compile_s']:17.1f}",
              flush=True)
    geo = math.exp(sum(math.log(r["speedup"]) for r in rows) / len(rows))
    over3 = sum(r["speedup"] >= 3 for r in rows)
    print("-" * len(header))
    print(f"geometric mean speedup of expert over naive: {geo:.2f}x; {over3} of {len(rows)} apps at 3x or more")
    print("(times are the best of the protocol's samples; spread is (third best - best) / best)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
