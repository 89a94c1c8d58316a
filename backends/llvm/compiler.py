"""Compiling generated LLVM IR to machine code with llvmlite (LLVM's O3 pipeline for the host CPU, loop and SLP
vectorizers on, its loop unroller off), cached on disk by content as object files any process of the node loads in milliseconds, and
running the program: its root stages in order, a parallel stage's tasks split over the threads of a pool in machine
code (threadpool.NativePool), the calling thread among them."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache import cache_dir, touch
from ..kernel import BUFFER_ALIGNMENT, aligned_empty
from .irgen import LlvmSource
from .threadpool import NativePool, native_pool

STAGE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


@functools.cache
def target_machine():
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, reloc="pic", codemodel="jitdefault")


def object_path(src: LlvmSource) -> Path:
    import llvmlite

    tm = target_machine()
    key = "\n".join([llvmlite.__version__, tm.triple, src.ir])
    return cache_dir("llvm") / f"k_{hashlib.sha256(key.encode()).hexdigest()[:24]}.o"


PHASES: dict[str, float] = {}  # seconds of each phase of this process's last compile (benchmarks/compile_speed.py)


# Each thread's scratch arena: the root-level intermediates of whichever kernel it runs, one kernel at a time. A
# kernel with buffers of its own faulted them in on its first call: a block of 16 kernels of one pipeline held 16
# sets of 200-350 MB and each first call (the output check) ran 1.5-6x its later calls, the kernel zeroing huge
# pages. One arena per thread is faulted once for all of them (docs/backends.md, "One scratch arena per thread").
_ARENAS = threading.local()
ARENA_GROWTH = 1.25  # an arena too small for a kernel is replaced by one this much larger than it needs


def scratch_layout(src: LlvmSource) -> tuple[dict[str, int], int]:
    """(byte offset of each global buffer in a scratch arena, bytes the arena needs): every buffer starts on a
    BUFFER_ALIGNMENT boundary, as inputs and outputs do."""
    offsets, end = {}, 0
    for b in src.buffers:
        if b.role == "global":
            offsets[b.name] = end = -(-end // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT
            end += max(1, b.size) * np.dtype(b.dtype).itemsize
    return offsets, end


def scratch_arena(nbytes: int) -> tuple[np.ndarray, int]:
    """(this thread's arena, its address), at least `nbytes` long. Kernels run by one thread run one after another
    and write every value of their intermediates before reading it, so they may share it; threads do not."""
    arena = getattr(_ARENAS, "arena", None)
    if arena is None or arena.nbytes < nbytes:
        arena = _ARENAS.arena = None  # the old arena is freed before the new one is mapped
        arena = _ARENAS.arena = aligned_empty(int(nbytes * ARENA_GROWTH) + BUFFER_ALIGNMENT, np.uint8)
        _ARENAS.address = arena.ctypes.data
    return arena, _ARENAS.address


def release_scratch_arena() -> int:
    """Free this thread's arena (the next kernel it runs maps a new one): a long-lived thread that ran a large kernel
    otherwise keeps its intermediates' memory. Returns the bytes freed."""
    arena = getattr(_ARENAS, "arena", None)
    _ARENAS.arena = None
    return 0 if arena is None else arena.nbytes


def parse_module(ir_text: str):
    """`ir_text` parsed and verified, for the host target machine."""
    import llvmlite.binding as llvm

    tm = target_machine()
    mod = llvm.parse_assembly(ir_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    return mod


def optimize(mod) -> None:
    """LLVM's O3 pipeline on `mod`, in place, as every kernel is compiled: loop and SLP vectorizers on, the loop
    unroller off (UNROLLED levels are unrolled by irgen; LLVM's unroller tripled compile times)."""
    import llvmlite.binding as llvm

    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False
    pb = llvm.create_pass_builder(target_machine(), pto)
    pb.getModulePassManager().run(mod, pb)


def compile_here(ir_text: str, path: str) -> float:
    """Optimize and emit the object file of `ir_text` to `path` (unless it is there); seconds taken."""
    p = Path(path)
    if p.exists():
        touch(p)
        return 0.0
    t0 = time.perf_counter()
    mod = parse_module(ir_text)
    t1 = time.perf_counter()
    optimize(mod)
    t2 = time.perf_counter()
    obj = target_machine().emit_object(mod)
    PHASES.clear()
    PHASES.update({"parse": t1 - t0, "optimize": t2 - t1, "machine code": time.perf_counter() - t2})
    tmp = p.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(obj)
    os.replace(tmp, p)
    return time.perf_counter() - t0


_engines: dict[str, object] = {}


def _engine(path: str):
    """An MCJIT engine holding the object file's code (one per object per process; never unloaded)."""
    e = _engines.get(path)
    if e is None:
        import llvmlite.binding as llvm

        tm = target_machine()
        empty = llvm.parse_assembly("")
        empty.triple = tm.triple
        e = llvm.create_mcjit_compiler(empty, tm)
        e.add_object_file(llvm.ObjectFileRef.from_data(Path(path).read_bytes()))
        e.finalize_object()
        _engines[path] = e
    return e


def _threads() -> int:
    """Threads a parallel stage runs on: the cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


POOLS = ("native", "executor")


def pool_kind() -> str:
    """How parallel stages are run: "native" (threadpool.NativePool, the default) or "executor" (a Python
    ThreadPoolExecutor, as before 2026-12-05), from $SCHEDLAB_LLVM_POOL."""
    kind = os.environ.get("SCHEDLAB_LLVM_POOL") or "native"
    if kind not in POOLS:
        raise ValueError(f"SCHEDLAB_LLVM_POOL={kind!r}: use one of {', '.join(POOLS)}")
    return kind


@functools.cache
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=_threads(), thread_name_prefix="schedlab-llvm")


@dataclass(frozen=True)
class LlvmSpec:
    """What a worker process needs to run a compiled LLVM program."""

    path: str
    source: LlvmSource

    def runner(self):
        e = _engine(self.path)
        src = self.source
        addresses = [e.get_function_address(s.function) for s in src.stages]
        stages = [(STAGE(a), a, s.tasks) for a, s in zip(addresses, src.stages)]
        offsets, scratch_bytes = scratch_layout(src)
        workers = _threads()
        # calls per thread of a parallel stage: more balance the load, fewer cost less (a call is a range of tasks)
        per_thread = max(1, int(os.environ.get("SCHEDLAB_LLVM_CALLS_PER_THREAD", "1")))
        pool = None
        if workers > 1:
            pool = native_pool(workers) if pool_kind() == "native" else _executor()
        spans = {b.name: (offsets[b.name], offsets[b.name] + b.size * np.dtype(b.dtype).itemsize, np.dtype(b.dtype))
                 for b in src.buffers if b.role == "global"}  # bytes [start, stop) of each in the arena, its dtype
        copies = [(o, origin, strides, shape, *spans[f"g_{o}"]) for o, origin, strides, shape in src.copies]

        def run(inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
            arena, base = scratch_arena(scratch_bytes)
            arrays = []
            for b in src.buffers:
                if b.role == "global":
                    arrays.append(base + offsets[b.name])
                    continue
                a = inputs[b.func] if b.role == "input" else outputs[b.func]
                if a.dtype != np.dtype(b.dtype) or a.size < b.size:
                    raise ValueError(f"{b.name}: expected {b.size} {b.dtype}, got {a.size} {a.dtype}")
                arrays.append(a.ctypes.data)
            args = (ctypes.c_void_p * len(arrays))(*arrays)
            for fn, address, tasks in stages:
                if tasks <= 1 or pool is None:
                    fn(args, 0, tasks)
                    continue
                chunks = min(tasks, per_thread * workers)
                if isinstance(pool, NativePool):
                    pool.run(address, args, tasks, chunks, fn)
                    continue
                bounds = [tasks * k // chunks for k in range(chunks + 1)]
                list(pool.map(lambda k: fn(args, bounds[k], bounds[k + 1]), range(chunks)))
            for o, origin, strides, shape, start, stop, dtype in copies:
                buf = arena[start:stop].view(dtype)
                view = np.lib.stride_tricks.as_strided(buf[origin:], shape=shape,
                                                       strides=tuple(s * buf.itemsize for s in strides))
                outputs[o].reshape(shape, order="F")[...] = view

        return run
