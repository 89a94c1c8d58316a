"""Kernel runners that misbehave, imported by the worker process in tests: a real crash, a real hang."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class CrashingSpec:
    def runner(self):
        def run(inputs, outputs):
            os.abort()

        return run


@dataclass(frozen=True)
class HangingSpec:
    def runner(self):
        def run(inputs, outputs):
            time.sleep(3600)

        return run


@dataclass(frozen=True)
class RaisingSpec:
    def runner(self):
        def run(inputs, outputs):
            raise FloatingPointError("injected failure")

        return run


def abort_now():
    os.abort()


def sleep_forever():
    time.sleep(3600)


def add(a, b):
    return a + b


@dataclass(frozen=True)
class WrongOutputSpec:
    """A real kernel whose first output gets one value changed after each run."""

    inner: object

    def runner(self):
        run_inner = self.inner.runner()

        def run(inputs, outputs):
            run_inner(inputs, outputs)
            next(iter(outputs.values()))[0] += 1

        return run


def refaulted_pages(mib: int = 12, buffers: int = 3, rounds: int = 4) -> float:
    """Minor page faults per round of allocating, writing and freeing `buffers` buffers of `mib` MiB with libc's
    malloc (as Halide's runtime does), after a first round: what a kernel's intermediate buffers cost at each call
    once the worker has run it before. A freed 16 MiB mapping first raises glibc's adaptive thresholds (mmap
    16 MiB, trim 32 MiB), so the rounds' buffers come from the heap, and their 36 MiB at its top are trimmed and
    faulted in again unless the trim threshold is pinned."""
    import ctypes
    import resource

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def touched(n: int) -> int:
        ptr = libc.malloc(n)
        ctypes.memset(ptr, 1, n)
        return ptr

    libc.free(touched(16 << 20))  # mapped, written and freed: the adaptive thresholds move
    counts = []
    for _ in range(rounds + 1):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for ptr in [touched(mib << 20) for _ in range(buffers)]:
            libc.free(ptr)
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return sum(counts[1:]) / rounds
