"""A code generator's change, measured: the apps' LoopNests compiled by the code of a git revision and by the
working tree, timed side by side, with the rows whose generated code did not change marked as such.

Each app's naive, expert and beam LoopNests (beam 8 x 2 with the built-in model, searched once by the working
tree, seed 0) are compiled and timed in a fresh process per (app, code), the two codes alternating, `--reps`
times each (the minimum is kept); `--halide` adds a third process timing the same LoopNests under Halide. For
the llvm backend each row also says whether the stage functions' IR differs between the two codes: the rows
whose code is the same measure the machine's noise, which is the yardstick for the others. Runtimes are the
minimum of up to 5 runs in 3 s on full-size inputs.

    python benchmarks/codegen_ab.py --before HEAD~1 --apps camera_pipe,local_laplacian   # ~3 minutes here
    python benchmarks/codegen_ab.py --before HEAD~1 --apps all --halide                  # ~20 minutes here
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import pickle
import sys
import tempfile
import time
from pathlib import Path

import ab

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("naive", "expert", "beam")


def loopnests(app_name: str, kinds: list[str], beams: Path):
    from generator.apps import get_app
    from ir.builder import naive_schedule

    app = get_app(app_name)
    p = app.build("full")
    for kind in kinds:
        if kind == "naive":
            yield p, kind, naive_schedule(p)
        elif kind == "expert" and app.schedule is not None:
            yield p, kind, app.schedule(p, "host")
        elif kind == "beam":
            yield p, kind, pickle.loads((beams / f"{app_name}.pkl").read_bytes())


def code_digest(p, ln, backend: str) -> str:
    """The llvm stage functions' IR (module helpers left out), hashed; '' for other backends."""
    if backend != "llvm":
        return ""
    from backends.llvm.irgen import generate
    from ir.plan import Plan

    text = generate(Plan(p.dag, ln, "host")).ir
    stages = [f for f in text.split("\ndefine ") if "@\"sl_" not in f.split("\n")[0] and "@sl_" not in f.split("\n")[0]]
    return hashlib.sha256("\n".join(stages).encode()).hexdigest()[:16]


def worker(app_name: str, kinds: list[str], backend: str, beams: Path) -> None:
    """Runs with the code under test first on sys.path: times each LoopNest, prints one JSON line."""
    import numpy as np

    from backends.base import get_backend

    out = {}
    for p, kind, ln in loopnests(app_name, kinds, beams):
        inputs = {k: np.asfortranarray(v) for k, v in p.random_inputs(0).items()}
        k = get_backend(backend).build(p, ln, "host", isolate=False)
        ins, outs = k.bind_inputs((), inputs), k.allocate_outputs()
        k.run(ins, outs)
        ts: list[float] = []
        t_all = time.perf_counter()
        while len(ts) < 5 and (len(ts) < 2 or time.perf_counter() - t_all < 3.0):
            t = time.perf_counter()
            k.run(ins, outs)
            ts.append(time.perf_counter() - t)
        out[kind] = {"seconds": min(ts), "code": code_digest(p, ln, backend)}
    print("RESULT " + json.dumps(out), flush=True)


def search_beams(apps: list[str], beams: Path) -> None:
    from generator.apps import get_app
    from scheduler import autoschedule, load_model

    model = load_model("builtin", "host")
    for i, a in enumerate(apps, 1):
        t = time.perf_counter()
        s = autoschedule(get_app(a).build("full"), model=model, algorithm="beam", beam_size=8, passes=2, seed=0)
        (beams / f"{a}.pkl").write_bytes(pickle.dumps(s.loopnest))
        print(f"[{i}/{len(apps)}] {a}: beam searched in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)


def run_worker(tree: Path, app: str, kinds: list[str], backend: str, beams: Path) -> dict:
    return ab.run_worker(tree, Path(__file__).resolve(), [app, "--kinds", ",".join(kinds), "--backend", backend,
                                                          "--beams", str(beams)], app)[0]


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main(argv=None) -> int:
    from generator.apps import app_list

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="HEAD", help="git revision of the code to compare with (default HEAD)")
    ap.add_argument("--apps", default="all", help="comma-separated apps, or all")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated of naive, expert, beam")
    ap.add_argument("--backend", default="llvm")
    ap.add_argument("--reps", type=int, default=1, help="processes per (app, code), alternating; the minimum is kept")
    ap.add_argument("--halide", action="store_true", help="also time the working tree's LoopNests under Halide")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--beams", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    kinds = [k for k in a.kinds.split(",") if k]
    if a.worker:
        worker(a.worker, kinds, a.backend, Path(a.beams))
        return 0
    try:
        apps = app_list(a.apps)
    except ValueError as e:
        ap.error(f"--apps: {e}")
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        ap.error(f"unknown kind {bad[0]!r}; kinds: {', '.join(KINDS)}")
    with ab.revision_tree(a.before, ap.error) as before, tempfile.TemporaryDirectory(prefix="codegen_ab_") as tmp:
        beams = Path(tmp) / "beams"
        beams.mkdir()
        if "beam" in kinds:
            search_beams(apps, beams)
        report(apps, kinds, a, before, beams)
    return 0


def report(apps: list[str], kinds: list[str], a, before: Path, beams: Path) -> None:
    print(f"{a.backend}: the code of {a.before} (before) and of the working tree (after), the same LoopNests, "
          f"{a.reps} process(es) each, alternating\n")
    print(f"{'app':26s} {'schedule':8s} {'before':>10s} {'after':>10s} {'speedup':>8s} {'code':>9s}"
          + (f" {'Halide':>10s} {'after/hl':>9s}" if a.halide else ""))
    ratios: dict[str, list[float]] = {"changed": [], "same": []}
    vs_halide: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}
    for app in apps:
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for _ in range(a.reps):
            runs["before"].append(run_worker(before, app, kinds, a.backend, beams))
            runs["after"].append(run_worker(ROOT, app, kinds, a.backend, beams))
        hl = run_worker(ROOT, app, kinds, "halide", beams) if a.halide else {}
        for kind in runs["after"][0]:
            b = min(r[kind]["seconds"] for r in runs["before"])
            t = min(r[kind]["seconds"] for r in runs["after"])
            code = "same" if runs["before"][0][kind]["code"] == runs["after"][0][kind]["code"] else "changed"
            if a.backend != "llvm":
                code = "?"
            else:
                ratios[code].append(b / t)
            line = f"{app:26s} {kind:8s} {b * 1e3:8.2f}ms {t * 1e3:8.2f}ms {b / t:7.2f}x {code:>9s}"
            if kind in hl:
                h = hl[kind]["seconds"]
                vs_halide[kind].append((b / h, t / h))
                line += f" {h * 1e3:8.2f}ms {t / h:9.2f}"
            print(line, flush=True)
    print()
    for code, rs in ratios.items():
        if rs:
            print(f"{code:8s} code: {len(rs)} rows, speedup after over before geomean {geomean(rs):.3f}x "
                  f"(range {min(rs):.2f}-{max(rs):.2f})")
    for kind, pairs in vs_halide.items():
        if pairs:
            print(f"runtime {a.backend} / Halide, {kind}: before {geomean([p[0] for p in pairs]):.2f}, "
                  f"after {geomean([p[1] for p in pairs]):.2f} ({len(pairs)} apps)")


if __name__ == "__main__":
    if "--worker" not in sys.argv:  # a worker imports the code under test, first on its PYTHONPATH
        sys.path.insert(0, str(ROOT))
    sys.exit(main())
