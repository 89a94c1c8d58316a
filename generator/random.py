"""The random pipeline generator from the command line: statistics, one pipeline, or a correctness check.

    python -m generator.random --stats 1000 [--max-stages 20] [--markov] [--size 2000,2000,3]
                               [--naive-runtime 0.002,0.5] [--measure 24 [--backend halide]]
                               [--mix-weights indices|buffer] [--motifs 0.2 [--motif-kinds conv_layer,...]]
    python -m generator.random --show SEED [--max-stages 20] [--markov] [--size W,H,C]
    python -m generator.random --check 1000 [--seed 0] [--max-stages 8] [--size 16,12,3] [--jobs 2]
                                            [--schedule simple|naive]

--stats generates N pipelines (seeds 0..N-1, or from --seed) and prints the distribution of stage kinds,
pipeline lengths (Funcs per pipeline), value types and output / intermediate sizes, and the distribution of
naive runtimes (estimated by generator.sizing; with --measure K, also measured for the first K pipelines) next
to the 17 apps' at full size, with a summary. --naive-runtime LO,HI sizes each pipeline as the data generator
does with that key (--size is then the largest output).
--show prints one pipeline as DSL text with its stages. --check builds each pipeline at a small size,
runs `ir.interpret`, compiles it with numba under `simple_schedule` (or `naive_schedule`, which
compiles ~4x faster: numba's parfor pass costs about a second per parallel loop nest) and compares the
outputs, N seeds in parallel worker processes; it exits 1 if any seed fails. Bad arguments exit 2 with one line.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import statistics
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

from . import cli
from .random_pipeline import (AUX_ROLES, DEFAULT_MOTIF_KINDS, DEFAULT_OUTPUT_SIZE, KINDS, MARKOV, MIX_WEIGHTS, MOTIF_KINDS,
                              MOTIFS, check_motif_kinds, check_motifs, generate)

CHECK_SIZE = (16, 12, 3)
CHECK_MAX_STAGES = 8
PROG = "python -m generator.random"
SCHEDULES = ("simple", "naive")


def parse_args(argv=None) -> argparse.Namespace:
    ap = cli.OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stats", type=cli.positive_int, metavar="N", help="statistics over N pipelines")
    mode.add_argument("--show", type=int, metavar="SEED", help="print the pipeline of one seed")
    mode.add_argument("--check", type=cli.positive_int, metavar="N",
                      help="interpret and compile N pipelines (small size) and compare the outputs")
    ap.add_argument("--seed", type=int, default=0, help="first seed of --stats / --check (default 0)")
    ap.add_argument("--max-stages", type=cli.max_stages, default=None,
                    help=f"stages per pipeline, input and output included (default 20; {CHECK_MAX_STAGES} for --check)")
    ap.add_argument("--size", type=cli.output_size, default=None,
                    help="output size W,H,C (default 2000,2000,3; 16,12,3 for --check)")
    ap.add_argument("--markov", action="store_true", help="draw stage kinds from the GPU variant's Markov matrix")
    ap.add_argument("--mix-weights", choices=MIX_WEIGHTS, default="indices",
                    help="where channel mixes get their weights: computed from the channel indices (the default, as "
                         "Halide's generator) or read from an input buffer, as a layer's are")
    ap.add_argument("--motifs", type=float, default=0.0, metavar="P",
                    help="chance that a stage slot draws an app-like motif (--motif-kinds) instead of one random "
                         "stage (default 0: Halide's generator)")
    ap.add_argument("--motif-kinds", default=",".join(DEFAULT_MOTIF_KINDS), metavar="K,...",
                    help=f"the motifs a slot draws from, among {', '.join(MOTIFS)} "
                         f"(default {','.join(DEFAULT_MOTIF_KINDS)})")
    ap.add_argument("--naive-runtime", type=cli.seconds_range, default=None, metavar="LO,HI",
                    help="--stats: scale each output (--size is the largest) so its estimated naive runtime is a "
                         "log-uniform draw from [LO, HI] seconds, as the job's naive_runtime key does")
    ap.add_argument("--measure", type=cli.positive_int, default=None, metavar="K",
                    help="--stats: compile and time the naive schedules of the first K pipelines and of the 17 apps "
                         "at full size")
    ap.add_argument("--backend", default="halide", help="--stats --measure: the backend that compiles them "
                    "(default halide: a naive schedule compiles in about a second)")
    ap.add_argument("--jobs", type=cli.positive_int, default=None, help="--check: pipelines compiled at once")
    ap.add_argument("--schedule", choices=SCHEDULES, default=None,
                    help="--check: simple (parallel, vectorized, tiled: the default) or naive (all root, serial; "
                         "compiles about 4x faster)")
    a = ap.parse_args(argv)
    try:
        check_motifs(a.motifs)
    except ValueError as e:
        ap.error(f"--motifs: {e}")
    try:
        a.motif_kinds = check_motif_kinds(tuple(a.motif_kinds.split(",")))
    except ValueError as e:
        ap.error(f"--motif-kinds: {e}")
    for opt in ("jobs", "schedule"):
        if getattr(a, opt) is not None and a.check is None:
            ap.error(f"--{opt} applies to --check only")
    for opt in ("naive_runtime", "measure"):
        if getattr(a, opt) is not None and a.stats is None:
            ap.error(f"--{opt.replace('_', '-')} applies to --stats only")
    if a.max_stages is None:
        a.max_stages = CHECK_MAX_STAGES if a.check is not None else 20
    if a.size is None:
        a.size = CHECK_SIZE if a.check is not None else DEFAULT_OUTPUT_SIZE
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.show is not None:
        return show(a.show, a.max_stages, a.size, a.markov, a.mix_weights, a.motifs, a.motif_kinds)
    if a.stats is not None:
        return stats(a.stats, a.seed, a.max_stages, a.size, a.markov, a.naive_runtime, a.measure or 0, a.backend,
                     a.mix_weights, a.motifs, a.motif_kinds)
    return check(a.check, a.seed, a.max_stages, a.size, a.markov, a.jobs or min(4, os.cpu_count() or 1),
                 a.schedule or "simple", a.mix_weights, a.motifs, a.motif_kinds)


# -- --show -----------------------------------------------------------------------------------------


def show(seed: int, max_stages: int, size, markov: bool, mix_weights: str = "indices", motifs: float = 0.0,
         motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS) -> int:
    g = generate(seed, max_stages, size, markov, mix_weights, motifs, motif_kinds)
    p = g.pipeline
    print(f"# seed {seed}, max_stages {max_stages}, output {size[0]}x{size[1]}x{size[2]}"
          f"{', markov' if markov else ''}{', weights from buffers' if mix_weights == 'buffer' else ''}"
          f"{_motif_flags(motifs, motif_kinds).replace(' --', ', ')}: {len(p.funcs)} Funcs, fingerprint {p.fingerprint}")
    print(p)
    print()
    print("# stages (nominal shape at 2000x2000; '-' = not reached from the output)")
    live = {s.name for s in g.live}
    for s in g.stages:
        shape = "x".join(str(v) for v in s.shape)
        print(f"{'' if s.name in live else '- '}{s.name:<20} {s.kind:<12} {s.type!s:<4} {shape:<16} "
              f"{s.variant:<36} <- {', '.join(s.operands)}")
    print("# kinds: " + ", ".join(s.kind for s in g.live))
    return 0


# -- --stats ----------------------------------------------------------------------------------------


def _decade(n: float) -> str:
    return f"1e{math.floor(math.log10(max(1.0, n)))}"


def _table(title: str, counts: collections.Counter, total: int, order=None, extra=None) -> None:
    print(title)
    keys = order if order is not None else [k for k, _ in counts.most_common()]
    for k in keys:
        n = counts.get(k, 0)
        line = f"  {k!s:<14} {n:>7}  {100.0 * n / max(1, total):5.1f}%"
        if extra is not None:
            line += "  " + extra(k)
        print(line)


def stats(n: int, first: int, max_stages: int, size, markov: bool, naive_runtime=None, measure: int = 0,
          backend: str = "halide", mix_weights: str = "indices", motifs: float = 0.0,
          motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS) -> int:
    from .sizing import estimate_naive_seconds, sized_output

    kinds = collections.Counter()  # live main stages by kind
    pipelines_with = collections.Counter()  # pipelines containing a kind
    aux = collections.Counter()
    motif = collections.Counter()  # live Funcs of app-like motifs, by kind
    variants: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    types = collections.Counter()
    lengths = []
    region_decades = collections.Counter()
    nominal_decades = collections.Counter()
    biggest = smallest = None
    transitions: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    naive: list[NaiveRuntime] = []
    t0 = time.time()
    step = max(1, n // 10)
    for i in range(n):
        seed = first + i
        out_size = (sized_output(seed, max_stages, size, naive_runtime, markov, mix_weights, motifs, motif_kinds)
                    if naive_runtime else tuple(size))
        g = generate(seed, max_stages, out_size, markov, mix_weights, motifs, motif_kinds)
        p = g.pipeline
        naive.append(NaiveRuntime(f"seed {seed}", out_size, estimate_naive_seconds(p),
                                  pipeline=p if i < measure else None))
        lengths.append(len(p.funcs))
        live = g.live
        seen = set()
        for s in live:
            if s.kind in KINDS:
                kinds[s.kind] += 1
                seen.add(s.kind)
                variants[s.kind][s.variant.split(" ")[0] if s.variant else "-"] += 1
            elif s.kind in MOTIF_KINDS:
                motif[s.kind] += 1
            else:
                aux[s.kind] += 1
            types[str(s.type)] += 1
            nominal_decades[_decade(math.prod(s.shape))] += 1
        pipelines_with.update(seen)
        for a, b in zip(g.sequence, g.sequence[1:]):
            transitions[a][b] += 1
        for node in p.dag.nodes:
            if node.is_output:
                continue
            pts = math.prod(hi - lo + 1 for lo, hi in node.region)
            region_decades[_decade(pts)] += 1
            smallest = pts if smallest is None else min(smallest, pts)
            biggest = pts if biggest is None else max(biggest, pts)
        if (i + 1) % step == 0 or i + 1 == n:
            print(f"[{i + 1}/{n}] {time.time() - t0:.1f}s", file=sys.stderr, flush=True)
    total_main = sum(kinds.values())
    n_funcs = sum(lengths)
    kinds_text = ", ".join(motif_kinds)
    print(f"# {n} random pipelines, seeds {first}..{first + n - 1}, max_stages {max_stages}, "
          f"output {size[0]}x{size[1]}x{size[2]}, {'Markov' if markov else 'uniform'} stage draws, channel mixes' "
          f"weights from {'input buffers' if mix_weights == 'buffer' else 'the channel indices'}"
          f"{f', app-like motifs ({kinds_text}) at chance {motifs:g} per stage slot' if motifs else ''}")
    _table(f"stage kinds (Funcs reached from the output; {total_main} stages; % of stages, % of pipelines "
           "containing it, variants):", kinds, total_main, order=list(KINDS),
           extra=lambda k: f"{100.0 * pipelines_with[k] / n:5.1f}%  " + ", ".join(
               f"{v} {c}" for v, c in variants[k].most_common(4)))
    if motifs:
        _table("app-like motifs' Funcs (pyramid levels down, up and combined; 2-D stencils of stencil chains; CNN "
               "layers' convolutions and ReLUs; depthwise convolutions; max filters' scans, vertical and horizontal "
               "maxima):",
               motif, n_funcs, order=list(MOTIF_KINDS))
    _table("auxiliary Funcs (input/output stages, resampling steps, hidden sum() Funcs):", aux, n_funcs,
           order=list(AUX_ROLES))
    mean = statistics.mean(lengths)
    print(f"pipeline lengths (Funcs per pipeline): min {min(lengths)}, median {statistics.median(lengths):g}, "
          f"mean {mean:.1f}, max {max(lengths)}")
    hist = collections.Counter(min(v // 5 * 5, 40) for v in lengths)
    for b in sorted(hist):
        label = f"{b}-{b + 4}" if b < 40 else "40+"
        print(f"  {label:<8} {hist[b]:>6}  {'#' * max(1, round(60 * hist[b] / n)) if hist[b] else ''}")
    _table(f"value types (all {n_funcs} Funcs):", types, n_funcs,
           order=[t for t in ("u8", "u16", "u32", "i8", "i16", "i32", "f32") if types[t]] +
           [t for t in types if t not in ("u8", "u16", "u32", "i8", "i16", "i32", "f32")])
    where = "the drawn sizes" if naive_runtime else f"{size[0]}x{size[1]}x{size[2]}"
    if naive_runtime:
        print(f"sizes: outputs scaled from {size[0]}x{size[1]}x{size[2]} so that estimated naive runtimes are "
              f"log-uniform in [{naive_runtime[0]:g}, {naive_runtime[1]:g}] s (generator.sizing)")
    else:
        print(f"sizes: every output is {size[0]}x{size[1]}x{size[2]} = {math.prod(size)} points")
    _table("  nominal stage sizes at the default size (elements, by decade):", nominal_decades,
           sum(nominal_decades.values()), order=sorted(nominal_decades, key=lambda d: int(d[2:])))
    _table(f"  computed regions of intermediate Funcs at {where} (points, by decade; "
           f"min {smallest}, max {biggest}):", region_decades, sum(region_decades.values()),
           order=sorted(region_decades, key=lambda d: int(d[2:])))
    if markov:
        print("Markov rows (empirical successor frequencies of the drawn stages vs the matrix):")
        for row, want in MARKOV.items():
            succ = transitions[row]
            tot = sum(succ.values())
            got = ", ".join(f"{k} {100.0 * succ[k] / max(1, tot):.0f}% (matrix {100 * p:.0f}%)"
                            for k, p in want.items())
            print(f"  {row:<11} -> {got}  [{tot} transitions]")
    apps = naive_runtime_report(naive, measure, backend)
    missing = [k for k in KINDS if kinds[k] == 0]
    common = ", ".join(f"{k} {100.0 * v / total_main:.0f}%" for k, v in kinds.most_common(3))
    rare = ", ".join(f"{k} {100.0 * kinds[k] / total_main:.1f}%" for k in sorted(KINDS, key=lambda k: kinds[k])[:3])
    top_types = ", ".join(f"{t} {100.0 * v / n_funcs:.0f}%" for t, v in types.most_common(3))
    print()
    print(f"Summary: {n} pipelines ({'Markov' if markov else 'uniform'} draws, max_stages {max_stages}) hold "
          f"{n_funcs} Funcs, {mean:.1f} per pipeline ({min(lengths)}-{max(lengths)}), of which {total_main} are "
          f"random stages reached from the output and the rest input/output, resampling and hidden-sum Funcs. "
          + (f"All {len(KINDS)} stage kinds occur" if not missing else
             f"{len(KINDS) - len(missing)} of {len(KINDS)} stage kinds occur (missing: {', '.join(missing)})")
          + f"; the most common are {common} and the rarest {rare}. Value types: {top_types}. Intermediate "
          f"regions at {where} span {smallest} to {biggest} points "
          f"({time.time() - t0:.0f}s).")
    print(f"Naive runtimes: {_overlap_line(naive, apps)}")
    return 0 if not missing else 1


# -- naive runtimes, next to the apps' ---------------------------------------------------------------

_RUNTIME_BINS = ((0.0, 1e-4, "< 0.1 ms"), (1e-4, 1e-3, "0.1-1 ms"), (1e-3, 1e-2, "1-10 ms"),
                 (1e-2, 1e-1, "10-100 ms"), (1e-1, 1.0, "0.1-1 s"), (1.0, 10.0, "1-10 s"), (10.0, math.inf, ">= 10 s"))


@dataclass
class NaiveRuntime:
    """One pipeline's naive schedule: estimated (generator.sizing) and, when measured, timed."""

    name: str
    size: tuple[int, ...]
    estimated_s: float
    measured_s: float = math.nan
    pipeline: object = None  # kept only while it waits to be measured


def _bin_counts(values: list[float]) -> list[int]:
    return [sum(lo <= v < hi for v in values) for lo, hi, _ in _RUNTIME_BINS]


def _measure_naive(rows: list[NaiveRuntime], backend: str, what: str) -> None:
    """Compile each row's naive schedule with `backend` and time it (quick protocol, outputs not checked)."""
    import numpy as np

    import backends
    from ir.builder import naive_schedule

    t0 = time.time()
    for i, r in enumerate(rows):
        p, r.pipeline = r.pipeline, None
        try:
            k = backends.compile(p, naive_schedule(p), backend=backend, isolate=False)
            with np.errstate(all="ignore"):
                m = backends.measure(k, p.random_inputs(0), "quick", isolate=False)
            r.measured_s = m.min_s if m.ok else math.nan
            err = "" if m.ok else f" ({m.status}: {m.error})"
        except Exception as e:  # noqa: BLE001 - one failing pipeline is a line in the table, not the end
            err = f" ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
        print(f"[{i + 1}/{len(rows)}] {what} {r.name}: naive {r.measured_s:.4g} s measured, "
              f"{r.estimated_s:.4g} s estimated{err} ({time.time() - t0:.0f}s)", file=sys.stderr, flush=True)


def naive_runtime_report(naive: list[NaiveRuntime], measure: int, backend: str) -> list[NaiveRuntime]:
    """Print the naive-runtime and output-size distributions of the random pipelines next to the 17 apps' at
    full size (estimated; measured for `measure` > 0); returns the apps' rows."""
    from generator.apps import APPS

    from .sizing import estimate_naive_seconds

    apps = []
    for name, app in APPS.items():
        p = app.build("full")
        out = p.output_sizes[p.output_names[0]]
        apps.append(NaiveRuntime(name, tuple(out), estimate_naive_seconds(p), pipeline=p if measure else None))
    if measure:
        _measure_naive([r for r in naive if r.pipeline is not None], backend, "random")
        _measure_naive(apps, backend, "app")
    columns = [("random, estimated", [r.estimated_s for r in naive]), ("apps, estimated", [r.estimated_s for r in apps])]
    if measure:
        columns[1:1] = [(f"random, measured ({backend})", [r.measured_s for r in naive if r.measured_s == r.measured_s])]
        columns.append((f"apps, measured ({backend})", [r.measured_s for r in apps if r.measured_s == r.measured_s]))
    print("naive runtimes (everything at root, serial; estimated = generator.sizing's work model on the development "
          "machine):")
    print("  " + " " * 10 + "".join(f"{t:>26}" for t, _ in columns))
    counts = [(_bin_counts(v), len(v)) for _, v in columns]
    for b, (_, _, label) in enumerate(_RUNTIME_BINS):
        print(f"  {label:<10}" + "".join(f"{c[b]:>18} {100.0 * c[b] / max(1, tot):5.1f}%" for c, tot in counts))
    print("  median    " + "".join(f"{_fmt_s(statistics.median(v)) if v else '-':>26}" for _, v in columns))
    pts = lambda r: math.prod(r.size)  # noqa: E731
    print("output sizes (points of the first output): random "
          f"min {min(pts(r) for r in naive)}, median {statistics.median(pts(r) for r in naive):g}, "
          f"max {max(pts(r) for r in naive)}; apps min {min(pts(r) for r in apps)}, "
          f"median {statistics.median(pts(r) for r in apps):g}, max {max(pts(r) for r in apps)}")
    print("  the apps at full size:" + "".join(
        f"\n    {r.name:<26} {'x'.join(map(str, r.size)):<16} naive {_fmt_s(r.estimated_s):>9} estimated"
        + (f", {_fmt_s(r.measured_s):>9} measured" if measure else "") for r in apps))
    if measure:
        ratios = [r.measured_s / r.estimated_s for r in naive + apps if r.measured_s == r.measured_s]
        if ratios:
            print(f"  measured / estimated: median {statistics.median(ratios):.2f}, range {min(ratios):.2f}-"
                  f"{max(ratios):.2f} over {len(ratios)} pipelines (1.00: this machine runs like the development "
                  "machine's fit)")
    return apps


def _fmt_s(v: float) -> str:
    from ir.units import format_seconds

    return format_seconds(v) if v == v else "-"


def _overlap_line(naive: list[NaiveRuntime], apps: list[NaiveRuntime]) -> str:
    def runtime(r):
        return r.measured_s if r.measured_s == r.measured_s else r.estimated_s

    lo, hi = min(runtime(r) for r in apps), max(runtime(r) for r in apps)
    inside = sum(lo <= runtime(r) <= hi for r in naive)
    return (f"{inside} of {len(naive)} random pipelines ({100.0 * inside / len(naive):.0f}%) fall within the apps' "
            f"range {_fmt_s(lo)}-{_fmt_s(hi)}; random median {_fmt_s(statistics.median(runtime(r) for r in naive))}, "
            f"apps median {_fmt_s(statistics.median(runtime(r) for r in apps))} (measured where measured, "
            "else estimated).")


def _motif_flags(motifs: float, motif_kinds: tuple[str, ...]) -> str:
    """The command-line flags that make these motifs ('' for none)."""
    if not motifs:
        return ""
    kinds = "" if motif_kinds == DEFAULT_MOTIF_KINDS else f" --motif-kinds {','.join(motif_kinds)}"
    return f" --motifs {motifs:g}{kinds}"


# -- --check ----------------------------------------------------------------------------------------


def prepare(seed: int, max_stages: int, size, markov: bool, mix_weights: str = "indices", motifs: float = 0.0,
            motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS):
    """(pipeline, inputs, expected outputs) of one seed, or raises."""
    import numpy as np

    import ir

    p = generate(seed, max_stages, size, markov, mix_weights, motifs, motif_kinds).pipeline
    inputs = p.random_inputs(seed)
    with np.errstate(all="ignore"):  # NaN and inf are legitimate values of random programs
        return p, inputs, ir.interpret(p, inputs)


def compile_and_check(p, inputs, expected, worker=None, schedule: str = "simple"):
    """The property check: numba under the default schedule equals the interpreter. Returns (status, error)."""
    from backends import MeasureInput, measure_many
    from ir.builder import naive_schedule, simple_schedule

    make = simple_schedule if schedule == "simple" else naive_schedule
    (m,) = measure_many([MeasureInput(p, make(p), inputs, expected)], protocol="check", worker=worker)
    return m.status, m.error


def check(n: int, first: int, max_stages: int, size, markov: bool, jobs: int, schedule: str = "simple",
          mix_weights: str = "indices", motifs: float = 0.0, motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS) -> int:
    from backends.worker import Worker

    local = threading.local()
    workers: list[Worker] = []

    def run(p, inputs, expected):
        w = getattr(local, "worker", None)
        if w is None:
            w = local.worker = Worker()
            workers.append(w)
        try:
            return compile_and_check(p, inputs, expected, w, schedule)
        except Exception as e:  # noqa: BLE001 - a status, not a dead run
            return "check_error", f"{type(e).__name__}: {e}"

    counts = collections.Counter()
    failures = []
    t0 = time.time()
    done = 0
    flags = (f"--max-stages {max_stages} --size {','.join(map(str, size))}{' --markov' if markov else ''}"
             f"{' --mix-weights buffer' if mix_weights == 'buffer' else ''}{_motif_flags(motifs, motif_kinds)}")
    print(f"checking {n} pipelines (seeds {first}..{first + n - 1}, {flags.replace('--', '')}) under "
          f"{schedule}_schedule with {jobs} compile workers", flush=True)

    def finish(seed, status, error):
        nonlocal done
        done += 1
        counts[status] += 1
        if status != "ok":
            failures.append((seed, status, error))
            print(f"FAIL seed {seed}: {status}: {error}\n  reproduce: {PROG} --show {seed} {flags}", flush=True)
        if done % 10 == 0 or done == n:
            print(f"[{done}/{n}] {time.time() - t0:.0f}s  " + ", ".join(f"{s}: {c}" for s, c in sorted(counts.items())),
                  flush=True)

    pending = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for seed in range(first, first + n):
            try:
                p, inputs, expected = prepare(seed, max_stages, size, markov, mix_weights, motifs, motif_kinds)
            except Exception as e:  # noqa: BLE001 - a generator or interpreter failure is this seed's status
                finish(seed, "generator_error", f"{type(e).__name__}: {e}")
                continue
            pending[pool.submit(run, p, inputs, expected)] = seed
            while len(pending) >= 2 * jobs:
                ready, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in ready:
                    finish(pending.pop(fut), *fut.result())
        for fut in list(pending):
            finish(pending.pop(fut), *fut.result())
    for w in workers:
        w.close()
    print(f"check: {n} pipelines, {len(failures)} failing ({time.time() - t0:.0f}s): "
          + ", ".join(f"{s} {c}" for s, c in sorted(counts.items())))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
