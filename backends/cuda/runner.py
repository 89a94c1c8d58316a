"""Running CUDA programs on a GPU with CuPy: load, launch, check, time with CUDA events (DESIGN §3.4).

Not run on the development or CI machines: they have no GPU. It ran once on an H100
(benchmarks/gpu_measure.py, docs/results/gpu-h100-2026-11-27.txt: 200 random pairs equal the interpreter).
This path is kept small and standard CuPy (`RawModule(code=...)` compiles the same text with NVRTC for the
device's own architecture, `get_function`, `kernel(grid, block, args)`, `cupy.cuda.Event` +
`get_elapsed_time`) so that it can be read and trusted;
everything before it (lowering, NVRTC compile, the program's launches) is exercised here through the CPU
emulation of the same text.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from statistics import median

import numpy as np

from ir.errors import first_line
from ir.status import Status

from ..kernel import Measurement, Protocol
from .codegen import CudaSource


def gpu_missing() -> str | None:
    """None when a CUDA GPU is usable here, else the one line saying what is missing."""
    try:
        import cupy
    except ImportError:
        return "measuring a CUDA kernel needs CuPy and an NVIDIA GPU: pip install schedlab[gpu] on a machine with one"
    if not cupy.cuda.is_available():
        return ("measuring a CUDA kernel needs an NVIDIA GPU and driver, and cupy.cuda.is_available() is False here; "
                "backends.cuda.check runs the same CUDA text on the CPU to check it")
    return None


class GpuProgram:
    """A CudaSource's kernels loaded on the current device, with one device buffer per kernel argument."""

    def __init__(self, source: CudaSource):
        import cupy

        self.source = source
        module = cupy.RawModule(code=source.source, options=("-std=c++17",))
        self.calls = [(module.get_function(l.kernel), (l.grid,), (l.block,)) for l in source.launches]
        self.buffers = {b.name: cupy.empty(b.size, b.dtype) for b in source.buffers}
        self.args = tuple(self.buffers[b.name] for b in source.buffers)

    def upload(self, inputs: dict[str, np.ndarray]) -> None:
        for b in self.source.buffers:
            if b.role == "input":
                self.buffers[b.name].set(np.ascontiguousarray(inputs[b.func]))

    def launch(self) -> None:
        for fn, grid, block in self.calls:
            fn(grid, block, self.args)

    def download(self, outputs: dict[str, np.ndarray]) -> None:
        for b in self.source.buffers:
            if b.role == "output":
                outputs[b.func][...] = self.buffers[b.name].get()


@dataclass(frozen=True)
class CupySpec:
    """What a worker process needs to run a CUDA program on its GPU."""

    source: CudaSource

    def runner(self):
        prog = GpuProgram(self.source)

        def run(inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
            prog.upload(inputs)
            prog.launch()
            prog.download(outputs)

        return run


def run_measurement_gpu(spec: CupySpec, output_meta: dict, inputs: dict[str, np.ndarray], protocol: Protocol,
                        expected: dict | None, types: dict) -> Measurement:
    """Runs in the worker: check the outputs once, then time the launches (inputs resident on the device) with
    CUDA events until the best and third best agree within protocol.accuracy or max_seconds pass."""
    import cupy

    from ..timing import compare_outputs

    try:
        prog = GpuProgram(spec.source)
    except Exception as e:  # noqa: BLE001 - a failing compile is a status
        return Measurement(Status.COMPILE_ERROR, error=f"{type(e).__name__}: {first_line(e)}")
    outputs = {n: np.empty(size, dtype) for n, (size, dtype, _) in output_meta.items()}
    try:
        prog.upload(inputs)
        prog.launch()
        prog.download(outputs)
    except Exception as e:  # noqa: BLE001
        return Measurement(Status.RUNTIME_ERROR, error=f"{type(e).__name__}: {first_line(e)}")
    if expected is not None:
        shaped = {n: outputs[n].reshape(shape, order="F") for n, (_, _, shape) in output_meta.items()}
        why = compare_outputs(types, shaped, expected)
        if why is not None:
            return Measurement(Status.WRONG_OUTPUT, error=why)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def once() -> float:
        start.record()
        prog.launch()
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) / 1e3

    for _ in range(protocol.warmup):
        once()
    samples: list[float] = []
    t0 = time.perf_counter()
    while len(samples) < protocol.max_samples:
        samples.append(once())
        elapsed = time.perf_counter() - t0
        s = sorted(samples)
        if len(s) >= protocol.min_samples and (s[2] <= s[0] * (1 + protocol.accuracy) and elapsed >= protocol.min_seconds
                                               or elapsed >= protocol.max_seconds):
            break
    s = sorted(samples)
    third = s[min(2, len(s) - 1)]
    return Measurement(Status.OK, s[0], median(s), third / s[0] - 1 if s[0] > 0 else math.nan, len(s), len(s))


def measure_on_gpu(kernel, inputs, protocol: Protocol | None, expected, worker, isolate: bool,
                   data_key: str | None = None) -> Measurement:
    from ..timing import measure_kernel

    return measure_kernel(kernel, inputs, protocol, expected, worker, isolate, measure=run_measurement_gpu,
                          data_key=data_key)
