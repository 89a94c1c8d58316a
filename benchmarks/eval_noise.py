"""Do two runs of `python -m evaluate.apps` agree? The same apps, searches and schedules measured twice.

Each setting of `--ab KEY=A,B` runs the app evaluation twice, in the order A, B, B, A (so a drift of the machine
over the four runs does not favour one), with the same searches (a seed fixes them: every run measures the very
same schedules). For each setting it prints how the two runs agree within each app, over the rows that measured
a schedule of their own (not "same schedule as", not the random baseline's median): pairwise agreement of the two
orderings (all pairs, and pairs >= 10 % apart in the first run), the median relative difference of a schedule's
two runtimes, and the median and largest change of a runtime ratio between two rows (|log(a1/b1) - log(a2/b2)|,
as a factor): the figure that decides whether "beam is 1.2x faster than Adams2019" says the same twice.

    python benchmarks/eval_noise.py --apps blur,unsharp,harris,max_filter \\
        --ab measurement=sequential,interleaved size=full model=analytical backend=llvm halide=true

Everything after the options is an evaluate.apps key=value override. Run it with nothing else on the machine;
the figures are that machine's.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluate.apps import evaluate_apps  # noqa: E402
from evaluate.config import AppsConfig  # noqa: E402
from ir.config import load_config  # noqa: E402

DEFAULTS = ["algorithms=[greedy,beam]", "baselines=[expert]", "halide_autoschedulers=[Adams2019,Mullapudi2016]",
            "progress=false"]


@dataclass(frozen=True)
class RatioDrift:
    pairs: int
    median: float  # the median factor by which a ratio of two rows' runtimes changed between the runs
    largest: float
    worst: str  # the app and rows of the largest

    def line(self) -> str:
        return (f"runtime ratio of two rows, change between runs: median {self.median:.3f}x, largest "
                f"{self.largest:.3f}x ({self.worst}), over {self.pairs} pairs")


def own_rows(rows) -> dict[tuple[str, str], float]:
    """(app, method) -> runtime of the ok rows that timed a schedule of their own."""
    return {(r.app, r.method): r.runtime_s for r in rows
            if r.status == "ok" and not r.note.startswith("same schedule") and r.method != "random"}


def frame(runtimes: dict[tuple[str, str], float]):
    import polars as pl

    keys = sorted(runtimes)
    return pl.DataFrame({"pipeline_id": [a for a, _ in keys], "schedule_id": [m for _, m in keys],
                         "status": ["ok"] * len(keys), "runtime_s": [runtimes[k] for k in keys],
                         "spread": [math.nan] * len(keys)})


def ratio_drift(first: dict, second: dict) -> RatioDrift:
    changes = []
    for app in sorted({a for a, _ in first}):
        rows = sorted(m for a, m in first if a == app and (a, m) in second)
        for i, x in enumerate(rows):
            for y in rows[i + 1:]:
                r1 = math.log(first[(app, x)] / first[(app, y)])
                r2 = math.log(second[(app, x)] / second[(app, y)])
                changes.append((math.exp(abs(r1 - r2)), f"{app}: {x} / {y}"))
    if not changes:
        return RatioDrift(0, math.nan, math.nan, "")
    changes.sort()
    return RatioDrift(len(changes), changes[len(changes) // 2][0], changes[-1][0], changes[-1][1])


def main(argv=None) -> int:
    from featurize.dataset_stats import label_agreement

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="blur,unsharp,harris,max_filter")
    ap.add_argument("--ab", default="measurement=sequential,interleaved", help="KEY=A,B: two settings, run A, B, B, A")
    ap.add_argument("overrides", nargs="*", help="evaluate.apps key=value settings for every run")
    a = ap.parse_args(argv)
    key, _, values = a.ab.partition("=")
    settings = values.split(",")
    if not key or len(settings) != 2:
        ap.error(f"--ab takes KEY=A,B (two settings of one key), got {a.ab!r}")
    store = tempfile.mkdtemp(prefix="schedlab_eval_noise_")
    runs: dict[str, list] = {s: [] for s in settings}
    seconds: dict[str, float] = {s: 0.0 for s in settings}
    order = [settings[0], settings[1], settings[1], settings[0]]
    for n, setting in enumerate(order, 1):
        cfg = load_config(AppsConfig, ROOT / "conf" / "evaluate_apps.yaml",
                          [f"apps=[{a.apps}]", *DEFAULTS, f"tracking_uri=sqlite:///{store}/mlflow.db",
                           f"run_name=eval-noise-{n}-{setting}", *a.overrides, f"{key}={setting}"])
        t0 = time.time()
        result = evaluate_apps(cfg)
        seconds[setting] += time.time() - t0
        runs[setting].append(own_rows(result.rows))
        print(f"[{n}/4] {key}={setting}: {len(result.rows)} rows in {time.time() - t0:.0f} s", flush=True)
    print(f"\ntwo runs of each setting, order {', '.join(order)} ({a.apps})")
    for setting in settings:
        first, second = runs[setting]
        agreement = label_agreement(frame(first), frame(second))
        print(f"\n{key}={setting} (both runs {seconds[setting]:.0f} s):")
        for line in agreement.lines()[:2] + agreement.lines()[3:]:
            print("  " + line)
        print("  " + ratio_drift(first, second).line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
