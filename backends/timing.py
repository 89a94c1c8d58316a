"""Benchmarking a kernel under the measurement protocol, checked against expected outputs.

The timing loop runs in the worker process; the parent only sees a `Measurement`, whatever happens
inside (an exception, a crash, a hang).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from statistics import median

import numpy as np

from ir.errors import first_line

from .kernel import Kernel, Measurement, Protocol, aligned_empty
from ir.status import Status


def settled(samples: list[float], protocol: Protocol) -> bool:
    """The protocol's stopping test for one kernel: at least `min_samples` samples, the best and third best within
    `accuracy` of each other."""
    if len(samples) < protocol.min_samples:
        return False
    s = sorted(samples)
    return s[2] <= s[0] * (1 + protocol.accuracy)


def _summary(samples: list[float], calls: int) -> tuple[float, float, float, int, int]:
    """(best, median, spread, samples, calls) of one function's per-run times: the spread is the third best over
    the best, minus one (the second best's, or 0, with fewer samples)."""
    s = sorted(samples)
    third = s[min(2, len(s) - 1)]
    return s[0], median(s), third / s[0] - 1 if s[0] > 0 else math.nan, len(s), calls


def _bounds(samples: list[float], protocol: Protocol) -> tuple[float, float]:
    """(low, best) of one kernel: its best sample, and how much lower more samples might still take it, going by
    its own spread plus `accuracy`."""
    best, _, spread, _, _ = _summary(samples, 0)
    return best / (1 + spread + protocol.accuracy) if best > 0 else 0.0, best


def ordered(samples: list[list[float]], protocol: Protocol) -> list[bool]:
    """For each kernel of a block timed in rounds, whether its order with every other kernel is settled: their
    ranges (`_bounds`) do not overlap, or both kernels have settled in their own right (a near-tie that further
    rounds would not order). A label is a schedule's place in its pipeline's order: pairs far apart are ordered
    after a few rounds, and only near neighbours need the rest."""
    bounds = [_bounds(x, protocol) for x in samples]
    own = [settled(x, protocol) for x in samples]
    out = []
    for i, (lo, best) in enumerate(bounds):
        ok = True
        for j, (lo_j, best_j) in enumerate(bounds):
            if j != i and not (lo > best_j or lo_j > best or (own[i] and own[j])):
                ok = False
                break
        out.append(ok)
    return out


def time_callable(fn, protocol: Protocol) -> tuple[float, float, float, int, int]:
    """(best, median, spread, samples, iterations) of per-run times of fn()."""
    for _ in range(protocol.warmup):
        fn()
    iters = 1
    while True:  # calibrate: a sample must last long enough for the clock
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        dt = time.perf_counter() - t0
        if dt >= protocol.sample_seconds or iters >= 1 << 16:
            break
        iters *= 2
    samples = [dt / iters]
    total = iters
    start = time.perf_counter()
    while len(samples) < protocol.max_samples:
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        samples.append((time.perf_counter() - t0) / iters)
        total += iters
        elapsed = time.perf_counter() - start
        if settled(samples, protocol) and elapsed >= protocol.min_seconds:
            break
        if elapsed >= protocol.max_seconds and len(samples) >= protocol.min_samples:
            break  # the cap ends sampling, but never below min_samples: the spread is best vs third best
    return _summary(samples, total)


# a function whose one run, timed before, lasted this many times a sample's `sample_seconds` needs no calibration run:
# one call per sample, whatever a cold first run took beyond a warm one (a Halide kernel's check run also lays out its
# padded inputs, which its timed calls do once beforehand: a call is never shorter than the timer needs, at worst a
# sample under `sample_seconds`)
CALIBRATED_FACTOR = 10


def time_interleaved(fns: list, protocol: Protocol, seed: int = 0,
                     run_seconds: list[float] | None = None) -> list[tuple[float, float, float, int, int]]:
    """(best, median, spread, samples, iterations) of each of fns, timed in rounds: every round takes one sample
    of every function, in a fresh random order. Functions measured one after another see different states of the
    machine (a neighbour's load, the clock, the memory traffic of the last kernel); measured in rounds, each sees
    the same mix, so their order is what repeats (a pipeline's schedules are labels for their order). Sampling ends
    when every function's best and third best samples agree within `accuracy` and `min_seconds` per function have
    passed, or after `max_seconds` per function (the sequential protocol's budget) or `max_rounds` rounds. With
    `protocol.retire_settled` a function leaves the rounds as soon as its own samples agree so and add up to
    `min_seconds`: the others go on, in rounds of those left; with `protocol.retire_ordered` a function leaves
    them once its order with every other function is settled (`ordered`) and its samples add up to `min_seconds`.
    `run_seconds`: how long one run of each function took before (its output check); those of at least
    CALIBRATED_FACTOR samples' length take one call per sample without a calibration run."""
    import random

    n = len(fns)
    if n == 0:
        return []
    for _ in range(protocol.warmup):
        for fn in fns:
            fn()
    iters = []
    for i, fn in enumerate(fns):  # calibrate each: a sample must last long enough for the clock
        k = 1
        if run_seconds is not None and run_seconds[i] >= CALIBRATED_FACTOR * protocol.sample_seconds:
            iters.append(k)
            continue
        while True:
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            if time.perf_counter() - t0 >= protocol.sample_seconds or k >= 1 << 16:
                break
            k *= 2
        iters.append(k)
    samples: list[list[float]] = [[] for _ in fns]
    order = list(range(n))
    rng = random.Random(seed)
    start = time.perf_counter()
    rounds = 0
    while order:
        rng.shuffle(order)
        for i in order:
            fn, k = fns[i], iters[i]
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            samples[i].append((time.perf_counter() - t0) / k)
        rounds += 1
        elapsed = time.perf_counter() - start
        if rounds >= protocol.min_samples:
            if elapsed >= protocol.max_seconds * n or rounds >= min(protocol.max_rounds, protocol.max_samples):
                break
            if protocol.retire_ordered or protocol.retire_settled:
                done = ordered(samples, protocol) if protocol.retire_ordered else \
                    [settled(x, protocol) for x in samples]
                order = [i for i in order if not (done[i] and sum(samples[i]) * iters[i] >= protocol.min_seconds)]
            elif elapsed >= protocol.min_seconds * n and all(settled(x, protocol) for x in samples):
                break
    return [_summary(x, k * len(x)) for x, k in zip(samples, iters)]


def compare_outputs(types: dict, got: dict[str, np.ndarray], expected: dict[str, np.ndarray],
                    rtol: float = 1e-5, atol: float = 1e-6) -> str | None:
    """None if outputs match (bit-exact for integers and bools, tight tolerance for floats), else why."""
    for name, want in expected.items():
        have = got[name]
        if have.shape != want.shape:
            return f"{name}: shape {have.shape}, expected {want.shape}"
        t = types[name]
        if t.is_float:
            if np.array_equal(have, want):  # the common case, bit for bit, in one pass: 8 ms against isclose's 94 on
                continue  # a 2000 x 2000 x 3 f32 output, for each kernel of a block inside its quiet spell
            ok = np.isclose(have, want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = have == want
        if not ok.all():
            bad = np.argwhere(~ok)
            first = tuple(int(i) for i in bad[0])
            return (f"{name}: {len(bad)} of {want.size} values differ; first at {first}: got {have[first]!r}, "
                    f"expected {want[first]!r}")
    return None


def _load_and_check(spec, output_meta: dict, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
                    expected: dict[str, np.ndarray] | None, types: dict | None):
    """(runner, None, seconds of its run) for a kernel that loads, runs once into `outputs` and matches `expected`,
    else (None, its Measurement, nan). That run is the protocol's first warm-up: same buffers, pages touched, thread
    pool started."""
    try:
        run = spec.runner()
    except Exception as e:  # noqa: BLE001 - a failing compile is a status
        return None, Measurement(Status.COMPILE_ERROR, error=f"{type(e).__name__}: {first_line(e)}"), math.nan
    try:
        t0 = time.perf_counter()
        run(inputs, outputs)
        seconds = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        return None, Measurement(Status.RUNTIME_ERROR, error=f"{type(e).__name__}: {first_line(e)}"), math.nan
    if expected is not None:
        shaped = {n: outputs[n].reshape(shape, order="F") for n, (_, _, shape) in output_meta.items()}
        why = compare_outputs(types or {}, shaped, expected)
        if why is not None:
            return None, Measurement(Status.WRONG_OUTPUT, error=why), math.nan
    return run, None, seconds


def _timed(run, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray], shared: dict | None = None):
    """The no-argument call that is timed. A runner that lays its inputs out its own way (a Halide kernel's Inputs
    padded to the region it reads, backends.halide.aot.Runner) does so once here, not in every timed call; kernels
    timed together pass one `shared` dict, so that they share the copies that agree."""
    prepare = getattr(run, "prepare", None)
    if prepare is not None:
        inputs = prepare(inputs, outputs, shared)
    return lambda: run(inputs, outputs)


def run_measurement(spec, output_meta: dict, inputs: dict[str, np.ndarray], protocol: Protocol,
                    expected: dict[str, np.ndarray] | None, types: dict | None) -> Measurement:
    """Runs in the worker: load the kernel, check its output, time it."""
    outputs = {n: aligned_empty(size, dtype) for n, (size, dtype, _) in output_meta.items()}
    run, failed, _ = _load_and_check(spec, output_meta, inputs, outputs, expected, types)
    if failed is not None:
        return failed
    # the check run was the first warm-up: a long kernel would otherwise run once more for nothing (0.1-0.5 s a
    # sample at data-generation sizes)
    warm = replace(protocol, warmup=max(0, protocol.warmup - 1))
    best, med, spread, samples, iters = time_callable(_timed(run, inputs, outputs), warm)
    return Measurement(Status.OK, best, med, spread, samples, iters)


def run_interleaved_measurement(specs: list, output_meta: dict, inputs: dict[str, np.ndarray], protocol: Protocol,
                                expected: dict[str, np.ndarray] | None, types: dict | None,
                                seed: int = 0) -> list[Measurement]:
    """Runs in the worker: load and check each kernel of one pipeline, then time those that pass together in
    rounds (time_interleaved). They write one set of output buffers, so each runs on the same memory."""
    outputs = {n: aligned_empty(size, dtype) for n, (size, dtype, _) in output_meta.items()}
    out: list[Measurement | None] = []
    runs, seconds = [], []
    for spec in specs:
        run, failed, s = _load_and_check(spec, output_meta, inputs, outputs, expected, types)
        out.append(failed)
        if run is not None:
            runs.append(run)
            seconds.append(s)
    warm = replace(protocol, warmup=max(0, protocol.warmup - 1))
    shared: dict = {}  # padded Inputs, one copy per array and bounds for all the block's kernels
    # the check run's time sizes a long kernel's samples: no calibration run (a tenth of a 5-round kernel's time)
    timed = iter(time_interleaved([_timed(run, inputs, outputs, shared) for run in runs], warm, seed, seconds))
    return [m if m is not None else Measurement(Status.OK, *next(timed)) for m in out]


def _worker_args(kernel: Kernel, inputs, expected, data_key: str | None):
    """(inputs by the pipeline's names, output sizes and dtypes, output types, expected outputs) for a measurement
    function in the worker; with `data_key`, the inputs and expected outputs as worker.Keep, which a worker process
    receives once and keeps for the next kernel of the same data."""
    from .worker import Keep

    p = kernel.pipeline
    bound = kernel.bind_inputs((inputs,), {}) if isinstance(inputs, dict) else kernel.bind_inputs(tuple(inputs), {})
    meta = {o.name: (math.prod(p.output_sizes[o.name]), o.type.dtype, p.output_sizes[o.name]) for o in p.outputs}
    types = {o.name: o.type for o in p.outputs}
    if data_key is not None:
        bound = Keep(f"{data_key}:inputs", bound)
        if expected is not None:
            expected = Keep(f"{data_key}:expected", expected)
    return bound, meta, types, expected


def measure_kernel(kernel: Kernel, inputs, protocol: Protocol | None = None, expected=None,
                   worker=None, isolate: bool = True, measure=None, data_key: str | None = None) -> Measurement:
    """`measure(kernel.spec, output_meta, inputs, protocol, expected, types)` (default run_measurement: host
    kernels timed by the wall clock) in the worker process; every failure of the process is a status. With
    `data_key`, the process keeps the inputs and expected outputs (worker.Keep) for the next kernel on them."""
    from .worker import RemoteError, WorkerCrashed, WorkerTimeout, default_worker

    protocol = protocol or Protocol()
    bound, meta, types, expected = _worker_args(kernel, inputs, expected, data_key if isolate else None)
    spec = kernel.spec  # type: ignore[attr-defined]
    measure = measure or run_measurement
    if not isolate:
        m = measure(spec, meta, bound, protocol, expected, types)
    else:
        w = worker or default_worker()
        try:
            m = w.call(measure, spec, meta, bound, protocol, expected, types, timeout=protocol.timeout)
        except WorkerTimeout as e:
            m = Measurement(Status.TIMEOUT, error=str(e))
        except WorkerCrashed as e:
            m = Measurement(Status.CRASH, error=str(e))
        except RemoteError as e:
            m = Measurement(Status.RUNTIME_ERROR, error=str(e))
    m.compile_s = kernel.compile_s
    return m


def measure_kernels_interleaved(kernels: list[Kernel], inputs, protocol: Protocol | None = None, expected=None,
                                worker=None, isolate: bool = True, data_key: str | None = None,
                                seed: int = 0) -> list[Measurement] | None:
    """run_interleaved_measurement of kernels of one pipeline in the worker process; None when the process failed
    (a kernel crashed or hung it): the caller then measures them one at a time, which names the culprit. The whole
    block gets one measurement's `timeout` plus the protocol's time budget and two seconds per kernel."""
    from .worker import RemoteError, WorkerCrashed, WorkerTimeout, default_worker

    protocol = protocol or Protocol()
    if not kernels:
        return []
    p = kernels[0].pipeline
    if any(k.pipeline is not p and k.pipeline.fingerprint != p.fingerprint for k in kernels):
        raise ValueError("kernels measured together must be schedules of one pipeline")
    bound, meta, types, expected = _worker_args(kernels[0], inputs, expected, data_key if isolate else None)
    specs = [k.spec for k in kernels]  # type: ignore[attr-defined]
    if not isolate:
        ms = run_interleaved_measurement(specs, meta, bound, protocol, expected, types, seed)
    else:
        w = worker or default_worker()
        timeout = protocol.timeout + len(kernels) * (protocol.max_seconds + 2.0)
        try:
            ms = w.call(run_interleaved_measurement, specs, meta, bound, protocol, expected, types, seed,
                        timeout=timeout)
        except (WorkerTimeout, WorkerCrashed, RemoteError):
            return None
    for m, k in zip(ms, kernels):
        m.compile_s = k.compile_s
    return ms
