"""A spinning thread pool in machine code for the parallel stages of llvm kernels.

A kernel's parallel stage used to be split over a `concurrent.futures.ThreadPoolExecutor`: every stage paid for
futures, a queue, the GIL handed back and forth and, worst of all, waking a sleeping thread, 86 us a stage on the
2-core development VM (p99 160 us), while the stages of a data-generation kernel run 1-50 ms; a median kernel has 6
parallel stages (docs/backends.md, "Parallel stages run on a thread pool in machine code"). Halide's runtime keeps its workers spinning a
while after each parallel loop instead, so the next one starts at once. This pool does the same, written in LLVM IR
and compiled by the MCJIT that runs the kernels (no C compiler needed):

- `threads - 1` native worker threads (pthreads, never touching Python) and the calling thread share each stage's
  tasks in `chunks` ranges, chunk k covering tasks [tasks * k / chunks, tasks * (k + 1) / chunks) (the split the
  executor used). Threads claim chunks one at a time from one atomic word holding the stage's generation, its chunk
  count and the next chunk (compare-and-swap), so a stale or slow thread never takes a chunk of another stage and
  the caller never waits for a worker that has not started: it runs what nobody claimed itself.
- The caller publishes a stage (function, buffers, tasks, chunks) and bumps a generation counter; workers spin on it
  (the x86 `pause` loop) for a few hundred microseconds after their last chunk, then sleep on a futex. The caller
  wakes sleepers only when there are any (a Dekker handshake on a sleeper count), claims chunks like the workers,
  then spins until every chunk is done.
- A stage is only ever run by one caller at a time (`run` takes a lock; a second Python thread that finds it taken
  runs its stage serially), and a process that forked gets a pool of its own (`native_pool` checks the pid).
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
import time

import numpy as np

from ..kernel import aligned_empty

# int64 slots of the pool's state array; the fields workers spin on each have a cache line of their own
GEN, DONE, SLEEPERS, STOP = 0, 8, 16, 24  # generation, its chunks done, workers asleep, stop flag
FN, ARGS, TASKS = 32, 33, 34  # the published stage (its chunk count is in the claim word)
ALIVE = 40  # workers not yet gone
CLAIM = 48  # the claim word: generation (low 24 bits) << 40 | chunks << 20 | next chunk
TIDS = 56  # pthread ids
MAX_CHUNKS = (1 << 20) - 1
SPIN = 4096  # pause iterations a worker spins before it sleeps (~0.1-0.25 ms on current x86 cores)
YIELD_AFTER = 1 << 14  # pause iterations the caller spins before it yields its core to a preempted worker

_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129


def _ir() -> str:
    machine = platform.machine().lower()
    if machine not in _FUTEX:
        raise OSError(f"no futex syscall number known for {machine}")
    x86 = _FUTEX[machine] == 202
    pause = "  call void @llvm.x86.sse2.pause()\n" if x86 else ""
    declare_pause = "declare void @llvm.x86.sse2.pause()\n" if x86 else ""
    slot = lambda name, i: f"  %{name} = getelementptr i64, ptr %s, i64 {i}\n"  # noqa: E731
    return f"""
declare i64 @syscall(i64, ...)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @sched_yield()
{declare_pause}
define internal void @spin_pause() alwaysinline {{
{pause}  ret void
}}

; claim and run chunks of the stage of generation `tag` (24 bits) until none is left or another stage is published
define internal void @claim(ptr %s, i64 %tag) {{
entry:
{slot("clp", CLAIM)}{slot("donep", DONE)}{slot("fnp", FN)}{slot("argsp", ARGS)}{slot("ntp", TASKS)}  br label %loop
loop:
  %w = load atomic i64, ptr %clp acquire, align 8
  %wtag = lshr i64 %w, 40
  %mine = icmp eq i64 %wtag, %tag
  br i1 %mine, label %check, label %exit
check:
  %k = and i64 %w, {MAX_CHUNKS}
  %w20 = lshr i64 %w, 20
  %nc = and i64 %w20, {MAX_CHUNKS}
  %left = icmp ult i64 %k, %nc
  br i1 %left, label %take, label %exit
take:
  %w1 = add i64 %w, 1
  %pair = cmpxchg ptr %clp, i64 %w, i64 %w1 acq_rel acquire
  %won = extractvalue {{ i64, i1 }} %pair, 1
  br i1 %won, label %run, label %loop
run:
  ; chunk k is ours and not done, so the stage cannot end and its parameters stay as published
  %fn = load ptr, ptr %fnp, align 8
  %args = load ptr, ptr %argsp, align 8
  %nt = load i64, ptr %ntp, align 8
  %a = mul i64 %nt, %k
  %lo = udiv i64 %a, %nc
  %kp = add i64 %k, 1
  %b = mul i64 %nt, %kp
  %hi = udiv i64 %b, %nc
  %nonempty = icmp ult i64 %lo, %hi
  br i1 %nonempty, label %call, label %done
call:
  call void %fn(ptr %args, i64 %lo, i64 %hi)
  br label %done
done:
  %d = atomicrmw add ptr %donep, i64 1 release
  br label %loop
exit:
  ret void
}}

define internal ptr @worker(ptr %s) {{
entry:
{slot("sleepp", SLEEPERS)}{slot("stopp", STOP)}  br label %wait
wait:
  ; generation 0 is the pool's state when its workers start, not what a worker finds when it first runs: the caller
  ; may have published generation 1 before this thread got a core, and a worker that started from 1 would miss it
  %seen = phi i64 [ 0, %entry ], [ %g, %ran ]
  %seen32 = trunc i64 %seen to i32
  br label %spin
spin:
  %i = phi i64 [ 0, %wait ], [ %i1, %spun ], [ 0, %woke ], [ 0, %cancel ]
  %g = load atomic i64, ptr %s acquire, align 8
  %changed = icmp ne i64 %g, %seen
  br i1 %changed, label %got, label %spun
spun:
  call void @spin_pause()
  %i1 = add i64 %i, 1
  %keep = icmp ult i64 %i1, {SPIN}
  br i1 %keep, label %spin, label %sleep
sleep:
  %sl = atomicrmw add ptr %sleepp, i64 1 seq_cst
  %g2 = load atomic i64, ptr %s seq_cst, align 8
  %changed2 = icmp ne i64 %g2, %seen
  br i1 %changed2, label %cancel, label %futex
futex:
  %r = call i64 (i64, ...) @syscall(i64 {_FUTEX[machine]}, ptr %s, i32 {FUTEX_WAIT_PRIVATE}, i32 %seen32, ptr null)
  %sl2 = atomicrmw sub ptr %sleepp, i64 1 seq_cst
  br label %woke
woke:
  br label %spin
cancel:
  %sl3 = atomicrmw sub ptr %sleepp, i64 1 seq_cst
  br label %spin
got:
  %stop = load atomic i64, ptr %stopp acquire, align 8
  %stopped = icmp ne i64 %stop, 0
  br i1 %stopped, label %exit, label %run
run:
  %tag = and i64 %g, {(1 << 24) - 1}
  call void @claim(ptr %s, i64 %tag)
  br label %ran
ran:
  br label %wait
exit:
{slot("alivep", ALIVE)}  %left = atomicrmw sub ptr %alivep, i64 1 release  ; the last this thread does with the state
  ret ptr null
}}

; start `n` workers; 0, or pthread_create's error
define i64 @schedlab_pool_start(ptr %s, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %created ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %create, label %done
create:
{slot("alivep", ALIVE)}  %born = atomicrmw add ptr %alivep, i64 1 seq_cst
  %slot = add i64 %i, {TIDS}
  %tidp = getelementptr i64, ptr %s, i64 %slot
  %rc = call i32 @pthread_create(ptr %tidp, ptr null, ptr @worker, ptr %s)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %created, label %failed
created:
  %tid = load i64, ptr %tidp, align 8
  %rd = call i32 @pthread_detach(i64 %tid)
  %i1 = add i64 %i, 1
  br label %loop
failed:
  %unborn = atomicrmw sub ptr %alivep, i64 1 seq_cst
  %rc64 = sext i32 %rc to i64
  ret i64 %rc64
done:
  ret i64 0
}}

; run `tasks` tasks of stage `fn` on `args` in `chunks` ranges (1 to MAX_CHUNKS) over the pool's threads; returns
; when all are done
define void @schedlab_pool_run(ptr %s, ptr %fn, ptr %args, i64 %tasks, i64 %chunks) {{
entry:
{slot("fnp", FN)}  store ptr %fn, ptr %fnp, align 8
{slot("argsp", ARGS)}  store ptr %args, ptr %argsp, align 8
{slot("ntp", TASKS)}  store i64 %tasks, ptr %ntp, align 8
{slot("donep", DONE)}  store atomic i64 0, ptr %donep monotonic, align 8
  %old = load atomic i64, ptr %s monotonic, align 8
  %gen = add i64 %old, 1
  %tag = and i64 %gen, {(1 << 24) - 1}
  %tag40 = shl i64 %tag, 40
  %nc20 = shl i64 %chunks, 20
  %word = or i64 %tag40, %nc20
{slot("clp", CLAIM)}  store atomic i64 %word, ptr %clp release, align 8
  store atomic i64 %gen, ptr %s seq_cst, align 8
{slot("sleepp", SLEEPERS)}  %sl = load atomic i64, ptr %sleepp seq_cst, align 8
  %any = icmp ne i64 %sl, 0
  br i1 %any, label %wake, label %work
wake:
  %r = call i64 (i64, ...) @syscall(i64 {_FUTEX[machine]}, ptr %s, i32 {FUTEX_WAKE_PRIVATE}, i32 2147483647)
  br label %work
work:
  call void @claim(ptr %s, i64 %tag)
  br label %check
check:
  %j = phi i64 [ 0, %work ], [ %j1, %again ]
  %d = load atomic i64, ptr %donep acquire, align 8
  %finished = icmp eq i64 %d, %chunks
  br i1 %finished, label %exit, label %idle
idle:
  call void @spin_pause()
  %j1 = add i64 %j, 1
  %long = icmp ugt i64 %j1, {YIELD_AFTER}
  br i1 %long, label %yield, label %again
yield:
  %y = call i32 @sched_yield()
  br label %again
again:
  br label %check
exit:
  ret void
}}

; every worker leaves its loop; each counts itself out of ALIVE as the last thing it does with the state
define void @schedlab_pool_stop(ptr %s) {{
entry:
{slot("stopp", STOP)}  store atomic i64 1, ptr %stopp seq_cst, align 8
  %g = atomicrmw add ptr %s, i64 1 seq_cst
  %r = call i64 (i64, ...) @syscall(i64 {_FUTEX[machine]}, ptr %s, i32 {FUTEX_WAKE_PRIVATE}, i32 2147483647)
  ret void
}}
"""


_engine_lock = threading.Lock()
_engine = None


def _functions():
    """(start, run, stop) of the pool's machine code, compiled once per process."""
    global _engine
    with _engine_lock:
        if _engine is None:
            import llvmlite.binding as llvm

            from .compiler import parse_module, target_machine

            libc = ctypes.CDLL(None)
            for name in ("syscall", "pthread_create", "pthread_detach", "sched_yield"):
                llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
            mod = parse_module(_ir())
            e = llvm.create_mcjit_compiler(mod, target_machine())
            e.finalize_object()
            _engine = e
        e = _engine
    start = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)(
        e.get_function_address("schedlab_pool_start"))
    run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        e.get_function_address("schedlab_pool_run"))
    stop = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(e.get_function_address("schedlab_pool_stop"))
    return start, run, stop


class NativePool:
    """`threads` threads (the caller and threads - 1 workers) running the tasks of one stage at a time."""

    def __init__(self, threads: int):
        if threads < 2:
            raise ValueError(f"a pool needs 2 threads or more, got {threads}")
        self.threads = threads
        self.pid = os.getpid()
        self._start, self._run, self._stop = _functions()
        self.state = aligned_empty(TIDS + threads + 8, np.int64, 64)  # each spun-on field on a cache line of its own
        self.state[:] = 0
        self._address = self.state.ctypes.data
        self._lock = threading.Lock()
        self.closed = False
        rc = self._start(self._address, threads - 1)
        if rc != 0:
            self.close()
            raise OSError(rc, f"pthread_create failed starting the llvm thread pool: {os.strerror(rc)}")

    def run(self, fn: int, args, tasks: int, chunks: int, serial) -> None:
        """Tasks [0, tasks) of stage `fn` (an address) on `args` in `chunks` ranges; `serial` (the stage's ctypes
        function) runs them all on this thread when another thread is using the pool."""
        if not self._lock.acquire(blocking=False):
            serial(args, 0, tasks)
            return
        try:
            self._run(self._address, fn, ctypes.addressof(args), tasks, max(1, min(chunks, MAX_CHUNKS)))
        finally:
            self._lock.release()

    def close(self, timeout: float = 2.0) -> None:
        """Stop the workers and wait (up to `timeout` s) until each has left its loop and let go of the state."""
        with self._lock:
            if self.closed:
                return
            self._stop(self._address)
            self.closed = True
            deadline = time.monotonic() + timeout
            while self.state[ALIVE] > 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            if self.state[ALIVE] > 0:  # pragma: no cover - a worker stuck in a stage: it may still read the state
                _stuck.append(self.state)


_stuck: list[np.ndarray] = []  # states of pools closed while a worker was still running: kept for it


_pools: dict[int, NativePool] = {}
_pools_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A lock another thread held when the process forked stays held in the child: the child gets fresh ones."""
    global _pools_lock, _engine_lock
    _pools_lock, _engine_lock = threading.Lock(), threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def native_pool(threads: int) -> NativePool:
    """This process's pool of `threads` threads, started on first use (a forked child starts its own)."""
    pool = _pools.get(threads)
    if pool is None or pool.pid != os.getpid():
        with _pools_lock:
            pool = _pools.get(threads)
            if pool is None or pool.pid != os.getpid():
                pool = _pools[threads] = NativePool(threads)
    return pool
