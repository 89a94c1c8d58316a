"""The scheduler's command line: `python -m scheduler --app unsharp --algorithm beam --model analytical`.

Searches a schedule for an app of the suite (or a random pipeline, `--random SEED`), prints it as loops
with its predicted cost and the search statistics and, with --measure, its measured runtime next to the
naive schedule's. User errors are one line and exit status 2. It lives in generator, the layer that owns
the app suite and random pipelines (the scheduler below may not import them); `python -m scheduler` runs it.
"""

from __future__ import annotations

import sys

from ir.errors import SchedlabError, one_line_warnings
from scheduler.api import ALGORITHMS, MODES

from .apps import APPS
from .cli import OneLineParser, positive_int


def parse_args(argv=None):
    ap = OneLineParser(prog="python -m scheduler", description="Search a schedule with a cost model.")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--app", choices=sorted(APPS), metavar="NAME", help="an app of the suite")
    src.add_argument("--random", type=int, metavar="SEED", help="a random pipeline (generator.random_pipeline)")
    ap.add_argument("--size", choices=("small", "full"), default="small", help="app size (default small)")
    ap.add_argument("--max-stages", type=positive_int, default=12, help="stages of --random pipelines")
    ap.add_argument("--target", default="host", help="host, or a conf/targets/<name>.yaml target")
    ap.add_argument("--model", default="champion",
                    help="champion (default; analytical until one is registered), analytical, random[:seed], "
                         "an MLflow model URI or a checkpoint file")
    ap.add_argument("--tracking-uri", "--tracking", dest="tracking", default=None,
                    help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else the embedded SQLite store)")
    ap.add_argument("--algorithm", choices=ALGORITHMS, default="beam")
    ap.add_argument("--beam-size", type=positive_int, default=32)
    ap.add_argument("--passes", type=positive_int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dropout", type=float, default=100.0, help="%% chance of a fully greedy run (dropout)")
    ap.add_argument("--mode", choices=MODES, default="one-shot", help="deprecated: give --algorithm top-k/autotune")
    ap.add_argument("--backend", default="numba", help="the backend the schedule compiles with (default numba)")
    ap.add_argument("--allow-mismatch", action="store_true",
                    help="use a model that learned another target's or backend's runtimes")
    ap.add_argument("--k", type=positive_int, default=5, help="schedules benchmarked by --mode top-k")
    ap.add_argument("--rounds", type=positive_int, default=2, help="autotune rounds")
    ap.add_argument("--samples", type=positive_int, default=16, help="dropout samples per autotune round")
    ap.add_argument("--measure", action="store_true", help="benchmark the schedule and the naive one")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        pipeline = _pipeline(args)
        from scheduler.api import autoschedule

        with one_line_warnings("python -m scheduler"):  # champion fell back to analytical: one line, as errors are
            s = autoschedule(pipeline, args.target, model=args.model, algorithm=args.algorithm,
                             beam_size=args.beam_size, passes=args.passes, seed=args.seed, mode=args.mode, k=args.k,
                             dropout=args.dropout, tracking=args.tracking, rounds=args.rounds, samples=args.samples,
                             progress=_progress, backend=args.backend, allow_mismatch=args.allow_mismatch)
    except (SchedlabError, ValueError) as e:
        print(f"python -m scheduler: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    print(s.text)
    print(f"\npredicted cost: {s.predicted_cost:.4g}")
    print(f"search: {s.stats}")
    if s.measured_runtime is not None:
        print(f"measured ({args.algorithm if args.mode == 'one-shot' else args.mode}): {s.measured_runtime * 1e3:.4f} ms, best of {len(s.stats.measured)} benchmarked")
    if args.measure:
        from ir.builder import naive_schedule

        from scheduler.modes import measure_loopnest

        t = s.measured_runtime or measure_loopnest(pipeline, s.loopnest, s.target)
        naive = measure_loopnest(pipeline, naive_schedule(pipeline), s.target)
        print(f"measured: {t * 1e3:.4f} ms   naive schedule: {naive * 1e3:.4f} ms   speedup {naive / t:.2f}x")
    return 0


def _pipeline(args):
    if args.app is not None:
        from .apps import get_app

        return get_app(args.app).build(args.size)
    from .random_pipeline import generate

    return generate(args.random, args.max_stages).pipeline


def _progress(pass_index: int, decisions: int, total: int, states: int) -> None:
    if sys.stderr.isatty():
        label = "pre-pass" if pass_index < 0 else f"pass {pass_index + 1}"
        sys.stderr.write(f"\r{label}: decision {decisions}/{total}, {states} states evaluated")
        if decisions == total:
            sys.stderr.write("\n")


if __name__ == "__main__":
    sys.exit(main())
