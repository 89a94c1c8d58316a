"""generator.job.quiet: a measurement runs alone on its node; planning and compiling share it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from generator.job.quiet import NodeQuiet

ROOT = Path(__file__).resolve().parent.parent

HOLDER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from generator.job.quiet import NodeQuiet
    with getattr(NodeQuiet(Path({d!r})), {kind!r})():
        print("in", flush=True)
        sys.stdin.readline()  # hold until the test says so
""")


def _holder(tmp_path, kind):
    p = subprocess.Popen([sys.executable, "-c", HOLDER.format(root=str(ROOT), d=str(tmp_path), kind=kind)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "in"
    return p


def _release(p):
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.wait(timeout=30) == 0


def test_compiles_share_the_node_a_measurement_holds_it_alone(tmp_path):
    q = NodeQuiet(tmp_path)
    assert not q.busy() and not q.gate_closed()
    a, b = _holder(tmp_path, "shared"), _holder(tmp_path, "shared")  # two compiles at once
    assert q.busy() and not q.gate_closed()
    _release(a)
    assert q.busy()  # b still compiles: a measurement would wait
    _release(b)
    assert not q.busy()
    m = _holder(tmp_path, "exclusive")  # a measurement
    assert q.busy() and q.gate_closed()  # a compile starting now waits at the gate
    _release(m)
    assert not q.busy() and not q.gate_closed()


def test_a_waiting_measurement_keeps_new_compiles_out(tmp_path):
    q = NodeQuiet(tmp_path)
    compile_ = _holder(tmp_path, "shared")
    waiting = subprocess.Popen([sys.executable, "-c", HOLDER.format(root=str(ROOT), d=str(tmp_path), kind="exclusive")],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    # the measurement cannot start while the compile runs, but it closes the gate to new compiles
    for _ in range(200):
        if q.gate_closed():
            break
        subprocess.run([sys.executable, "-c", "pass"])  # let the waiter reach its flock
    assert q.gate_closed() and waiting.poll() is None
    _release(compile_)
    assert waiting.stdout.readline().strip() == "in"  # the measurement got the node
    _release(waiting)
    assert not q.busy()


def test_a_holder_that_dies_releases_the_node(tmp_path):
    q = NodeQuiet(tmp_path)
    p = _holder(tmp_path, "exclusive")
    p.kill()
    p.wait(timeout=30)
    assert not q.busy() and not q.gate_closed()
