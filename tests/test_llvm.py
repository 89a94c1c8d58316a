"""The llvm backend (LoopNests lowered straight to LLVM IR): the differential fuzzer's CI subset, every app under
naive, expert and searched schedules, and what makes it different from numba (parallel stages on a thread pool,
object files cached by content)."""

from __future__ import annotations

import numpy as np
import pytest

import backends
from generator.apps import APPS
from ir import abs as habs
from ir import cast, f32, i8, i16, i32, interpret, select, u8, u16, u32
from ir import max as hmax
from ir import min as hmin
from ir.builder import ScheduleBuilder, naive_schedule

from .fuzz import check, report
from .test_backend import blur_pipeline


@pytest.mark.parametrize("k", range(64))
def test_random_pipeline_random_schedule_matches_interpreter(k):
    """The numba backend's CI subset (same pairs), compiled by llvm."""
    outcome, p, ln, decisions = check(k, 7919 * k + 3, "llvm")
    if outcome.status != "ok":
        pytest.fail(report(k, 7919 * k + 3, outcome, decisions, "llvm"))


def _enclosing_pairs(n: int) -> list[int]:
    """The first `n` fuzz pairs (pipeline seed k, schedule seed 7919 k + 5) whose schedule, drawn with every
    compute_at sent to an enclosing Func's level where there is one, computes some Func at a level of a Func that
    does not read it."""
    from ir.sampling import random_schedule

    from .fuzz_pipelines import random_test_pipeline

    out = []
    for k in range(2000):
        p = random_test_pipeline(k)
        _, decisions = random_schedule(p, 7919 * k + 5, enclosing=1.0)
        if any(d.kind == "at" and d.consumer not in p.dag.node(f).consumers for f, d in decisions.items()):
            out.append(k)
            if len(out) == n:
                break
    return out


@pytest.mark.parametrize("k", _enclosing_pairs(16))
def test_a_func_computed_at_an_enclosing_funcs_level_matches_interpreter(k):
    """The search space's enclosing levels (SpaceOptions.enclosing_levels): a Func computed in the loops of a Func
    that encloses its readers, not in a reader's own loops, compiled by llvm."""
    outcome, p, ln, decisions = check(k, 7919 * k + 5, "llvm", enclosing=1.0)
    if outcome.status != "ok":
        pytest.fail(report(k, 7919 * k + 5, outcome, decisions, "llvm", enclosing=1.0))


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


def test_kernels_of_one_thread_share_its_scratch_arena_and_each_computes_every_intermediate_it_reads():
    """A thread's kernels keep their root-level intermediates in one arena (compiler.scratch_arena), so a kernel's
    first call does not fault in buffers of its own: whatever the last kernel left there (here NaN bytes) never reaches
    an output, the arena grows for a larger kernel, and another thread has an arena of its own."""
    import threading

    from backends.llvm import compiler

    apps = [APPS["unsharp"].build("small"), APPS["harris"].build("small")]
    kernels = [backends.compile(p, naive_schedule(p), backend="llvm") for p in apps]
    inputs = [p.random_inputs(0) for p in apps]
    expected = [interpret(p, i) for p, i in zip(apps, inputs)]
    needs = [compiler.scratch_layout(k.spec.source)[1] for k in kernels]
    assert min(needs) > 0

    def run_all(order, seen):
        for i in order:
            arena, _ = compiler.scratch_arena(0)
            arena[:] = 0xFF  # NaN in every f32 lane, -1 in every integer: stale data of another kernel
            got = kernels[i](inputs[i])
            for name, want in expected[i].items():
                np.testing.assert_array_equal(got[name], want)
            seen.append(compiler._ARENAS.address)

    here: list[int] = []
    compiler.release_scratch_arena()
    run_all([0, 1, 0, 1, 1, 0], here)
    assert compiler._ARENAS.arena.nbytes >= max(needs)
    small, large = sorted(range(2), key=lambda i: needs[i])
    compiler.release_scratch_arena()
    run_all([small, large, small], here[:0])
    assert compiler._ARENAS.arena.nbytes >= needs[large]  # grown for the larger kernel, and used for the smaller
    there: list[int] = []
    t = threading.Thread(target=run_all, args=([1, 0], there))
    t.start()
    t.join()
    assert len(there) == 2 and there[0] == there[1] and there[0] != compiler._ARENAS.address
    held = compiler._ARENAS.arena.nbytes
    assert compiler.release_scratch_arena() == held and compiler._ARENAS.arena is None
    assert compiler.release_scratch_arena() == 0
    run_all([0], here[:0])  # a fresh arena, still exact
    assert compiler._ARENAS.arena.nbytes >= needs[0]


def test_scratch_buffers_are_aligned_and_disjoint_in_the_arena():
    from backends.kernel import BUFFER_ALIGNMENT
    from backends.llvm import compiler

    p = APPS["harris"].build("small")
    src = backends.compile(p, naive_schedule(p), backend="llvm").spec.source
    offsets, end = compiler.scratch_layout(src)
    spans = sorted((offsets[b.name], offsets[b.name] + b.size * np.dtype(b.dtype).itemsize)
                   for b in src.buffers if b.role == "global")
    assert len(spans) == len(offsets) >= 3 and spans[-1][1] == end
    assert all(lo % BUFFER_ALIGNMENT == 0 for lo, _ in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def test_llvm_rejects_cuda_targets_and_invalid_schedules_are_a_status():
    from backends.cuda.nvrtc import available  # noqa: F401 - the cuda package imports without a GPU
    from ir.gpu_schedule import gpu_kinds

    p = blur_pipeline()
    with pytest.raises(backends.CompileError, match="the llvm backend compiles for cpu targets; h100 is a cuda target"):
        backends.compile(p, naive_schedule(p), "h100", backend="llvm")
    gpu = gpu_kinds(naive_schedule(p), "h100")
    (m,) = backends.measure_many([backends.MeasureInput(p, gpu, p.random_inputs(0))], backend="llvm", protocol="check")
    assert m.status == "invalid_schedule" and "not legal on host" in m.error


def _edge_inputs(n: int = 64) -> dict[str, np.ndarray]:
    """Each type's extremes and their neighbours first, then random values."""
    rng = np.random.default_rng(5)
    out = {}
    for name, dt in (("a", np.int32), ("b", np.uint32), ("c", np.uint16), ("d", np.int8)):
        info = np.iinfo(dt)
        edge = [info.min, info.min + 1, -1, 0, 1, 2, 255, 256, 257, -256, -257, info.max - 1, info.max]
        edge = [v for v in edge if info.min <= v <= info.max]
        vals = np.concatenate([np.array(edge, dtype=np.int64),
                               rng.integers(info.min, int(info.max) + 1, n - len(edge), dtype=np.int64)])
        out[name] = vals.astype(dt)
    edge = [np.nan, np.inf, -np.inf, 2.0 ** 31, -(2.0 ** 31), 2147483520.0, -2147483904.0, 65535.0, 65535.5, 65536.0,
            -0.5, -0.0, 0.5, 127.9, 128.0, -128.5, -129.0, 255.5, 4294967040.0, 1e20, -1e20]
    out["e"] = np.concatenate([edge, rng.normal(0, 1e5, n - len(edge))]).astype(np.float32)
    return out


# integer expressions whose carriers the llvm backend narrows to 32 bits or keeps at 64: wrapping, division and
# Euclidean modulus by constants (powers of two and not, either sign) of negative values, u32 beyond i32, saturating
# float -> int casts (in f32 into 32-bit carriers) at NaN, infinities and each type's bounds
_EDGE_EXPRS = {
    "i32_mul_wraps": lambda a, b, c, d, e=None: a * 3 + a,
    "i32_div_pow2": lambda a, b, c, d, e=None: a / 256,
    "i32_div_minus_pow2": lambda a, b, c, d, e=None: a / -4,
    "i32_div_7": lambda a, b, c, d, e=None: a / 7,
    "i32_mod_pow2": lambda a, b, c, d, e=None: a % 16,
    "i32_mod_minus_5": lambda a, b, c, d, e=None: a % -5,
    "i32_abs": lambda a, b, c, d, e=None: habs(a),
    "u32_wraps": lambda a, b, c, d, e=None: b * 5 - b / 3 + cast(u32, c),
    "u32_mod_pow2": lambda a, b, c, d, e=None: b % 1024 + b / 4096,
    "u32_clamp": lambda a, b, c, d, e=None: hmin(hmax(b, cast(u32, 7)), b / 2 + cast(u32, 2000000000)),
    "u16_matrix_q8": lambda a, b, c, d, e=None: cast(i16, (cast(i32, c) * 300 - cast(i32, d) * 77 + 1000) / 256),
    "u16_lut_index": lambda a, b, c, d, e=None: cast(u8, hmin(hmax(cast(i32, c) - 40000, 0), 1023) % 256),
    "mixed_compare": lambda a, b, c, d, e=None: select(cast(i32, c) > a, cast(i32, d) / 2, a % 8),
    "i8_avg": lambda a, b, c, d, e=None: cast(i8, (cast(i16, d) + cast(i16, d) * 3 + 2) / 4),
    "f32_to_i32": lambda a, b, c, d, e: cast(i32, e),
    "f32_to_u16_i8": lambda a, b, c, d, e: cast(i32, cast(u16, e)) + cast(i32, cast(i8, e * 3.0)),
    "f32_to_u32": lambda a, b, c, d, e: cast(u32, e),
}


@pytest.mark.parametrize("name", list(_EDGE_EXPRS))
@pytest.mark.parametrize("simd", [False, True])
def test_integer_carriers_at_the_edges_equal_the_interpreter(name, simd):
    """Narrow carriers are exact: each expression at every type's extremes, scalar and 8-lane SIMD, bit-exact."""
    from ir import Func, Input, Pipeline, Var

    x = Var("x")
    ins = {"a": Input("a", i32, 1), "b": Input("b", u32, 1), "c": Input("c", u16, 1), "d": Input("d", i8, 1),
           "e": Input("e", f32, 1)}
    f = Func("f")
    f[x] = _EDGE_EXPRS[name](*(i[x] for i in ins.values()))
    p = Pipeline([f], {f: (64,)})
    s = ScheduleBuilder(p)
    s.root("f", tiles=[{"x": 8}], vectorize="x" if simd else None, vector_width=8 if simd else None)
    inputs = {i.name: _edge_inputs()[i.name] for i in p.inputs}
    k = backends.compile(p, s.build() if simd else naive_schedule(p), backend="llvm")
    np.testing.assert_array_equal(k(inputs)["f"], interpret(p, inputs)["f"])


def test_u16_arithmetic_is_carried_in_32_bits_and_powers_of_two_divide_by_shifts():
    """What makes integer pipelines fast on AVX2 (docs/backends.md): 32-bit lanes, shifts for x / 2^k."""
    from backends.llvm.irgen import generate
    from ir import Func, Input, Pipeline, Var
    from ir.plan import Plan

    x = Var("x")
    c, d = Input("c", u16, 1), Input("d", i8, 1)
    f = Func("f")
    f[x] = cast(i16, (cast(i32, c[x]) * 300 - cast(i32, d[x]) * 77) / 256)
    p = Pipeline([f], {f: (64,)})
    text = generate(Plan(p.dag, naive_schedule(p))).ir
    body = text[text.index("define internal void"):]  # the stage's body (the helpers return values)
    body = body[:body.index("\n}")]
    assert "mul i32" in body and "ashr i32" in body
    assert "mul i64 %" not in body and "sl_floordiv" not in body  # (constant offsets are folded)


def test_unrolled_copies_share_one_simd_loop_so_an_inlined_exp_is_computed_once():
    """A Func inlined into a stage whose pure loops are unrolled around its SIMD loop (nl_means' weights in each
    of its channels): the SIMD loop holds every copy, so LLVM computes the shared exp once per vector instead of
    once per copy in a loop of its own (it removes common subexpressions within a loop body, not across loops).
    Before: 4 exp calls in the optimized IR, nl_means' beam schedule 2.4x slower than under Halide."""
    import re

    from backends.llvm.compiler import optimize, parse_module
    from backends.llvm.irgen import generate
    from ir import Func, Input, Pipeline, Var, exp
    from ir.plan import Plan

    x, y, c = Var("x"), Var("y"), Var("c")
    a, b = Input("a", f32, 2), Input("b", f32, 3)
    w, out = Func("w"), Func("out")
    w[x, y] = exp(a[x, y] * -0.5)
    out[x, y, c] = w[x, y] * b[x, y, c]
    p = Pipeline([out], {out: (64, 8, 4)})
    s = ScheduleBuilder(p).inline("w")
    s.root("out", tiles=[{"x": 64, "c": 4}], vectorize="x", vector_width=16, unroll={"c": 4})
    schedule = s.build()
    mod = parse_module(generate(Plan(p.dag, schedule)).ir)
    optimize(mod)  # the backend's own pipeline
    assert len(re.findall(r"call [^\n]*@llvm\.exp\.", str(mod))) == 1
    rng = np.random.default_rng(0)
    inputs = {"a": rng.standard_normal((64, 8), dtype=np.float32),
              "b": rng.standard_normal((64, 8, 4), dtype=np.float32)}
    k = backends.compile(p, schedule, backend="llvm")
    np.testing.assert_array_equal(k(inputs)["out"], interpret(p, inputs)["out"])
