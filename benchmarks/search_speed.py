"""How fast is search? States evaluated, seconds and microseconds per state, and where the time goes.

For each app of the suite and for 20-stage random pipelines, each algorithm (greedy; beam 32 with 5
coarse-to-fine passes; optionally hierarchical) is run with one cost model, and `Schedule.stats` gives the
states evaluated (children scored by the model), the search's wall time, and its split into
  * enumerate: placing candidate decisions in the LoopNest and planning them (bounds, Plan.extend),
  * featurize: schedule features of each child, incrementally from its parent's,
  * model: the cost model's batched scoring,
  * other: the rest of the search loop (selection, structural hashes, coarse-to-fine penalties, states).
Halide's C++ autoscheduler evaluates ~9 us per state (1.47 M states in 166 s, beam 32, adams2019 §6.4);
the summary gives schedlab's overall us/state per algorithm, its ratio to that, and which part dominates.
All algorithms run side by side in one process on the same pipelines; pipeline features (computed once
per pipeline) and the model's loading are paid before the searches and not counted.

    python benchmarks/search_speed.py --apps blur,unsharp --random 1 --algorithms greedy   # smoke, < 1 min
    python benchmarks/search_speed.py --apps unsharp,harris,hist_eq,max_filter,iir_blur --random 1 \\
        --beam-size 8 --passes 2                                                            # ~1 minute
    python benchmarks/search_speed.py                                                       # the full run
    python benchmarks/search_speed.py --apps unsharp,harris --random 0 --algorithms beam --vs-halide
                                                          # beam 32 x 5 next to Halide's Adams2019 search time
    python benchmarks/search_speed.py --apps unsharp,harris,hist_eq,max_filter,iir_blur --random 1 \
        --algorithms beam,hierarchical --replay-ab        # with and without remembered states, side by side
    python benchmarks/search_speed.py --apps unsharp,harris,hist_eq,max_filter,iir_blur --random 1 \
        --beam-size 8 --passes 2 --derivation-ab          # incremental vs from-scratch derivation, side by side
    python benchmarks/search_speed.py --apps unsharp,harris,hist_eq,max_filter,iir_blur --random 1 \
        --beam-size 8 --passes 2 --before HEAD~3 --reps 2  # a git revision's code vs the working tree's, side by side
    python benchmarks/search_speed.py --apps unsharp,harris,hist_eq,max_filter,iir_blur --random 1 \
        --beam-size 8 --passes 2 --compiled-ab --reps 2   # the hot modules as pure Python vs their Cython builds

How long a run takes (apps at size small, analytical model, this 2-core machine, 2026-11-27: ~0.5-0.6 ms
per state on the small apps, ~1.3 ms on the big ones): the smoke run above ~2 s; the beam-8 x 2-pass run
~5 s of search (7.7 k states); the big apps (local_laplacian, lens_blur, camera_pipe, stencil_chain,
interpolate at 24-41 Funcs) at beam 8 x 2 ~40 s (32 k states). Beam 32 x 5 passes evaluates ~70-125x the
states of greedy on the same pipeline, so the full default, greedy and beam over everything, is ~300 k
states: roughly 10-20 minutes, dominated by the big apps. --derivation-ab adds the from-scratch runs, 2.5-4x
slower. Size a run with --apps / --random / --beam-size / --passes. "random20" pipelines are
generated with max_stages=20; stages the output does not reach are dropped, so they have fewer Funcs.
Times are single runs on a shared machine: read the ratios and the split, not the last digit.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import multiprocessing
import os
import sys
import time
import traceback
from pathlib import Path

if "--worker" not in sys.argv:  # a --before worker imports the code under test, first on its PYTHONPATH
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from featurize import cached_pipeline_features
from generator.apps import app_list, get_app
from generator.random_pipeline import generate
from ir.hot import compiled_modules, pure_modules
from ir.target import get_target
from scheduler import autoschedule, load_model

REFERENCE_US = 9.0  # Halide C++: 1.47 M states in 166 s (adams2019 §6.4)
ALGORITHMS = ("greedy", "beam", "hierarchical")
PARTS = ("enumerate", "featurize", "model", "other")


def csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def pipelines(apps: list[str], size: str, random_n: int, seed: int, stages: int):
    """(name, group, pipeline-builder) for each app, then each random pipeline; built lazily."""
    for name in apps:
        yield name, "apps", (lambda n=name: get_app(n).build(size))
    for s in range(seed, seed + random_n):
        yield f"random{stages} s{s}", f"random{stages}", (lambda s=s: generate(s, max_stages=stages).pipeline)


def split(stats) -> dict[str, float]:
    """Seconds per part; 'other' is what the search loop spends outside the three timed parts."""
    parts = {"enumerate": stats.enumerate_s, "featurize": stats.featurize_s, "model": stats.model_s}
    parts["other"] = max(0.0, stats.seconds - sum(parts.values()))
    return parts


def pct(parts: dict[str, float], total: float) -> str:
    return " ".join(f"{100 * parts[k] / total if total > 0 else 0.0:6.1f}%" for k in PARTS)


def dominant(parts: dict[str, float]) -> list[str]:
    """The part that dominates, with the runner-up when it is within 20% of it (no clear winner)."""
    first, second = sorted(PARTS, key=parts.get, reverse=True)[:2]
    return [first, second] if parts[second] >= parts[first] / 1.2 else [first]


def adams2019_seconds(pipeline, beam_size: int) -> float:
    """Seconds Halide's Adams2019 searched `pipeline` (its own default passes, beam `beam_size`, its default
    weights), timed inside the worker around apply_autoscheduler: search only, no compile."""
    from backends.halide.autoschedule import autoschedule as halide_autoschedule

    return halide_autoschedule(pipeline, "Adams2019", params={"beam_size": str(beam_size)}).search_seconds


def print_vs_halide(rows: list[dict], halide_s: dict[str, float], beam_desc: str) -> None:
    """schedlab's beam wall-clock next to Adams2019's on each pipeline, and the geomean of the ratio."""
    print(f"\nsearch wall-clock per pipeline: schedlab {beam_desc} vs Halide Adams2019 (C++, the same beam size, "
          "its own passes: 5 when the beam is wider than 1)\n")
    print(f"{'pipeline':24s} {'schedlab s':>11s} {'Adams2019 s':>12s} {'schedlab / Adams2019':>21s}")
    ratios = []
    for r in rows:
        if r["alg"] != "beam" or r["name"] not in halide_s:
            continue
        h = halide_s[r["name"]]
        ratio = r["seconds"] / h if h > 0 else float("inf")
        ratios.append(ratio)
        print(f"{r['name']:24s} {r['seconds']:11.2f} {h:12.2f} {ratio:20.1f}x")
    if ratios:
        g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"geomean schedlab beam / Adams2019 search time: {g:.1f}x over {len(ratios)} pipelines "
              f"({'schedlab faster' if g < 1 else 'Adams2019 faster'})")
    else:
        print("(no beam rows to compare: add beam to --algorithms)")


def rerun(p, a, model, alg: str, reference, what: str, patch: tuple | None = None, **kw):
    """The same search again, with `patch` (module, attribute, value) set while it runs and `kw` passed to
    autoschedule; its Schedule. Another schedule or state count than `reference`'s is an error saying `what`."""
    if patch is not None:
        module, name, value = patch
        keep = getattr(module, name)
        setattr(module, name, value)
    try:
        s = autoschedule(p, target=a.target, model=model, algorithm=alg, beam_size=a.beam_size, passes=a.passes,
                         seed=a.seed, **kw)
    finally:
        if patch is not None:
            setattr(module, name, keep)
    if s.loopnest.fingerprint != reference.loopnest.fingerprint or \
            s.stats.states_evaluated != reference.stats.states_evaluated:
        raise AssertionError(f"{alg} on {p.name}: {what}")
    return s


def without_replay(p, a, model, alg: str, with_replay) -> float:
    """The same search with the space remembering nothing; its seconds (a different schedule is an error)."""
    import scheduler.space as space

    return rerun(p, a, model, alg, with_replay, "remembering states changed the search's result",
                 patch=(space, "REPLAY_LIMIT", 0)).stats.seconds


def fresh_derivation(p, a, model, alg: str, incremental) -> tuple[float, dict[str, float]]:
    """The same search with every child planned and featurized from scratch (derivation="fresh", the reference
    of the incremental path); its seconds and split (a different schedule is an error)."""
    s = rerun(p, a, model, alg, incremental, "the fresh derivation found another schedule than the incremental",
              derivation="fresh")
    return s.stats.seconds, split(s.stats)


def torch_threads(p, a, model, alg: str, single) -> tuple[float, float]:
    """The same search with the model scoring on torch's own intra-op threads (scheduler.cost.threads off); its
    seconds and model seconds (a different schedule is an error)."""
    import scheduler.cost.threads as threads

    s = rerun(p, a, model, alg, single, "the scoring threads changed the search's result",
              patch=(threads, "SINGLE_THREAD_ROWS", 0))
    return s.stats.seconds, s.stats.model_s


def print_threads_ab(rows: list[dict], algorithms: list[str], torch_n: int) -> None:
    """Per algorithm: search and model seconds scoring on torch's threads vs on one, same schedules."""
    print(f"\nscoring threads, the same searches side by side, same schedules (torch's own: {torch_n}; "
          "scheduler.cost.threads: 1):")
    for alg in algorithms:
        sel = [r for r in rows if r["alg"] == alg and "torch_threads" in r]
        if not sel:
            continue
        states = max(1, sum(r["states"] for r in sel))
        many, one = sum(r["torch_threads"] for r in sel), sum(r["seconds"] for r in sel)
        m_many, m_one = sum(r["torch_threads_model"] for r in sel), sum(r["parts"]["model"] for r in sel)
        print(f"  {alg:12s} {len(sel):3d} runs: model {m_many:.2f} s -> {m_one:.2f} s "
              f"({m_many / max(m_one, 1e-9):.2f}x); whole search {1e6 * many / states:.0f} -> "
              f"{1e6 * one / states:.0f} us/state")
    print("  (the torch-threads run of each pair goes second and reuses the first's per-pipeline memos: its enumerate "
          "and featurize are cheaper, so compare the model seconds)")


def busy_loop() -> None:  # pragma: no cover - a child process spinning until it is terminated
    while True:
        pass


def print_derivation_ab(rows: list[dict], algorithms: list[str]) -> None:
    """Per algorithm: us/state deriving every child from scratch vs incrementally from its parent, same schedules."""
    print("\nderivation of a child's plan and features, the same searches side by side, same schedules:")
    for alg in algorithms:
        sel = [r for r in rows if r["alg"] == alg and "fresh" in r]
        if not sel:
            continue
        states = max(1, sum(r["states"] for r in sel))
        slow, fast = sum(r["fresh"] for r in sel), sum(r["seconds"] for r in sel)
        parts = {k: sum(r["fresh_parts"][k] for r in sel) for k in PARTS}
        print(f"  {alg:12s} {len(sel):3d} runs: fresh {1e6 * slow / states:.0f} us/state ({pct(parts, slow).strip()}) "
              f"-> incremental {1e6 * fast / states:.0f} us/state: {slow / fast:.2f}x faster")


def print_replay_ab(rows: list[dict], algorithms: list[str]) -> None:
    """Per algorithm: search seconds without and with the remembered states, side by side (same schedules)."""
    print("\nremembered states (scheduler.space._Replays), the same searches side by side, same schedules:")
    for alg in algorithms:
        sel = [r for r in rows if r["alg"] == alg and "without_replay" in r]
        if not sel:
            continue
        off, on = sum(r["without_replay"] for r in sel), sum(r["seconds"] for r in sel)
        states = sum(r["states"] for r in sel)
        ratios = [r["without_replay"] / r["seconds"] for r in sel if r["seconds"] > 0]
        g = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else math.nan
        print(f"  {alg:12s} {len(sel):3d} runs: {off:8.2f} s -> {on:8.2f} s ({off / on:.2f}x; geomean per run {g:.2f}x); "
              f"{1e6 * off / max(1, states):.0f} -> {1e6 * on / max(1, states):.0f} us/state")


def warm_up(model, target: str) -> None:
    """One tiny search so imports and lazy initialisation are not charged to the first row."""
    p = get_app("blur").build("small")
    autoschedule(p, target=target, model=model, algorithm="greedy")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="search speed: states, seconds and us/state, and where they go")
    ap.add_argument("--apps", default="all", help="comma-separated apps, or all (the default); '' for none")
    ap.add_argument("--size", choices=("small", "full"), default="small", help="app size (default small)")
    ap.add_argument("--random", type=int, default=3, help="random pipelines (default 3)")
    ap.add_argument("--random-stages", type=int, default=20, help="max_stages of the random pipelines")
    ap.add_argument("--seed", type=int, default=0, help="first random pipeline seed; also the search seed")
    ap.add_argument("--algorithms", type=csv, default=["greedy", "beam"],
                    help=f"comma-separated, of {', '.join(ALGORITHMS)} (default greedy,beam)")
    ap.add_argument("--beam-size", type=int, default=32)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--model", default="analytical", help="analytical | random[:seed] | a model URI or checkpoint")
    ap.add_argument("--target", default="host")
    ap.add_argument("--replay-ab", action="store_true",
                    help="also run every search again with the space remembering nothing (scheduler.space."
                         "REPLAY_LIMIT = 0), check it returns the same schedule, and print both times side by side")
    ap.add_argument("--derivation-ab", action="store_true",
                    help="also run every search with each child planned and featurized from scratch (derivation="
                         "fresh), check it returns the same schedule, and print both us/state side by side")
    ap.add_argument("--threads-ab", action="store_true",
                    help="also run every search with the model scoring on torch's own intra-op threads instead of "
                         "one (scheduler.cost.threads), check it returns the same schedule, print both side by side")
    ap.add_argument("--busy", type=int, default=0,
                    help="processes spinning beside the searches (as compiles run beside the data job's planning)")
    ap.add_argument("--vs-halide", action="store_true",
                    help="also run Halide's Adams2019 (beam --beam-size) on every pipeline and compare search times")
    ap.add_argument("--before", metavar="REV",
                    help="time every search under git revision REV's code and the working tree's instead, each "
                         "pipeline in fresh processes alternating between the two, and print both side by side")
    ap.add_argument("--compiled-ab", action="store_true",
                    help="time every search with the hot modules as pure Python (SCHEDLAB_COMPILED=0) and as their "
                         "Cython builds (ir.hot; built first if stale), in fresh processes alternating, side by side")
    ap.add_argument("--reps", type=int, default=1,
                    help="with --before or --compiled-ab: processes per pipeline and code (fastest kept)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:  # '' (random pipelines only, or the --before worker of such a run) names no app
        a.apps = app_list(a.apps) if a.apps.strip() else []
    except ValueError as e:
        ap.error(f"--apps: {e}")
    for alg in a.algorithms:
        if alg not in ALGORITHMS:
            ap.error(f"unknown algorithm {alg!r}; choose from {', '.join(ALGORITHMS)}")

    if a.reps < 1:
        ap.error(f"--reps {a.reps}: give at least 1")
    if a.before and a.compiled_ab:
        ap.error("--before and --compiled-ab each compare two codes; give one of them")
    if (a.before or a.compiled_ab) and (a.replay_ab or a.derivation_ab or a.threads_ab or a.vs_halide or a.busy):
        ap.error("--before and --compiled-ab compare two codes; run --replay-ab, --derivation-ab, --threads-ab, "
                 "--vs-halide and --busy without them")
    if a.worker:
        return worker(a)
    if a.before or a.compiled_ab:
        return before_after(a, ap.error)
    model = load_model(a.model, get_target(a.target))  # loaded once, shared by every search
    warm_up(model, a.target)
    spinners = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(a.busy)]
    for sp in spinners:
        sp.start()
    try:
        return run(a, model)
    finally:
        for sp in spinners:
            sp.terminate()


def worker_args(a, pipeline: str) -> list[str]:
    """The command line of a --before worker searching `pipeline`, one of the names pipelines() gives."""
    return [pipeline, "--apps", ",".join(a.apps), "--random", str(a.random), "--random-stages", str(a.random_stages),
            "--algorithms", ",".join(a.algorithms), "--beam-size", str(a.beam_size), "--passes", str(a.passes),
            "--model", a.model, "--target", a.target, "--size", a.size, "--seed", str(a.seed)]


def worker(a) -> int:
    """A --before worker: the searches of one pipeline under this process's code, one RESULT line each."""
    import json

    p = next(build for name, _, build in pipelines(a.apps, a.size, a.random, a.seed, a.random_stages)
             if name == a.worker)()
    model = load_model(a.model, get_target(a.target))
    warm_up(model, a.target)
    cached_pipeline_features(p.dag)
    for alg in a.algorithms:
        s = autoschedule(p, target=a.target, model=model, algorithm=alg, beam_size=a.beam_size, passes=a.passes,
                         seed=a.seed)
        print("RESULT " + json.dumps({"alg": alg, "states": s.stats.states_evaluated, "seconds": s.stats.seconds,
                                      "parts": split(s.stats), "schedule": s.loopnest.fingerprint,
                                      "cost": s.predicted_cost, "compiled": len(compiled_modules()),
                                      "pure": len(pure_modules())}), flush=True)
    return 0


def before_after(a, error) -> int:
    """Every search under REV's code and the working tree's, in fresh processes alternating per pipeline (which
    goes first alternates too); the fastest of --reps kept. A search whose schedule or state count differs between
    the two is marked: then the two codes did not do the same work."""
    import ab

    script = Path(__file__).resolve()
    names = [name for name, _, _ in pipelines(a.apps, a.size, a.random, a.seed, a.random_stages)]
    print(f"model: {a.model}; target: {a.target}; apps at size {a.size}; {a.random} random {a.random_stages}-stage "
          f"pipelines from seed {a.seed}; beam/hierarchical: beam {a.beam_size} x {a.passes} passes")
    if a.compiled_ab:
        from ir.compiled import build

        build(quiet=True)  # the working tree's sources, compiled if they are not yet
        print(f"before: the working tree as pure Python (SCHEDLAB_COMPILED=0); after: the same with its hot modules' "
              f"Cython builds (ir.hot); {a.reps} process(es) per pipeline and code, alternating, the fastest kept")
    else:
        print(f"before: the code of {a.before}; after: the working tree; {a.reps} process(es) per pipeline and code, "
              "alternating, the fastest kept")
    print()
    header = (f"{'pipeline':24s} {'algorithm':12s} {'states':>9s} {'before us':>10s} {'after us':>9s} "
              f"{'speedup':>8s}  same result")
    print(header)
    print("-" * len(header))
    rows: list[dict] = []
    with (contextlib.nullcontext(ab.ROOT) if a.compiled_ab else ab.revision_tree(a.before, error)) as before:
        envs = {"before": {"SCHEDLAB_COMPILED": "0"} if a.compiled_ab else {}, "after": {}}  # workers inherit the rest
        if not a.compiled_ab:
            compile_both(before)
        for i, name in enumerate(names, 1):
            runs: dict[str, list[list[dict]]] = {"before": [], "after": []}
            for rep in range(a.reps):
                order = [("before", before), ("after", ab.ROOT)]
                for side, tree in order if rep % 2 == 0 else order[::-1]:
                    print(f"[{i}/{len(names)}] {name}: {side} ({rep + 1}/{a.reps}) ...", file=sys.stderr, flush=True)
                    runs[side].append(ab.run_worker(tree, script, worker_args(a, name), name, envs[side]))
            if a.compiled_ab and ({r[0]["compiled"] for r in runs["before"]} != {0}
                                  or {r[0]["pure"] for r in runs["after"]} != {0}):
                raise SystemExit("search_speed: --compiled-ab's pure side ran compiled modules, or its compiled side "
                                 "pure ones: see python -m ir.compiled status")
            if i == 1:  # what each side measured (a revision before ir/hot.py reports nothing: all pure Python)
                modules = "; ".join(f"{side} {rs[0][0].get('compiled', 0)} compiled, {rs[0][0].get('pure', 'all')} pure"
                                    for side, rs in runs.items())
            for k, alg in enumerate(a.algorithms):
                b = min((r[k] for r in runs["before"]), key=lambda r: r["seconds"])
                t = min((r[k] for r in runs["after"]), key=lambda r: r["seconds"])
                same = b["schedule"] == t["schedule"] and b["states"] == t["states"]
                rows.append({"name": name, "alg": alg, "before": b, "after": t, "same": same})
                us_b = 1e6 * b["seconds"] / max(1, b["states"])
                us_t = 1e6 * t["seconds"] / max(1, t["states"])
                print(f"{name:24s} {alg:12s} {t['states']:9d} {us_b:10.0f} {us_t:9.0f} {us_b / us_t:7.2f}x  "
                      + ("yes" if same else f"NO (states {b['states']} -> {t['states']}, schedule "
                                            f"{'same' if b['schedule'] == t['schedule'] else 'other'})"), flush=True)
    print("-" * len(header))
    print(f"hot modules (ir.hot): {modules}")
    print("\nsummary: us/state over all pipelines (seconds / states), and the split of the time\n")
    for alg in a.algorithms:
        sel = [r for r in rows if r["alg"] == alg]
        us = {}
        for side in ("before", "after"):
            secs = sum(r[side]["seconds"] for r in sel)
            states = max(1, sum(r[side]["states"] for r in sel))
            parts = {k: sum(r[side]["parts"][k] for r in sel) for k in PARTS}
            us[side] = 1e6 * secs / states
            print(f"{alg:12s} {side:6s} {us[side]:7.0f} us/state ({us[side] / REFERENCE_US:.0f}x the C++ reference) "
                  f"split {' / '.join(PARTS)}: {pct(parts, secs).strip()}")
        ratios = [(r["before"]["seconds"] / r["before"]["states"]) / (r["after"]["seconds"] / r["after"]["states"])
                  for r in sel if r["before"]["states"] and r["after"]["states"]]
        g = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else math.nan
        print(f"{alg:12s} after is {us['before'] / us['after']:.2f}x faster per state (geomean per pipeline {g:.2f}x)")
    differ = [r for r in rows if not r["same"]]
    if differ:
        print(f"\n{len(differ)} search(es) did different work under the two codes: "
              + ", ".join(f"{r['name']} {r['alg']}" for r in differ))
    else:
        print("\nevery search found the same schedule over the same number of states under both codes")
    return 0


def compile_both(before: Path) -> None:
    """With --before, both codes run their hot modules the same way: this tree's builds, and the revision's too where
    it has them (ir/compiled.py), unless SCHEDLAB_COMPILED=0 makes both pure Python."""
    import subprocess

    from ir.compiled import build
    from ir.hot import enabled

    if not enabled():
        return
    build(quiet=True)
    if (before / "ir" / "compiled.py").is_file():
        subprocess.run([sys.executable, "-m", "ir.compiled", "build"], cwd=before, check=True, capture_output=True,
                       env=dict(os.environ, PYTHONPATH=str(before)))


def run(a, model) -> int:
    beam_desc = f"beam {a.beam_size} x {a.passes} passes"
    print(f"model: {model.name}; target: {a.target}; apps at size {a.size}; "
          f"{a.random} random {a.random_stages}-stage pipelines from seed {a.seed}; beam/hierarchical: {beam_desc}"
          + (f"; {a.busy} busy process(es) beside" if a.busy else ""))
    pure = pure_modules()
    print(f"hot modules (ir.hot): {len(compiled_modules())} compiled, {len(pure)} pure Python"
          + (f" ({', '.join(pure)}; python -m ir.compiled status says why)" if pure else ""))
    print("split: enumerate (place + plan) / featurize / model / other (rest of the search loop)\n")
    header = (f"{'pipeline':24s} {'funcs':>5s} {'stages':>6s} {'algorithm':12s} {'states':>9s} {'seconds':>9s} "
              f"{'us/state':>9s} {'enum':>7s} {'feat':>7s} {'model':>7s} {'other':>7s}")
    print(header)
    print("-" * len(header))

    rows, errors = [], []
    pipe_feat_s = 0.0
    halide_s: dict[str, float] = {}
    todo = list(pipelines(a.apps, a.size, a.random, a.seed, a.random_stages))
    for i, (name, group, build) in enumerate(todo, 1):
        try:
            p = build()
        except Exception as e:  # noqa: BLE001 - report and go on: one broken pipeline should not end the run
            errors.append((name, "build", f"{type(e).__name__}: {e}"))
            print(f"{name:24s} build failed: {type(e).__name__}: {e}", flush=True)
            continue
        funcs = len(p.dag.nodes)
        stages = sum(len(node.stages) for node in p.dag.nodes)
        t = time.perf_counter()
        cached_pipeline_features(p.dag)
        pipe_feat_s += time.perf_counter() - t
        done = []
        for alg in a.algorithms:
            print(f"[{i}/{len(todo)}] {name} ({stages} stages): {alg} ...", file=sys.stderr, flush=True)
            try:
                s = autoschedule(p, target=a.target, model=model, algorithm=alg, beam_size=a.beam_size,
                                 passes=a.passes, seed=a.seed)
            except Exception as e:  # noqa: BLE001
                errors.append((name, alg, f"{type(e).__name__}: {e}"))
                print(f"{name:24s} {funcs:5d} {stages:6d} {alg:12s} failed: {type(e).__name__}: {e}", flush=True)
                traceback.print_exc(file=sys.stderr)
                continue
            st = s.stats
            parts = split(st)
            rows.append({"name": name, "group": group, "alg": alg, "states": st.states_evaluated,
                         "seconds": st.seconds, "parts": parts})
            done.append(f"{alg} {st.seconds:.1f} s")
            if a.replay_ab:
                rows[-1]["without_replay"] = without_replay(p, a, model, alg, s)
            if a.derivation_ab:
                rows[-1]["fresh"], rows[-1]["fresh_parts"] = fresh_derivation(p, a, model, alg, s)
            if a.threads_ab:
                rows[-1]["torch_threads"], rows[-1]["torch_threads_model"] = torch_threads(p, a, model, alg, s)
            print(f"{name:24s} {funcs:5d} {stages:6d} {alg:12s} {st.states_evaluated:9d} {st.seconds:9.2f} "
                  f"{st.us_per_state:9.0f} {pct(parts, st.seconds)}", flush=True)
        if a.vs_halide:
            try:
                halide_s[name] = adams2019_seconds(p, a.beam_size)
                done.append(f"Adams2019 {halide_s[name]:.1f} s")
            except Exception as e:  # noqa: BLE001
                errors.append((name, "Adams2019", f"{type(e).__name__}: {e}"))
        print(f"[{i}/{len(todo)}] {name}: {', '.join(done) or 'no search finished'}", file=sys.stderr, flush=True)
    print("-" * len(header))
    if not rows:
        print("no search finished")
        return 1

    print(f"\nsummary (C++ reference: {REFERENCE_US:.0f} us/state, adams2019 §6.4)\n")
    sh = (f"{'algorithm':12s} {'pipelines':14s} {'runs':>4s} {'states':>9s} {'seconds':>9s} {'us/state':>9s} "
          f"{'vs C++':>8s} {'enum':>7s} {'feat':>7s} {'model':>7s} {'other':>7s}  dominant")
    print(sh)
    print("-" * len(sh))
    groups = list(dict.fromkeys(r["group"] for r in rows))
    overall = {}
    for alg in a.algorithms:
        for group in groups + (["all"] if len(groups) > 1 else []):
            sel = [r for r in rows if r["alg"] == alg and (group == "all" or r["group"] == group)]
            if not sel:
                continue
            states = sum(r["states"] for r in sel)
            secs = sum(r["seconds"] for r in sel)
            parts = {k: sum(r["parts"][k] for r in sel) for k in PARTS}
            us = 1e6 * secs / max(1, states)
            dom = dominant(parts)
            if group == "all" or len(groups) == 1:
                overall[alg] = (us, dom, parts, secs)
            print(f"{alg:12s} {group:14s} {len(sel):4d} {states:9d} {secs:9.2f} {us:9.0f} "
                  f"{us / REFERENCE_US:7.0f}x {pct(parts, secs)}  {' ~ '.join(dom)}")
    print("-" * len(sh))
    for alg, (us, dom, parts, secs) in overall.items():
        share = {k: 100 * parts[k] / secs if secs > 0 else 0.0 for k in PARTS}
        what = (f"{dom[0]} dominates ({share[dom[0]]:.0f}% of search time)" if len(dom) == 1 else
                f"{dom[0]} and {dom[1]} share it ({share[dom[0]]:.0f}% / {share[dom[1]]:.0f}% of search time)")
        rest = ", ".join(f"{k} {share[k]:.0f}%" for k in PARTS if k not in dom)
        print(f"{alg}: {us:.0f} us/state overall, {us / REFERENCE_US:.0f}x the C++ reference's {REFERENCE_US:.0f} us; "
              f"{what}; {rest}")
    print(f"(pipeline features, once per pipeline before the searches: {pipe_feat_s:.2f} s in all, not counted)")
    if a.replay_ab:
        print_replay_ab(rows, a.algorithms)
    if a.derivation_ab:
        print_derivation_ab(rows, a.algorithms)
    if a.threads_ab:
        import torch

        print_threads_ab(rows, a.algorithms, torch.get_num_threads())
    if halide_s:
        print_vs_halide(rows, halide_s, beam_desc)
    if errors:
        print(f"\n{len(errors)} failure(s):")
        for name, what, msg in errors:
            print(f"  {name} {what}: {msg}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
