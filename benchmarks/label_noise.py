"""Do repeated measurements agree? The same schedules measured twice, in two separate runs of the job.

Runs `python -m generator.job` twice (separate processes, separate Ray sessions) with one config — one round,
no training, so both runs plan the very same schedules of the same pipelines — into two datasets, joins the
schedules ok in both, and prints the pairwise agreement of the two orderings within each pipeline (all pairs,
and the pairs whose first-run runtimes differ by at least 10 %), the share of near-ties (pairs whose
difference is within the measurement protocol's own spread: no protocol can order those), the agreement over
the rest, and the median relative difference between a schedule's two runtimes. Everything after the
options is a generator.job key=value override (e.g. protocol=full, backend=halide, output_size=[512,512,3]).

    python benchmarks/label_noise.py --pipelines 8 --schedules 16                 # the default distribution
    python benchmarks/label_noise.py --pipelines 4 --schedules 8 max_stages=4      # a quick look

Labels measured while anything else runs on the machine are noise: run it on a quiet machine, and read the
figures as that machine's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from featurize.dataset_stats import dataset_stats, label_agreement  # noqa: E402


def run_job(config: str, out: Path, store: str, pipelines: int, schedules: int, overrides: list[str]) -> float:
    cmd = [sys.executable, "-m", "generator.job", "--config", config, f"out={out}", f"tracking_uri={store}",
           "rounds=1", f"pipelines_per_round={pipelines}", f"schedules_per_pipeline={schedules}",
           "train.enabled=false", "progress=false", *overrides]
    t0 = time.time()
    env = {**os.environ, "SCHEDLAB_CACHE_DIR": str(out) + "-kernels"}  # each run compiles its own kernels, as a job does
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"label_noise: the job failed ({r.returncode}): {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return time.time() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="conf/datagen.yaml", help="the job's config (default conf/datagen.yaml)")
    ap.add_argument("--pipelines", type=int, default=8, help="pipelines (default 8)")
    ap.add_argument("--schedules", type=int, default=16, help="schedules per pipeline (default 16)")
    ap.add_argument("--keep", default=None, help="keep both datasets under this directory")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="generator.job overrides")
    a = ap.parse_args(argv)
    import polars as pl

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(a.keep) if a.keep else Path(tmp)
        store = f"sqlite:///{root / 'mlflow.db'}"
        secs = [run_job(a.config, root / name, store, a.pipelines, a.schedules, a.overrides) for name in ("a", "b")]
        frames = [pl.scan_parquet(str(root / name / "target=*" / "*.parquet"), hive_partitioning=False)
                  .select(["pipeline_id", "schedule_id", "status", "runtime_s", "spread"]).collect()
                  for name in ("a", "b")]
        print(f"two job runs ({', '.join(f'{s:.0f} s' for s in secs)}), config {a.config} "
              f"{' '.join(a.overrides)}".rstrip())
        print(dataset_stats(root / "a").report())
        for line in label_agreement(*frames).lines():
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
