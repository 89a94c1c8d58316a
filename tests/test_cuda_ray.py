"""CUDA benchmarking on Ray without a GPU: a cluster started with `ray start --num-gpus 1` has one logical GPU, the
data-generation job's Benchmarker actor for the cuda backend holds it (so a second one waits: one timing actor
per GPU), and measuring a CUDA sample on this GPU-less machine ends in status no_gpu after the kernel compiled."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from backends.cuda import nvrtc

from .local_servers import RAY, free_port, ray_env, ray_head

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def gpu_cluster():
    """A one-node cluster on loopback with 2 CPUs and 1 logical GPU; yields its address."""
    port = free_port()
    address = f"127.0.0.1:{port}"

    def ready() -> bool:
        st = subprocess.run([RAY, "status", "--address", address], env=ray_env(), capture_output=True, text=True)
        return st.returncode == 0 and "GPU" in st.stdout

    with ray_head(["--port", str(port), "--num-cpus", "2", "--num-gpus", "1", "--include-dashboard", "false"],
                  ready, what="the Ray head"):
        yield address


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
