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
    with pytest.raises(SchedlabError, match="kind must be cpu or cuda"):
        get_target(str(bad))
