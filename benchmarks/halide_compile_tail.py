"""Halide's compile-time tail: the slowest-compiling schedules of Halide datasets, compiled again as they are and
with their innermost unrolling turned off, side by side (and by schedlab's llvm backend, as a third column).

Most Halide compiles of the committed datasets take about a second (median 0.6-1.4 s), but a few schedules take
minutes, and those few hold much of the compile time: 2-41 % of a dataset's compile seconds are in samples over
30 s (docs/halide.md, "The compile-time tail"). A stalled compile holds a core of the data-generation job until
`compile_timeout`. This benchmark finds which part of a schedule costs that time: each schedule is compiled in a
fresh process with an empty kernel cache, by default (1) as recorded, (2) with every innermost level that unrolls
(LoopNest kind `unrolled`) made `vectorized` instead (the same SIMD loop, no unrolled copies), (3) as recorded by
the llvm backend; `--variants` adds (4) `halide-no-unroll-inlining`, unrolling off only on innermost levels that
inline Funcs. A compile past --timeout is reported as such. Each compiled kernel is timed once under the quick protocol
on the pipeline's random inputs (outputs not checked: the schedules are the dataset's, checked when it was made), so
the line also says what the unrolling buys at run time.

    python benchmarks/halide_compile_tail.py --top 8 --timeout 60     # ~10 minutes here
    python benchmarks/halide_compile_tail.py --data datasets/random-host-halide-motifs --top 3
    python benchmarks/halide_compile_tail.py --variants halide,halide-no-unroll-inlining   # the narrower rule
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.ab import run_cold_child  # noqa: E402

DEFAULT_DATA = ",".join(str(p.relative_to(ROOT)) for p in sorted((ROOT / "datasets").glob("random-host-halide*")))


@dataclass(frozen=True)
class SlowSchedule:
    dataset: str
    sample_id: str
    recorded_compile_s: float
    pipeline_json: str
    schedule_json: str


@dataclass(frozen=True)
class Compiled:
    status: str  # ok | timeout | error
    compile_s: float
    runtime_s: float = math.nan
    error: str = ""


def slowest(data: str, top: int, target: str = "host") -> list[SlowSchedule]:
    """The `top` slowest-compiling Halide schedules of `target` in the datasets under `data`, one per pipeline."""
    import polars as pl

    from featurize.dataset import DatasetError, dataset_roots, target_files

    found: list[SlowSchedule] = []
    for root in dataset_roots(data):
        try:
            files = target_files(root, target)
        except DatasetError as e:
            raise SystemExit(f"halide_compile_tail.py: error: {e}") from None
        df = (pl.scan_parquet([str(f) for f in files], hive_partitioning=False)
              .select(["sample_id", "pipeline_id", "backend", "compile_s", "pipeline_json", "schedule_json"])
              .filter((pl.col("backend") == "halide") & pl.col("compile_s").is_not_null())
              .unique(subset=["sample_id"]).sort("compile_s", descending=True)
              .unique(subset=["pipeline_id"], keep="first", maintain_order=True).head(top).collect())
        found += [SlowSchedule(root.name, r["sample_id"], r["compile_s"], r["pipeline_json"], r["schedule_json"])
                  for r in df.iter_rows(named=True)]
    return sorted(found, key=lambda s: -s.recorded_compile_s)[:top]


def _unrolled_levels(loopnest: dict):
    """The innermost levels of a LoopNest's JSON (LoopNest.dumps) whose kind is `unrolled`."""
    stack = [loopnest["root"]]
    while stack:
        n = stack.pop()
        if n.get("kind") == "unrolled":
            yield n
        stack.extend(n.get("children", []))


def unrolling_off(schedule_json: str, only_inlining: bool = False) -> str:
    """The LoopNest with every `unrolled` innermost level (with `only_inlining`, every one that inlines Funcs)
    `vectorized`: its SIMD loop kept, no unrolled copies."""
    d = json.loads(schedule_json)
    for n in list(_unrolled_levels(d)):
        if n.get("inlined") or not only_inlining:
            n["kind"] = "vectorized"
    return json.dumps(d)


@dataclass(frozen=True)
class Variant:
    backend: str
    label: str  # the column's header
    schedule: Callable[[str], str]  # the recorded LoopNest JSON -> the one compiled


VARIANTS = {
    "halide": Variant("halide", "halide, as recorded", lambda js: js),
    "halide-no-unroll": Variant("halide", "halide, unrolling off", unrolling_off),
    "halide-no-unroll-inlining": Variant("halide", "halide, off where inlining",
                                         lambda js: unrolling_off(js, only_inlining=True)),
    "llvm": Variant("llvm", "llvm, as recorded", lambda js: js),
}
DEFAULT_VARIANTS = "halide,halide-no-unroll,llvm"


def unrolled_stages(schedule_json: str) -> list[str]:
    """'func.stage [sizes] (inlining ...)' of each unrolled innermost level."""
    out = []
    for n in _unrolled_levels(json.loads(schedule_json)):
        inl = ", ".join(f"{f} x{k}" for f, k in n.get("inlined", []))
        out.append(f"{n['func']}.{n['stage']} {n['size']}" + (f" (inlining {inl})" if inl else ""))
    return sorted(out)


def child(path: str, backend: str) -> None:
    """Compile (and time once) the schedule of the JSON file at `path` in this process; prints a Compiled."""
    import backends
    from ir.loopnest import LoopNest
    from ir.pipeline import Pipeline

    job = json.loads(Path(path).read_text())
    p = Pipeline.from_json(json.loads(job["pipeline_json"]))
    ln = LoopNest.loads(job["schedule_json"])
    t0 = time.perf_counter()
    try:
        k = backends.compile(p, ln, backend=backend, isolate=False, timeout=None)
    except Exception as e:  # noqa: BLE001 - a failure is this row's status
        print(json.dumps(Compiled("error", time.perf_counter() - t0, error=str(e).splitlines()[0][:160]).__dict__))
        return
    compile_s = time.perf_counter() - t0
    m = backends.measure(k, p.random_inputs(0), "quick")
    print(json.dumps(Compiled("ok" if m.status == "ok" else m.status, compile_s, m.min_s, m.error or "").__dict__))


def compile_fresh(pipeline_json: str, schedule_json: str, backend: str, timeout: float) -> Compiled:
    """The schedule compiled (and timed once) by `child` in a fresh process with an empty kernel cache."""
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.json"
        job.write_text(json.dumps({"pipeline_json": pipeline_json, "schedule_json": schedule_json}))
        c = run_cold_child(__file__, [str(job), backend], timeout)
    if c.status == "timeout":
        return Compiled("timeout", c.seconds)
    if c.status != "ok":
        return Compiled("error", math.nan, error=c.error[:160])
    return Compiled(**c.result)


def cell(c: Compiled) -> str:
    if c.status == "timeout":
        return f"{'> ' + format(c.compile_s, '.0f') + ' s':>9s} {'-':>9s}"
    if c.status != "ok":
        return f"{c.status:>9s} {'-':>9s}"
    return f"{c.compile_s:8.2f}s {c.runtime_s * 1e3:7.2f}ms"


def main(argv=None) -> int:
    if argv is None and len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=DEFAULT_DATA, help="dataset roots, comma-separated (default: the committed "
                                                         "Halide datasets)")
    ap.add_argument("--target", default="host", help="the datasets' target partition (default host)")
    ap.add_argument("--top", type=int, default=8, help="slowest schedules to compile again, one per pipeline")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per compile process (default 60)")
    ap.add_argument("--variants", default=DEFAULT_VARIANTS, help=f"comma-separated columns: {', '.join(VARIANTS)} "
                                                                  f"(default {DEFAULT_VARIANTS})")
    a = ap.parse_args(argv)
    names = [v.strip() for v in a.variants.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or not names:
        ap.error(f"--variants: unknown variant {bad[0]!r}; variants: {', '.join(VARIANTS)}" if bad
                 else "--variants: name at least one")
    variants = [VARIANTS[v] for v in names]
    if a.top < 1:
        ap.error(f"--top must be at least 1, got {a.top}")
    if not a.timeout > 0:
        ap.error(f"--timeout must be positive seconds, got {a.timeout}")
    picks = slowest(a.data, a.top, a.target)
    print(f"{len(picks)} slowest-compiling Halide schedules (one per pipeline), each compiled in a fresh process with "
          f"an empty kernel cache, timeout {a.timeout:.0f} s; compile seconds, then one quick run")
    head = "  ".join(f"{v.label:>19s}" for v in variants)
    print(f"{'dataset':28s} {'sample':16s} {'recorded':>9s}  {head}")
    timed_out = 0
    faster = {n: 0 for n in names if n != "halide" and VARIANTS[n].backend == "halide"}  # against as recorded
    for s in picks:
        cells = dict(zip(names, (compile_fresh(s.pipeline_json, v.schedule(s.schedule_json), v.backend, a.timeout)
                                 for v in variants)))
        print(f"{s.dataset:28s} {s.sample_id[:16]:16s} {s.recorded_compile_s:8.1f}s  "
              + "  ".join(cell(c) for c in cells.values()), flush=True)
        for u in unrolled_stages(s.schedule_json):
            print(f"{'':46s}unrolled: {u}")
        as_is = cells.get("halide")
        if as_is is None:
            continue
        timed_out += as_is.status == "timeout"
        for n in faster:
            c = cells[n]
            faster[n] += c.status == "ok" and (as_is.status == "timeout" or as_is.compile_s >= 10 * c.compile_s)
    if "halide" in names:
        print(f"summary: {timed_out} of {len(picks)} schedules passed {a.timeout:.0f} s as recorded"
              + "".join(f"; {VARIANTS[n].label.removeprefix('halide, ')}: {k} of {len(picks)} compiled at least 10x "
                        f"faster" for n, k in faster.items()) + " (a timeout counts as slower)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
