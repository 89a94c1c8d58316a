"""Two versions of the code side by side: a git revision checked out in a temporary worktree, and workers run in
fresh processes with one tree or the other first on their path, so each measures its own code with nothing
warmed by the other (benchmarks/codegen_ab.py; benchmarks/search_speed.py --before)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def run_worker(tree: Path, script: Path, args: list[str], what: str) -> list[dict]:
    """`script --worker *args` run with `tree`'s packages first on the path; the JSON of each line it prints as
    'RESULT {...}'. A worker that prints none ends the benchmark with its stderr's tail, naming `what` it ran."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, str(script), "--worker", *args], cwd=tree, env=env, capture_output=True,
                       text=True)
    results = [json.loads(x[7:]) for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    if not results:
        raise SystemExit(f"{script.stem}: {what} under {tree} failed:\n{r.stderr[-2000:]}")
    return results
