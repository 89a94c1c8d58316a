"""The Halide backend against the reference interpreter: apps under their naive and expert schedules,
random pipelines under random schedules, the semantic corner cases, and clear errors. Real Halide
JIT compilation in the worker process (skipped without the `halide` extra)."""

import os

import numpy as np
import pytest

pytest.importorskip("halide")

import backends
from backends import CompileError, Protocol
from generator.apps import get_app
from generator.random_pipeline import random_pipeline
from ir import Func, Input, Pipeline, RDom, Var, cast, clamp, exp, f32, i8, i16, i32, interpret, log, select, sqrt, u8, u32
from ir.builder import naive_schedule
from ir.errors import SchedlabError, ScheduleError
from ir.printer import pipeline_to_str
from ir.sampling import random_schedule
from ir.target import get_target

from .fuzz import CHECK_ONLY

APPS = ("blur", "unsharp", "harris", "hist_eq", "camera_pipe", "local_laplacian", "iir_blur", "conv_layer",
        "bilateral_grid", "matmul")


def check(p, ln, inputs=None, seed=0):
    inputs = inputs if inputs is not None else p.random_inputs(seed)
    expected = interpret(p, inputs)
    k = backends.compile(p, ln, backend="halide")
    m = backends.measure(k, inputs, CHECK_ONLY, expected=expected)
    assert m.status == "ok", m.error
    return k


@pytest.mark.parametrize("name", APPS)
def test_app_naive_and_expert_schedules_match_interpreter(name):
    app = get_app(name)
    p = app.build("small")
    check(p, naive_schedule(p))
    if app.schedule is not None:
        check(p, app.schedule(p, get_target("host")))


@pytest.mark.parametrize("seed", range(8))
def test_random_pipelines_under_random_schedules(seed):
    p = random_pipeline(seed, 8, output_size=(64, 48, 3))
    tgt = get_target("host")
    for s in range(2):
        check(p, random_schedule(p, 1000 * seed + s, tgt)[0], seed=seed)


def test_halide_host_target_has_only_the_x86_features_the_kernel_reports():
    """Halide reads CPUID, which a hypervisor may fill with AVX-512 the guest kernel never enabled: such kernels
    die with SIGILL. The target keeps what /proc/cpuinfo reports, and loses nothing it does."""
    import halide as hl

    from backends.halide.compiler import _X86_FEATURE_FLAGS, halide_host_target
    from ir.target import _cpu_flags

    flags, t = _cpu_flags(), halide_host_target()
    if t.arch != hl.TargetArch.X86 or not flags:
        pytest.skip("not an x86 Linux host")
    for name, need in _X86_FEATURE_FLAGS.items():
        feature = getattr(hl.TargetFeature, name, None)
        if feature is not None and t.has_feature(feature):
            assert all(f in flags for f in need), f"{name} needs {need}"
    for name, flag in (("AVX2", "avx2"), ("FMA", "fma"), ("SSE41", "sse4_1"), ("AVX512", "avx512f")):
        if flag in flags and hl.get_host_target().has_feature(getattr(hl.TargetFeature, name)):
            assert t.has_feature(getattr(hl.TargetFeature, name)), name


def test_integer_and_float_corner_cases_are_schedlab_semantics():
    x = Var("x")
    a, b = Input("a", f32, 1), Input("b", i32, 1)
    fl = Func("fl")
    fl[x] = a[x] / 0.0 + a[x] % 2.5 + exp(a[x] * 100.0) + log(a[x]) + select(a[x] < 1.0, a[x], 3.0)
    ints = Func("ints")
    ints[x] = b[x] * 65537 + b[x] / (b[x] % 3 - 1) + b[x] % -1 + b[x] / -1 + cast(i32, cast(i8, b[x]))
    conv = Func("conv")
    conv[x] = cast(i32, a[x] * 3e9) + cast(i32, cast(u8, a[x] * 300.0)) + cast(i32, cast(i16, a[x] * -1e6))
    p = Pipeline([fl, ints, conv], {fl: (8,), ints: (8,), conv: (8,)})
    inputs = {"a": np.array([3.5, -2.0, 0.0, np.nan, np.inf, -np.inf, 1e-40, 0.7], np.float32),
              "b": np.array([7, -2**31, 2**31 - 1, -5, 0, 1, -1, 3], np.int32)}
    check(p, naive_schedule(p), inputs)


def test_float_le_and_ge_are_false_for_nan_operands():
    """IEEE: a <= b and a >= b are false when either operand is NaN. Halide's simplifier rewrites a >= b as
    !(a < b), true there, even under StrictFloat: random pipeline 7596 with motifs selected on
    1.0 >= sqrt(sqrt(negative)) and every schedule of it was wrong_output until the translation guarded NaN."""
    x = Var("x")
    a, b = Input("a", f32, 1), Input("b", f32, 1)
    cmp = Func("cmp")
    cmp[x] = (select(a[x] >= sqrt(sqrt(b[x])), 1.0, 0.0) + select(a[x] <= b[x], 2.0, 0.0)
              + select(b[x] >= a[x], 4.0, 0.0) + select(sqrt(b[x]) <= a[x], 8.0, 0.0))
    p = Pipeline([cmp], {cmp: (8,)})
    inputs = {"a": np.array([1.0, np.nan, 0.0, 2.0, -np.inf, np.inf, np.nan, 3.0], np.float32),
              "b": np.array([-4.0, 1.0, np.nan, 16.0, -1.0, np.inf, np.nan, 0.5], np.float32)}
    check(p, naive_schedule(p), inputs)


def test_a_divisor_that_becomes_a_constant_zero_in_halide_compiles():
    """A float divisor that is a Func call here and the constant 0.0 once Halide inlines it: Halide's code generator
    refuses a division by constant zero (random pipeline 1080's padded divisor lost every schedule inlining it)."""
    from ir.builder import ScheduleBuilder

    x = Var("x")
    a = Input("a", f32, 1)
    zero, pad = Func("zero"), Func("pad")
    zero[x] = cast(f32, 0.0)
    pad[x] = select(x < 3, a[x], 0.0)  # zero beyond its input's first columns
    q = Func("q")
    q[x] = a[x] / zero[x] + a[x] % zero[x] + cast(f32, cast(i16, a[x] % pad[x])) - a[x] / -zero[x]
    p = Pipeline([q], {q: (16,)})
    b = ScheduleBuilder(p)
    b.root("q", vectorize="x")
    b.inline("zero").inline("pad")
    inputs = {"a": np.array([1.5, -2.0, 0.0, np.nan, np.inf, -np.inf, 3.0, -0.0] * 2, np.float32)}
    check(p, b.build(), inputs)
    check(p, naive_schedule(p), inputs)


def test_a_wrapping_cast_to_i32_keeps_the_clamp_of_the_index_it_makes():
    """Fuzz pair 8280/256687 (`python -m tests.fuzz --backend halide --seed 8000`): max(u32, u32) cast to i32 and
    clamped to [-2, 12] indexes a Func, in a loop vectorized by 4. Halide takes a cast to int32 not to overflow, so
    it dropped the clamp's lower bound from the vector code and from the producers' regions, and a wrapped negative
    index read outside them: the worker died with SIGSEGV. The cast is now wrapped in 64-bit arithmetic whose bounds
    Halide derives."""
    from .fuzz import check as fuzz_check

    outcome, p, _, _ = fuzz_check(8280, 256687, "halide")
    assert "cast(i32" in pipeline_to_str(p)
    assert outcome.status == "ok", outcome.error


def test_outputs_read_by_other_funcs_and_scatters_beyond_the_output():
    x = Var("x")
    img = Input("img", u8, 1)
    hist = Func("hist")
    hist[x] = cast(u32, 0)
    r = RDom((0, 64), name="r")
    hist[clamp(cast(i32, img[r]), 0, 255)] += 1
    cdf = Func("cdf")
    cdf[x] = hist[x] + hist[x + 1]
    p = Pipeline([hist, cdf], {hist: (16,), cdf: (200,)})
    check(p, naive_schedule(p))


def _matmul_with_prod(n: int, prod_is_output: bool):
    """C = 2 A B through prod (a sum over k), n x n; prod is also an output when asked, with a register tile of
    8 x 4 that does not divide n = 10."""
    from ir.builder import ScheduleBuilder, StageSpec

    x, y = Var("x"), Var("y")
    a, b = Input("A", f32, 2), Input("B", f32, 2)
    k = RDom((0, n), name="k")
    prod, c = Func("prod"), Func("C")
    prod[x, y] = 0.0
    prod[x, y] += a[x, k] * b[k, y]
    c[x, y] = prod[x, y] * 2.0
    p = Pipeline([prod, c] if prod_is_output else [c], {**({prod: (n, n)} if prod_is_output else {}), c: (n, n)})
    s = ScheduleBuilder(p)
    s.root("C", vectorize="x", vector_width=8)
    s.root("prod", vectorize="x", vector_width=8,
           stages={1: StageSpec(tiles=[{"x": 8, "y": 4}], vectorize="x", vector_width=8, unroll={"y": 4})})
    return p, s.build()


def _update_tails(p, ln) -> dict[str, list]:
    """The tail strategy the backend gives each first split of an update's pure loops, per Func."""
    from backends.halide import schedule as hs
    from backends.halide.translate import translate
    from ir.plan import Plan

    plan = Plan(p.dag, ln)
    hp = translate(p)
    bounded = hs._bounded_by_outputs(hp, p.dag)
    return {name: [hs._tail(ch, j, 0, name in bounded) for j, l in enumerate(ch.stage.loop) if l.pure]
            for name, fp in plan.funcs.items() if not fp.inlined for ch in fp.chains if ch.stage.index > 0}


def test_a_register_tile_past_a_reductions_region_rounds_up_and_matches_interpreter():
    """prod's 10 x 10 region in tiles of 8 x 4: the update's tails round up (Halide's default for an update's pure
    Vars; a guard there sat inside the k loop, and conv_layer's beam schedule ran 1.5-1.7x slower), and the result
    is the interpreter's. The same reduction as an output keeps the guard: its rounded tail would write past the
    caller's buffer."""
    import halide as hl

    p, ln = _matmul_with_prod(10, prod_is_output=False)
    assert _update_tails(p, ln) == {"prod": [hl.TailStrategy.RoundUp, hl.TailStrategy.RoundUp]}
    check(p, ln)
    q, ln = _matmul_with_prod(10, prod_is_output=True)
    assert _update_tails(q, ln) == {"prod": [hl.TailStrategy.GuardWithIf, hl.TailStrategy.GuardWithIf]}
    check(q, ln)


def test_inputs_read_past_their_region_come_padded_with_their_edges(tmp_path, monkeypatch):
    """prod's rounded-up tail reads A past its 10 columns. The kernel reads Inputs unclamped, so the runner asks it
    (Halide's bounds query) which region of each Input it reads and passes A padded to that, edge values repeated:
    the result is the interpreter's, `prepare` (what a timed loop uses) gives the same bytes, and an input changed
    in place between calls is read afresh (no stale padded copy)."""
    from backends.halide.aot import PaddedInput

    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))
    p, ln = _matmul_with_prod(10, prod_is_output=False)
    k = backends.compile(p, ln, backend="halide", isolate=False)
    inputs = p.random_inputs(4)
    bound = k.bind_inputs((inputs,), {})
    run = k.spec.runner()
    out = {"C": np.zeros(100, np.float32)}
    run(bound, out)
    np.testing.assert_array_equal(out["C"].reshape(10, 10, order="F"), interpret(p, inputs)["C"])
    names = [n for n, _ in run.k.info.inputs]
    a_bounds = run.bounds[names.index("A")]
    assert a_bounds[0][1] > 10 and a_bounds[0][0] == 0  # the tail of 16 reads columns 10-15 of A
    assert run.bounds[names.index("B")] == ((0, 10), (0, 12))  # and B past its rows: y in tiles of 4
    shared: dict = {}
    prepared = run.prepare(bound, out, shared)
    assert isinstance(prepared["A"], PaddedInput) and prepared["A"].size == a_bounds[0][1] * a_bounds[1][1]
    assert run.prepare(bound, out, shared)["A"] is prepared["A"]  # kernels timed together share the copy
    again = {"C": np.zeros(100, np.float32)}
    run(prepared, again)
    assert again["C"].tobytes() == out["C"].tobytes()
    bound["A"][:] = bound["A"][::-1].copy()  # the same array object, other values
    changed = {"C": np.zeros(100, np.float32)}
    run(bound, changed)
    fresh = {"A": bound["A"].reshape(10, 10, order="F"), "B": inputs["B"]}
    np.testing.assert_array_equal(changed["C"].reshape(10, 10, order="F"), interpret(p, fresh)["C"])


def test_inputs_read_within_their_region_are_passed_as_they_are(tmp_path, monkeypatch):
    """No tail reads past an Input under the naive schedule: the bounds query asks for the regions themselves, and
    the runner passes the harness's arrays without a copy when they are aligned (backends.kernel.aligned), and an
    aligned copy of one that is not."""
    from backends.kernel import BUFFER_ALIGNMENT, aligned

    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))
    p, _ = _matmul_with_prod(10, prod_is_output=False)
    k = backends.compile(p, naive_schedule(p), backend="halide", isolate=False)
    bound = {n: aligned(a) for n, a in k.bind_inputs((p.random_inputs(5),), {}).items()}
    run = k.spec.runner()
    run(bound, {"C": np.zeros(100, np.float32)})
    for i, (name, region) in enumerate(run.k.info.inputs):
        assert run.bounds[i] == tuple(region)
        assert run._laid_out(i, bound[name]) is bound[name]
        off = np.empty(bound[name].size + 1, bound[name].dtype)[1:]  # 4 bytes past numpy's (16-byte) alignment
        off[:] = bound[name]
        copy = run._laid_out(i, off)
        assert copy is not off and copy.ctypes.data % BUFFER_ALIGNMENT == 0 and np.array_equal(copy, off)


def test_an_update_reading_an_output_beyond_its_tile_keeps_its_guard():
    """Fuzz case 7085: a histogram update whose rows are split by 7 over 8 reads f1, an output; rounding its rows
    up read f1's buffer past its end and Halide aborted the run. Found by `python -m tests.fuzz --backend halide`."""
    from .fuzz import check as fuzz_check

    outcome, *_ = fuzz_check(7085, 219642, "halide")
    assert outcome.status == "ok", outcome.error


def _hist_eq_with_a_vectorized_cdf(p):
    """hist_eq's expert schedule, but with the pure definition of `cdf` (whose update is a scan over an
    RDom) vectorized: its update then has a schedule of its own to state, or Halide warns."""
    from ir.builder import ScheduleBuilder

    s = ScheduleBuilder(p)
    s.root("output", tiles=[{"x": 16, "y": 4, "c": 3}], vectorize="x", vector_width=8, parallel=True)
    s.root("cdf", vectorize="x", vector_width=8)
    s.root("hist", vectorize="x", vector_width=8)
    s.root("hist_rows")
    return s.build()


def test_every_definition_halide_compiles_is_scheduled(capfd):
    """Halide prints from C++ ("Update definition 0 of function cdf has not been scheduled, even though some
    other definitions have"): the backend schedules each update it emits, so a compile prints nothing."""
    app = get_app("hist_eq")
    p = app.build("small")
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    capfd.readouterr()
    for ln in (naive_schedule(p), app.schedule(p, get_target("host")), _hist_eq_with_a_vectorized_cdf(p)):
        k = backends.compile(p, ln, backend="halide", isolate=False)  # in this process: its stderr is captured
        assert backends.measure(k, inputs, CHECK_ONLY, expected=expected).status == "ok"
    err = capfd.readouterr().err
    assert "has not been scheduled" not in err and "Warning" not in err, err[-2000:]


def test_a_sliding_window_halide_does_not_fold_compiles_without_its_warning(capfd, tmp_path, monkeypatch):
    """Random schedule 802 of random pipeline 8 stores s11_binary above its compute level with a consumer
    vectorized along the window: Halide says it is 'Not folding Func ...' (schedlab's plan keeps the whole
    window too, backends.halide.diagnostics). That warning is dropped, the output is right, and any other line
    Halide prints during a compile still gets through."""
    from backends.halide.diagnostics import planned_warnings_filtered

    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))  # a cold cache: the object is compiled here
    p = random_pipeline(8, max_stages=8, output_size=(64, 48, 3))
    ln, _ = random_schedule(p, 802)
    inputs = p.random_inputs(0)
    capfd.readouterr()
    k = backends.compile(p, ln, backend="halide", isolate=False)
    out, err = capfd.readouterr()
    assert "Not folding" not in out + err and "Warning" not in out + err, (out + err)[-2000:]
    assert backends.measure(k, inputs, CHECK_ONLY, expected=interpret(p, inputs)).status == "ok"
    with planned_warnings_filtered():
        os.write(1, b"Warning: Not folding Func f along dimension x because there is vectorized access to f\n")
        os.write(1, b"Warning: something else\n")
        os.write(2, b"Error: kept too\n")
    out, err = capfd.readouterr()
    assert (out, err) == ("Warning: something else\n", "Error: kept too\n")


def test_invalid_inputs_and_schedules_give_clear_errors():
    p = get_app("blur").build("small")
    k = backends.compile(p, naive_schedule(p), backend="halide")
    with pytest.raises(SchedlabError, match="must be a float32 array of shape"):
        k({"input": np.zeros((3, 3), np.float32)})
    bad = naive_schedule(p).replace(children=())
    with pytest.raises(ScheduleError):
        backends.compile(p, bad, backend="halide")
    with pytest.raises(CompileError, match="the halide backend compiles for cpu targets; h200 is a cuda target"):
        backends.compile(p, naive_schedule(p), "h200", backend="halide")


_UNALIGNED_RUN = """
import numpy as np
import backends
from ir import interpret
from tests.fuzz import check

outcome, p, ln, _ = check(68069, 2110146, "halide")
assert outcome.status == "ok", outcome
k = backends.compile(p, ln, backend="halide", isolate=False)
inputs = p.random_inputs(68069)
want = interpret(p, inputs)
flat = k.bind_inputs((inputs,), {})


def aligned_bytes(nbytes):  # nbytes at a 128-byte boundary (not backends.kernel's helper: this checks it)
    raw = np.empty(nbytes + 128, np.uint8)
    start = -raw.ctypes.data % 128
    return raw[start:start + nbytes]


for offset in (0, 4, 16, 32, 48):  # bytes past a 128-byte boundary (numpy promises 16-byte alignment)
    outs = {}
    for o in p.outputs:
        nbytes = int(np.prod(p.output_sizes[o.name])) * o.type.dtype.itemsize
        outs[o.name] = aligned_bytes(nbytes + 64)[offset:offset + nbytes].view(o.type.dtype)
    ins = {}
    for name, a in flat.items():
        raw = aligned_bytes(a.nbytes + 64)[offset:offset + a.nbytes].view(a.dtype)
        raw[:] = a
        ins[name] = raw
    k.run(ins, outs)
    for name, got in k.shape_outputs(outs).items():
        assert np.array_equal(got, want[name]), (offset, name)
print("aligned ok")
"""


def test_kernels_run_on_arrays_at_any_alignment():
    """Halide stores to an output with an aligned vector instruction where it can prove the offset (fuzz pair
    68069/2110146: a 16-lane output stored with vmovdqa64 on AVX-512), which faulted on numpy's 16-byte-aligned
    arrays, now and then. The harness hands kernels 128-byte-aligned buffers, and a caller's unaligned arrays are
    run through aligned copies. In a child process: before the fix this segfaulted."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _UNALIGNED_RUN], capture_output=True, text=True, timeout=600,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode == 0 and "aligned ok" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_kernel_runs_in_process_and_measures():
    p = get_app("blur").build("small")
    ln = get_app("blur").schedule(p, get_target("host"))
    inputs = p.random_inputs(1)
    k = backends.compile(p, ln, backend="halide", isolate=False)
    out = k(inputs)
    want = interpret(p, inputs)
    for name in want:
        assert np.allclose(out[name], want[name], rtol=1e-5, atol=1e-6)
    m = backends.measure(k, inputs, Protocol(max_seconds=0.2), expected=want)
    assert m.status == "ok" and m.min_s > 0 and k.backend == "halide"


def test_a_kernel_halide_refuses_is_a_status_with_halides_message():
    """Halide's default error handler aborts the process: a Func over 2^31 bytes killed the measuring worker
    (exit -6) and its message went to stderr. The status now names the cause and the worker lives on. Since the
    outputs' bounds are constant (backends.halide.translate), every allocation's size is known when Halide compiles,
    so it refuses this one then (it used to fail at run time, through the runtime's error handler)."""
    from backends.worker import Worker

    x, y = Var("x"), Var("y")
    img = Input("img", f32, 1)
    big, out = Func("big"), Func("out")
    big[x, y] = img[x] + cast(f32, y)
    out[x] = big[x, 0] + big[x, 40000]
    p = Pipeline([out], {out: (16384,)})  # big, computed at root: 16,384 x 40,001 f32, 2.6 GB
    worker = Worker()
    try:
        k = backends.build(p, naive_schedule(p), "host", backend="halide", worker=worker)
        pid = worker.pid
        m = backends.run(k, p.random_inputs(0), CHECK_ONLY, worker=worker)
        assert m.status == "compile_error"
        assert "Halide compilation failed" in m.error and "Allocation size" in m.error, m.error
        small = get_app("blur").build("small")
        ok = backends.run(backends.build(small, naive_schedule(small), "host", backend="halide", worker=worker),
                          small.random_inputs(0), CHECK_ONLY, worker=worker)
        assert ok.status == "ok" and worker.pid == pid
    finally:
        worker.close()


@pytest.mark.parametrize("scheduler,params", [("Adams2019", {"beam_size": "1"}), ("Mullapudi2016", None)])
@pytest.mark.parametrize("name", ["blur", "unsharp", "local_laplacian"])
def test_halide_autoschedulers_give_schedules_that_match_interpreter(scheduler, params, name):
    from backends.halide.autoschedule import autoschedule

    p = get_app(name).build("small")
    anchor = autoschedule(p, scheduler, params=params)
    assert anchor.schedule_source and anchor.search_seconds >= 0
    inputs = p.random_inputs(0)
    m = backends.measure(anchor.compile(), inputs, CHECK_ONLY, expected=interpret(p, inputs))
    assert m.status == "ok", m.error


def test_unknown_autoscheduler_parameter_is_a_clear_error():
    from backends.halide.autoschedule import autoschedule

    p = get_app("blur").build("small")
    with pytest.raises(CompileError, match="has no parameter 'bogus'; its parameters are parallelism"):
        autoschedule(p, "Adams2019", params={"bogus": "1"})
    with pytest.raises(CompileError, match="unknown Halide autoscheduler"):
        autoschedule(p, "adams2019")
    with pytest.raises(CompileError, match="aborted the worker"):  # the plugin aborts its process
        autoschedule(p, "Adams2019", params={"beam_size": "abc"})


def test_halide_is_a_registered_backend_measured_through_measure_many():
    from backends.halide import HalideBackend

    assert isinstance(backends.get_backend("halide"), HalideBackend)
    assert backends.get_backend("halide").target_kinds == frozenset({"cpu"})
    p = get_app("blur").build("small")
    inputs = p.random_inputs(0)
    want = interpret(p, inputs)
    bad = naive_schedule(p).replace(children=())
    ms = backends.measure_many([backends.MeasureInput(p, naive_schedule(p), inputs, want),
                                backends.MeasureInput(p, bad, inputs, want)], backend="halide", protocol="check")
    assert [m.status for m in ms] == ["ok", "invalid_schedule"], [m.error for m in ms]


def test_halides_cpu_autoschedulers_refuse_a_gpu_target():
    from backends.halide.autoschedule import autoschedule

    p = get_app("blur").build("small")
    with pytest.raises(CompileError, match="Adams2019 does not schedule for GPUs; choose one of Anderson2021, "
                                           "Mullapudi2016, Li2018"):
        autoschedule(p, "Adams2019", "h200")


def test_f32_transcendentals_are_bit_exact_on_both_backends():
    """f32 exp, log and pow: numba and Halide both equal the interpreter bit for bit (ir.semantics.VIA_F64), so a
    value later cast to an integer cannot land on the neighbouring integer on one backend (local_laplacian at
    full size did under Halide: 4 of 11.8 M u16 values off by one)."""
    from ir import pow as hpow

    x = Var("x")
    a = Input("a", f32, 1)
    f = Func("f")
    f[x] = exp(a[x]) + log(a[x] * a[x] + 1.0) * 3.0 + hpow(a[x] * a[x] + 0.5, a[x] * 0.25)
    q = Func("q")
    q[x] = cast(u32, f[x] * 1000.0)
    p = Pipeline([f, q], {f: (4096,), q: (4096,)})
    inputs = {"a": np.random.default_rng(1).uniform(-8, 8, 4096).astype(np.float32)}
    want = interpret(p, inputs)
    for backend in ("numba", "halide"):
        k = backends.compile(p, naive_schedule(p), backend=backend)
        got = k(**inputs)
        for name in ("f", "q"):
            assert np.array_equal(got[name], want[name]), (backend, name)


# -- ahead-of-time objects: compiled once per node, loaded by the process that measures ----------------------


def _jit_outputs(p, ln, inputs):
    """The same schedule JIT-compiled in this process (Halide's own path), run on the same arrays."""
    import halide as hl

    from backends.halide.compiler import host_target
    from backends.halide.schedule import apply
    from backends.halide.translate import translate
    from ir.plan import Plan

    hp = translate(p)
    apply(hp, Plan(p.dag, ln))
    pipe = hp.pipeline()
    pipe.compile_jit(host_target(True))
    k = backends.compile(p, ln, backend="halide", isolate=False)
    bound = k.bind_inputs((inputs,), {})
    for name, param in hp.params.items():
        region = p.input_regions[name]
        buf = hl.Buffer(bound[name].reshape(tuple(reversed([e for _, e in region]))))
        buf.set_min([lo for lo, _ in region])
        param.set(buf)
    outs = {o: np.zeros(int(np.prod(p.output_sizes[o])), dtype=_dtype(p, o)) for o in hp.outputs}
    bufs = [hl.Buffer(outs[o].reshape(tuple(reversed(p.output_sizes[o])))) for o in hp.outputs]
    pipe.realize(bufs if len(bufs) > 1 else bufs[0], host_target(True))
    return outs, k, bound


def _dtype(p, name):
    return next(o.type.dtype for o in p.outputs if o.name == name)


@pytest.mark.parametrize("case", ["app:camera_pipe", "app:local_laplacian", "app:conv_layer", "random:2", "random:9"])
def test_an_object_file_computes_exactly_what_halide_jit_computes(case, tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))
    kind, name = case.split(":")
    if kind == "app":
        p = get_app(name).build("small")
        ln = get_app(name).schedule(p, get_target("host"))
    else:
        p = random_pipeline(int(name), 10, output_size=(48, 40, 3))
        ln = random_schedule(p, int(name), get_target("host"))[0]
    inputs = p.random_inputs(3)
    jit, k, bound = _jit_outputs(p, ln, inputs)
    aot = {o: np.zeros_like(v) for o, v in jit.items()}
    k.spec.runner()(bound, aot)
    for o in jit:  # bit for bit, NaNs included
        assert jit[o].tobytes() == aot[o].tobytes(), o
    assert len(list((tmp_path / "halide").glob("k*.o"))) == 1


def test_the_measuring_process_loads_the_object_the_compiling_process_wrote(tmp_path, monkeypatch):
    """What the job does per sample: compile in one worker, measure in another. The second build finds the
    object: no second compile (the same file, the seconds recorded by the first)."""
    from backends.worker import Worker

    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))
    p = get_app("harris").build("small")
    ln = get_app("harris").schedule(p, get_target("host"))
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    compiler, measurer = Worker(), Worker()
    try:
        first = backends.compile(p, ln, backend="halide", worker=compiler)
        (obj,) = (tmp_path / "halide").glob("k*.o")
        stamp = (obj.stat().st_ino, obj.read_bytes())  # a compile replaces the file (a new inode); a use touches it
        from backends.halide.aot import compile_object

        recorded = compiler.call(compile_object, first.spec, timeout=60)
        again = backends.build(p, ln, "host", backend="halide", worker=measurer)
        m = backends.run(again, inputs, CHECK_ONLY, expected=expected, worker=measurer)
        assert m.status == "ok", m.error
        assert (obj.stat().st_ino, obj.read_bytes()) == stamp and len(list((tmp_path / "halide").glob("k*.o"))) == 1
        assert measurer.call(compile_object, first.spec, timeout=60) == recorded > 0
    finally:
        compiler.close()
        measurer.close()


def _plugins_loaded() -> set:
    import importlib

    return set(importlib.import_module("backends.halide.autoschedule")._loaded)


def test_an_autoscheduled_kernel_is_measured_by_another_process_without_searching_again(tmp_path, monkeypatch):
    """Evaluation searches in one worker and may measure in another (a worker is replaced when it grows past
    its memory limit, as after Adams2019 on local_laplacian). The measuring process loads the object the
    search wrote; it used to JIT-compile, running the whole search again inside the measurement's timeout."""
    from backends.halide.autoschedule import autoschedule
    from backends.worker import Worker

    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))
    p = get_app("unsharp").build("small")
    inputs = p.random_inputs(0)
    searcher, measurer = Worker(), Worker()
    try:
        anchor = autoschedule(p, "Adams2019", params={"beam_size": "1"}, worker=searcher)
        assert searcher.call(_plugins_loaded, timeout=60) == {"Adams2019"}
        (obj,) = (tmp_path / "halide").glob("k*.o")
        m = backends.measure(anchor.compile(), inputs, CHECK_ONLY, expected=interpret(p, inputs), worker=measurer)
        assert m.status == "ok", m.error
        assert measurer.call(_plugins_loaded, timeout=60) == set()  # it never searched
        again = autoschedule(p, "Adams2019", params={"beam_size": "1"}, worker=measurer)
        assert (again.schedule_source, again.search_seconds) == (anchor.schedule_source, anchor.search_seconds)
        assert measurer.call(_plugins_loaded, timeout=60) == set() and anchor.search_seconds > 0
        assert list((tmp_path / "halide").glob("k*.o")) == [obj]
    finally:
        searcher.close()
        measurer.close()


def test_a_process_keeps_a_bounded_number_of_kernels_mapped(tmp_path, monkeypatch):
    from backends.halide import aot

    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))
    p = get_app("blur").build("small")
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    held = None
    for s in range(aot.LOADED + 3):
        ln = random_schedule(p, s, get_target("host"))[0]
        k = backends.compile(p, ln, backend="halide", isolate=False)
        if held is None:
            held = k  # a kernel the user keeps: still runs after its object left the process's table
        m = backends.measure(k, inputs, CHECK_ONLY, expected=expected, isolate=False)
        assert m.status == "ok", m.error
    assert len(aot._loaded) <= aot.LOADED
    assert backends.measure(held, inputs, CHECK_ONLY, expected=expected, isolate=False).status == "ok"
