"""The CUDA backend without a GPU: GPU LoopNests lowered to CUDA C, compiled by NVRTC for sm_80/sm_90, and the
same text run on the CPU (plain and racecheck g++ builds) against the interpreter. Nothing here runs on a GPU."""

from __future__ import annotations

import dataclasses
import shutil
import re

import numpy as np
import pytest

import backends
from backends.cuda import check, check_resources, emulate, nvrtc
from backends.cuda.codegen import generate
from backends.cuda.nvrtc import KernelResources, parse_ptxas
from ir import Func, Input, Pipeline, RDom, ScheduleError, Var, cast, f32, i32, interpret, u8
from ir.builder import ScheduleBuilder
from ir.gpu import REGISTER, SHARED, memory_space
from ir.gpu_schedule import GpuScheduleBuilder, gpu_kinds, random_gpu_loopnest
from ir.loopnest import LoopKind
from ir.plan import Plan
from ir.target import get_target

from .fuzz_cuda import check_pair

H100 = get_target("h100")
x, y = Var("x"), Var("y")
needs_nvrtc = pytest.mark.skipif(nvrtc.available() is not None, reason=str(nvrtc.available()))


def blur(size=(70, 45)):
    inp = Input("inp", f32, 2)
    bx, by = Func("blur_x"), Func("blur_y")
    bx[x, y] = (inp[x - 1, y] + inp[x, y] + inp[x + 1, y]) / 3
    by[x, y] = (bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) / 3
    return Pipeline([by], {by: size})


def shared_blur():
    p = blur()
    s = GpuScheduleBuilder(p, H100)
    s.gpu_tile("blur_y", {"x": 32, "y": 16}, per_thread={"y": 2})
    s.compute_at_block("blur_x", "blur_y")
    return p, s.build()


@needs_nvrtc
def test_shared_memory_blur_compiles_for_sm80_and_sm90_and_its_cpu_run_equals_the_interpreter():
    p, ln = shared_blur()
    plan = Plan(p.dag, ln, H100)
    assert memory_space(plan, plan.func("blur_x")) == SHARED
    src = generate(plan)
    assert src.launches[0].grid == 3 * 3 and src.launches[0].block == 32 * 18  # blur_x's tile: 32 x 18 threads
    assert "SL_SHARED(float, blur_x_buf, 576)" in src.source and src.source.count("__syncthreads();") == 2
    r = check(p, ln, H100)
    assert r.status == "ok", r.error
    assert {(k.arch, k.shared_bytes) for k in r.resources} == {("sm_80", 576 * 4), ("sm_90", 576 * 4)}
    assert all(0 < k.registers <= 255 and k.barriers == 1 and k.spill_stores == 0 for k in r.resources)


@needs_nvrtc
def test_register_storage_update_stages_and_an_internal_output_equal_the_interpreter():
    """conv-like: an update with an RDom accumulated per thread in registers; the output's region is larger
    than its size (a consumer reads past it), so it is computed into a global buffer and copied out."""
    inp = Input("inp", i32, 2)
    r = RDom((0, 5), name="r")
    acc, out, nxt = Func("acc"), Func("out"), Func("nxt")
    acc[x, y] = inp[x, y] * 0
    acc[x, y] = acc[x, y] + inp[x + r.x, y] * (r.x + 1)
    out[x, y] = acc[x, y] // 3 - acc[x, y] % 7
    nxt[x, y] = out[x + 1, y] + out[x, y]
    p = Pipeline([out, nxt], {out: (40, 12), nxt: (40, 12)})
    s = GpuScheduleBuilder(p, H100)
    s.gpu_tile("nxt", {"x": 16, "y": 4})
    s.gpu_tile("out", {"x": 16, "y": 4}, per_thread={"y": 2})
    s.compute_at_thread("acc", "out")
    ln = s.build()
    plan = Plan(p.dag, ln, H100)
    assert memory_space(plan, plan.func("acc")) == REGISTER
    src = generate(plan)
    assert any("copy_out" in l.kernel for l in src.launches)
    res = check(p, ln, H100)
    assert res.status == "ok", res.error


@needs_nvrtc
def test_integer_semantics_wrap_divide_and_saturate_exactly_as_the_interpreter():
    inp = Input("inp", u8, 2)
    a, b, out = Func("a"), Func("b"), Func("out")
    a[x, y] = inp[x, y] * 37 + 200  # u8 wraps
    b[x, y] = (cast(i32, a[x, y]) - 128) * 1_000_003  # i32 products wrap past 2^31
    out[x, y] = (b[x, y] // (x - 20)) + (b[x, y] % (y - 3)) + cast(i32, cast(u8, cast(f32, b[x, y]) * 1e5))
    p = Pipeline([out], {out: (41, 9)})
    s = GpuScheduleBuilder(p, H100)
    s.gpu_tile("out", {"x": 8, "y": 4})
    s.compute_at_block("a", "out")
    ln = s.build()
    inputs = {"inp": np.arange(41 * 9, dtype=np.uint8).reshape(41, 9, order="F")}
    res = check(p, ln, H100, inputs)
    assert res.status == "ok", res.error


@pytest.mark.parametrize("start", range(0, 60, 10))
def test_fuzz_subset_random_pipelines_random_gpu_schedules(start):
    """60 pairs in CI (python -m tests.fuzz_cuda for more): NVRTC compiles, both CPU builds equal the
    interpreter, the racecheck build sees no race."""
    for seed in range(start, start + 10):
        r, p, ln = check_pair(seed, seed)
        assert r.status == "ok", f"pair {seed}: {r.status}: {r.error}\n{ln}"


def test_the_random_gpu_sampler_covers_the_gpu_space_and_is_deterministic():
    seen = {"shared": 0, "register": 0, "update": 0, "simd": 0, "unrolled": 0, "serial_block_level": 0}
    from .fuzz_pipelines import random_test_pipeline

    for seed in range(60):
        p = random_test_pipeline(seed)
        ln = random_gpu_loopnest(p, seed, H100)
        assert ln == random_gpu_loopnest(p, seed, H100)
        plan = Plan(p.dag, ln, H100)
        for fp in plan.funcs.values():
            if not fp.inlined:
                seen[memory_space(plan, fp)] = seen.get(memory_space(plan, fp), 0) + 1
                seen["update"] += len(fp.chains) > 1
        seen["simd"] += LoopKind.SIMD in ln.kinds()
        seen["unrolled"] += LoopKind.UNROLLED in ln.kinds()
        seen["serial_block_level"] += "SL_THREADS(sl_t, 1)" in generate(plan).source
    assert all(v > 0 for v in seen.values()), seen


@needs_nvrtc
def test_racecheck_build_catches_a_missing_barrier_that_the_plain_build_cannot_see():
    p, ln = shared_blur()
    src = generate(Plan(p.dag, ln, H100))
    kernel = src.source[src.source.index("SL_KERNEL " + src.launches[0].kernel):]
    first = kernel.index("__syncthreads();")
    broken = dataclasses.replace(src, source=src.source.replace(kernel, kernel[:first] + kernel[first + 16:]))
    inputs = {k: v.ravel(order="F") for k, v in p.random_inputs(0).items()}
    meta = {"blur_y": (70 * 45, np.dtype("float32"), (70, 45))}
    want = interpret(p, p.random_inputs(0))["blur_y"]
    plain, count, _ = emulate.run_checked(emulate.EmulatedProgram(str(emulate.build(broken, "plain")), broken), inputs, meta)
    assert count == 0 and np.array_equal(plain["blur_y"], want)  # on a CPU, phases run in order anyway
    _, count, message = emulate.run_checked(
        emulate.EmulatedProgram(str(emulate.build(broken, "racecheck")), broken), inputs, meta)
    assert count > 0 and message.startswith("read-after-write without __syncthreads on blur_x_buf"), message


def test_a_barrier_inside_a_thread_loop_does_not_compile_on_the_cpu():
    p, ln = shared_blur()
    src = generate(Plan(p.dag, ln, H100))
    bad = src.source.replace("blur_y_buf[", "__syncthreads(); blur_y_buf[", 1)
    with pytest.raises(backends.CompileError, match="__syncthreads\\(\\) inside a thread loop"):
        emulate.build(dataclasses.replace(src, source=bad), "plain")


def test_gpu_legality_rules_name_the_broken_rule():
    p = blur()
    tiled = ScheduleBuilder(p).root("blur_y", tiles=[{"x": 32, "y": 8}]).build()
    gpu = gpu_kinds(tiled, H100)
    Plan(p.dag, gpu, H100)
    head = gpu.children[0]
    serial_head = gpu.replace_node(head, head.replace(kind=LoopKind.SERIAL))
    with pytest.raises(ScheduleError, match="blur_y.s0: a Func computed at root on h100 starts with block loops"):
        Plan(p.dag, serial_head, H100)
    inner = head.children[0]
    as_block = gpu.replace_node(inner, inner.replace(kind=LoopKind.BLOCK))
    with pytest.raises(ScheduleError, match="only the outermost level of a Func computed at root runs as GPU blocks"):
        Plan(p.dag, as_block, H100)
    slid = ScheduleBuilder(p).root("blur_y", tiles=[{"x": 32, "y": 8}, {"x": 32, "y": 1}]) \
        .compute_at("blur_x", "blur_y", level=1, store_level=0).build()
    with pytest.raises(ScheduleError, match="blur_x: storage hoisted out of its compute level"):
        Plan(p.dag, gpu_kinds(slid, H100), H100)


def test_a_kernel_over_the_shared_memory_limit_is_an_invalid_schedule_before_any_run():
    p = blur((600, 300))
    tiled = ScheduleBuilder(p).root("blur_y", tiles=[{"x": 512, "y": 32}, {"x": 32, "y": 32}]) \
        .compute_at("blur_x", "blur_y", level=0).build()
    r = check(p, gpu_kinds(tiled, H100), H100)
    assert r.status == "invalid_schedule" and "shared_memory_per_block 49152" in r.error, r.error


@needs_nvrtc
def test_a_kernel_over_the_targets_registers_is_an_invalid_schedule():
    p, ln = shared_blur()
    tiny = dataclasses.replace(H100, name="tiny", registers_per_thread=8)
    r = check(p, ln, tiny)
    assert r.status == "invalid_schedule" and re.search(r"\d+ registers per thread on sm_\d0, more than tiny's "
                                                        r"registers_per_thread 8", r.error), r.error
    with pytest.raises(ScheduleError, match="300 registers"):
        check_resources(H100, [KernelResources("k", "sm_90", 300, 0, 0, 0, 0, 0)])


def test_ptxas_report_is_parsed_per_kernel():
    log = ("ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function 'k0' for 'sm_90'\n"
           "ptxas info    : Function properties for k0\n    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 2304 bytes smem, 384 bytes cmem[0]\n"
           "ptxas info    : Compiling entry function 'k1' for 'sm_90'\nptxas info    : Function properties for k1\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 12 registers, 380 bytes cmem[0]\n")
    assert parse_ptxas(log, "sm_90") == (KernelResources("k0", "sm_90", 40, 2304, 1, 8, 4, 4),
                                         KernelResources("k1", "sm_90", 12, 0, 0, 0, 0, 0))


@needs_nvrtc
def test_generated_cuda_that_nvrtc_rejects_is_a_compile_error_with_its_message():
    with pytest.raises(backends.CompileError, match="NVRTC \\(sm_90\\) rejected the generated CUDA: .*undefined"):
        nvrtc.compile_cuda('extern "C" __global__ void k(float* a) { a[0] = b; }', "bad", "sm_90")


@pytest.mark.skipif(backends.cuda.runner.gpu_missing() is None, reason="a GPU is present")
def test_measuring_without_a_gpu_is_a_one_line_error_and_check_is_the_way_here():
    p, ln = shared_blur()
    k = backends.compile(p, ln, "h100", backend="cuda")
    with pytest.raises(backends.DeviceMissing, match="needs an NVIDIA GPU and driver|needs CuPy and an NVIDIA GPU") as e:
        backends.measure(k, p.random_inputs(0))
    assert "\n" not in str(e.value)
    (m,) = backends.measure_many([backends.MeasureInput(p, ln, p.random_inputs(0))], "h100", backend="cuda")
    assert m.status == "no_gpu" and "GPU" in m.error and m.compile_s > 0
    out = k.emulate(p.random_inputs(0), racecheck=True)
    assert np.array_equal(out["blur_y"], interpret(p, p.random_inputs(0))["blur_y"])


@pytest.mark.skipif(backends.cuda.runner.gpu_missing() is not None, reason="needs a GPU (none here; ran on an H100)")
@pytest.mark.parametrize("seed", [3, 17, 42])
def test_on_a_gpu_random_pairs_and_an_expert_schedule_equal_the_interpreter_and_are_timed(seed):
    """The CuPy path itself (backends.cuda.runner), where a GPU is present: outputs checked, CUDA-event times."""
    from generator.apps import get_app

    from .fuzz_pipelines import random_test_pipeline

    p = random_test_pipeline(seed)
    ln = random_gpu_loopnest(p, seed, H100)
    inputs = p.random_inputs(seed)
    m = backends.run(backends.build(p, ln, H100, backend="cuda"), inputs, backends.get_protocol("quick"),
                     expected=interpret(p, inputs))
    assert m.status == "ok", m.error
    assert 0 < m.min_s < 1 and m.samples >= 3
    a = get_app(("blur", "unsharp", "matmul")[seed % 3])
    q = a.build("small")
    k = backends.build(q, a.gpu_schedule(q, H100), H100, backend="cuda")
    wrong = {n: np.zeros_like(v) for n, v in interpret(q, q.random_inputs(0)).items()}
    assert backends.run(k, q.random_inputs(0), backends.get_protocol("check"), expected=wrong).status == "wrong_output"


def test_cpu_backends_refuse_gpu_schedules_and_the_cuda_backend_refuses_cpu_targets():
    p, ln = shared_blur()
    with pytest.raises(backends.CompileError, match="the cuda backend compiles for cuda targets; host is a cpu target"):
        backends.compile(p, ln, "host", backend="cuda")
    with pytest.raises(backends.CompileError, match="the numba backend compiles for cpu targets"):
        backends.compile(p, ln, "h100", backend="numba")


@needs_nvrtc
@pytest.mark.parametrize("app", ["blur", "unsharp", "harris", "conv_layer", "matmul", "stencil_chain"])
def test_expert_gpu_schedules_of_the_apps_equal_the_interpreter(app):
    from generator.apps import get_app

    a = get_app(app)
    p = a.build("small")
    r = check(p, a.gpu_schedule(p, H100), H100)
    assert r.status == "ok", r.error
    assert r.kernels >= 1 and all(k.spill_stores == 0 for k in r.resources)


@pytest.mark.parametrize("scheduler", ["Anderson2021", "Mullapudi2016", "Li2018"])
def test_halides_gpu_autoschedulers_give_gpu_schedules_and_ptx_for_a_cuda_target(scheduler):
    from backends.halide import autoschedule
    from backends.halide.gpu import measure_anchor, ptxas_check
    from generator.apps import get_app

    p = get_app("unsharp").build("small")
    s = autoschedule(p, scheduler, "h100")
    assert s.halide_target.endswith("-cuda-cuda_capability_86") and s.ptx_arch == "sm_86" and s.kernels >= 1
    assert "gpu_blocks" in s.schedule_source or "gpu_tile" in s.schedule_source or scheduler == "Mullapudi2016"
    report = ptxas_check(s.ptx, "sm_90")
    assert report is None or "Used" in report  # None: no ptxas on this machine
    if backends.cuda.runner.gpu_missing() is not None:
        m = measure_anchor(s, p.random_inputs(0), backends.get_protocol("check"))
        assert m.status == "no_gpu"
    with pytest.raises(backends.CompileError, match="Anderson2021 schedules for GPUs; give a cuda target"):
        autoschedule(p, "Anderson2021", "host")


def test_halide_lowers_schedlabs_gpu_loopnests_to_ptx():
    from backends.halide.gpu import loopnest_ptx, ptxas_check
    from generator.apps import get_app

    from .fuzz_pipelines import random_test_pipeline

    a = get_app("blur")
    p = a.build("small")
    ptx = loopnest_ptx(p, a.gpu_schedule(p, H100), H100)
    assert ptx.count(".entry") == 1 and "bar.sync" in ptx and ".shared" in ptx  # blur_x's tile in shared memory
    report = ptxas_check(ptx, "sm_90")
    assert report is None or "used 1 barriers" in report
    for seed in range(8):  # one-block grids, thread loops, updates: Halide takes every shape the sampler draws
        q = random_test_pipeline(seed)
        assert ".entry" in loopnest_ptx(q, random_gpu_loopnest(q, seed, H100), H100)


@pytest.mark.skipif(backends.cuda.runner.gpu_missing() is None, reason="a GPU is present")
def test_evaluating_the_apps_on_a_cuda_target_without_a_gpu_says_so_and_lists_the_rows():
    from evaluate.apps import evaluate_apps
    from evaluate.config import AppsConfig, EvaluateError

    with pytest.raises(EvaluateError, match="target=h100: no GPU present here .*this measures 7 rows: blur: expert-gpu, "
                                            "Anderson2021@halide-cuda, Mullapudi2016@halide-cuda, Li2018@halide-cuda; "
                                            "bgu: Anderson2021@halide-cuda"):
        evaluate_apps(AppsConfig(target="h100", apps=("blur", "bgu")))


@needs_nvrtc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH (the optional second check)")
def test_nvcc_where_present_agrees_with_nvrtc_on_resources():
    from generator.apps import get_app

    a = get_app("conv_layer")
    p = a.build("small")
    src = generate(Plan(p.dag, a.gpu_schedule(p, H100), H100))
    _, r = nvrtc.compile_cuda(src.source, "conv", "sm_90")
    (by_nvcc,) = nvrtc.nvcc_check(src.source, "conv", "sm_90")
    (by_nvrtc,) = r.resources
    assert by_nvcc.kernel == by_nvrtc.kernel and abs(by_nvcc.registers - by_nvrtc.registers) <= 8
    assert by_nvcc.shared_bytes == by_nvrtc.shared_bytes and by_nvcc.spill_stores == by_nvrtc.spill_stores == 0
