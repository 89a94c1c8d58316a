"""Compile speed of each CPU backend on the same LoopNests, side by side in one run.

For a fixed set of random pipelines (6-20 Funcs at a realistic size) and apps of the suite, the greedy
schedule under the analytical model is compiled by every backend asked for, each compile in a fresh
process with an empty kernel cache (a cold compile, what every training sample and every measured
candidate pays), then checked against the interpreter and timed once under the quick protocol. Per row:
compile seconds, the runtime of the compiled code, and the process's peak resident memory (what a worker
needs to compile it); at the end the geomean ratios of each backend to Halide. Times are single runs on
a shared machine: read the ratios.

    python benchmarks/compile_speed.py --random 3 --apps blur,unsharp                  # ~3 minutes here
    python benchmarks/compile_speed.py --random 8 --apps all --backends numba,halide   # the full run (long)
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.ab import run_cold_child  # noqa: E402

BACKENDS = ("llvm", "numba", "halide")
RANDOM_SIZE = (512, 512, 3)
RANDOM_STAGES = 20


@dataclass
class Row:
    pipeline: str
    funcs: int
    backend: str
    status: str
    compile_s: float
    runtime_s: float
    peak_gb: float
    error: str = ""
    phases: str = ""  # where the compile time went (schedlab's code generation, then the backend's phases)


def pipeline_of(spec: str):
    """'app:<name>' at full size, or 'random:<seed>' (max_stages 20 at 512 x 512 x 3)."""
    kind, _, arg = spec.partition(":")
    if kind == "app":
        from generator.apps import get_app

        return get_app(arg).build("full")
    from generator.random_pipeline import generate

    return generate(int(arg), max_stages=RANDOM_STAGES, output_size=RANDOM_SIZE).pipeline


def child(spec: str, backend: str) -> None:
    """One cold compile in this process; prints a JSON Row."""
    import backends
    from backends import MeasureInput, measure_many  # noqa: F401 - registers the backends
    from scheduler import autoschedule
    from scheduler.modes import reference

    p = pipeline_of(spec)
    ln = autoschedule(p, model="analytical", algorithm="greedy").loopnest
    inputs, expected = reference(p)
    phases = _codegen_seconds(p, ln, backend)
    t0 = time.perf_counter()
    status, error, runtime = "ok", "", math.nan
    try:
        k = backends.compile(p, ln, backend=backend, isolate=False, timeout=None)
        compile_s = time.perf_counter() - t0
        phases += _backend_phases(k, backend)
        m = backends.measure(k, inputs, "quick", expected=expected)
        status, error, runtime = m.status, m.error, m.min_s
    except Exception as e:  # noqa: BLE001 - a failure is this row's status
        compile_s, status, error = time.perf_counter() - t0, "compile_error", str(e).splitlines()[0][:200]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(json.dumps(Row(spec, len(p.dag.nodes), backend, status, compile_s, runtime, peak, error, phases).__dict__))


def _codegen_seconds(p, ln, backend: str) -> str:
    """schedlab's own share: the Plan and the generated source (numba, llvm), timed apart from the compile."""
    from ir.plan import Plan

    gen = {"numba": "backends.numba.codegen", "llvm": "backends.llvm.irgen"}.get(backend)
    if gen is None:
        return ""
    import importlib

    t0 = time.perf_counter()
    importlib.import_module(gen).generate(Plan(p.dag, ln))
    return f"codegen {time.perf_counter() - t0:.2f}s"


def _backend_phases(k, backend: str) -> str:
    """numba: typing + lowering (its compiler lock minus its LLVM lock) and LLVM; llvm: parse, O3, machine code."""
    if backend == "llvm":
        from backends.llvm.compiler import PHASES

        return "".join(f", {name} {s:.2f}s" for name, s in PHASES.items())
    if backend == "numba":
        from backends.numba.compiler import load

        fn = load(Path(k.meta["path"]), k.source.name)
        t = fn.get_metadata(fn.signatures[0]).get("timers", {})
        if "compiler_lock" in t and "llvm_lock" in t:
            return f", typing+lowering {t['compiler_lock'] - t['llvm_lock']:.2f}s, LLVM {t['llvm_lock']:.2f}s"
    return ""


def run_one(spec: str, backend: str, timeout: float) -> Row:
    """One cold compile by `child` in a fresh process with an empty kernel cache; a failure is the row's status."""
    c = run_cold_child(__file__, [spec, backend], timeout)
    if c.status == "timeout":
        return Row(spec, 0, backend, "timeout", timeout, math.nan, math.nan, f"over {timeout:.0f} s")
    if c.status != "ok":
        return Row(spec, 0, backend, "crash", math.nan, math.nan, math.nan, c.error[:200])
    return Row(**c.result)


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def main(argv=None) -> int:
    if argv is None and len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return 0
    from generator.apps import app_list

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=3, help="random pipelines, seeds 0..N-1 (default 3)")
    ap.add_argument("--apps", default="blur,unsharp", help="comma-separated apps, or all (default blur,unsharp)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated (default llvm,numba,halide)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per compile process")
    a = ap.parse_args(argv)
    try:
        apps = app_list(a.apps)
    except ValueError as e:
        ap.error(f"--apps: {e}")
    backends = [b for b in a.backends.split(",") if b]
    bad = [b for b in backends if b not in BACKENDS]
    if bad:
        ap.error(f"unknown backend {bad[0]!r}; backends: {', '.join(BACKENDS)}")
    specs = [f"random:{s}" for s in range(a.random)] + [f"app:{x}" for x in apps]
    print(f"{'pipeline':26s} {'Funcs':>5s} {'backend':8s} {'status':14s} {'compile':>9s} {'runtime':>11s} "
          f"{'peak mem':>9s}")
    rows: list[Row] = []
    for spec in specs:
        for b in backends:
            r = run_one(spec, b, a.timeout)
            rows.append(r)
            print(f"{spec:26s} {r.funcs:5d} {b:8s} {r.status:14s} {r.compile_s:8.2f}s {r.runtime_s * 1e3:9.3f}ms "
                  f"{r.peak_gb:7.2f}GB {r.error[:80]}{'  ' + r.phases if r.phases else ''}", flush=True)
    if "halide" in backends:
        ref = {r.pipeline: r for r in rows if r.backend == "halide" and r.status == "ok"}
        for b in backends:
            if b == "halide":
                continue
            mine = [r for r in rows if r.backend == b and r.status == "ok" and r.pipeline in ref]
            c = geomean([r.compile_s / ref[r.pipeline].compile_s for r in mine])
            t = geomean([r.runtime_s / ref[r.pipeline].runtime_s for r in mine])
            print(f"{b}/halide over {len(mine)} pipelines (geomean): compile time {c:.2f}x, runtime {t:.2f}x "
                  f"(> 1: {b} slower)")
    worst = max((r for r in rows if math.isfinite(r.peak_gb)), key=lambda r: r.peak_gb, default=None)
    if worst is not None:
        print(f"peak memory of one compile: {worst.peak_gb:.2f} GB ({worst.pipeline}, {worst.backend})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
