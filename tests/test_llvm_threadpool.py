"""The llvm backend's native thread pool (backends.llvm.threadpool): every task of a stage runs exactly once, on
real pthreads spinning in machine code; a second Python thread and a forked process are served; kernels give the
same bits under it as under the ThreadPoolExecutor it replaced."""

from __future__ import annotations

import ctypes
import os
import threading
import time

import numpy as np
import pytest

llvm = pytest.importorskip("llvmlite.binding")

from backends.llvm import compiler  # noqa: E402
from backends.llvm.threadpool import ALIVE, NativePool, native_pool  # noqa: E402

# stage(args, lo, hi): a[i] += 1 for i in [lo, hi); calls += 1; the thread's id into the next free slot of ids
MARK_IR = """
declare i64 @pthread_self()
define void @mark(ptr %args, i64 %lo, i64 %hi) {
entry:
  %ap = load ptr, ptr %args, align 8
  %cpp = getelementptr ptr, ptr %args, i64 1
  %cp = load ptr, ptr %cpp, align 8
  %c = atomicrmw add ptr %cp, i64 1 seq_cst
  %ipp = getelementptr ptr, ptr %args, i64 2
  %ip = load ptr, ptr %ipp, align 8
  %slot = getelementptr i64, ptr %ip, i64 %c
  %me = call i64 @pthread_self()
  store i64 %me, ptr %slot, align 8
  br label %loop
loop:
  %i = phi i64 [ %lo, %entry ], [ %i1, %body ]
  %more = icmp slt i64 %i, %hi
  br i1 %more, label %body, label %exit
body:
  %p = getelementptr i64, ptr %ap, i64 %i
  %v = load i64, ptr %p, align 8
  %v1 = add i64 %v, 1
  store i64 %v1, ptr %p, align 8
  %i1 = add i64 %i, 1
  br label %loop
exit:
  ret void
}
"""
_ENGINES = []  # an MCJIT engine owns the shared target machine: kept for the process, as compiler._engines are


@pytest.fixture(scope="module")
def mark():
    libc = ctypes.CDLL(None)
    llvm.add_symbol("pthread_self", ctypes.cast(libc.pthread_self, ctypes.c_void_p).value)
    e = llvm.create_mcjit_compiler(compiler.parse_module(MARK_IR), compiler.target_machine())
    e.finalize_object()
    _ENGINES.append(e)
    address = e.get_function_address("mark")
    return address, compiler.STAGE(address)


def run_marked(pool, mark, tasks: int, chunks: int):
    """(per-task counts, calls, thread ids) of one stage of `tasks` tasks in `chunks` chunks."""
    address, fn = mark
    a = np.zeros(tasks + 1, np.int64)
    calls = np.zeros(1, np.int64)
    ids = np.zeros(max(chunks, 1) + 1, np.int64)
    args = (ctypes.c_void_p * 3)(a.ctypes.data, calls.ctypes.data, ids.ctypes.data)
    pool.run(address, args, tasks, chunks, fn)
    return a, int(calls[0]), set(ids[:int(calls[0])].tolist())


@pytest.fixture
def pool():
    p = NativePool(3)  # the caller and two workers, whatever the machine's cores
    yield p
    p.close()


@pytest.mark.parametrize("tasks,chunks", [(1, 1), (2, 2), (3, 2), (7, 3), (2, 3), (1000, 3), (1000, 8), (5, 5)])
def test_every_task_of_a_stage_runs_exactly_once(pool, mark, tasks, chunks):
    for _ in range(50):  # repeated: a generation a worker missed or ran twice would show
        a, calls, _ = run_marked(pool, mark, tasks, chunks)
        assert (a[:tasks] == 1).all() and a[tasks] == 0
        assert calls == sum(1 for k in range(chunks) if tasks * k // chunks < tasks * (k + 1) // chunks)


def test_workers_run_chunks_too_and_after_they_slept(pool, mark):
    seen = set()
    for _ in range(200):  # 3 chunks of 200k tasks: the caller alone could take them all, but not every time
        a, calls, threads = run_marked(pool, mark, 600_000, 3)
        assert calls == 3 and (a[:600_000] == 1).all()
        seen |= threads
    assert len(seen) >= 2  # a worker's pthread id beside the caller's
    time.sleep(0.05)  # long past the workers' spin: they sleep on the futex; the caller wakes them, or does it all
    a, calls, _ = run_marked(pool, mark, 3, 3)
    assert (a[:3] == 1).all() and calls == 3


def test_a_second_python_thread_is_served_while_the_pool_is_busy(pool, mark):
    errors = []

    def hammer():
        try:
            for _ in range(300):
                a, _, _ = run_marked(pool, mark, 64, 3)
                assert (a[:64] == 1).all() and a[64] == 0
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=hammer) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_closing_a_pool_lets_its_workers_go(mark):
    def threads_of_process() -> int:
        return len(os.listdir("/proc/self/task"))

    def settled() -> int:  # threads of pools closed before may take a moment to leave /proc
        n, deadline = threads_of_process(), time.time() + 5
        while time.time() < deadline:
            time.sleep(0.02)
            m = threads_of_process()
            if m == n:
                return n
            n = m
        return n

    before = settled()
    p = NativePool(3)
    run_marked(p, mark, 3, 3)
    assert p.state[ALIVE] == 2 and threads_of_process() == before + 2
    p.close()
    assert p.state[ALIVE] == 0  # close() returns once every worker has let go of the state
    assert settled() == before


def test_a_forked_process_gets_a_pool_of_its_own(mark):
    parent = native_pool(2)
    run_marked(parent, mark, 4, 2)
    pid = os.fork()
    if pid == 0:  # the child: the parent's workers do not exist here
        code = 1
        try:
            child = native_pool(2)
            a, calls, _ = run_marked(child, mark, 4, 2)
            code = 0 if child is not parent and (a[:4] == 1).all() and calls == 2 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert native_pool(2) is parent


def test_an_unknown_pool_setting_is_a_one_line_error(monkeypatch):
    monkeypatch.setenv("SCHEDLAB_LLVM_POOL", "openmp")
    with pytest.raises(ValueError, match=r"SCHEDLAB_LLVM_POOL='openmp': use one of native, executor"):
        compiler.pool_kind()


def test_a_pool_needs_two_threads():
    with pytest.raises(ValueError, match="2 threads or more"):
        NativePool(1)


def test_kernels_give_the_same_bits_under_either_pool(monkeypatch):
    """A parallel schedule of a random pipeline, under the native pool and the executor: the interpreter's outputs."""
    import backends
    from backends.kernel import aligned_empty
    from backends.timing import _worker_args
    from generator.random_pipeline import generate
    from ir.interpret import interpret
    from scheduler import autoschedule

    if compiler._threads() < 2:
        pytest.skip("one core: parallel stages run on the calling thread")
    p = generate(3, max_stages=6).pipeline
    s = autoschedule(p, model="analytical", algorithm="greedy")
    k = backends.compile(p, s.loopnest, backend="llvm")
    assert any(st.tasks > 1 for st in k.spec.source.stages)
    inputs = p.random_inputs(0)
    expected = interpret(p, inputs)
    bound, meta, _, _ = _worker_args(k, inputs, None, None)
    for kind in ("native", "executor"):
        monkeypatch.setenv("SCHEDLAB_LLVM_POOL", kind)
        run = k.spec.runner()
        for _ in range(3):
            outputs = {n: aligned_empty(size, dtype) for n, (size, dtype, _) in meta.items()}
            run(bound, outputs)
            for n, (_, _, shape) in meta.items():
                np.testing.assert_array_equal(outputs[n].reshape(shape, order="F"), expected[n])


def test_a_stage_published_before_the_workers_first_ran_is_complete(mark):
    """A pool's first stage may be published before its new threads got a core: its chunks are all run, by whoever
    claims them (a worker that took the generation it found on starting as seen would otherwise leave its share)."""
    for _ in range(200):
        p = NativePool(3)
        a, calls, _ = run_marked(p, mark, 3, 3)
        p.close()
        assert (a[:3] == 1).all() and a[3] == 0 and calls == 3
