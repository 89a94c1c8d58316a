"""The llvm backend (LoopNests lowered straight to LLVM IR): the differential fuzzer's CI subset, every app under
naive, expert and searched schedules, and what makes it different from numba (parallel stages on a thread pool,
object files cached by content)."""

from __future__ import annotations

import numpy as np
import pytest

import backends
from generator.apps import APPS
from ir import interpret
from ir.builder import ScheduleBuilder, naive_schedule

from .fuzz import check, report
from .test_backend import blur_pipeline


@pytest.mark.parametrize("k", range(64))
def test_random_pipeline_random_schedule_matches_interpreter(k):
    """The numba backend's CI subset (same pairs), compiled by llvm."""
    outcome, p, ln, decisions = check(k, 7919 * k + 3, "llvm")
    if outcome.status != "ok":
        pytest.fail(report(k, 7919 * k + 3, outcome, decisions, "llvm"))


@pytest.mark.parametrize("app", list(APPS))
def test_every_app_under_naive_expert_and_greedy_schedules_equals_the_interpreter(app):
    from scheduler import autoschedule

    a = APPS[app]
    p = a.build("small")
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    schedules = {"naive": naive_schedule(p), "greedy": autoschedule(p, model="analytical", algorithm="greedy").loopnest}
    if a.schedule is not None:
        schedules["expert"] = a.schedule(p)
    items = [backends.MeasureInput(p, ln, inputs, expected) for ln in schedules.values()]
    for name, m in zip(schedules, backends.measure_many(items, backend="llvm", protocol="check")):
        assert m.status == "ok", f"{app} {name}: {m.status}: {m.error}"


def test_a_parallel_stage_runs_its_tasks_on_the_thread_pool_and_the_object_file_is_reused():
    p = blur_pipeline((200, 120))
    s = ScheduleBuilder(p)
    s.root("blur_y", tiles=[{"x": 64, "y": 16}], vectorize="x", vector_width=8, parallel=True)
    s.compute_at("blur_x", "blur_y", level=0, vectorize="x", vector_width=8)
    ln = s.build()
    k = backends.compile(p, ln, backend="llvm")
    (stage,) = k.meta["stages"]
    assert stage[1] == 4 * 8  # the fused parallel loop's tasks: 4 x 8 tiles
    inputs = p.random_inputs(0)
    np.testing.assert_array_equal(k(inputs)["blur_y"], interpret(p, inputs)["blur_y"])
    again = backends.compile(p, ln, backend="llvm")
    assert again.meta["path"] == k.meta["path"]


def test_llvm_rejects_cuda_targets_and_invalid_schedules_are_a_status():
    from backends.cuda.nvrtc import available  # noqa: F401 - the cuda package imports without a GPU
    from ir.gpu_schedule import gpu_kinds

    p = blur_pipeline()
    with pytest.raises(backends.CompileError, match="the llvm backend compiles for cpu targets; h100 is a cuda target"):
        backends.compile(p, naive_schedule(p), "h100", backend="llvm")
    gpu = gpu_kinds(naive_schedule(p), "h100")
    (m,) = backends.measure_many([backends.MeasureInput(p, gpu, p.random_inputs(0))], backend="llvm", protocol="check")
    assert m.status == "invalid_schedule" and "not legal on host" in m.error
