"""Where does search time go inside the compiled hot modules? A sampling profile of searches, by function.

cProfile sees a Cython build of a hot module (ir.hot) as one opaque call, so profiling search meant running it as pure
Python (SCHEDLAB_COMPILED=0), which is slower and spends its time differently. py-spy samples the native stacks
instead (`--native`), where a compiled function shows as its own frame: this runs the searches of
`benchmarks/search_speed.py` (same pipelines, algorithms and model) in a child process under `py-spy record`, keeps
the samples taken inside the search loop (`search._pass`: imports, model loading and pipeline features excluded),
and prints each function's share of them, inclusive (it or what it calls is running) and self (it is running), as
`module.function`. Shares are of samples, so they hold however fast the machine is; a share under ~0.5 % is noise.
Above ~200 samples a second py-spy's native unwinding slows the child many times over (the shares still hold).

    pip install py-spy                                                    # in the dev extra
    python benchmarks/profile_search.py --apps unsharp,harris --random 1 --algorithms beam --beam-size 8 --passes 2
    python benchmarks/profile_search.py --apps camera_pipe --random 0 --expand space._retiled --expand schedule.run
    python benchmarks/profile_search.py --raw /tmp/search.txt ...   # keep py-spy's raw stacks (flamegraph input)

`--expand F` adds what F's time is spent in: each function F calls directly, with its share of all samples.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_speed import ALGORITHMS, csv, pipelines  # noqa: E402

ROOT_FRAME = "search._pass"  # a search pass: what every search strategy's time is spent under
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^():]*)(?::\d+)?\)$")
_SOURCES = (".py", ".pyx", ".c")  # Python sources and the C files Cython generates for the hot modules


@dataclass
class SearchProfile:
    """Samples inside ROOT_FRAME, by function (`module.function`): inclusive and self counts, and which function
    each called directly."""

    samples: int = 0
    inclusive: Counter = field(default_factory=Counter)
    own: Counter = field(default_factory=Counter)
    calls: dict[str, Counter] = field(default_factory=dict)

    def share(self, count: int) -> float:
        return count / self.samples if self.samples else 0.0


def frames(stack: str) -> list[str]:
    """`module.function` of each frame of one py-spy raw stack, outermost first. A compiled function appears twice
    in a native stack (its Python wrapper and its C body, both in the module's .c file) and counts once; frames in
    C headers, CPython and libraries outside Python sources are dropped (their time is their caller's, as self)."""
    out: list[str] = []
    for f in stack.split(";"):
        m = _FRAME.match(f)
        if m is None:
            continue
        path = m.group("file")
        name = path.rsplit("/", 1)[-1]
        if not name.endswith(_SOURCES):
            continue
        module, func = name.rsplit(".", 1)[0], m.group("func")
        frame = f"{module}.{func}"
        if out and (out[-1] == frame or out[-1] == f"{module}.{func.removeprefix(module + '_')}"):
            continue  # the same function's second frame (a compiled module-level function's is <module>_<name>)
        out.append(frame)
    return out


def aggregate(lines, root: str = ROOT_FRAME) -> SearchProfile:
    """A SearchProfile of py-spy's raw output (`--format raw`: one `frame;frame;... count` line per distinct
    stack), over the samples whose stack passes through `root`."""
    prof = SearchProfile()
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, n = line.rpartition(" ")
        names = frames(stack)
        if root not in names:
            continue
        count = int(n)
        names = names[names.index(root):]
        prof.samples += count
        for f in set(names):
            prof.inclusive[f] += count
        prof.own[names[-1]] += count
        for caller, callee in zip(names, names[1:]):
            if caller != callee:
                prof.calls.setdefault(caller, Counter())[callee] += count
    return prof


def report(prof: SearchProfile, top: int, expand: list[str]) -> str:
    if not prof.samples:
        return f"no samples inside {ROOT_FRAME}: did the searches run (and py-spy see them)?"
    rows = [f"{prof.samples} samples inside {ROOT_FRAME}", "",
            f"{'inclusive':>9}  {'self':>6}  function (module.function; C files are the compiled hot modules)"]
    for f, n in prof.inclusive.most_common(top):
        rows.append(f"{100 * prof.share(n):8.1f}%  {100 * prof.share(prof.own[f]):5.1f}%  {f}")
    rows += ["", f"{'self':>9}  function"]
    for f, n in prof.own.most_common(top):
        rows.append(f"{100 * prof.share(n):8.1f}%  {f}")
    for f in expand:
        callees = prof.calls.get(f)
        rows += ["", f"{f}: {100 * prof.share(prof.inclusive[f]):.1f}% inclusive, of which"]
        if not callees:
            rows.append("  (no samples in a function it calls)" if prof.inclusive[f] else "  (no samples)")
            continue
        for g, n in callees.most_common(top):
            rows.append(f"{100 * prof.share(n):8.1f}%  {g}")
    return "\n".join(rows)


def worker(a) -> int:
    """The searches to sample, one after another in this process (what py-spy records)."""
    from featurize import cached_pipeline_features
    from ir.target import get_target
    from scheduler import autoschedule, load_model

    model = load_model(a.model, get_target(a.target))
    built = [(name, build()) for name, _, build in pipelines(a.apps, a.size, a.random, a.seed, a.random_stages)]
    for name, p in built:
        cached_pipeline_features(p.dag)
        for alg in a.algorithms:
            s = autoschedule(p, target=a.target, model=model, algorithm=alg, beam_size=a.beam_size,
                             passes=a.passes, seed=a.seed)
            print(f"{name} {alg}: {s.stats.states_evaluated} states in {s.stats.seconds:.2f} s", flush=True)
    from ir.hot import HOT_MODULES, compiled_modules

    print(f"hot modules run compiled: {len(compiled_modules())} of {len(HOT_MODULES)} (python -m ir.compiled build)")
    return 0


def py_spy() -> Path | None:
    """The py-spy executable: on the PATH or beside this Python (a virtual environment's bin); None if neither."""
    exe = Path(shutil.which("py-spy") or Path(sys.executable).with_name("py-spy"))
    return exe if exe.is_file() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="a sampling profile of searches inside the compiled hot modules")
    ap.add_argument("--apps", default="unsharp,harris,hist_eq,max_filter,iir_blur",
                    help="comma-separated apps (default the search-speed issue's small set); '' for none")
    ap.add_argument("--size", choices=("small", "full"), default="small")
    ap.add_argument("--random", type=int, default=1, help="random pipelines (default 1)")
    ap.add_argument("--random-stages", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--algorithms", type=csv, default=["beam"], help=f"of {', '.join(ALGORITHMS)} (default beam)")
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--model", default="analytical")
    ap.add_argument("--target", default="host")
    ap.add_argument("--rate", type=int, default=200, help="samples per second (default 200)")
    ap.add_argument("--top", type=int, default=40, help="functions per table (default 40)")
    ap.add_argument("--expand", action="append", default=[], metavar="FUNCTION",
                    help="also list what FUNCTION (module.function, as the tables name it) spends its time in")
    ap.add_argument("--raw", type=Path, help="keep py-spy's raw stacks here (default: a temporary file)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    for alg in a.algorithms:
        if alg not in ALGORITHMS:
            ap.error(f"unknown algorithm {alg!r}; choose from {', '.join(ALGORITHMS)}")
    if a.rate < 1 or a.top < 1:
        ap.error("--rate and --top take a positive number")
    from generator.apps import app_list

    try:
        a.apps = app_list(a.apps) if a.apps.strip() else []
    except ValueError as e:
        ap.error(f"--apps: {e}")
    if a.worker:
        return worker(a)

    exe = py_spy()
    if exe is None:
        raise SystemExit("profile_search: py-spy is not installed; pip install py-spy (the dev extra has it)")
    with tempfile.TemporaryDirectory(prefix="profile-search-") as tmp:
        raw = a.raw or Path(tmp) / "stacks.txt"
        child = [sys.executable, str(Path(__file__).resolve()), "--worker", "--apps", ",".join(a.apps),
                 "--size", a.size, "--random", str(a.random), "--random-stages", str(a.random_stages),
                 "--seed", str(a.seed), "--algorithms", ",".join(a.algorithms), "--beam-size", str(a.beam_size),
                 "--passes", str(a.passes), "--model", a.model, "--target", a.target]
        cmd = [str(exe), "record", "--native", "--rate", str(a.rate), "--format", "raw", "--output", str(raw), "--",
               *child]
        r = subprocess.run(cmd, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True)
        print(r.stdout.strip())
        if r.returncode != 0 or not raw.is_file():
            tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
            raise SystemExit(f"profile_search: py-spy record failed ({r.returncode}): {tail[0]}")
        with raw.open() as f:
            prof = aggregate(f)
    print(report(prof, a.top, a.expand))
    return 0


if __name__ == "__main__":
    sys.exit(main())
