"""Local data generation: one batch of random pipelines, each with sampled schedules, compiled, measured,
featurized and written as one Parquet file (DESIGN §3.7; halide-autoschedulers.md §2).

    spec = BatchSpec(seeds=(0, 1, 2), schedules_per_pipeline=16)
    summary = generate_batch(spec, "data")        # data/target=host/batch-<spec.batch_id>.parquet

This is the unit of work the Ray job runs once per batch; it needs no Ray. A batch is a pure function of
its spec except for the measured times: the same spec gives the same pipelines and the same schedules, and
its file name is a hash of the spec, so a retried batch finds its file done (or, with overwrite=True,
replaces it atomically) and never duplicates rows. Every pipeline gets the two baselines (naive_schedule,
simple_schedule) and random schedules from `ir.sampling.random_schedule`, deduplicated by fingerprint.
A failed compile or measurement is a row with its status; a pipeline that cannot be generated is skipped
and counted.

    python -m generator.datagen --seeds 0:8 --schedules 16 --out DIR [--max-stages 6] [--size 64,48,3]
                                [--target host] [--protocol quick] [--schedule-seed 0] [--markov]
                                [--per-batch 1] [--overwrite]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from backends.protocols import PROTOCOLS, QUICK, get_protocol  # the named protocols, defined once
from ir.errors import SchedlabError, first_line

from . import cli

__all__ = ["PROTOCOLS", "QUICK", "BatchSpec", "BatchSummary", "derived_seed", "generate_batch", "prepare_pipeline",
           "sample_schedules"]

# 64 x 48 x 3 outputs: every stage is a few thousand points, so a schedule compiles in ~1-2 s and runs in
# micro- to milliseconds, while tiling, vectorization and parallelism still change runtimes by 10-1000x.
SMALL_OUTPUT = (64, 48, 3)

Progress = Callable[[int, int, str], None]  # (schedules done, schedules planned, what just happened)


@dataclass(frozen=True)
class BatchSpec:
    seeds: tuple[int, ...]  # random pipeline seeds of this batch
    schedules_per_pipeline: int = 16
    max_stages: int = 6
    output_size: tuple[int, int, int] = SMALL_OUTPUT
    target: str = "host"  # ir.target name; the dataset partition uses the resolved target's name
    protocol: str = "quick"  # a key of PROTOCOLS
    schedule_seed: int = 0  # seeds the schedule sampler together with the pipeline seed
    markov: bool = False
    check_outputs: bool = True  # compare every schedule's outputs with ir.interpret (once per pipeline)
    compile_timeout: float = 600.0  # seconds per compilation (Adams 2019 §5: a 10-minute kill)

    def __post_init__(self):
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        object.__setattr__(self, "output_size", tuple(int(v) for v in self.output_size))
        if not self.seeds:
            raise ValueError("a batch needs at least one pipeline seed")
        if self.schedules_per_pipeline < 1:
            raise ValueError(f"schedules_per_pipeline must be >= 1, got {self.schedules_per_pipeline}")
        get_protocol(self.protocol)  # a ProtocolError (a ValueError) listing the names
        if len(self.output_size) != 3 or min(self.output_size) < 1:
            raise ValueError(f"output_size must be three positive ints, got {self.output_size}")

    @property
    def batch_id(self) -> str:
        """A hash of every field: the same spec always names the same file, a different one never does."""
        blob = json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


@dataclass
class BatchSummary:
    batch_id: str
    path: Path
    pipelines: int  # pipelines measured
    schedules: int  # rows written
    ok: int
    failed_by_status: dict[str, int] = field(default_factory=dict)  # rows by status, + featurize_error (no row)
    seconds: float = 0.0
    pipelines_skipped: int = 0  # generation failed: no rows
    reused: bool = False  # the batch was already written; nothing was measured
    errors: list[str] = field(default_factory=list)  # one line per skipped pipeline / unwritable schedule

    def __str__(self) -> str:
        failed = ", ".join(f"{k} {v}" for k, v in sorted(self.failed_by_status.items())) or "none failed"
        skipped = f", {self.pipelines_skipped} pipelines skipped" if self.pipelines_skipped else ""
        how = "already written" if self.reused else f"{self.seconds:.1f}s"
        return (f"batch {self.batch_id}: {self.pipelines} pipelines, {self.schedules} schedules, {self.ok} ok "
                f"({failed}){skipped} -> {self.path} [{how}]")


def derived_seed(*parts: int) -> int:
    """A 63-bit seed from integers, the same in every process (unlike hash())."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little") >> 1


def sample_schedules(pipeline, spec: BatchSpec, seed: int) -> list[tuple[str, object]]:
    """`spec.schedules_per_pipeline` distinct (sampler, LoopNest) pairs for the pipeline of `seed`: the
    naive and simple baselines, then random schedules seeded by (schedule_seed, seed, draw). Fewer when the
    pipeline's space is too small to find that many distinct ones in a bounded number of draws."""
    from ir.builder import naive_schedule, simple_schedule
    from ir.sampling import random_schedule
    from ir.target import get_target

    target = get_target(spec.target)
    n = spec.schedules_per_pipeline
    out: list[tuple[str, object]] = []
    seen: set[str] = set()

    def add(name, loopnest):
        if loopnest.fingerprint not in seen and len(out) < n:
            seen.add(loopnest.fingerprint)
            out.append((name, loopnest))

    add("naive", naive_schedule(pipeline))
    add("simple", simple_schedule(pipeline, target))
    for draw in range(8 * n + 16):
        if len(out) >= n:
            break
        try:
            loopnest, _ = random_schedule(pipeline, derived_seed(spec.schedule_seed, seed, draw), target)
        except SchedlabError:
            continue  # the builder ran out of attempts on this draw: take the next
        add("random", loopnest)
    return out


def _prepare(spec: BatchSpec, seed: int):
    return prepare_pipeline(seed, spec.max_stages, spec.output_size, spec.markov, spec.check_outputs)


def prepare_pipeline(seed: int, max_stages: int, output_size: tuple[int, int, int], markov: bool = False,
                     check_outputs: bool = True):
    """(pipeline, inputs, expected outputs or None) of one seed; raises when the pipeline cannot be made."""
    import numpy as np

    import ir
    from generator.random_pipeline import random_pipeline

    p = random_pipeline(seed, max_stages, output_size, markov)
    inputs = p.random_inputs(seed)
    if not check_outputs:
        return p, inputs, None
    with np.errstate(all="ignore"):  # NaN and inf are legitimate values of random programs
        return p, inputs, ir.interpret(p, inputs)


def _measure_pipeline(spec, target, seed, p, inputs, expected, worker, tick) -> tuple[list, list[str]]:
    """Samples of every schedule of one pipeline; a failure is a sample with its status."""
    import backends
    from featurize import featurize
    from featurize.dataset import Sample

    samples, errors = [], []
    protocol = get_protocol(spec.protocol)
    for name, loopnest in sample_schedules(p, spec, seed):
        try:
            features = featurize(p, loopnest, target)
        except Exception as e:  # noqa: BLE001 - a featurizer bug loses this schedule, not the batch
            errors.append(f"seed {seed} {name} {loopnest.fingerprint}: featurize failed: {type(e).__name__}: {e}")
            tick(f"seed {seed}: featurize_error")
            continue
        m = backends.measure_many([backends.MeasureInput(p, loopnest, inputs, expected)], target, protocol=protocol,
                                  compile_timeout=spec.compile_timeout, worker=worker)[0]
        samples.append(Sample.build(p, loopnest, features, m, sampler=name, backend="numba"))
        tick(f"seed {seed} {name}: {m.status}" + (f" {m.min_s * 1e3:.3g} ms" if m.ok else ""))
    return samples, errors


def generate_batch(spec: BatchSpec, root: Path | str, worker=None, progress: Progress | None = None,
                   overwrite: bool = False) -> BatchSummary:
    """Generate, measure and write one batch; a batch already on disk is reported, not redone, unless
    `overwrite` (then it is replaced atomically)."""
    from featurize.dataset import batch_path

    t0 = time.perf_counter()
    tgt = _cpu_target(spec.target)
    target = tgt.name
    path = batch_path(root, target, spec.batch_id)
    if path.exists() and not overwrite:
        return _summary_of_file(spec.batch_id, path)
    planned = len(spec.seeds) * spec.schedules_per_pipeline
    done = 0

    def tick(note: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, planned, note)

    own = worker is None
    if own:
        from backends.worker import Worker

        worker = Worker()
    samples, errors, pipelines = [], [], 0
    try:
        for seed in spec.seeds:
            try:
                p, inputs, expected = _prepare(spec, seed)
            except Exception as e:  # noqa: BLE001 - a broken random pipeline is skipped and counted
                errors.append(f"seed {seed}: pipeline failed: {type(e).__name__}: {first_line(e)}")
                planned -= spec.schedules_per_pipeline
                if progress is not None:
                    progress(done, planned, f"seed {seed}: pipeline skipped")
                continue
            got, errs = _measure_pipeline(spec, tgt, seed, p, inputs, expected, worker, tick)
            planned -= spec.schedules_per_pipeline - len(got) - len(errs)
            samples += got
            errors += errs
            pipelines += 1
    finally:
        if own:
            worker.close()
    _write(root, target, spec.batch_id, samples, path)
    status = collections.Counter(s.status for s in samples)
    failed = {k: v for k, v in status.items() if k != "ok"}
    if any("featurize failed" in e for e in errors):
        failed["featurize_error"] = sum("featurize failed" in e for e in errors)
    return BatchSummary(spec.batch_id, path, pipelines, len(samples), status["ok"], failed,
                        time.perf_counter() - t0, len(spec.seeds) - pipelines, False, errors)


def _cpu_target(name: str):
    """The target of a spec; the numba backend measures CPU targets only, so a GPU target is refused up front
    rather than filling a batch with compile errors."""
    from ir.target import get_target

    tgt = get_target(name)
    if tgt.kind != "cpu":
        raise SchedlabError(f"target {tgt.name} is a {tgt.kind} target; local data generation measures CPU targets "
                            "with the numba backend")
    return tgt


def _write(root, target: str, batch_id: str, samples: list, path: Path) -> None:
    """write_batch, replacing an existing file atomically: the batch is written under a private root next
    to its final place and renamed over it, so a reader sees the old file or the new one."""
    from featurize.dataset import write_batch

    if not path.exists():
        write_batch(root, target, batch_id, samples)
        return
    staging = path.parent / f".overwrite-{batch_id}-{os.getpid()}"
    try:
        fresh = write_batch(staging, target, batch_id, samples)
        os.replace(fresh, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _summary_of_file(batch_id: str, path: Path) -> BatchSummary:
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=["pipeline_id", "status"])
    status = collections.Counter(t.column("status").to_pylist())
    return BatchSummary(batch_id, path, len(set(t.column("pipeline_id").to_pylist())), t.num_rows, status["ok"],
                        {k: v for k, v in status.items() if k != "ok"}, reused=True)


# -- command line -------------------------------------------------------------------------------------

PROG = "python -m generator.datagen"


def _seeds(text: str) -> tuple[int, ...]:
    """'A:B' (B exclusive), 'A,B,C' or 'A'."""
    try:
        if ":" in text:
            a, b = (int(v) for v in text.split(":"))
            seeds = tuple(range(a, b))
        else:
            seeds = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must be A:B, A,B,C or A (ints), got {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"seeds {text!r} select no seed")
    return seeds


def parse_args(argv=None) -> argparse.Namespace:
    ap = cli.OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=_seeds, required=True, help="pipeline seeds: A:B (B exclusive), A,B,C or A")
    ap.add_argument("--schedules", type=cli.positive_int, default=16, help="distinct schedules per pipeline (default 16)")
    ap.add_argument("--out", type=Path, required=True, help="dataset root (batches go to OUT/target=<name>/)")
    ap.add_argument("--max-stages", type=cli.max_stages, default=6, help="stages per pipeline (default 6)")
    ap.add_argument("--size", type=cli.output_size, default=SMALL_OUTPUT, help="output size W,H,C (default 64,48,3)")
    ap.add_argument("--target", default="host", help="target name or YAML (default host)")
    ap.add_argument("--protocol", choices=sorted(PROTOCOLS), default="quick", help="measurement protocol")
    ap.add_argument("--schedule-seed", type=int, default=0, help="seeds the schedule sampler (default 0)")
    ap.add_argument("--markov", action="store_true", help="draw stage kinds from the GPU variant's Markov matrix")
    ap.add_argument("--per-batch", type=cli.positive_int, default=1,
                    help="pipelines per batch file (default 1: an interrupted run loses at most one pipeline)")
    ap.add_argument("--no-check", action="store_true", help="do not compare outputs with the interpreter")
    ap.add_argument("--overwrite", action="store_true", help="regenerate batches that are already written")
    a = ap.parse_args(argv)
    if a.out.exists() and not a.out.is_dir():
        ap.error(f"--out {a.out} is not a directory")
    try:
        _cpu_target(a.target)
    except SchedlabError as e:
        ap.error(f"--target: {e}")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)

    specs = [BatchSpec(seeds=a.seeds[i:i + a.per_batch], schedules_per_pipeline=a.schedules, max_stages=a.max_stages,
                       output_size=a.size, target=a.target, protocol=a.protocol, schedule_seed=a.schedule_seed,
                       markov=a.markov, check_outputs=not a.no_check) for i in range(0, len(a.seeds), a.per_batch)]
    from tqdm import tqdm

    from backends.worker import Worker

    worker = Worker()
    bar = tqdm(total=len(a.seeds) * a.schedules, unit="schedule", file=sys.stderr, dynamic_ncols=True)
    totals, summaries, t0 = collections.Counter(), [], time.perf_counter()
    last = 0  # schedules done in the current batch, as last reported

    def progress(done, planned, note):
        nonlocal last
        bar.update(done - last)
        last = done
        bar.set_postfix_str(note)

    try:
        for spec in specs:
            last = 0
            s = generate_batch(spec, a.out, worker, progress, a.overwrite)
            if s.reused:
                bar.update(s.schedules)
            summaries.append(s)
            totals.update({"ok": s.ok, **s.failed_by_status})
            bar.write(str(s))
            for e in s.errors:
                bar.write(f"  {e}")
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted: {len(summaries)} of {len(specs)} batches written to {a.out}", file=sys.stderr)
        return 130
    except (SchedlabError, OSError) as e:
        bar.close()
        print(f"{PROG}: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    finally:
        worker.close()
    bar.close()
    rows = sum(s.schedules for s in summaries)
    skipped = sum(s.pipelines_skipped for s in summaries)
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(totals.items()) if v)
    pipelines = sum(s.pipelines for s in summaries)
    print(f"{len(specs)} batches ({sum(s.reused for s in summaries)} already written), "
          f"{pipelines} pipelines ({skipped} skipped), {rows} schedules: {statuses or 'none'}; "
          f"yield {100.0 * totals['ok'] / max(1, rows):.1f}% in {time.perf_counter() - t0:.0f}s -> {a.out}")
    return 0 if totals["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
