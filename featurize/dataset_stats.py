"""What a dataset holds, at a glance: pipelines, samples, yield by status, runtimes, label spread, sizes.

`dataset_stats(root)` reads only the small columns of every batch file (never the feature lists), so it
is cheap on a dataset of any size; `DatasetStats.report()` is what `python -m generator.dataset stats` and
the data-generation job's summary print. Label spread is the protocol's own: the third-best sample over the
best, minus one (backends.timing), so a spread of 0.02 means the best three repeats agree within 2 %.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field
from pathlib import Path

from ir.units import format_seconds

from .dataset import RIVAL_SEPARATOR, DatasetError, partition_dir

_COLUMNS = ("pipeline_id", "status", "runtime_s", "spread", "compile_s", "backend", "round", "sampler", "model_version")
QUANTILES = (0.0, 0.1, 0.5, 0.9, 1.0)


@dataclass(frozen=True)
class Distribution:
    """Quantiles (min, p10, median, p90, max) of one column over the rows that have it."""

    count: int
    values: tuple[float, ...]  # at QUANTILES; empty when count is 0

    @staticmethod
    def of(series) -> "Distribution":
        s = series.drop_nulls().drop_nans() if series.dtype.is_float() else series.drop_nulls()
        if s.len() == 0:
            return Distribution(0, ())
        return Distribution(s.len(), tuple(float(s.quantile(q, interpolation="nearest")) for q in QUANTILES))

    def describe(self, fmt) -> str:
        if not self.count:
            return "none"
        names = ("min", "p10", "median", "p90", "max")
        return ", ".join(f"{n} {fmt(v)}" for n, v in zip(names, self.values))


@dataclass(frozen=True)
class RoundStats:
    """One round of data generation, judged by its own samples: the beam-search sample is what the round's
    sampling model believed best (adams2019 §5), so how often it is the fastest of its pipeline's measured samples,
    and how far from the fastest it is, say how well that model searched (random weights in round 0)."""

    round: int
    models: tuple[str, ...]  # the sampling model(s) recorded in the rows (model_version)
    pipelines: int  # pipelines of the round with an ok beam-search sample and another ok sample
    beam_fastest: float  # share of them whose beam-search sample ran fastest (ties count)
    beam_over_fastest: float  # geometric mean of the beam-search sample's runtime over the fastest one's
    median_over_fastest: float

    def describe(self) -> str:
        by = ", ".join(self.models) or "-"
        if not self.pipelines:
            return f"round {self.round} (sampled by {by}): no pipeline with an ok beam-search sample and another"
        return (f"round {self.round} (sampled by {by}): {self.pipelines} pipelines; the beam-search sample ran "
                f"fastest in {100 * self.beam_fastest:.0f} % of them, {self.beam_over_fastest:.2f}x the fastest "
                f"(geomean; median {self.median_over_fastest:.2f}x)")


@dataclass(frozen=True)
class ContrastStats:
    """What the labels say one decision is worth: each one-decision contrast of a beam-search sample
    (generator.contrast, sampler contrast-<decision>) measured next to that sample, in the same pipeline."""

    decision: str  # serial | scalar | rolled
    pairs: int  # contrasts with an ok beam-search sample in their pipeline
    slower: float  # share of them slower than the beam-search sample
    over_beam: float  # geometric mean of runtime(contrast) / runtime(beam sample)
    max_over_beam: float

    def describe(self) -> str:
        return (f"contrast {self.decision}: {self.pairs} pairs, {100 * self.slower:.0f} % slower than their beam "
                f"sample, {self.over_beam:.2f}x its runtime (geomean; up to {self.max_over_beam:.2f}x)")


@dataclass(frozen=True)
class RivalStats:
    """The sampling model's beam pick against another model's (sampler beam-<rival>, generator.batch rivals),
    measured in the same pipeline: on random pipelines, the comparison a search benchmark of the two models makes.
    A pipeline where both models pick the same schedule has no rival row; a row two rivals picked (beam-A|B) counts
    for both."""

    rival: str  # the rival cost model's name, e.g. analytical
    pipelines: int  # pipelines with an ok beam sample and an ok, different rival pick
    sampler_faster: float  # share of them where the sampler's beam pick ran faster
    beam_over_rival: float  # geometric mean of runtime(beam sample) / runtime(rival pick): < 1, the sampler wins
    best: float  # min and max of that ratio
    worst: float
    same_pick: int = 0  # pipelines with an ok beam sample and no rival row: the same pick (or a rival that failed)

    @property
    def over_all(self) -> float:
        """The geometric mean of that ratio over every judged pipeline, a same pick counting 1: what a search
        benchmark of the two models over these pipelines would report."""
        n = self.pipelines + self.same_pick
        return self.beam_over_rival ** (self.pipelines / n) if n else math.nan

    def describe(self) -> str:
        return (f"rival {self.rival}: {self.pipelines} pipelines where its beam pick differs; the sampler's beam "
                f"pick ran faster in {100 * self.sampler_faster:.0f} % of them, {self.beam_over_rival:.3f}x the "
                f"rival's runtime (geomean; {self.best:.2f}x-{self.worst:.2f}x); the same pick in {self.same_pick}: "
                f"{self.over_all:.3f}x over all {self.pipelines + self.same_pick}")


@dataclass(frozen=True)
class PartitionStats:
    """One target=<name> directory."""

    target: str
    files: int
    bytes: int
    rows: int
    pipelines: int
    backends: tuple[str, ...]
    status_counts: tuple[tuple[str, int], ...]  # most frequent first
    samples_per_pipeline: Distribution
    runtime_s: Distribution  # ok samples
    spread: Distribution  # ok samples that recorded one
    compile_s: Distribution
    within_1pct: float  # fraction of ok samples whose spread is <= 1 %
    within_5pct: float
    rounds: tuple[RoundStats, ...] = ()
    contrasts: tuple[ContrastStats, ...] = ()
    rivals: tuple[RivalStats, ...] = ()
    machines: tuple[tuple[str, int], ...] = ()  # (machine that measured, "" not recorded; files), most files first

    @property
    def ok(self) -> int:
        return dict(self.status_counts).get("ok", 0)

    @property
    def yield_(self) -> float:
        return self.ok / self.rows if self.rows else math.nan


@dataclass(frozen=True)
class DatasetStats:
    root: Path
    partitions: list[PartitionStats] = field(default_factory=list)

    def report(self) -> str:
        lines = [f"dataset {self.root}"]
        for p in self.partitions:
            lines.append(f"target={p.target}: {p.pipelines} pipelines, {p.rows} samples "
                         f"({p.ok} ok, yield {100 * p.yield_:.1f} %) in {p.files} files, {_bytes(p.bytes)} "
                         f"(backend {', '.join(p.backends) or '-'})")
            lines.append("  by status: " + ", ".join(f"{s} {n} ({100 * n / p.rows:.1f} %)"
                                                     for s, n in p.status_counts))
            lines.append(f"  samples per pipeline: {p.samples_per_pipeline.describe(lambda v: f'{v:.0f}')}")
            lines.append(f"  runtime (ok): {p.runtime_s.describe(format_seconds)}")
            if p.spread.count:
                lines.append(f"  label spread (3rd best / best - 1): {p.spread.describe(_percent)}; "
                             f"{100 * p.within_1pct:.1f} % of ok samples within 1 %, {100 * p.within_5pct:.1f} % "
                             "within 5 %")
            else:
                lines.append("  label spread: not recorded")
            lines.append(f"  compile time: {p.compile_s.describe(format_seconds)}")
            lines.append("  measured on: " + "; ".join(f"[{m or 'not recorded (written before machines were)'}] "
                                                      f"{n} files" for m, n in p.machines))
            if len(p.machines) > 1:
                lines.append("  warning: labels from different machines do not rank schedules alike; train on one")
            lines.extend(f"  {r.describe()}" for r in p.rounds)
            lines.extend(f"  {c.describe()}" for c in p.contrasts)
            lines.extend(f"  {r.describe()}" for r in p.rivals)
        return "\n".join(lines)


def dataset_stats(root: Path | str) -> DatasetStats:
    """Statistics of every target partition under `root`; a one-line DatasetError if there is none."""
    import polars as pl

    root = Path(root)
    targets = sorted(p.name.removeprefix("target=") for p in root.glob("target=*") if p.is_dir())
    parts = []
    for target in targets:
        files = sorted(partition_dir(root, target).glob("batch-*.parquet"))
        if not files:
            continue
        df = pl.scan_parquet([str(f) for f in files], hive_partitioning=False).select(list(_COLUMNS)).collect()
        parts.append(_partition(target, files, df))
    if not parts:
        raise DatasetError(f"{root} holds no dataset (no target=*/batch-*.parquet files); give data=<the job's out>")
    return DatasetStats(root, parts)


def _partition(target: str, files: list[Path], df) -> PartitionStats:
    import polars as pl

    counts = df.group_by("status").agg(pl.len().alias("n")).sort(["n", "status"], descending=[True, False])
    ok = df.filter(pl.col("status") == "ok")
    spread = ok.get_column("spread").drop_nulls().drop_nans()
    per_pipeline = df.group_by("pipeline_id").agg(pl.len().alias("n")).get_column("n")
    return PartitionStats(
        target=target, files=len(files), bytes=sum(f.stat().st_size for f in files), rows=df.height,
        pipelines=df.get_column("pipeline_id").n_unique(),
        backends=tuple(sorted(df.get_column("backend").unique().to_list())),
        status_counts=tuple((s, int(n)) for s, n in counts.iter_rows()),
        samples_per_pipeline=Distribution.of(per_pipeline),
        runtime_s=Distribution.of(ok.get_column("runtime_s")),
        spread=Distribution.of(spread),
        compile_s=Distribution.of(df.get_column("compile_s")),
        within_1pct=float((spread <= 0.01).mean()) if spread.len() else math.nan,
        within_5pct=float((spread <= 0.05).mean()) if spread.len() else math.nan,
        rounds=_rounds(ok), contrasts=_contrasts(ok), rivals=_rivals(ok), machines=machine_counts(files))


def machine_counts(files: list[Path]) -> tuple[tuple[str, int], ...]:
    """(machine that measured, files) for batch `files`, most files first; "" for files that do not say."""
    from .dataset import file_machine

    counts = collections.Counter(file_machine(f) for f in files)
    return tuple(sorted(counts.items(), key=lambda mn: (-mn[1], mn[0])))


def _rounds(ok) -> tuple[RoundStats, ...]:
    import numpy as np
    import polars as pl

    out = []
    for (r,), g in ok.group_by("round", maintain_order=True):
        per = (g.group_by("pipeline_id")
               .agg(pl.col("runtime_s").min().alias("fastest"), pl.len().alias("n"),
                    pl.col("runtime_s").filter(pl.col("sampler") == "beam").min().alias("beam"))
               .filter(pl.col("beam").is_not_null() & (pl.col("n") > 1)))
        ratio = (per.get_column("beam") / per.get_column("fastest")).to_numpy()
        models = tuple(sorted(m for m in g.get_column("model_version").unique().to_list() if m))
        out.append(RoundStats(int(r), models, len(ratio), float((ratio <= 1).mean()) if len(ratio) else math.nan,
                              float(np.exp(np.log(ratio).mean())) if len(ratio) else math.nan,
                              float(np.median(ratio)) if len(ratio) else math.nan))
    return tuple(sorted(out, key=lambda r: r.round))


def _beam_runtimes(ok):
    """Per pipeline, the runtime of its beam-search sample (column beam): what contrasts and rivals are judged by."""
    import polars as pl

    return ok.filter(pl.col("sampler") == "beam").group_by("pipeline_id").agg(pl.col("runtime_s").min().alias("beam"))


def _contrasts(ok) -> tuple[ContrastStats, ...]:
    import numpy as np
    import polars as pl

    beam = _beam_runtimes(ok)
    c = (ok.filter(pl.col("sampler").str.starts_with("contrast-")).join(beam, on="pipeline_id", how="inner")
         .with_columns(pl.col("sampler").str.strip_prefix("contrast-").alias("decision")))
    out = []
    for (decision,), g in c.group_by("decision", maintain_order=True):
        ratio = (g.get_column("runtime_s") / g.get_column("beam")).to_numpy()
        out.append(ContrastStats(str(decision), len(ratio), float((ratio > 1).mean()),
                                 float(np.exp(np.log(ratio).mean())), float(ratio.max())))
    return tuple(sorted(out, key=lambda x: x.decision))


def _rivals(ok) -> tuple[RivalStats, ...]:
    import numpy as np
    import polars as pl

    beam = _beam_runtimes(ok)
    r = (ok.filter(pl.col("sampler").str.starts_with("beam-")).join(beam, on="pipeline_id", how="inner")
         .with_columns(pl.col("sampler").str.strip_prefix("beam-").str.split(RIVAL_SEPARATOR).alias("rival")).explode("rival"))
    out = []
    for (rival,), g in r.group_by("rival", maintain_order=True):
        ratio = (g.get_column("beam") / g.get_column("runtime_s")).to_numpy()
        same = beam.height - g.get_column("pipeline_id").n_unique()
        out.append(RivalStats(str(rival), len(ratio), float((ratio < 1).mean()), float(np.exp(np.log(ratio).mean())),
                              float(ratio.min()), float(ratio.max()), same))
    return tuple(sorted(out, key=lambda x: x.rival))


def _percent(v: float) -> str:
    return f"{100 * v:.2g} %"


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


@dataclass(frozen=True)
class LabelAgreement:
    """How two measurements of the same schedules agree (benchmarks/label_noise.py): within each pipeline,
    every pair of schedules ok in both runs is ordered by each run's runtime."""

    samples: int  # schedules ok in both runs
    pipelines: int
    pairs: int
    agree: float  # fraction of pairs both runs order the same way
    pairs_10pct: int  # pairs whose first-run runtimes differ by >= 10 %
    agree_10pct: float
    near_ties: float  # fraction of pairs whose first-run difference is within the protocol's own spread
    agree_outside_ties: float  # agreement over the pairs that are not near-ties
    median_rel_diff: float  # median over samples of |second - first| / min(first, second)
    # (pipeline id, agreement over its pairs) for each pipeline with a pair, lowest first: a few pipelines full of
    # near-ties move the whole figure, so a sample of 8 pipelines is not the distribution
    per_pipeline: tuple[tuple[str, float], ...] = ()

    def lines(self) -> list[str]:
        return [f"{self.samples} schedules of {self.pipelines} pipelines ok in both runs; {self.pairs} pairs",
                f"pairwise agreement: {self.agree:.3f} over all pairs, {self.agree_10pct:.3f} over the "
                f"{self.pairs_10pct} pairs >= 10 % apart in the first run",
                f"near-ties (first-run difference within the protocol's spread): {100 * self.near_ties:.1f} % of "
                f"pairs; agreement over the rest {self.agree_outside_ties:.3f}",
                f"median relative difference of a schedule's two runtimes: {100 * self.median_rel_diff:.2f} %",
                *self._per_pipeline_lines()]

    def _per_pipeline_lines(self) -> list[str]:
        import statistics

        v = [a for _, a in self.per_pipeline]
        if len(v) < 2:
            return []
        half = 2 * statistics.stdev(v) / len(v) ** 0.5
        lowest = ", ".join(f"{pid[:8]} {a:.2f}" for pid, a in self.per_pipeline[:3])
        return [f"per pipeline ({len(v)}): min {v[0]:.3f}, median {statistics.median(v):.3f}, max {v[-1]:.3f}; mean "
                f"{statistics.fmean(v):.3f} +- {half:.3f} (two standard errors: the sampling error of this many "
                f"pipelines); lowest: {lowest}"]


def label_agreement(first, second) -> LabelAgreement:
    """Compare two runs' rows (polars frames with pipeline_id, schedule_id, status, runtime_s, spread)."""
    import numpy as np
    import polars as pl

    cols = ["pipeline_id", "schedule_id", "runtime_s", "spread"]
    a = first.filter(pl.col("status") == "ok").select(cols)
    b = second.filter(pl.col("status") == "ok").select(cols[:3]).rename({"runtime_s": "runtime_b"})
    j = a.join(b, on=["pipeline_id", "schedule_id"], how="inner").sort(["pipeline_id", "schedule_id"])
    pairs = agree = p10 = a10 = ties = agree_rest = rest = 0
    per_pipeline = []
    for (pid,), g in j.group_by("pipeline_id", maintain_order=True):
        r1, r2 = g.get_column("runtime_s").to_numpy(), g.get_column("runtime_b").to_numpy()
        sp = np.nan_to_num(g.get_column("spread").to_numpy().astype(np.float64), nan=0.0)
        i, k = np.triu_indices(len(r1), 1)
        same = np.sign(r1[i] - r1[k]) == np.sign(r2[i] - r2[k])
        rel = np.abs(r1[i] - r1[k]) / np.minimum(r1[i], r1[k])
        tie = rel <= np.maximum(sp[i], sp[k])
        if len(i):
            per_pipeline.append((str(pid), float(same.mean())))
        pairs += len(i)
        agree += int(same.sum())
        p10 += int((rel >= 0.1).sum())
        a10 += int((same & (rel >= 0.1)).sum())
        ties += int(tie.sum())
        rest += int((~tie).sum())
        agree_rest += int((same & ~tie).sum())
    r1, r2 = j.get_column("runtime_s").to_numpy(), j.get_column("runtime_b").to_numpy()
    diff = np.abs(r2 - r1) / np.minimum(r1, r2) if len(r1) else np.array([math.nan])

    def frac(n, d):
        return n / d if d else math.nan

    return LabelAgreement(j.height, j.get_column("pipeline_id").n_unique(), pairs, frac(agree, pairs), p10,
                          frac(a10, p10), frac(ties, pairs), frac(agree_rest, rest), float(np.median(diff)),
                          tuple(sorted(per_pipeline, key=lambda t: (t[1], t[0]))))
