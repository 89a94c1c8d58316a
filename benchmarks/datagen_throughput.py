"""Valid samples per core-hour of the data-generation job, per backend, side by side in one run.

Runs the Ray job (`generator.job`, a local cluster) once per backend on the same config — one round, no
training, a fresh kernel cache each — and prints per backend: valid (ok) samples per hour per CPU, the yield,
and where the task time went (planning = search, compiling, measuring = kernel load or rebuild + timing +
output check, and the measurements' wait for a quiet node, each summed over tasks), with the wall time. Everything after the options is a generator.job
key=value override.

    python benchmarks/datagen_throughput.py --pipelines 6 --schedules 12                 # conf/datagen.yaml
    python benchmarks/datagen_throughput.py --pipelines 4 --schedules 8 output_size=[512,512,3] max_stages=12

Single runs on a shared machine: read the ratio between backends, not the last digit.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BACKENDS = ("llvm", "numba", "halide")


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()  # MLflow's and Lightning's chatter off, as in every command
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "conf" / "datagen.yaml"))
    ap.add_argument("--pipelines", type=int, default=6)
    ap.add_argument("--schedules", type=int, default=12)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("overrides", nargs="*", metavar="key=value")
    a = ap.parse_args(argv)
    from generator.job.config import JobConfig
    from generator.job.driver import run_job
    from ir.config import load_config

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in [b for b in a.backends.split(",") if b]:
            os.environ["SCHEDLAB_CACHE_DIR"] = f"{tmp}/{backend}-kernels"  # cold: every kernel compiled here
            cfg = load_config(JobConfig, a.config, [
                f"backend={backend}", f"out={tmp}/{backend}", f"tracking_uri=sqlite:///{tmp}/mlflow.db", "rounds=1",
                f"pipelines_per_round={a.pipelines}", f"schedules_per_pipeline={a.schedules}",
                "train.enabled=false", "progress=false", *a.overrides])
            s = run_job(cfg)
            rows.append((backend, s))
            print(f"{backend}: " + "; ".join(s.lines()[:3]), flush=True)
    print(f"\n{'backend':8s} {'valid/core-h':>12s} {'yield':>7s} {'wall':>7s} {'planning':>9s} {'compiling':>10s} "
          f"{'measuring':>10s} {'quiet wait':>10s}   ({len(rows) and a.pipelines} pipelines x {a.schedules} schedules, "
          f"{' '.join(a.overrides) or 'conf defaults'})")
    for backend, s in rows:
        written = max(1, s.samples_written)
        print(f"{backend:8s} {s.samples_per_core_hour:12.0f} {100 * s.status['ok'] / written:6.1f}% {s.seconds:6.0f}s "
              f"{s.plan_s:8.0f}s {s.compile_s:9.0f}s {s.measure_s:9.0f}s {s.wait_s:9.0f}s")
    if len(rows) == 2 and rows[1][1].samples_per_core_hour > 0:
        (b0, s0), (b1, s1) = rows
        print(f"{b0}/{b1} valid samples per core-hour: {s0.samples_per_core_hour / s1.samples_per_core_hour:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
