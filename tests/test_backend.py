"""The numba backend: outputs equal the interpreter's over random pipelines x random schedules,
measurement statuses for every way a sample can fail, and the disk cache."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

import backends
from backends import CompileError, Protocol
from backends.worker import RemoteError, Worker, WorkerCrashed, WorkerTimeout
from ir import Func, Input, Pipeline, SchedlabError, ScheduleError, Var, f32, interpret
from ir.builder import ScheduleBuilder, naive_schedule, simple_schedule
from ir.sampling import random_schedule

from . import worker_targets as wt
from .fuzz import CHECK_ONLY, check, report
from .fuzz_pipelines import random_test_pipeline

x, y = Var("x"), Var("y")


# -- correctness over the schedule space (a fixed-seed subset of `make fuzz`) ---------------------


@pytest.mark.parametrize("k", range(64))
def test_random_pipeline_random_schedule_matches_interpreter(k):
    outcome, p, ln, decisions = check(k, 7919 * k + 3)
    if outcome.status != "ok":
        pytest.fail(report(k, 7919 * k + 3, outcome, decisions))


def test_fuzz_subset_covers_the_schedule_space():
    """The CI subset above must exercise every kind of decision, or it proves little."""
    seen = {"inline": 0, "root": 0, "at": 0, "sliding": 0, "tiles": 0, "vectorize": 0, "unroll": 0,
            "parallel": 0, "update": 0}
    from ir.plan import Plan

    for k in range(64):
        p = random_test_pipeline(k)
        ln, decisions = random_schedule(p, 7919 * k + 3)
        plan = Plan(p.dag, ln)
        for d in decisions.values():
            seen[d.kind] += 1
            spec = d.specs.get(0)
            if spec is not None:
                seen["tiles"] += bool(spec.tiles)
                seen["vectorize"] += bool(spec.vectorize)
                seen["unroll"] += bool(spec.unroll)
                seen["parallel"] += spec.parallel
        seen["sliding"] += sum(fp.sliding is not None for fp in plan.funcs.values())
        seen["update"] += sum(len(fp.chains) > 1 for fp in plan.funcs.values())
    assert all(v > 0 for v in seen.values()), seen


def blur_pipeline(size=(64, 48)):
    inp = Input("inp", f32, 2)
    bx, by = Func("blur_x"), Func("blur_y")
    bx[x, y] = (inp[x - 1, y] + inp[x, y] + inp[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return Pipeline([by], {by: size})


def test_hand_written_fused_tiled_parallel_vectorized_blur_matches_interpreter():
    p = blur_pipeline((200, 120))
    s = ScheduleBuilder(p)
    s.root("blur_y", tiles=[{"x": 64, "y": 16}], vectorize="x", vector_width=8, parallel=True)
    s.compute_at("blur_x", "blur_y", level=0, vectorize="x", vector_width=8)
    ln = s.build()
    k = backends.compile(p, ln)
    assert k.meta["parallel"]
    inputs = p.random_inputs(seed=3)
    got = k(inputs)["blur_y"]
    want = interpret(p, inputs)["blur_y"]
    assert got.dtype == np.float32 and got.shape == (200, 120)
    assert np.array_equal(got, want)  # same operations in the same order: bit-exact even for floats


def test_sliding_window_matches_interpreter_and_computes_each_row_once():
    p = blur_pipeline((40, 30))
    s = ScheduleBuilder(p)
    s.root("blur_y", tiles=[{"x": 20, "y": 10}, {"x": 20, "y": 1}], vectorize="x", vector_width=4)
    s.compute_at("blur_x", "blur_y", level=1, store_level=0, vectorize="x", vector_width=4)
    ln = s.build()
    from ir.plan import Plan

    plan = Plan(p.dag, ln)
    sl = plan.func("blur_x").sliding
    assert sl is not None and sl.dim == 1
    assert plan.func("blur_x").storage_extents == [20, 12]  # 10 rows of blur_y need 12 of blur_x
    k = backends.compile(p, ln)
    assert "blur_x_done" in k.source.source
    inputs = p.random_inputs(seed=4)
    assert np.array_equal(k(inputs)["blur_y"], interpret(p, inputs)["blur_y"])


# -- statuses ------------------------------------------------------------------------------------


def test_invalid_schedule_is_rejected_before_compiling_and_recorded_as_a_status():
    p = blur_pipeline()
    ln = naive_schedule(p)
    bad = ln.replace(children=ln.children[::-1])  # consumer before its producer
    with pytest.raises(ScheduleError, match="blur_x must be computed before blur_y"):
        backends.compile(p, bad)
    m = backends.compile_and_measure(p, bad, p.random_inputs(0))
    assert m.status == "invalid_schedule" and "before" in m.error


def test_wrong_output_is_detected_and_not_timed():
    p = blur_pipeline()
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    expected["blur_y"][3, 5] += 1.0
    m = backends.measure(backends.compile(p, naive_schedule(p)), inputs, expected=expected)
    assert m.status == "wrong_output"
    assert "(3, 5)" in m.error and m.samples == 0


@pytest.mark.parametrize("spec, status, text", [
    (wt.CrashingSpec(), "crash", "died"),
    (wt.RaisingSpec(), "runtime_error", "injected failure"),
])
def test_a_crashing_kernel_is_a_status_and_the_worker_recovers(spec, status, text):
    p = blur_pipeline()
    k = backends.compile(p, naive_schedule(p))
    inputs = p.random_inputs(0)
    w = Worker()
    good = k.spec
    k.spec = spec
    m = backends.measure(k, inputs, worker=w)
    assert m.status == status and text in m.error
    k.spec = good
    assert backends.measure(k, inputs, CHECK_ONLY, worker=w, expected=interpret(p, inputs)).status == "ok"
    w.close()


def test_a_hanging_kernel_times_out():
    p = blur_pipeline()
    k = backends.compile(p, naive_schedule(p))
    k.spec = wt.HangingSpec()
    w = Worker()
    m = backends.measure(k, p.random_inputs(0), dataclasses.replace(CHECK_ONLY, timeout=3), worker=w)
    assert m.status == "timeout"
    assert w.call(wt.add, 2, 3, timeout=60) == 5  # a fresh worker replaced the killed one
    w.close()


def test_compile_timeout_is_a_compile_error_with_status_timeout():
    """A fresh worker cannot even import numba in 10 ms, cached kernel or not."""
    p = random_test_pipeline(11)
    ln, _ = random_schedule(p, 5)
    with pytest.raises(CompileError) as e:
        backends.compile(p, ln, timeout=0.01, worker=Worker())
    assert e.value.status == "timeout"
    m = backends.compile_and_measure(p, ln, p.random_inputs(0), compile_timeout=0.01, worker=Worker())
    assert m.status == "timeout"


def test_worker_reports_crash_hang_and_exception():
    w = Worker()
    with pytest.raises(WorkerCrashed):
        w.call(wt.abort_now, timeout=60)
    with pytest.raises(WorkerTimeout):
        w.call(wt.sleep_forever, timeout=1)
    with pytest.raises(RemoteError, match="ZeroDivisionError"):
        w.call(divmod, 1, 0, timeout=60)
    assert w.call(wt.add, 1, 1, timeout=60) == 2
    w.close()


def test_a_kept_argument_crosses_once_per_worker_process():
    """Keep(key, value) is sent with the first call only: later calls send the key and the process uses what
    it kept (shown by passing another value under the same key), until the process is replaced or the key is
    dropped for newer ones (then the value is sent again, never looked up in vain)."""
    from backends.worker import KEPT, Keep

    w = Worker()
    assert w.call(len, Keep("batch-a", [1, 2, 3]), timeout=60) == 3
    assert w.call(len, Keep("batch-a", [9]), timeout=60) == 3  # the kept value, not the one given
    assert w.call(wt.add, Keep("x", 1), Keep("y", 2), timeout=60) == 3
    for i in range(KEPT):  # newer keys push batch-a out, in the process and in the worker's mirror alike
        w.call(len, Keep(f"other-{i}", [0] * i), timeout=60)
    assert w.call(len, Keep("batch-a", [9]), timeout=60) == 1
    with pytest.raises(WorkerCrashed):
        w.call(wt.abort_now, timeout=60)
    assert w.call(len, Keep("batch-a", [7, 7]), timeout=60) == 2  # a new process keeps nothing yet
    w.close()


def test_measurements_with_kept_data_still_check_every_kernel():
    """The job measures a batch's schedules with data_key=<batch id>: the worker keeps the inputs and expected
    outputs, and a later kernel on the same key is still checked against them and timed."""
    p = blur_pipeline()
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    good = backends.build(p, naive_schedule(p))
    bad = backends.build(p, naive_schedule(p))
    bad.kernel.spec = wt.WrongOutputSpec(good.kernel.spec)
    off = {k: v + 1 for k, v in expected.items()}  # not what batch-1 keeps: shows that the kept outputs are used
    w = Worker()
    first = backends.run(good, inputs, CHECK_ONLY, expected=expected, worker=w, data_key="batch-1")
    wrong = backends.run(bad, inputs, CHECK_ONLY, expected=off, worker=w, data_key="batch-1")
    again = backends.run(good, inputs, CHECK_ONLY, expected=off, worker=w, data_key="batch-1")
    timed = backends.run(good, inputs, "quick", expected=off, worker=w, data_key="batch-1")
    assert (first.status, wrong.status, again.status, timed.status) == ("ok", "wrong_output", "ok", "ok")
    assert timed.min_s > 0 and timed.samples >= 3
    assert backends.run(good, inputs, CHECK_ONLY, expected=off, worker=w).status == "wrong_output"  # no key: sent
    w.close()


def test_a_worker_past_its_memory_limit_is_replaced_between_calls():
    """Kernels loaded into a worker are never unloaded: past max_rss_gb after a call, the next call gets a
    fresh process (the answer of the call itself is kept)."""
    w = Worker(max_rss_gb=1e-6)  # every Python process is past 1 KiB
    pids = [w.call(os.getpid, timeout=60) for _ in range(3)]
    assert len(set(pids)) == 3 and w.replaced == 3
    keep = Worker()  # the default limit (GBs): one process
    assert keep.call(os.getpid, timeout=60) == keep.call(os.getpid, timeout=60) and keep.replaced == 0
    keep.close()


def test_workers_pin_the_allocator_so_a_kernel_faults_its_buffers_in_once():
    """glibc's adaptive malloc thresholds made a kernel's page faults depend on what its worker ran before
    (camera_pipe: 17 against 50 ms for one schedule). Pinned (the default), buffers under 32 MiB come back from a
    heap that is never trimmed; adaptive, the same buffers are faulted in again at every call."""
    pinned, adaptive = Worker(), Worker(allocator="adaptive")
    page = os.sysconf("SC_PAGE_SIZE")
    refaults = 3 * (12 << 20) // page  # every page of the three buffers
    assert pinned.call(wt.refaulted_pages, timeout=60) < 0.05 * refaults
    assert adaptive.call(wt.refaulted_pages, timeout=60) > 0.9 * refaults
    pinned.close()
    adaptive.close()


def test_allocator_settings_name_what_to_fix_and_keep_the_callers_own():
    from backends.worker import AllocatorError, allocator_tunables

    with pytest.raises(AllocatorError, match="unknown worker allocator 'jemalloc'; use one of pinned, adaptive"):
        Worker(allocator="jemalloc")
    assert allocator_tunables("pinned").startswith("glibc.malloc.mmap_threshold=33554432:")
    assert allocator_tunables("pinned", "glibc.cpu.hwcaps=-AVX2") == (allocator_tunables("pinned")
                                                                       + ":glibc.cpu.hwcaps=-AVX2")
    own = "glibc.malloc.trim_threshold=0"
    assert allocator_tunables("pinned", own) == own  # the caller's malloc settings win
    assert allocator_tunables("adaptive", "") == ""


def test_a_worker_that_crashed_hung_or_was_replaced_leaves_no_pipe_open():
    """Each ended worker process used to leave our ends of its two pipes open until the collector found them
    (ResourceWarning: unclosed file): a long evaluation replaces workers hundreds of times."""
    import gc
    import warnings

    w, limited = Worker(), Worker(max_rss_gb=1e-6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(WorkerCrashed):
            w.call(wt.abort_now, timeout=60)
        with pytest.raises(WorkerTimeout):
            w.call(wt.sleep_forever, timeout=1)
        pids = [limited.call(os.getpid, timeout=60) for _ in range(2)]
        assert w.call(wt.add, 1, 1, timeout=60) == 2
        w.close()
        limited.close()
        gc.collect()
    assert len(set(pids)) == 2
    assert [str(c.message) for c in caught if issubclass(c.category, ResourceWarning)] == []


def test_measurement_reports_protocol_statistics():
    p = blur_pipeline((256, 256))
    inputs = p.random_inputs(0)
    m = backends.measure(backends.compile(p, simple_schedule(p)), inputs, Protocol(max_seconds=0.5))
    assert m.status == "ok"
    assert 0 < m.min_s <= m.median_s
    assert m.samples >= 3 and m.iterations >= m.samples and m.spread >= 0
    assert m.compile_s >= 0


# -- kernels and the cache -----------------------------------------------------------------------


def test_kernel_rejects_bad_inputs_with_one_line_errors():
    p = blur_pipeline()
    k = backends.compile(p, naive_schedule(p))
    with pytest.raises(SchedlabError, match=r"input inp must be a float32 array of shape \(66, 50\)") as e:
        k(np.zeros((64, 48), np.float32))
    assert "\n" not in str(e.value)
    with pytest.raises(SchedlabError, match="missing input inp"):
        k({})
    with pytest.raises(SchedlabError, match="not an input"):
        k(inp=np.zeros((66, 50), np.float32), other=1)


def test_compiled_code_is_cached_by_content():
    p = blur_pipeline((48, 40))
    ln = simple_schedule(p)
    k1 = backends.compile(p, ln)
    k2 = backends.compile(Pipeline.from_json(p.to_json()), ln)
    assert k1.path == k2.path
    index = list(k1.path.parent.glob(f"__pycache__/{k1.path.stem}*.nbi"))
    assert index, "numba's on-disk cache index is next to the generated module"


def test_outputs_larger_than_their_size_are_cropped():
    """An output also read by another Func is computed over more than its size and copied out."""
    inp = Input("inp", f32, 1)
    a, b = Func("a"), Func("b")
    a[x] = inp[x] * 2
    b[x] = a[x - 1] + a[x + 1]
    p = Pipeline([a, b], {a: (10,), b: (10,)})
    inputs = p.random_inputs(0)
    want = interpret(p, inputs)
    got = backends.compile(p, naive_schedule(p))(inputs)
    assert got["a"].shape == (10,) and np.array_equal(got["a"], want["a"])
    assert np.array_equal(got["b"], want["b"])


def test_numba_backend_refuses_gpu_targets():
    p = blur_pipeline()
    with pytest.raises(CompileError, match="v100 is a cuda target"):
        backends.compile(p, naive_schedule(p), "v100")


_ORPHANING_PARENT = """
import os, sys, threading, time
sys.path.insert(0, sys.argv[1])
from backends.worker import Worker
from tests import worker_targets as wt
w = Worker()
w.call(wt.add, 1, 2)  # the worker is up
print(w._proc.pid, flush=True)
threading.Thread(target=w.call, args=(wt.sleep_forever,), daemon=True).start()
time.sleep(1.0)
os._exit(0)  # dies mid-call, as a killed job or a shut-down Ray worker does
"""


@pytest.mark.parametrize("thread", ["main", "other"])
def test_a_worker_whose_parent_dies_mid_call_exits_too(thread):
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    script = _ORPHANING_PARENT
    if thread == "other":  # the worker started from a thread: the watcher thread has to notice
        script = script.replace("w = Worker()\nw.call(wt.add, 1, 2)",
                                "w = Worker()\nt = threading.Thread(target=w.call, args=(wt.add, 1, 2)); t.start(); t.join()")
    r = subprocess.run([sys.executable, "-c", script, root], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    child = int(r.stdout.split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(child, 9)
    pytest.fail(f"worker {child} outlived its parent by 10 s")


# -- the Backend registry, the one measurement path, protocols and statuses ------------------------------


@dataclasses.dataclass(frozen=True)
class InterpretSpec:
    """The toy backend's kernel in the worker: ir.interpret on the flat arrays the harness passes."""

    pipeline: Pipeline

    def runner(self):
        p = self.pipeline

        def run(inputs, outputs):
            shaped = {i.name: inputs[i.name].reshape(tuple(e for _, e in p.input_regions[i.name]), order="F")
                      for i in p.inputs}
            for name, a in interpret(p, shaped).items():
                outputs[name][:] = a.ravel(order="F")

        return run


@backends.register_backend("interpret")  # the one registration line
class InterpretBackend(backends.Backend):
    """A toy backend: one class, one registration line; its kernels run the reference interpreter."""

    def build(self, pipeline, loopnest, target, *, timeout=600.0, worker=None, isolate=True):
        from ir.plan import Plan

        Plan(pipeline.dag, loopnest, target)  # an invalid schedule is refused as by every backend
        k = backends.Kernel(pipeline, loopnest, target, self.name, compile_s=0.0)
        k.spec = InterpretSpec(pipeline)
        return k


def test_backend_registry_lookup_and_unknown_name():
    assert isinstance(backends.get_backend("numba"), backends.Backend)
    assert backends.get_backend("numba").name == "numba" and {"numba", "halide"} <= set(backends.backend_names())
    with pytest.raises(CompileError, match=r"unknown backend 'tvm'; available: (\w+, )*halide, (\w+, )*numba") as e:
        backends.get_backend("tvm")
    assert "\n" not in str(e.value)
    p = blur_pipeline()
    with pytest.raises(CompileError, match="unknown backend 'tvm'"):
        backends.compile(p, naive_schedule(p), backend="tvm")
    with pytest.raises(CompileError, match="unknown backend 'tvm'"):  # a wrong name raises, a bad sample does not
        backends.measure_many([backends.MeasureInput(p, naive_schedule(p), p.random_inputs(0))], backend="tvm")


def test_a_backend_whose_package_is_missing_says_to_install_the_extra(monkeypatch):
    from backends import base

    monkeypatch.setitem(base._LAZY, "fancy", ("backends.fancy", "no_such_package_schedlab", "fancy"))
    with pytest.raises(CompileError, match=r"fancy backend needs the no_such_package_schedlab package: "
                                           r"pip install schedlab\[fancy\]"):
        backends.get_backend("fancy")


def test_a_toy_backend_is_built_and_run_through_measure_many():
    p = blur_pipeline((24, 16))
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    bad = naive_schedule(p).replace(children=naive_schedule(p).children[::-1])
    wrong = {k: v + 1 for k, v in expected.items()}
    items = [backends.MeasureInput(p, naive_schedule(p), inputs, expected),
             backends.MeasureInput(p, bad, inputs, expected),
             backends.MeasureInput(p, simple_schedule(p), inputs, wrong)]
    seen = []
    ms = backends.measure_many(items, backend="interpret", protocol="check", progress=lambda i, m: seen.append(i))
    assert [m.status for m in ms] == ["ok", "invalid_schedule", "wrong_output"], [m.error for m in ms]
    assert ms[0].min_s > 0 and seen == [0, 1, 2]
    k = backends.compile(p, naive_schedule(p), backend="interpret")  # the raising single-item API dispatches too
    assert k.backend == "interpret" and backends.measure(k, inputs, "check", expected=expected).ok


def test_a_backend_refuses_a_target_kind_it_does_not_build_for():
    p = blur_pipeline()
    with pytest.raises(CompileError, match="the interpret backend compiles for cpu targets; v100 is a cuda target"):
        backends.compile(p, naive_schedule(p), "v100", backend="interpret")
    built = backends.build(p, naive_schedule(p), "v100")
    assert built.kernel is None and built.status == "compile_error" and "numba backend" in built.error


def test_measure_many_gives_every_sample_a_status(tmp_path, monkeypatch):
    """Real numba: an ok sample, an invalid schedule, a module that fails to compile and a wrong output, in
    order, none raising. The failing module is a broken file where the content-addressed cache looks."""
    from backends.numba.codegen import generate
    from backends.numba.compiler import module_path
    from ir.plan import Plan

    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))
    p, q = blur_pipeline((24, 16)), blur_pipeline((20, 12))
    module_path(generate(Plan(q.dag, naive_schedule(q)))).write_text("def broken(:\n")
    bad = naive_schedule(p).replace(children=naive_schedule(p).children[::-1])
    pin, qin = p.random_inputs(0), q.random_inputs(0)
    want = interpret(p, pin)
    items = [backends.MeasureInput(p, simple_schedule(p), pin, want),
             backends.MeasureInput(p, bad, pin, want),
             backends.MeasureInput(q, naive_schedule(q), qin, interpret(q, qin)),
             backends.MeasureInput(p, naive_schedule(p), pin, {k: v * 2 + 1 for k, v in want.items()})]
    w = Worker()
    ms = backends.measure_many(items, protocol="check", worker=w)
    w.close()
    assert [m.status for m in ms] == ["ok", "invalid_schedule", "compile_error", "wrong_output"], [m.error for m in ms]
    assert "SyntaxError" in ms[2].error and "before" in ms[1].error
    assert ms[0].compile_s >= 0 and np.isnan(ms[1].compile_s)
    built = backends.build(q, naive_schedule(q))
    assert built.status == "compile_error" and backends.run(built, qin, "check").status == "compile_error"


def test_protocols_are_named_once():
    from backends.protocols import CHECK, FULL, FULL_ORDERED, FULL_RETIRE, QUICK

    assert backends.PROTOCOLS == {"quick": QUICK, "full": FULL, "check": CHECK, "full-retire": FULL_RETIRE,
                                  "full-ordered": FULL_ORDERED}
    assert backends.get_protocol("default") is FULL  # the old name, still accepted in configs
    from typing import get_args

    from backends.protocols import DEPRECATED, ProtocolName

    assert set(get_args(ProtocolName)) == set(backends.PROTOCOLS) | set(DEPRECATED)  # what every config accepts
    assert backends.get_protocol(QUICK) is QUICK and CHECK.max_samples == 1
    with pytest.raises(SchedlabError, match="unknown protocol 'slow'; use one of quick, full, check, full-retire, full-ordered"):
        backends.get_protocol("slow")
    p = blur_pipeline()
    with pytest.raises(SchedlabError, match="unknown protocol 'slow'"):
        backends.measure_many([backends.MeasureInput(p, naive_schedule(p), p.random_inputs(0))], protocol="slow")


def test_one_status_vocabulary():
    from ir.status import MEANING, STATUSES, Status

    assert STATUSES == ("ok", "compile_error", "runtime_error", "crash", "timeout", "wrong_output",
                        "invalid_schedule", "worker_died", "no_gpu")
    assert all(MEANING[s] for s in STATUSES) and Status.WORKER_DIED == "worker_died"
    from generator.job.driver import WORKER_DIED

    assert WORKER_DIED is Status.WORKER_DIED


def test_configs_naming_the_old_default_protocol_still_load(tmp_path):
    from evaluate.config import AppsConfig
    from generator.job.config import JobConfig
    from ir.config import load_config

    (tmp_path / "c.yaml").write_text("protocol: default\n")
    for cls in (AppsConfig, JobConfig):
        cfg = load_config(cls, tmp_path / "c.yaml")
        assert cfg.protocol == "default" and backends.get_protocol(cfg.protocol) is backends.PROTOCOLS["full"]
        assert load_config(cls, None, ["protocol=check"]).protocol == "check"


def test_the_time_cap_never_cuts_sampling_below_min_samples():
    """The spread is best vs third best: a slow kernel on a loaded machine still gets min_samples samples
    (the whole measurement stays bounded by the protocol's timeout in the worker)."""
    import time as _time

    from backends.timing import time_callable

    best, med, spread, samples, iters = time_callable(lambda: _time.sleep(0.002),
                                                      Protocol(warmup=0, min_samples=4, max_seconds=0.0))
    assert samples == 4 and iters >= samples and 0 < best <= med and spread >= 0
