"""Targets: host detection, named targets from conf/targets, and errors for bad files."""

import pytest

from ir import SchedlabError, f32, u8
from ir.target import CpuTarget, CudaTarget, get_target, host_target


def test_host_is_detected():
    t = host_target()
    assert t.name == "host" and t.cores >= 1 and t.vector_bytes in (16, 32, 64)
    assert t.natural_vector_size(f32) == t.vector_bytes // 4
    assert t.natural_vector_size(u8) == t.vector_bytes
    assert get_target("host") is t and get_target(None) is t


def test_named_targets_load():
    cpu = get_target("i9-7960x")
    assert isinstance(cpu, CpuTarget) and cpu.cores == 16 and cpu.natural_vector_size(f32) == 16
    gpu = get_target("v100")
    assert isinstance(gpu, CudaTarget) and gpu.sm_count == 80 and gpu.warp_size == 32


def test_bad_targets_name_the_problem(tmp_path):
    with pytest.raises(SchedlabError, match="unknown target 'nope'"):
        get_target("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: cpu\ncores: 4\nvector_bytes: 32\ncache: 1\n")
    with pytest.raises(SchedlabError, match="unknown key 'cache'"):
        get_target(str(bad))
    bad.write_text("kind: tpu\n")
    with pytest.raises(SchedlabError, match="kind must be one of cpu, cuda, got 'tpu'"):
        get_target(str(bad))


# published figures (NVIDIA datasheets): SMs, compute capability, DRAM GB/s, L2 bytes, shared memory per SM
GPUS = {
    "v100": (80, "7.0", 900, 6 * 2**20, 96 * 1024),
    "a100": (108, "8.0", 2039, 40 * 2**20, 164 * 1024),
    "h100": (132, "9.0", 3352, 50 * 2**20, 228 * 1024),
    "h200": (132, "9.0", 4800, 50 * 2**20, 228 * 1024),
}


def test_every_target_file_loads_with_its_kind():
    from pathlib import Path

    from ir.target import CONF_DIR, target_kind

    files = sorted(Path(CONF_DIR).glob("*.yaml"))
    assert {f.stem for f in files} >= set(GPUS) | {"avx2-8core", "i9-7960x"}
    for f in files:
        t = get_target(f.stem)
        assert t.name == f.stem and isinstance(t, target_kind(t).target_class)
        assert get_target(str(f)) == t


@pytest.mark.parametrize("name", sorted(GPUS))
def test_gpu_targets_have_the_published_figures(name):
    sms, cc, bandwidth, l2, smem_sm = GPUS[name]
    t = get_target(name)
    assert isinstance(t, CudaTarget) and (t.sm_count, t.compute_capability) == (sms, cc)
    assert (t.memory_bandwidth_gbs, t.l2_bytes, t.shared_memory_per_sm) == (bandwidth, l2, smem_sm)
    assert (t.max_threads_per_block, t.warp_size, t.registers_per_sm, t.registers_per_thread) == (1024, 32, 65536, 255)
    assert t.shared_memory_per_block == 48 * 1024  # without the dynamic opt-in


def test_target_kinds_are_registered():
    from ir.loopnest import LoopKind
    from ir.target import target_kind

    assert target_kind("cpu").target_class is CpuTarget and target_kind(get_target("v100")).target_class is CudaTarget
    assert LoopKind.PARALLEL.value in target_kind("cpu").loop_kinds and "block" not in target_kind("cpu").loop_kinds
    assert {"block", "thread", "simd"} <= target_kind("cuda").loop_kinds and "parallel" not in target_kind("cuda").loop_kinds
    with pytest.raises(SchedlabError, match="unknown target kind 'tpu'; registered: cpu, cuda"):
        target_kind("tpu")
