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
    python benchmarks/label_noise.py --pipelines 5 --schedules 12 --ab measurement=sequential,interleaved

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


def measure_twice(a, root: Path, store: str, overrides: list[str], names=("a", "b")):
    """Two job runs of one setting into root/<name>; (their seconds, their ok rows as polars frames)."""
    secs = [run_job(a.config, root / name, store, a.pipelines, a.schedules, overrides) for name in names]
    return secs, frames(root, names)


def frames(root: Path, names) -> list:
    import polars as pl

    return [pl.scan_parquet(str(root / name / "target=*" / "*.parquet"), hive_partitioning=False)
            .select(["pipeline_id", "schedule_id", "status", "runtime_s", "spread"]).collect() for name in names]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="conf/datagen.yaml", help="the job's config (default conf/datagen.yaml)")
    ap.add_argument("--pipelines", type=int, default=8, help="pipelines (default 8)")
    ap.add_argument("--schedules", type=int, default=16, help="schedules per pipeline (default 16)")
    ap.add_argument("--keep", default=None, help="keep both datasets under this directory")
    ap.add_argument("--ab", default=None, metavar="KEY=A,B",
                    help="compare two values of one job key side by side (e.g. measurement=sequential,interleaved): "
                         "four job runs in the order A, B, B, A, so that a drift of the machine falls on both")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="generator.job overrides")
    a = ap.parse_args(argv)
    if a.ab is not None:
        key, _, values = a.ab.partition("=")
        settings = values.split(",")
        if not key or len(settings) != 2 or not all(settings):
            ap.error(f"--ab takes KEY=A,B (two values of one job key), got {a.ab!r}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(a.keep) if a.keep else Path(tmp)
        store = f"sqlite:///{root / 'mlflow.db'}"
        if a.ab is None:
            secs, (first, second) = measure_twice(a, root, store, a.overrides)
            print(f"two job runs ({', '.join(f'{s:.0f} s' for s in secs)}), config {a.config} "
                  f"{' '.join(a.overrides)}".rstrip())
            print(dataset_stats(root / "a").report())
            for line in label_agreement(first, second).lines():
                print(line)
            return 0
        return ab(a, root, store, key, settings)


def ab(a, root: Path, store: str, key: str, settings: list[str]) -> int:
    order = [(0, "a1"), (1, "b1"), (1, "b2"), (0, "a2")]
    secs: dict[str, float] = {}
    for k, name in order:
        print(f"job run {name}: {key}={settings[k]} ...", flush=True)
        secs[name] = run_job(a.config, root / name, store, a.pipelines, a.schedules,
                             [*a.overrides, f"{key}={settings[k]}"])
    results = [label_agreement(*frames(root, (f"{x}1", f"{x}2"))) for x in ("a", "b")]
    print(f"config {a.config} {' '.join(a.overrides)}; {a.pipelines} pipelines x {a.schedules} schedules; "
          f"job runs in the order {', '.join(n for _, n in order)}")
    rows = [("schedules ok in both runs (pairs)", lambda r: f"{r.samples} ({r.pairs})"),
            ("pairwise agreement, all pairs", lambda r: f"{r.agree:.3f}"),
            ("pairs >= 10 % apart", lambda r: f"{r.agree_10pct:.3f} ({r.pairs_10pct})"),
            ("near-ties (within the spread)", lambda r: f"{100 * r.near_ties:.1f} %"),
            ("agreement outside near-ties", lambda r: f"{r.agree_outside_ties:.3f}"),
            ("median run-to-run difference", lambda r: f"{100 * r.median_rel_diff:.2f} %")]
    head = [f"{key}={v}" for v in settings]
    w = max(len(h) for h in head) + 2
    print(f"{'':36}" + "".join(f"{h:>{w}}" for h in head))
    for label, cell in rows:
        print(f"{label:36}" + "".join(f"{cell(r):>{w}}" for r in results))
    walls = [f"{secs[x + '1']:.0f} s, {secs[x + '2']:.0f} s" for x in ("a", "b")]
    print(f"{'job wall time, two runs':36}" + "".join(f"{t:>{w}}" for t in walls))
    for x, v in zip(("a", "b"), settings):
        print(f"\n{key}={v}:")
        print(dataset_stats(root / f"{x}1").report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
