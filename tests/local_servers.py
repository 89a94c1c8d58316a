"""Local servers for the tests: Ray nodes on loopback started with `ray start --block` (and other servers on free
ports), stopped by signalling the processes a test started — never `ray stop`, which would stop every Ray process
of this user, other tests' included."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PY = sys.executable
RAY = str(Path(PY).parent / "ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_env(**extra: str) -> dict[str, str]:
    """This environment for Ray's command-line tools: `python` in a Ray job is this one, no auth, no usage stats,
    no cluster address inherited from the shell."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(PY).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    env.update(extra)
    return env


def stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM to each process (last started first), SIGKILL to the process group of any still alive after 60 s."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


@contextmanager
def ray_head(args: list[str], ready: Callable[[], bool], *, what: str, timeout: float = 120) -> Iterator[Path]:
    """A one-node Ray cluster (`ray start --head --block` with `args`) on loopback; yields its temp dir once
    `ready()` holds. Its temp dir is short: Ray's socket paths must fit 107 bytes. Its dashboard agent listens on a
    free port: the default (52365) is one per machine, and another test's cluster may hold it."""
    temp = Path(tempfile.mkdtemp(prefix="rh", dir="/tmp"))
    cmd = [RAY, "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--temp-dir", str(temp),
           "--disable-usage-stats", "--dashboard-agent-listen-port", str(free_port()), *args]
    head = subprocess.Popen(cmd, env=ray_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert head.poll() is None, head.stdout.read()
            if time.monotonic() > deadline:
                pytest.fail(f"{what} did not come up in {timeout:.0f} s")
            time.sleep(2)
        yield temp
    finally:
        stop([head])
        shutil.rmtree(temp, ignore_errors=True)


def ray_cli_ok(*args: str) -> bool:
    """Whether `ray <args>` exits 0 (a readiness probe). A probe that hangs on a cluster still starting is a "not
    yet": the caller's deadline decides when the cluster failed."""
    try:
        return subprocess.run([RAY, *args], env=ray_env(), capture_output=True, text=True, timeout=60,
                              check=False).returncode == 0
    except subprocess.TimeoutExpired:
        return False
