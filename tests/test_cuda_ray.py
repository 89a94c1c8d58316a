"""CUDA benchmarking on Ray without a GPU: a cluster started with `ray start --num-gpus 1` has one logical GPU, the
data-generation job's Benchmarker actor for the cuda backend holds it (so a second one waits: one timing actor
per GPU), and measuring a CUDA sample on this GPU-less machine ends in status no_gpu after the kernel compiled."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from backends.cuda import nvrtc

ROOT = Path(__file__).resolve().parent.parent
RAY = Path(os.sys.executable).parent / "ray"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    return env


@pytest.fixture
def gpu_cluster():
    """A one-node cluster on loopback with 2 CPUs and 1 logical GPU, stopped by signalling its head (not `ray stop`)."""
    temp = Path(tempfile.mkdtemp(prefix="rg", dir="/tmp"))
    port = _free_port()
    cmd = [str(RAY), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
           "--num-cpus", "2", "--num-gpus", "1", "--temp-dir", str(temp), "--disable-usage-stats",
           "--include-dashboard", "false", "--dashboard-agent-listen-port", str(_free_port())]
    head = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        st = subprocess.run([str(RAY), "status", "--address", address], env=_env(), capture_output=True, text=True)
        if st.returncode == 0 and "GPU" in st.stdout:
            break
        assert head.poll() is None, head.stdout.read()
        time.sleep(2)
    else:
        pytest.fail("the Ray head did not come up in 120 s")
    yield address
    head.send_signal(signal.SIGTERM)
    try:
        head.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.skipif(nvrtc.available() is not None, reason=str(nvrtc.available()))
def test_the_cuda_benchmarker_holds_the_nodes_gpu_and_reports_no_gpu_here(gpu_cluster, monkeypatch):
    import ray

    from generator.batch import BatchKey, BatchPlan, PlannedSample
    from generator.job.driver import benchmarker_resources
    from generator.job.tasks import Benchmarker
    from ir import interpret
    from ir.gpu_schedule import random_gpu_loopnest
    from tests.fuzz_pipelines import random_test_pipeline

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert benchmarker_resources("cuda", 1) == {"num_cpus": 1, "num_gpus": 1}
    assert benchmarker_resources("numba", 1)["num_gpus"] == 0
    ray.init(address=gpu_cluster, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT),
                                                            "SCHEDLAB_CACHE_DIR": os.environ.get("SCHEDLAB_CACHE_DIR", "")}},
             log_to_driver=False)
    try:
        assert ray.cluster_resources().get("GPU") == 1
        first = Benchmarker.options(**benchmarker_resources("cuda", 1)).remote()
        assert ray.get(first.node_id.remote(), timeout=120) == ray.get_runtime_context().get_node_id()
        assert ray.get(ray.remote(num_cpus=1)(lambda: "cpu task").remote(), timeout=120) == "cpu task"  # beside it
        # the one GPU is held: a second CUDA benchmarker waits for it
        second = Benchmarker.options(**benchmarker_resources("cuda", 1)).remote()
        ready, _ = ray.wait([second.node_id.remote()], timeout=8)
        assert not ready

        p = random_test_pipeline(3)
        ln = random_gpu_loopnest(p, 3, "h100")
        key = BatchKey(target="h100", round=0, seed=3, schedules=1, max_stages=6, output_size=(64, 48, 3), markov=False,
                       beam_size=1, passes=1, dropout=0.0, job_seed=0, protocol="check", check_outputs=True,
                       backend="cuda")
        inputs = p.random_inputs(3)
        plan = BatchPlan(key, p, inputs, interpret(p, inputs), [PlannedSample("random", ln, None, float("nan"))], "none")
        from backends.protocols import get_protocol

        m = ray.get(first.measure.remote(plan, 0, get_protocol("check"), 300.0), timeout=600)
        assert m.status == "no_gpu" and "GPU" in m.error and m.compile_s > 0, m
        ray.kill(first)
        ready, _ = ray.wait([second.node_id.remote()], timeout=120)
        assert ready  # the GPU went to the waiting benchmarker
    finally:
        ray.shutdown()
