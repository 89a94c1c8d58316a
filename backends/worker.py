"""A persistent worker process with a timeout per call, so that a crash or a hang in generated code
is a recorded status, never a dead job (DESIGN §3.4).

The worker is a fresh interpreter (`python -m backends.worker`), so it inherits no threads, locks or
caller's `__main__`; calls and results travel as pickles over its stdin/stdout. It is reused across
calls and replaced after a crash or a timeout.

Arguments wrapped in `Keep(key, value)` cross the pipe once per worker process: the process keeps the last
`KEPT` of them, and later calls send only the key. Measuring a batch's schedules sends its inputs and expected
outputs once instead of with every schedule (96 MB took 0.36 s a call through the pipe).
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ir.errors import SchedlabError

_ROOT = str(Path(__file__).resolve().parent.parent)


class WorkerCrashed(Exception):
    """The worker died while running a call (segfault, abort, killed for memory)."""


class WorkerTimeout(Exception):
    """The call ran past its timeout; the worker was killed."""


@dataclass
class RemoteError(Exception):
    """The call raised inside the worker."""

    kind: str
    message: str
    trace: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def _write(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)))
    f.write(data)
    f.flush()


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks = []
    while n > 0:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise WorkerTimeout("timed out")
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            raise EOFError
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


# a worker whose resident memory passed this after a call is replaced before the next one: kernels loaded into
# it (Halide objects mapped by MCJIT, numba's dispatchers) are never unloaded, and one worker measuring the 17
# apps' ~200 full-size schedules reached 13.9 GB here; a fresh one reloads what it needs from the disk cache
MAX_RSS_GB = float(os.environ.get("SCHEDLAB_WORKER_MAX_RSS_GB") or 4.0)


def resident_bytes(pid: int) -> int:
    """A process's resident memory (Linux /proc; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# glibc's malloc adapts its mmap and trim thresholds to what the process freed before (mallopt(3): freeing a
# mapped chunk raises both), so the pages a kernel faults in at each call depended on the kernels its worker had
# run before it: one camera_pipe schedule measured 42-56 ms in workers left to glibc's adaptive thresholds and
# 17-23 ms with them fixed (benchmarks/allocator_history.py). Workers fix them ("pinned"): an allocation of
# 32 MiB or more is mapped afresh at every call, as under glibc's largest adaptive threshold, and a smaller one
# comes from a heap that is never trimmed, so its pages fault once per worker, not once per call. That is what
# the analytical model's page-fault term charges (train.analytical.MMAP_THRESHOLD, the same 32 MiB).
# SCHEDLAB_WORKER_ALLOCATOR=adaptive (or Worker(allocator="adaptive")) leaves glibc's default.
ALLOCATORS = {
    "pinned": "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824",
    "adaptive": "",
}


class AllocatorError(SchedlabError, ValueError):
    """An unknown allocator setting for worker processes."""


def allocator_name(allocator: str | None = None) -> str:
    """The setting a worker runs under: `allocator`, else $SCHEDLAB_WORKER_ALLOCATOR, else pinned."""
    name = allocator or os.environ.get("SCHEDLAB_WORKER_ALLOCATOR") or "pinned"
    if name not in ALLOCATORS:
        raise AllocatorError(f"unknown worker allocator {name!r}; use one of {', '.join(ALLOCATORS)} "
                             "(Worker(allocator=...) or SCHEDLAB_WORKER_ALLOCATOR)")
    return name


def allocator_tunables(allocator: str | None, tunables: str = "") -> str:
    """GLIBC_TUNABLES for a worker under `allocator` (allocator_name), given the caller's own `tunables`: malloc
    settings the caller made are kept as they are."""
    setting = ALLOCATORS[allocator_name(allocator)]
    if not setting or "glibc.malloc." in tunables:
        return tunables
    return setting + (":" + tunables if tunables else "")


def allocator_description(allocator: str | None = None) -> str:
    """How workers' malloc runs, in a few words, for the record a batch file keeps (backends.measuring_machine)."""
    import platform

    if platform.libc_ver()[0] != "glibc":
        return "malloc not glibc's (the setting does not apply)"
    name, own = allocator_name(allocator), os.environ.get("GLIBC_TUNABLES", "")
    if ALLOCATORS[name] and allocator_tunables(name, own) == own:  # the caller's malloc settings won
        return f"malloc as GLIBC_TUNABLES={own}"
    return f"malloc {name}"


KEPT = 4  # Keep values a worker process holds (the inputs and expected outputs of two batches), oldest dropped first


@dataclass(frozen=True)
class Keep:
    """A call argument the worker process keeps under `key` for later calls: pass the same key only with the
    same value (e.g. a batch's inputs under its batch id)."""

    key: str
    value: Any


@dataclass(frozen=True)
class _Kept:
    """What crosses the pipe for a Keep the process already holds."""

    key: str


class Worker:
    def __init__(self, env: dict[str, str] | None = None, max_rss_gb: float | None = None,
                 allocator: str | None = None):
        self.env = dict(env or {})
        self.allocator = allocator
        allocator_name(allocator)  # a wrong name fails here, not at the first call
        self.max_rss_bytes = (MAX_RSS_GB if max_rss_gb is None else max_rss_gb) * 2**30
        self.replaced = 0  # workers closed for their memory
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, None] = OrderedDict()  # Keep keys the current process holds, oldest first

    def _start(self) -> None:
        env = dict(os.environ)
        env.update(self.env)
        tunables = allocator_tunables(self.allocator, env.get("GLIBC_TUNABLES", ""))
        if tunables:
            env["GLIBC_TUNABLES"] = tunables
        env["PYTHONPATH"] = _ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env[_PARENT] = str(os.getpid())
        # the kernel's death signal follows the thread that forks: only a main-thread parent can use it
        env[_DEATH_SIGNAL] = "1" if threading.current_thread() is threading.main_thread() else ""
        self._proc = subprocess.Popen([sys.executable, "-m", "backends.worker"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, cwd=_ROOT)

    def call(self, fn: Callable, *args, timeout: float | None = None, **kwargs) -> Any:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            proc = self._proc
            assert proc is not None and proc.stdin is not None and proc.stdout is not None
            args = tuple(self._send(a) for a in args)
            kwargs = {k: self._send(v) for k, v in kwargs.items()}
            try:
                _write(proc.stdin, (fn, args, kwargs))
            except (BrokenPipeError, OSError):
                self.kill()
                raise WorkerCrashed("the worker process is gone") from None
            deadline = None if timeout is None else time.monotonic() + timeout
            fd = proc.stdout.fileno()
            try:
                (n,) = struct.unpack("<Q", _read_exact(fd, 8, deadline))
                status, payload = pickle.loads(_read_exact(fd, n, deadline))
            except WorkerTimeout:
                self.kill()
                raise WorkerTimeout(f"no answer within {timeout:.0f} s") from None
            except EOFError:
                code = proc.wait()
                self._release()
                raise WorkerCrashed(f"the worker died (exit code {code})") from None
            if resident_bytes(proc.pid) > self.max_rss_bytes:
                self.close()
                self.replaced += 1
            if status == "err":
                raise RemoteError(*payload)
            return payload

    @property
    def pid(self) -> int | None:
        """The current worker process's id (None before the first call or after it ended)."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _send(self, arg):
        """What to send for one argument: a Keep's key alone once this process holds its value. The process
        stores Keeps in the order sent and drops the oldest beyond KEPT, as this mirror does."""
        if type(arg) is not Keep:
            return arg
        if arg.key in self._kept:
            return _Kept(arg.key)
        self._kept[arg.key] = None
        if len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return arg

    def kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
        self._release()

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                self._proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._release()

    def _release(self) -> None:
        """Forget the (ended) process and close our ends of its pipes (else each replaced worker leaves two
        open files behind, which Python reports as ResourceWarnings)."""
        proc, self._proc = self._proc, None
        self._kept.clear()  # a new process holds nothing
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.kill()
        except Exception:
            pass


_default: Worker | None = None


def default_worker() -> Worker:
    global _default
    if _default is None:
        _default = Worker()
    return _default


_PARENT = "SCHEDLAB_WORKER_PARENT"
_DEATH_SIGNAL = "SCHEDLAB_WORKER_DEATH_SIGNAL"


def _exit_with_parent() -> None:  # pragma: no cover - runs in the child
    """A worker outlives nothing: when its parent dies (a killed job, a Ray worker shut down) in the middle of
    a long compile or a hanging kernel, the worker goes too instead of running on as an orphan. Linux's
    parent-death signal covers code that holds the GIL; the watcher thread covers the other cases."""
    parent = int(os.environ.get(_PARENT) or 0)
    if not parent:
        return
    if os.environ.get(_DEATH_SIGNAL) and sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _serve() -> None:  # pragma: no cover - runs in the child
    _exit_with_parent()
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # user code printing must not corrupt the channel
    inp = sys.stdin.buffer
    kept: OrderedDict[str, Any] = OrderedDict()
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        (n,) = struct.unpack("<Q", head)
        fn, args, kwargs = pickle.loads(inp.read(n))
        try:
            args = tuple(_receive(a, kept) for a in args)
            kwargs = {k: _receive(v, kept) for k, v in kwargs.items()}
            result = ("ok", fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - everything is reported to the parent
            msg = str(e).splitlines()[0] if str(e) else ""
            result = ("err", (type(e).__name__, msg, traceback.format_exc()))
        _write(out, result)


def _receive(arg, kept: OrderedDict) -> Any:  # pragma: no cover - runs in the child
    """The value of one argument: a Keep is stored (the oldest dropped beyond KEPT), a _Kept looked up."""
    from backends.worker import Keep, _Kept  # the classes pickles name; this module runs as __main__ here

    if type(arg) is Keep:
        kept[arg.key] = arg.value
        if len(kept) > KEPT:
            kept.popitem(last=False)
        return arg.value
    if type(arg) is _Kept:
        return kept[arg.key]  # the parent mirrors what is kept: a miss is a bug, reported as a RemoteError
    return arg


if __name__ == "__main__":  # pragma: no cover
    _serve()
