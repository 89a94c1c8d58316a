"""Two versions of the code side by side: a git revision checked out in a temporary worktree, and workers run in
fresh processes with one tree or the other first on their path, so each measures its own code with nothing
warmed by the other (benchmarks/codegen_ab.py; benchmarks/search_speed.py --before). And one cold child: a fresh
process with an empty kernel cache, bounded in time (benchmarks/compile_speed.py, halide_compile_tail.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def revision_tree(rev: str, error: Callable[[str], None]) -> Iterator[Path]:
    """A temporary worktree of git revision `rev` (removed afterwards); `error` is told a revision git refuses."""
    tmp = Path(tempfile.mkdtemp(prefix="schedlab_ab_"))
    tree = tmp / "before"
    r = subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=ROOT, capture_output=True,
                       text=True)
    try:
        if r.returncode != 0:
            error(f"--before {rev}: {(r.stderr.strip().splitlines() or ['git worktree add failed'])[-1]}")
        yield tree
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def run_worker(tree: Path, script: Path, args: list[str], what: str, env: dict[str, str] | None = None,
               launcher: list[str] | None = None) -> list[dict]:
    """`script --worker *args` run with `tree`'s packages first on the path (and `env` added to the environment), under
    `launcher` if given (a command that runs the Python process, e.g. valgrind with its options); the JSON of each
    line it prints as 'RESULT {...}'. A worker that prints none ends the benchmark with its stderr's tail, naming
    `what` it ran."""
    env = dict(os.environ, **(env or {}), PYTHONPATH=str(tree))
    r = subprocess.run([*(launcher or []), sys.executable, str(script), "--worker", *args], cwd=tree, env=env,
                       capture_output=True, text=True)
    results = [json.loads(x[7:]) for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    if not results:
        raise SystemExit(f"{script.stem}: {what} under {tree} failed:\n{r.stderr[-2000:]}")
    return results


@dataclass(frozen=True)
class ColdChild:
    """What a cold child process gave: `status` ok (with the last JSON object it printed), timeout or error (`error`:
    its exit status and its output's last line); `seconds` of wall time."""

    status: str
    seconds: float
    result: dict | None = None
    error: str = ""


def run_cold_child(script: Path | str, args: list[str], timeout: float) -> ColdChild:
    """`script --child *args` in a fresh process whose kernel caches (SCHEDLAB_CACHE_DIR, NUMBA_CACHE_DIR) are an
    empty temporary directory, so its compile finds nothing an earlier one left; killed after `timeout` seconds. Its
    result is the last stdout line that is a JSON object."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "SCHEDLAB_CACHE_DIR": cache, "NUMBA_CACHE_DIR": cache}
        t0 = time.perf_counter()
        try:
            r = subprocess.run([sys.executable, "-W", "ignore", str(script), "--child", *args], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return ColdChild("timeout", time.perf_counter() - t0)
        seconds = time.perf_counter() - t0
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode != 0 or not lines:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        return ColdChild("error", seconds, error=f"exit {r.returncode}: {tail[0]}")
    return ColdChild("ok", seconds, json.loads(lines[-1]))
