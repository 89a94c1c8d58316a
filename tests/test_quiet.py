"""generator.job.quiet: a measurement runs alone on its node; planning and compiling share it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


def _plan_unpickled_in_the_lock(plan):
    """Unpickling a LockCheckedPlan: the plan itself, if this process holds the node's quiet lock now."""
    if not NodeQuiet().busy():
        raise RuntimeError("the plan was unpickled outside the quiet lock")
    return plan


class LockCheckedPlan:
    """A BatchPlan whose unpickling checks that the node's quiet lock is held (by the task unpickling it)."""

    def __init__(self, plan):
        self.plan = plan

    def __reduce__(self):
        return _plan_unpickled_in_the_lock, (self.plan,)


def test_a_compile_task_unpickles_its_plan_inside_the_quiet_lock(tmp_path, monkeypatch):
    """A compile task's plan (pipeline, inputs, reference outputs; unpickling a searched one took 0.3-0.6 s)
    is fetched inside the lock, or it runs beside a measurement: the labels of parallel schedules measured so
    on the 2-core machine were up to 1.9x their standalone runtimes."""
    import os

    import ray

    from generator.batch import BatchKey, SamplingModel, plan_batch
    from generator.job.tasks import compile_task

    key = BatchKey(target="host", round=0, seed=7, schedules=1, max_stages=3, output_size=(32, 24, 3), markov=False,
                   beam_size=1, passes=1, dropout=1.0, job_seed=0, protocol="quick", check_outputs=True)
    plan = plan_batch(key, SamplingModel("random:0"))
    for k, v in {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    env = {"PYTHONPATH": str(ROOT), "SCHEDLAB_QUIET_DIR": str(tmp_path),
           "SCHEDLAB_CACHE_DIR": os.environ.get("SCHEDLAB_CACHE_DIR", str(tmp_path / "kernels"))}
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    try:
        ref = ray.put(LockCheckedPlan(plan))
        outcome = ray.get(compile_task.remote([ref], 0, 300.0, "", True), timeout=600)
        assert outcome.status == "ok", outcome
        with pytest.raises(ray.exceptions.RayTaskError, match="outside the quiet lock"):  # the check can fail
            ray.get(compile_task.options(max_retries=0).remote([ref], 0, 300.0, "", False), timeout=600)
    finally:
        ray.shutdown()


CLI = [sys.executable, "-m", "generator.job.quiet"]


def _cli_env(tmp_path):
    import os

    return {**os.environ, "SCHEDLAB_QUIET_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}


def test_a_command_run_quietly_holds_the_lock_shared_and_keeps_measurements_waiting(tmp_path):
    probe = ("import sys; from pathlib import Path; from generator.job.quiet import NodeQuiet; "
             f"q = NodeQuiet(Path({str(tmp_path)!r})); print(q.busy(), q.gate_closed()); sys.exit(7)")
    r = subprocess.run(CLI + ["--", sys.executable, "-c", probe], env=_cli_env(tmp_path), capture_output=True,
                       text=True, timeout=60)
    assert (r.returncode, r.stdout.split()) == (7, ["True", "False"])  # its exit status; held, gate open
    assert not NodeQuiet(tmp_path).busy()
    # while a measurement holds the node, the command does not start
    m = _holder(tmp_path, "exclusive")
    p = subprocess.Popen(CLI + [sys.executable, "-c", "print('ran')"], env=_cli_env(tmp_path),
                         stdout=subprocess.PIPE, text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(timeout=2)
    _release(m)
    assert p.communicate(timeout=60)[0].strip() == "ran" and p.returncode == 0


def test_a_command_run_exclusive_holds_the_node_alone(tmp_path):
    probe = ("from pathlib import Path; from generator.job.quiet import NodeQuiet; "
             f"q = NodeQuiet(Path({str(tmp_path)!r})); print(q.busy(), q.gate_closed())")
    compile_ = _holder(tmp_path, "shared")  # a compile running: the command waits for it to end
    p = subprocess.Popen(CLI + ["--exclusive", "--", sys.executable, "-c", probe], env=_cli_env(tmp_path),
                         stdout=subprocess.PIPE, text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(timeout=2)
    _release(compile_)
    assert p.communicate(timeout=60)[0].split() == ["True", "True"] and p.returncode == 0  # held, gate closed


@pytest.mark.parametrize("args, status, message", [
    ([], 2, "usage: python -m generator.job.quiet"),
    (["--", "no-such-command-here"], 127, "error: no such command: no-such-command-here"),
])
def test_quiet_cli_errors_are_one_line(tmp_path, args, status, message):
    r = subprocess.run(CLI + args, env=_cli_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == status and message in r.stderr.splitlines()[0]
