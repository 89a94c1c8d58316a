"""schedlab's CUDA backend and Halide's GPU autoschedulers on a real GPU, in one run:

1. differential fuzzing on the device: random pipelines x random GPU LoopNests (ir.gpu_schedule), each lowered
   to CUDA C, loaded and launched through CuPy (backends.cuda.runner) and its outputs compared with
   `ir.interpret` (bit-exact for integers);
2. the apps with an expert GPU schedule: that schedule next to Halide's Anderson2021, Mullapudi2016 and Li2018
   GPU schedules (evaluate.gpu_apps), each checked against the interpreter and timed with CUDA events / Halide's
   device_sync, speedups over Li2018.

    python benchmarks/gpu_measure.py --fuzz 60 --apps blur,matmul --size full --json gpu.json

It needs a visible NVIDIA GPU and says so in one line where there is none. Every figure it prints is measured on
the GPU it names; nothing here is emulated.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EXPERT_APPS = ("blur", "unsharp", "harris", "conv_layer", "matmul", "stencil_chain")


def device_line() -> str:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return (f"{name}, {props['multiProcessorCount']} SMs, compute capability {props['major']}.{props['minor']}; "
            f"driver {cupy.cuda.runtime.driverGetVersion()}, runtime {cupy.cuda.runtime.runtimeGetVersion()}, "
            f"CuPy {cupy.__version__}")


def fuzz(n: int, start: int, target: str) -> dict:
    """Random (pipeline, GPU LoopNest) pairs run on the GPU against the interpreter; statuses and failures."""
    import backends
    from ir import interpret
    from ir.errors import ScheduleError
    from ir.gpu_schedule import random_gpu_loopnest
    from tests.fuzz_pipelines import random_test_pipeline

    counts: Counter = Counter()
    failures = []
    t0 = time.perf_counter()
    times = []
    for seed in range(start, start + n):
        p = random_test_pipeline(seed)
        try:
            ln = random_gpu_loopnest(p, seed, target)
        except ScheduleError:
            counts["invalid_schedule"] += 1
            continue
        inputs = p.random_inputs(seed)
        expected = interpret(p, inputs)
        try:
            k = backends.build(p, ln, target, backend="cuda")
            m = backends.run(k, inputs, backends.get_protocol("quick"), expected=expected)
            status, error = str(m.status), m.error or ""
            if m.ok:
                times.append(m.min_s)
        except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
            status, error = f"raised {type(e).__name__}", str(e).splitlines()[0] if str(e) else ""
        counts[status] += 1
        if status != "ok":
            failures.append({"seed": seed, "status": status, "error": error[:300]})
            print(f"  fuzz seed {seed}: {status}: {error[:200]}", flush=True)
        done = seed - start + 1
        if done % 10 == 0:
            print(f"  [{done}/{n}] {dict(counts)} {time.perf_counter() - t0:.0f} s", flush=True)
    med = sorted(times)[len(times) // 2] * 1e6 if times else math.nan
    print(f"fuzz seeds {start}..{start + n - 1} on the GPU: {dict(counts)} in {time.perf_counter() - t0:.0f} s; "
          f"median kernel time of the ok ones {med:.1f} us", flush=True)
    return {"counts": dict(counts), "failures": failures, "seconds": time.perf_counter() - t0}


def apps(names: list[str], size: str, target_name: str, save=lambda rows: None) -> list[dict]:
    from evaluate.apps import HEADER, format_row
    from evaluate.config import AppsConfig
    from evaluate.gpu_apps import _measure_app
    from ir.target import get_target

    target = get_target(target_name)
    settings = AppsConfig(size=size, target=target_name, protocol="full")  # what python -m evaluate.apps passes
    rows = []
    print(HEADER, flush=True)
    for name in names:
        t0 = time.perf_counter()
        try:
            app_rows = _measure_app(name, settings, target)
        except Exception as e:  # noqa: BLE001
            print(f"  {name}: raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
            traceback.print_exc(limit=4)
            rows.append({"app": name, "method": "-", "status": f"raised {type(e).__name__}", "note": str(e)[:300]})
            save(rows)
            continue
        for r in app_rows:
            print(format_row(r), flush=True)
            rows.append({"app": r.app, "method": r.method, "backend": r.backend, "status": str(r.status),
                         "runtime_s": r.runtime_s, "speedup_over_li2018": r.speedup, "search_s": r.search_s,
                         "note": r.note})
        print(f"  ({name}: {time.perf_counter() - t0:.0f} s)", flush=True)
        save(rows)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fuzz", type=int, default=40, help="random (pipeline, GPU LoopNest) pairs to run on the GPU")
    ap.add_argument("--fuzz-seed", type=int, default=0, help="first pipeline seed")
    ap.add_argument("--apps", default=",".join(EXPERT_APPS), help="comma-separated apps; '' for none")
    ap.add_argument("--size", default="full", choices=("small", "full"))
    ap.add_argument("--target", default="h100")
    ap.add_argument("--json", default="", help="write the results here")
    args = ap.parse_args(argv)
    from backends.cuda.runner import gpu_missing

    why = gpu_missing()
    if why is not None:
        print(f"gpu_measure: {why}", file=sys.stderr)
        return 2
    result = {"device": device_line()}
    print(f"device: {result['device']}", flush=True)

    def save(rows=None):  # after each step, so that a run cut short keeps what it measured
        if rows is not None:
            result["apps"] = rows
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1, default=str))

    if args.fuzz:
        result["fuzz"] = fuzz(args.fuzz, args.fuzz_seed, args.target)
        save()
    names = [n for n in args.apps.split(",") if n]
    if names:
        apps(names, args.size, args.target, save)
    bad = sum(v for k, v in result.get("fuzz", {}).get("counts", {}).items() if k not in ("ok", "invalid_schedule"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
