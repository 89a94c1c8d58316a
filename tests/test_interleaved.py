"""Interleaved measurement: a pipeline's schedules timed together in rounds (backends.timing.time_interleaved,
backends.run_interleaved), the data job's default way of labelling a batch."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

import backends
from backends import Protocol
from backends.timing import compare_outputs, ordered, time_interleaved
from backends.worker import Worker
from generator.batch import BatchSpec
from generator.job.config import JobConfig
from ir import interpret
from ir.builder import naive_schedule
from ir.sampling import random_schedule

from . import worker_targets as wt
from .test_backend import blur_pipeline

ROOT = Path(__file__).resolve().parent.parent
FEW_ROUNDS = Protocol(warmup=0, min_samples=5, max_samples=5, accuracy=0.0, min_seconds=0, max_seconds=60,
                      sample_seconds=0, timeout=120)


def test_every_round_samples_every_function_once_in_a_fresh_order():
    calls: list[int] = []

    def sleeper(i: int):
        def fn():
            calls.append(i)
            time.sleep(0.002 * (i + 1))

        return fn

    fns = [sleeper(i) for i in range(4)]
    out = time_interleaved(fns, FEW_ROUNDS, seed=3)
    calibration, timed = calls[:4], calls[4:]
    assert calibration == [0, 1, 2, 3]  # one calibration run each (a run of >= 0 s is long enough)
    rounds = [timed[k:k + 4] for k in range(0, len(timed), 4)]
    assert len(rounds) == 5 and all(sorted(r) == [0, 1, 2, 3] for r in rounds), rounds
    assert len({tuple(r) for r in rounds}) > 1, "the order is drawn afresh every round"
    assert [samples for _, _, _, samples, _ in out] == [5] * 4
    best = [b for b, _, _, _, _ in out]
    assert best == sorted(best), best  # 2, 4, 6, 8 ms sleeps: a sleep only ever runs long
    assert all(b >= 0.002 * (i + 1) for i, b in enumerate(best))


def test_a_function_whose_earlier_run_was_long_takes_no_calibration_run():
    calls: list[int] = []

    def counted(i: int, seconds: float):
        def fn():
            calls.append(i)
            time.sleep(seconds)

        return fn

    protocol = dataclasses.replace(FEW_ROUNDS, sample_seconds=0.001)  # runs of >= 10 ms need no calibration
    out = time_interleaved([counted(0, 0.002), counted(1, 0.002), counted(2, 0)], protocol,
                           run_seconds=[0.05, 0.002, 0.0])
    assert calls.count(0) == 5, "timed before at 50 ms: one call per sample, no calibration run"
    assert calls.count(1) == 6, "timed before at 2 ms: one calibration run, then one call per sample"
    assert out[2][4] > 5, "a no-op is calibrated to several calls a sample"
    assert [samples for _, _, _, samples, _ in out] == [5, 5, 5] and out[0][4] == out[1][4] == 5


def test_rounds_stop_once_every_function_agrees_with_itself():
    fast = Protocol(warmup=0, min_samples=3, max_samples=1000, accuracy=10.0, min_seconds=0, max_seconds=60,
                    sample_seconds=0)
    # sleeps, not a no-op: a ~100 ns call's samples differ by more than 11x whenever the machine is busy
    out = time_interleaved([lambda: time.sleep(0.001), lambda: time.sleep(0.002)], fast)
    assert [samples for _, _, _, samples, _ in out] == [3, 3]  # within 1000 % after the minimum: done
    never = dataclasses.replace(fast, accuracy=-1.0, max_rounds=7)  # no two samples agree within -100 %
    out = time_interleaved([lambda: None, lambda: time.sleep(0.001)], never)
    assert [samples for _, _, _, samples, _ in out] == [7, 7]  # max_rounds ends it, not max_samples


def _wobbly():
    """A function whose best sample stays far below all its others (its second run is 1 ms, every other 20 ms): its
    best and third best never agree within 50 %, even where a busy machine makes the 1 ms sleep last several."""
    calls = iter(range(1 << 30))
    return lambda: time.sleep(0.001 if next(calls) == 1 else 0.02)


def _logged_sleep(seconds: float, log: list[float]):
    """time.sleep(seconds), each call's own duration appended to `log`."""
    def fn():
        t0 = time.perf_counter()
        time.sleep(seconds)
        log.append(time.perf_counter() - t0)
    return fn


def test_a_settled_function_retires_and_the_others_go_on():
    retire = Protocol(warmup=0, min_samples=3, max_samples=1000, accuracy=0.5, min_seconds=0, max_seconds=60,
                      sample_seconds=0, max_rounds=12, retire_settled=True)
    out = time_interleaved([lambda: time.sleep(0.002), _wobbly()], retire)
    steady, wobbly = (samples for _, _, _, samples, _ in out)
    assert wobbly == 12, "an unsettled function runs to max_rounds"
    assert 3 <= steady < 12, steady  # 2 ms sleeps agree within 50 % within a few rounds
    # without retiring, every function samples every round until all have settled
    out = time_interleaved([lambda: time.sleep(0.002), _wobbly()], dataclasses.replace(retire, retire_settled=False))
    assert [samples for _, _, _, samples, _ in out] == [12, 12]
    # min_seconds is each function's own: a settled 2 ms function stays until its samples add up to 12 ms (a sleep
    # runs long, so that may take fewer than 6), then retires; each sample times one call, which lasts what it logs
    calls: list[float] = []
    out = time_interleaved([_logged_sleep(0.002, calls), _wobbly()], dataclasses.replace(retire, min_seconds=0.012))
    timed = calls[1:]  # after the one calibration run
    assert len(timed) == out[0][3] < 12 and out[1][3] == 12, [o[3] for o in out]
    assert sum(timed) >= 0.012 - 1e-4 * len(timed), timed  # the clock calls around each sample: well under 0.1 ms


def test_the_full_retire_protocol_is_full_with_retiring():
    full, retire = backends.get_protocol("full"), backends.get_protocol("full-retire")
    assert retire.retire_settled and not full.retire_settled
    assert dataclasses.replace(retire, retire_settled=False) == full
    assert JobConfig(protocol="full-retire").protocol == "full-retire"


def test_a_kernel_is_ordered_once_its_range_is_apart_from_every_other_or_both_have_settled():
    p = Protocol(min_samples=3, accuracy=0.03)
    steady, far = [1.0, 1.0, 1.0], [2.0, 2.1, 2.0]
    near_unsettled = [1.02, 1.2, 1.3]  # its third best is 27 % above its best: it may still fall below 1.0
    assert ordered([steady, far, near_unsettled], p) == [False, True, False]
    near_settled = [1.02, 1.03, 1.04]  # within 3 % of itself: a near-tie of `steady` no rounds would order
    assert ordered([steady, far, near_settled], p) == [True, True, True]
    # a range is the best sample down to best / (third / best + accuracy): an unsettled 1.0 (10 % spread) and a
    # settled 1.02 (which may yet fall 3 %) overlap; 1.06 may fall only to 1.03, above the other's best
    assert ordered([[1.0, 1.1, 1.1], [1.02, 1.02, 1.02]], p) == [False, False]
    assert ordered([[1.0, 1.1, 1.1], [1.06, 1.06, 1.06]], p) == [True, True]
    assert ordered([[1.0, 1.1, 1.1], [1.2, 1.2, 1.2]], p) == [True, True]


def _uneven(best: float, rest: float):
    """A function whose first timed sample (its second call) sleeps `best`, every other call `rest`: with rest >
    best by more than the protocol's accuracy, its best and third best never agree."""
    calls = iter(range(1 << 30))
    return lambda: time.sleep(best if next(calls) == 1 else rest)


def test_ordered_kernels_retire_and_unordered_neighbours_go_on():
    protocol = Protocol(warmup=0, min_samples=5, max_samples=1000, accuracy=0.05, min_seconds=0, max_seconds=60,
                        sample_seconds=0, max_rounds=12, retire_ordered=True)
    # a 2 ms sleep is far below two 12-20 ms functions whose ranges overlap and which never settle
    out = time_interleaved([lambda: time.sleep(0.002), _uneven(0.012, 0.02), _uneven(0.0125, 0.02)], protocol)
    assert [samples for _, _, _, samples, _ in out] == [5, 12, 12]
    # two settled near-ties retire together after min_samples rounds (settled within 50 %, even on a busy machine)
    out = time_interleaved([lambda: time.sleep(0.004), lambda: time.sleep(0.00404)],
                           dataclasses.replace(protocol, accuracy=0.5))
    assert [samples for _, _, _, samples, _ in out] == [5, 5]
    # without retiring, every function samples every round
    out = time_interleaved([lambda: time.sleep(0.002), _uneven(0.012, 0.02)],
                           dataclasses.replace(protocol, retire_ordered=False))
    assert [samples for _, _, _, samples, _ in out] == [12, 12]


def test_the_full_ordered_protocol_is_full_with_ordered_retiring_after_five_rounds():
    full, ordered_ = backends.get_protocol("full"), backends.get_protocol("full-ordered")
    assert ordered_.retire_ordered and not ordered_.retire_settled and not full.retire_ordered
    assert dataclasses.replace(ordered_, retire_ordered=False, min_samples=full.min_samples) == full
    assert JobConfig(protocol="full-ordered").protocol == "full-ordered"


def _built(p, n: int):
    lns = [naive_schedule(p)] + [random_schedule(p, seed)[0] for seed in range(1, n)]
    return [backends.build(p, ln, backend="llvm") for ln in lns]


def test_a_block_gives_each_schedule_its_own_status_and_time():
    p = blur_pipeline()
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    builts = _built(p, 3)
    assert all(b.ok for b in builts)
    builts[1].kernel.spec = wt.WrongOutputSpec(builts[1].kernel.spec)
    failed = backends.BuildResult(None, "compile_error", "injected")
    w = Worker()
    ms = backends.run_interleaved([*builts, failed], inputs, FEW_ROUNDS, expected=expected, worker=w)
    assert [m.status for m in ms] == ["ok", "wrong_output", "ok", "compile_error"], [m.error for m in ms]
    assert "values differ" in ms[1].error and ms[3].error == "injected"
    assert all(m.min_s > 0 and m.samples == 5 and m.median_s >= m.min_s for m in (ms[0], ms[2]))
    w.close()


def test_a_kernel_that_kills_the_block_sends_every_schedule_back_to_one_at_a_time():
    p = blur_pipeline()
    inputs = p.random_inputs(0)
    builts = _built(p, 3)
    builts[1].kernel.spec = wt.CrashingSpec()
    w = Worker()
    ms = backends.run_interleaved(builts, inputs, FEW_ROUNDS, expected=interpret(p, inputs), worker=w)
    assert [m.status for m in ms] == ["ok", "crash", "ok"], [m.error for m in ms]
    assert ms[0].min_s > 0 and ms[2].min_s > 0
    w.close()


@pytest.mark.parametrize("backend", ["llvm", "numba", "halide"])
def test_a_compile_tasks_portable_kernel_is_measured_on_its_node_without_a_rebuild(backend):
    """The job's compile task hands back backends.portable(kernel): plain data without the pipeline or LoopNest;
    the benchmarker of its node reattaches them (backends.reattached) and measures it as if it had built it."""
    import pickle

    if backend == "halide":
        pytest.importorskip("halide")
    p = blur_pipeline()
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    lns = [naive_schedule(p), random_schedule(p, 1)[0]]
    builts = [backends.build(p, ln, backend=backend) for ln in lns]
    assert all(b.ok for b in builts), [b.error for b in builts]
    handed = [pickle.loads(pickle.dumps(backends.portable(b.kernel))) for b in builts]  # as Ray carries it
    assert all(k.pipeline is None and k.loopnest is None for k in handed)
    assert all(b.kernel.pipeline is p for b in builts)  # the original is untouched
    again = [backends.reattached(k, p, ln) for k, ln in zip(handed, lns)]
    assert [b.kernel.loopnest for b in again] == lns and all(b.ok and b.kernel.pipeline is p for b in again)
    assert [b.compile_s for b in again] == [b.compile_s for b in builts]
    w = Worker()
    ms = backends.run_interleaved(again, inputs, FEW_ROUNDS, expected=expected, worker=w)
    assert [m.status for m in ms] == ["ok", "ok"], [m.error for m in ms]
    w.close()
    out = again[1].kernel(inputs)  # and in this process, through the reattached kernel's own runner
    assert compare_outputs({o.name: o.type for o in p.outputs}, out, expected) is None


def test_only_schedules_of_one_pipeline_are_timed_together():
    a, b = blur_pipeline(), blur_pipeline((32, 24))
    ka, kb = (backends.build(p, naive_schedule(p), backend="llvm").kernel for p in (a, b))
    with pytest.raises(ValueError, match="schedules of one pipeline"):
        backends.timing.measure_kernels_interleaved([ka, kb], a.random_inputs(0), FEW_ROUNDS)


def test_sequential_batches_keep_their_names_and_interleaved_ones_get_new_ones():
    """The committed datasets were measured one schedule after another under the full protocol: their files are still
    the batches of their generation command with measurement=sequential protocol=full, and neither interleaved labels
    nor labels of the job's default protocol since (full-ordered) overwrite or resume them."""
    data = ROOT / "datasets" / "random-host-halide-avx2" / "target=host"
    cfg = JobConfig(backend="halide", seed=3000, rounds=1, pipelines_per_round=3, contrasts=5,
                    contrast_kinds=("serial", "inline", "compute", "scalar", "rolled"), first_sampler="analytical",
                    naive_runtime=(0.005, 1.0), max_stages=20, output_size=(2000, 2000, 3), measurement="sequential",
                    protocol="full")
    sequential = BatchSpec.of_job(cfg, 0).batch_ids
    assert all((data / f"batch-{i}.parquet").exists() for i in sequential), sequential
    interleaved = BatchSpec.of_job(dataclasses.replace(cfg, measurement="interleaved"), 0).batch_ids
    assert not set(interleaved) & set(sequential)
    ordered = BatchSpec.of_job(dataclasses.replace(cfg, protocol="full-ordered"), 0).batch_ids
    assert not set(ordered) & set(sequential)
    assert JobConfig().measurement == "interleaved" and JobConfig().protocol == "full-ordered"
    with pytest.raises(ValueError, match="measurement must be one of sequential, interleaved"):
        BatchSpec(seeds=(1,), measurement="rounds")


def test_schedules_of_two_cpu_backends_are_timed_in_one_block():
    """evaluate times an app's llvm schedules and their Halide twins together; a kernel that kills the block
    sends each schedule back to the backend that built it, one at a time."""
    pytest.importorskip("halide")
    p = blur_pipeline()
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    lns = [naive_schedule(p), random_schedule(p, 1)[0]]
    builts = [backends.build(p, ln, backend=b) for ln in lns for b in ("llvm", "halide")]
    assert [b.kernel.backend for b in builts] == ["llvm", "halide"] * 2 and all(b.ok for b in builts)
    w = Worker()
    ms = backends.run_interleaved(builts, inputs, FEW_ROUNDS, expected=expected, worker=w)
    assert [m.status for m in ms] == ["ok"] * 4 and all(m.samples == 5 and m.min_s > 0 for m in ms)
    builts[2].kernel.spec = wt.CrashingSpec()
    ms = backends.run_interleaved(builts, inputs, FEW_ROUNDS, expected=expected, worker=w)
    assert [m.status for m in ms] == ["ok", "ok", "crash", "ok"], [m.error for m in ms]
    w.close()


def test_the_measuring_searches_time_their_candidates_together():
    """scheduler.modes.measure_loopnest_results (top-k, autotune, mcts-real, the benchmarks): interleaved by
    default, sequential on request, each schedule its own status in order; another word is one line."""
    from scheduler.modes import measure_loopnest_results

    p = blur_pipeline()
    lns = [naive_schedule(p), random_schedule(p, 1)[0]]
    for measurement in ("interleaved", "sequential"):
        ms = measure_loopnest_results(p, lns, "host", backend="llvm", measurement=measurement)
        assert [m.status for m in ms] == ["ok", "ok"] and all(m.min_s > 0 for m in ms), measurement
    with pytest.raises(ValueError, match="measurement must be interleaved or sequential, got 'rounds'"):
        measure_loopnest_results(p, lns, "host", backend="llvm", measurement="rounds")


def test_outputs_compare_bit_exact_within_float_tolerance_and_name_the_first_difference():
    import numpy as np

    from ir import f32, u16

    rng = np.random.default_rng(0)
    want = rng.random((40, 30, 3)).astype(np.float32)
    want[3, 4, 1] = np.nan
    types = {"o": f32}
    assert compare_outputs(types, {"o": want.copy()}, {"o": want}) is None  # bit for bit, NaN included
    near = want * np.float32(1 + 2e-6)
    assert not np.array_equal(near, want, equal_nan=True)
    assert compare_outputs(types, {"o": near}, {"o": want}) is None  # within rtol 1e-5
    off = want.copy()
    off[7, 2, 0] += 1e-3
    assert compare_outputs(types, {"o": off}, {"o": want}) == (
        f"o: 1 of {want.size} values differ; first at (7, 2, 0): got {off[7, 2, 0]!r}, expected {want[7, 2, 0]!r}")
    ints = rng.integers(0, 65535, (8, 8)).astype(np.uint16)
    bumped = ints.copy()
    bumped[1, 1] ^= 1
    assert compare_outputs({"o": u16}, {"o": ints.copy()}, {"o": ints}) is None
    assert "1 of 64 values differ; first at (1, 1)" in compare_outputs({"o": u16}, {"o": bumped}, {"o": ints})
