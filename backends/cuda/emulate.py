"""Running generated CUDA C on the CPU: the same kernel text built by g++ through the prelude's loops
(MCUDA-style: a block is a call, a thread loop a loop over the block's threads, a barrier a phase boundary).

This checks the lowering (indices, tiles, tails, shared-memory staging, barriers with the racecheck build)
against `ir.interpret`; it says nothing about GPU performance and is never recorded as a GPU measurement.
Builds are cached on disk by content; loading and running happen in the backends worker process, since a
wrong index can corrupt the process's heap (reference/gpu-without-gpu.md §2.4, rule 11).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache import cache_dir, touch
from ..kernel import CompileError
from .codegen import CudaSource

MODES = {  # build mode -> g++ flags; -ffp-contract=off: no fused multiply-adds the reference does not do
    "plain": ("-O2", "-ffp-contract=off"),
    "racecheck": ("-O1", "-ffp-contract=off", "-DSL_RACECHECK"),
}


def gxx() -> str | None:
    return os.environ.get("CXX") or shutil.which("g++")


def build(src: CudaSource, mode: str = "plain", timeout: float = 300.0) -> Path:
    """The shared object of `src` built for the CPU in `mode` (cached by content and flags)."""
    cxx = gxx()
    if cxx is None:
        raise CompileError("the CPU emulation of CUDA kernels needs g++ (apt-get install g++)")
    flags = ("-x", "c++", "-std=c++17", *MODES[mode], "-shared", "-fPIC", "-w")
    h = hashlib.sha256((" ".join(flags) + "\n" + src.source).encode()).hexdigest()[:24]
    d = cache_dir("cuda")
    so = d / f"k_{h}.{mode}.so"
    cu = d / f"k_{h}.cu"
    if so.exists():
        touch(cu)
        touch(so)
        return so
    if not cu.exists():
        tmp = cu.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(src.source)
        os.replace(tmp, cu)
    tmp = so.with_suffix(f".{os.getpid()}.tmp")
    try:
        r = subprocess.run([cxx, *flags, str(cu), "-o", str(tmp)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CompileError(f"g++ ({mode}) timed out after {timeout:.0f} s on {cu.name}") from None
    if r.returncode != 0:
        first = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip()[:300])
        raise CompileError(f"g++ ({mode}) rejected the generated CUDA: {first.strip()}")
    os.replace(tmp, so)
    return so


@dataclass(frozen=True)
class EmulatedProgram:
    """What a worker process needs to run a CUDA program on the CPU: the built library and the launches."""

    so: str
    source: CudaSource

    def runner(self):
        lib = ctypes.CDLL(self.so)
        buffers = self.source.buffers
        calls = []
        for l in self.source.launches:
            fn = getattr(lib, f"{l.kernel}_cpu")
            fn.argtypes = [ctypes.c_longlong] + [ctypes.c_void_p] * len(buffers)
            fn.restype = None
            calls.append((fn, l.grid))
        scratch = {b.name: np.empty(b.size, b.dtype) for b in buffers if b.role == "global"}

        def run(inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
            arrays = []
            for b in buffers:
                a = inputs[b.func] if b.role == "input" else outputs[b.func] if b.role == "output" else scratch[b.name]
                if a.dtype != np.dtype(b.dtype) or a.size < b.size or not a.flags.c_contiguous:
                    raise ValueError(f"{b.name}: expected {b.size} contiguous {b.dtype}, got {a.size} {a.dtype}")
                arrays.append(a.ctypes.data)
            for fn, grid in calls:
                fn(grid, *arrays)

        run.races = lambda: (lib.sl_race_count(), _message(lib))  # type: ignore[attr-defined]
        run.reset = lib.sl_race_reset  # type: ignore[attr-defined]
        return run


def _message(lib) -> str:
    lib.sl_race_message.restype = ctypes.c_char_p
    return (lib.sl_race_message() or b"").decode()


def run_checked(program: EmulatedProgram, inputs: dict[str, np.ndarray], output_meta: dict) -> tuple[dict, int, str]:
    """Runs in the worker: the outputs of one emulated run, and the races the racecheck build saw."""
    run = program.runner()
    run.reset()
    outputs = {n: np.empty(size, dtype) for n, (size, dtype, _) in output_meta.items()}
    run(inputs, outputs)
    count, first = run.races()
    shaped = {n: outputs[n].reshape(shape, order="F") for n, (_, _, shape) in output_meta.items()}
    return shaped, int(count), first
