"""Which cost model searches better on random pipelines? Each model's beam pick, measured side by side.

The comparison benchmarks/learned_vs_analytical.py makes on the 17 apps, made on held-out random pipelines of the
training distribution, so a model can be chosen without choosing it on the apps it is judged by. It is the data
job with the last `--models` entry as the sampler and the others as its rivals (docs/generator.md, "Rival beam
samples"): per pipeline every model's beam pick (same beam size, passes and seed) is planned, compiled by one
backend, checked against the interpreter and timed in the same batch (interleaved rounds). A pick two models
share is one row; a model that picks the reference's schedule counts exactly 1 there. Then per model: in how many
pipelines its pick differed from the reference's, in what share of those it ran faster, and its runtime over the
reference's, geomean over every pipeline.

    python benchmarks/search_on_random.py --models builtin:host-halide,analytical --seeds 9000:9030
    python benchmarks/search_on_random.py --models learned:/tmp/cands/a,learned:/tmp/cands/b,analytical \\
        --seeds 9000:9040 --out /tmp/rival-eval       # the same --out resumes; models: registered names or directories

Seeds 9000 and up are kept out of the committed datasets (datasets/README.md), so a model trained on them has not
seen these pipelines. Keep the machine quiet meanwhile (the job's measurements wait for `generator.job.quiet`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def job_command(models: list[str], first: int, count: int, out: Path, backend: str, beam_size: int, passes: int,
                extra: list[str]) -> list[str]:
    """The generator.job command that measures every model's pick: the last model samples, the rest are rivals."""
    *rivals, reference = models
    return [sys.executable, "-m", "generator.job", "--config", str(ROOT / "conf/datagen.yaml"), f"backend={backend}",
            f"out={out}", f"seed={first}", "rounds=1", f"pipelines_per_round={count}",
            f"schedules_per_pipeline={len(models)}", f"beam_size={beam_size}", f"passes={passes}",
            f"first_sampler={reference}", f"rivals=[{','.join(rivals)}]", "contrasts=0", "train.enabled=false",
            "progress=lines", *extra]


def table(out: Path, models: list[str]) -> list[str]:
    """Per rival model: its pick against the reference's, from the dataset the job wrote."""
    from featurize.dataset_stats import dataset_stats

    *rivals, reference = models
    (part,) = dataset_stats(out).partitions
    by = {r.rival: r for r in part.rivals}
    lines = [f"{part.pipelines} random pipelines, every pick measured by {', '.join(part.backends)}; reference "
             f"{reference} (the sampler)",
             f"{'model':<44} {'differs':>8} {'faster':>7} {'over ref':>9}  (runtime over the reference's, "
             "geomean over all; < 1 wins)"]
    for m in rivals:
        r = by.get(m)
        if r is None:  # every pick the reference's (or none measured)
            lines.append(f"{m:<44} {0:>8} {'-':>7} {1.0:>9.3f}")
            continue
        lines.append(f"{m:<44} {r.pipelines:>8} {100 * (1 - r.sampler_faster):>6.0f}% {1 / r.over_all:>9.3f}"
                     f"  (where it differs: {1 / r.beam_over_rival:.3f}x, {1 / r.worst:.2f}x-{1 / r.best:.2f}x)")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True,
                    help="cost models, comma-separated; the last is the reference (analytical[:N], builtin[:name], "
                         "learned:<model directory>)")
    ap.add_argument("--seeds", default="9000:9030", help="random pipeline seeds A:B (B exclusive)")
    ap.add_argument("--backend", default="halide")
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / ".cache" / "search-on-random",
                    help="the job's dataset directory (the same one resumes)")
    ap.add_argument("extra", nargs="*", help="more generator.job key=value overrides")
    a = ap.parse_args(argv)
    models = [m.strip() for m in a.models.split(",") if m.strip()]
    if len(models) < 2:
        ap.error("--models needs at least two models: the rivals, then the reference")
    try:
        first, stop = (int(v) for v in a.seeds.split(":"))
    except ValueError:
        ap.error(f"--seeds must be A:B, got {a.seeds!r}")
    if stop <= first:
        ap.error(f"--seeds {a.seeds} selects no seed")
    cmd = job_command(models, first, stop - first, a.out.resolve(), a.backend, a.beam_size, a.passes, a.extra)
    rc = subprocess.call(cmd, cwd=ROOT)
    if rc not in (0, 130):
        return rc
    print("\n".join(table(a.out.resolve(), models)))
    return rc


if __name__ == "__main__":
    sys.exit(main())
