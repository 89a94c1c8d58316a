"""Machine instructions per search state, counted by valgrind: a before/after comparison that a noisy machine cannot blur.

search_speed.py times searches; on a shared 2-core VM the same code's µs/state moves by a quarter within an hour
(docs/scheduler.md), so a change worth 5-10 % cannot be told from noise by timing it. Instructions executed
hardly move (PYTHONHASHSEED fixed): the same code's processes differ by ~15 M instructions in ~11 G (what hashing by
address leaves), ~0.6 % of beam's search on harris and max_filter but ~4 % of greedy's, so compare searches of some
hundreds of millions of instructions (a few apps and a random pipeline). This benchmark counts them with
valgrind's cachegrind (no cache simulation), for the searches alone: each measurement is two processes, one that
only sets up (imports, builds the pipelines, loads the model, a warm-up search on blur, the pipelines' features) and
one that also runs the searches; the difference is the searches', cold as `autoschedule(p)` on a fresh pipeline is.
Instructions are not time (a stall on memory costs more than an add); read them as the work done, beside
search_speed.py's µs/state.

    python benchmarks/search_instructions.py --apps harris,max_filter --random 0               # this tree, ~3 min
    python benchmarks/search_instructions.py --apps harris,max_filter --random 0 --before HEAD~3
                                                 # a revision's code vs this tree's, side by side, ~4 min

Needs valgrind (apt install valgrind); the processes run two at a time (counts do not depend on the load).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_IREFS = re.compile(r"I\s+refs:\s+([\d,]+)")


@dataclass(frozen=True)
class Count:
    """What one process under cachegrind executed: instructions, and the states of each search it ran."""

    instructions: int
    states: dict[str, int]  # algorithm -> states evaluated (empty for the setup-only process)
    compiled: int  # hot modules it ran compiled


def worker(a) -> int:
    """Set up (and with `--worker search`, search) under this process's code; one RESULT line."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from search_speed import pipelines, warm_up

    from featurize import cached_pipeline_features
    from ir.hot import compiled_modules
    from ir.target import get_target
    from scheduler import autoschedule, load_model

    model = load_model(a.model, get_target(a.target))
    warm_up(model, a.target)
    built = [build() for _, _, build in pipelines(a.apps, "small", a.random, a.seed, 20)]
    for p in built:
        cached_pipeline_features(p.dag)
    states: dict[str, int] = {}
    if a.worker == "search":
        for p in built:
            s = autoschedule(p, target=a.target, model=model, algorithm=a.algorithm, beam_size=a.beam_size,
                             passes=a.passes, seed=a.seed)
            states[a.algorithm] = states.get(a.algorithm, 0) + s.stats.states_evaluated
    print("RESULT " + json.dumps({"states": states, "compiled": len(compiled_modules())}), flush=True)
    return 0


def instructions_executed(valgrind_stderr: str) -> int | None:
    """The instruction count cachegrind reports at exit ('==PID== I   refs:      11,412,611,684'), None if absent."""
    m = _IREFS.search(valgrind_stderr)
    return None if m is None else int(m.group(1).replace(",", ""))


def count(tree: Path, a, what: str, algorithm: str = "") -> Count:
    """One worker under cachegrind with `tree`'s packages first on the path."""
    import ab

    args = [what, "--apps", ",".join(a.apps), "--random", str(a.random), "--seed", str(a.seed), "--model", a.model,
            "--target", a.target, "--beam-size", str(a.beam_size), "--passes", str(a.passes)]
    if algorithm:
        args += ["--algorithm", algorithm]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "cachegrind.log"
        results = ab.run_worker(tree, Path(__file__).resolve(), args, f"{what} {algorithm}".strip(),
                                {"PYTHONHASHSEED": "0"}, launcher=["valgrind", "--tool=cachegrind", "--cache-sim=no",
                                                                   "--cachegrind-out-file=/dev/null",
                                                                   f"--log-file={log}"])
        summary = log.read_text() if log.is_file() else ""
    executed = instructions_executed(summary)
    if executed is None:
        raise SystemExit(f"search_instructions: {what} {algorithm} under {tree}: no instruction count from "
                         f"valgrind:\n{summary[-2000:]}")
    return Count(executed, results[0]["states"], results[0]["compiled"])


def measure(trees: dict[str, Path], a) -> dict[str, dict[str, tuple[int, int, int]]]:
    """code -> algorithm -> (search instructions, states, hot modules compiled), two processes at a time."""
    jobs = [(code, what, alg) for code in trees for what, alg in [("setup", "")] + [("search", g) for g in a.algorithms]]
    with ThreadPoolExecutor(2) as pool:
        done = dict(zip(jobs, pool.map(lambda j: count(trees[j[0]], a, j[1], j[2]), jobs)))
    out: dict[str, dict[str, tuple[int, int, int]]] = {}
    for code in trees:
        base = done[(code, "setup", "")]
        for alg in a.algorithms:
            c = done[(code, "search", alg)]
            out.setdefault(code, {})[alg] = (c.instructions - base.instructions, c.states[alg], c.compiled)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="instructions per search state (valgrind), optionally against a revision")
    ap.add_argument("--apps", default="harris,max_filter", help="comma-separated apps at size small ('' for none)")
    ap.add_argument("--random", type=int, default=0, help="random 20-stage pipelines (default 0)")
    ap.add_argument("--seed", type=int, default=0, help="first random pipeline seed; also the search seed")
    ap.add_argument("--algorithms", default="beam,greedy")
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--model", default="analytical")
    ap.add_argument("--target", default="host")
    ap.add_argument("--before", metavar="REV", help="also count a git revision's code (a temporary worktree)")
    ap.add_argument("--worker", choices=("setup", "search"), help=argparse.SUPPRESS)
    ap.add_argument("--algorithm", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.apps = [x for x in a.apps.split(",") if x]
    a.algorithms = [x for x in a.algorithms.split(",") if x]
    if a.worker:
        return worker(a)
    if shutil.which("valgrind") is None:
        ap.error("valgrind not found: install it (apt install valgrind) to count instructions")
    if not a.apps and a.random < 1:
        ap.error("nothing to search: give --apps or --random")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import ab
    from search_speed import compile_both

    from ir.compiled import build
    from ir.hot import enabled

    print(f"apps {','.join(a.apps) or '-'} at size small, {a.random} random 20-stage pipelines from seed {a.seed}; "
          f"model {a.model}; beam {a.beam_size} x {a.passes} passes; PYTHONHASHSEED=0", flush=True)
    with (ab.revision_tree(a.before, ap.error) if a.before else contextlib.nullcontext(None)) as before:
        if before is not None:
            compile_both(before)
        elif enabled():
            build(quiet=True)
        trees = {"before": before, "after": ROOT} if before is not None else {"this tree": ROOT}
        counts = measure(trees, a)
    print(f"\n{'algorithm':10s} {'code':10s} {'states':>8s} {'instructions':>16s} {'per state':>12s} {'compiled':>9s}")
    for alg in a.algorithms:
        for code in trees:
            ins, states, compiled = counts[code][alg]
            print(f"{alg:10s} {code:10s} {states:8d} {ins:16,d} {ins / max(states, 1):12,.0f} {compiled:9d}")
        if before is not None:
            (b, sb, _), (f, sf, _) = counts["before"][alg], counts["after"][alg]
            same = "same states" if sb == sf else f"DIFFERENT states ({sb} vs {sf}): not the same work"
            print(f"{alg:10s} after executes {f / max(b, 1):.3f}x the instructions of before ({b / max(f, 1):.3f}x "
                  f"fewer); {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
