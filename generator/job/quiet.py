"""A quiet node while a measurement runs: planning and compiling share the node, a measurement holds it alone.

A label measured next to a compile is noise (two kernels' timings on a busy 2-core node disagree on a
quarter of their order). Ray's CPU resources cannot express "nothing else runs while this runs" without
idling CPUs for the whole job, so the job's tasks coordinate through a node-wide readers-writer lock made of
two `flock` files: planning and compile tasks take it shared; the benchmarker takes it exclusive for each
measurement. Exclusive waits for the running tasks to finish and, through a gate every sharer passes, stops
new ones from starting meanwhile (writer preference: measurements are not starved by a queue of compiles).
flock locks belong to open files, so they work across processes, Ray workers and nodes of one machine, and
die with their holder.

Other work on a machine where a data job measures takes the same lock from the command line, so it never runs
beside a measurement (the job pauses its measurements while it runs instead); a benchmark of one's own takes it
exclusive, as the job's measurements do, so that nothing of the job's runs beside it either:

    python -m generator.job.quiet -- python -m pytest tests/test_plan.py
    python -m generator.job.quiet --exclusive -- python benchmarks/vs_halide.py --apps blur
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path


def quiet_dir() -> Path:
    """Where the lock files live: $SCHEDLAB_QUIET_DIR, else one directory per user in the system temp dir
    (per machine, not per job: two jobs on one machine must not disturb each other's measurements)."""
    d = Path(os.environ.get("SCHEDLAB_QUIET_DIR") or Path(tempfile.gettempdir()) / f"schedlab-quiet-{os.getuid()}")
    d.mkdir(parents=True, exist_ok=True)
    return d


class NodeQuiet:
    def __init__(self, directory: Path | None = None):
        d = directory or quiet_dir()
        self.gate_path, self.rw_path = d / "gate.lock", d / "rw.lock"

    def _open(self, path: Path):
        return open(path, "a+")  # noqa: SIM115 - closed by the context managers below

    @contextmanager
    def shared(self):
        """CPU work that may run beside other CPU work but not beside a measurement."""
        rw = self._open(self.rw_path)
        try:
            with self._open(self.gate_path) as gate:
                fcntl.flock(gate, fcntl.LOCK_EX)  # waits while a measurement is waiting or running
                fcntl.flock(rw, fcntl.LOCK_SH)
            yield
        finally:
            rw.close()  # releases the lock

    @contextmanager
    def exclusive(self):
        """A measurement: waits for running CPU work, keeps new work out until it ends."""
        gate, rw = self._open(self.gate_path), self._open(self.rw_path)
        try:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(rw, fcntl.LOCK_EX)
            yield
        finally:
            rw.close()
            gate.close()

    def busy(self) -> bool:
        """Whether CPU work or a measurement holds the node now (a non-blocking probe, for tests and logs)."""
        return self._held(self.rw_path)

    def gate_closed(self) -> bool:
        """Whether a measurement is waiting or running (new CPU work would wait)."""
        return self._held(self.gate_path)

    def _held(self, path: Path) -> bool:
        """Whether anyone holds a lock on `path` (tries an exclusive lock without waiting, and lets it go)."""
        with self._open(path) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False

@contextmanager
def maybe(enabled: bool, kind: str):
    """`NodeQuiet().shared()` / `.exclusive()` when `enabled`, else nothing."""
    if not enabled:
        yield
        return
    q = NodeQuiet()
    with (q.shared() if kind == "shared" else q.exclusive()):
        yield


USAGE = "usage: python -m generator.job.quiet [--exclusive] [--] COMMAND [ARG ...]"


def main(argv: list[str] | None = None) -> int:
    """Run COMMAND holding this machine's quiet lock shared, as the job's planning and compile tasks do: it starts
    once no measurement is waiting or running, and measurements wait until it ends. With --exclusive it holds the
    lock as a measurement does: it starts once the running compiles end, and nothing else of a job runs beside it.
    Its exit status is returned."""
    args = list(sys.argv[1:] if argv is None else argv)
    exclusive = args[:1] == ["--exclusive"]
    if exclusive:
        args = args[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or args[0] in ("-h", "--help"):
        print(f"{USAGE}\n  runs COMMAND so that it never overlaps a measurement of a data job on this machine "
              "(--exclusive: nor its compiles, for a measurement of your own)", file=sys.stderr if not args else sys.stdout)
        return 2 if not args else 0
    q = NodeQuiet()
    with (q.exclusive() if exclusive else q.shared()):
        try:
            return subprocess.call(args)
        except FileNotFoundError:
            print(f"python -m generator.job.quiet: error: no such command: {args[0]}", file=sys.stderr)
            return 127


if __name__ == "__main__":
    sys.exit(main())
