"""What every backend returns: a compiled Kernel, and the Measurement of running it."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ir.errors import SchedlabError

from ir.status import STATUSES, Status  # noqa: F401 - re-exported: the one status vocabulary

# Byte alignment of the buffers the harness allocates: the widest vector (AVX-512) times two, what Halide's own
# allocator gives. Halide's code may store to an output with an aligned vector instruction (backends/halide/aot.py),
# and aligned buffers keep every backend's timing independent of where numpy happened to put an array.
BUFFER_ALIGNMENT = 128


def aligned_empty(n: int, dtype, alignment: int = BUFFER_ALIGNMENT) -> np.ndarray:
    """An uninitialized flat array of n elements whose data starts on an `alignment`-byte boundary."""
    dtype = np.dtype(dtype)
    raw = np.empty(n * dtype.itemsize + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + n * dtype.itemsize].view(dtype)


def aligned(a: np.ndarray, alignment: int = BUFFER_ALIGNMENT) -> np.ndarray:
    """`a` if its data is C-contiguous and starts on an `alignment`-byte boundary, else an aligned flat copy."""
    if a.flags.c_contiguous and a.ctypes.data % alignment == 0:
        return a
    out = aligned_empty(a.size, a.dtype, alignment)
    out[:] = a.ravel(order="K")
    return out.reshape(a.shape)


class CompileError(SchedlabError):
    """Compilation failed or timed out; `status` is compile_error or timeout."""

    def __init__(self, message: str, status: str = Status.COMPILE_ERROR):
        super().__init__(message)
        self.status = status


class DeviceMissing(SchedlabError):
    """The device a kernel runs on (a GPU) is not present in this process: a one-line error from `measure`,
    status no_gpu in the measurement path that never raises (backends.measuring.run)."""


@dataclass
class Measurement:
    status: str  # one of ir.status.STATUSES
    min_s: float = math.nan  # best time of one run
    median_s: float = math.nan
    spread: float = math.nan  # (third best - best) / best over the samples
    samples: int = 0
    iterations: int = 0  # runs timed in total
    compile_s: float = math.nan
    error: str = ""
    measure_s: float = math.nan  # wall seconds the measurement took (kernel load or rebuild, runs, output check)
    wait_s: float = math.nan  # seconds it waited for its node to be quiet before timing (generator.job.quiet)

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Protocol:
    """RunGen-style benchmarking (seeds/sioutas2020 §5.1): warm up, then time samples until the best
    and third best agree within `accuracy` or `max_seconds` have passed."""

    warmup: int = 1
    min_samples: int = 3
    max_samples: int = 100
    accuracy: float = 0.03
    min_seconds: float = 0.05  # keep sampling at least this long
    max_seconds: float = 2.0
    sample_seconds: float = 1e-3  # a sample repeats the kernel until it lasts this long
    timeout: float = 60.0  # the whole measurement, in the worker
    max_rounds: int = 20  # interleaved measurement (timing.time_interleaved): rounds at most; two runs' orders of
    #   random pipelines' schedules agreed no better after 20 rounds than after 40 (docs/generator.md)
    retire_settled: bool = False  # interleaved measurement: a kernel whose best and third best samples agree within
    #   `accuracy`, after `min_seconds` of its own samples, takes no further rounds (docs/generator.md, "Settled
    #   kernels retire"); the rest go on as before. Long kernels settle first, and they are most of a block's time
    retire_ordered: bool = False  # interleaved measurement: a kernel whose order with every other kernel of the block
    #   is settled takes no further rounds (timing.ordered, docs/generator.md "Ordered kernels retire"): the ranges
    #   best / (1 + spread + accuracy) .. best of the two do not overlap, or both have settled (a near-tie no further
    #   rounds order). Labels are a pipeline's order; pairs already ordered need no more samples


@dataclass
class Kernel:
    """A compiled (pipeline, LoopNest): call it with input arrays, get output arrays."""

    pipeline: Any
    loopnest: Any
    target: Any
    backend: str
    compile_s: float = math.nan
    meta: dict = field(default_factory=dict)

    def __call__(self, *args, **named) -> dict[str, np.ndarray]:
        inputs = self.bind_inputs(args, named)
        outputs = self.allocate_outputs()
        self.run(inputs, outputs)
        return self.shape_outputs(outputs)

    # -- argument handling shared by backends ----------------------------------------------------

    def bind_inputs(self, args: tuple, named: dict) -> dict[str, np.ndarray]:
        p = self.pipeline
        if len(args) == 1 and isinstance(args[0], dict) and not named:
            named = dict(args[0])
            args = ()
        names = [i.name for i in p.inputs]
        if len(args) > len(names):
            raise SchedlabError(f"{len(args)} inputs given, the pipeline has {len(names)}: {names}")
        given = dict(zip(names, args))
        given.update(named)
        from ir.interpret import check_inputs

        return {k: v.ravel(order="F") for k, v in check_inputs(p, given).items()}

    def allocate_outputs(self) -> dict[str, np.ndarray]:
        p = self.pipeline
        return {o.name: aligned_empty(math.prod(p.output_sizes[o.name]), o.type.dtype) for o in p.outputs}

    def shape_outputs(self, outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        p = self.pipeline
        return {k: v.reshape(p.output_sizes[k], order="F") for k, v in outputs.items()}

    def run(self, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def bench_callable(self, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]):
        """A no-argument function running the kernel once on prepared buffers (what is timed)."""
        return lambda: self.run(inputs, outputs)
