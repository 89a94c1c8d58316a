"""Compiling generated kernels with numba, cached on disk by content hash.

The source of a kernel is written to `<cache>/<hash>.py` and compiled with `cache=True`, so numba keeps
the machine code beside it: any later process (a benchmark worker, a rerun of a job) loads it in a
fraction of a second. Compilation runs in a worker process with a timeout unless told otherwise.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache import cache_dir, touch
from ..kernel import CompileError, Kernel
from .codegen import KernelSource

_loaded: dict[str, object] = {}


def module_path(src: KernelSource) -> Path:
    import numba

    h = hashlib.sha256((numba.__version__ + "\n" + src.source).encode()).hexdigest()[:24]
    d = cache_dir("numba")
    return d / f"k_{h}.py"


def write_source(src: KernelSource) -> Path:
    path = module_path(src)
    if path.exists():  # in use: kept by backends.cache.prune_kernels. Not the .py itself: numba's cache index
        for index in (path.parent / "__pycache__").glob(path.stem + ".*.nbi"):  # records the source's mtime
            touch(index)
    else:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(src.source)
        os.replace(tmp, path)
    return path


def load(path: Path, name: str):
    """Import a kernel module (compiling it, or loading numba's cache) and return its dispatcher."""
    key = f"{path}:{name}"
    fn = _loaded.get(key)
    if fn is None:
        modname = f"schedlab_kernel_{path.stem}"
        spec = importlib.util.spec_from_file_location(modname, path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
        fn = getattr(mod, name)
        _loaded[key] = fn
    return fn


def compile_here(path: str, name: str) -> float:
    """Compile (or load from cache) in this process; returns seconds taken."""
    t = time.perf_counter()
    load(Path(path), name)
    return time.perf_counter() - t


@dataclass(frozen=True)
class NumbaSpec:
    """What a worker process needs to run a numba kernel."""

    path: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    def runner(self):
        fn = load(Path(self.path), self.name)
        names_in, names_out = self.inputs, self.outputs

        def run(inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
            fn(*[inputs[n] for n in names_in], *[outputs[n] for n in names_out], 1)

        return run


class NumbaKernel(Kernel):
    def __init__(self, pipeline, loopnest, target, source: KernelSource, path: Path, compile_s: float):
        super().__init__(pipeline, loopnest, target, "numba", compile_s,
                         {"path": str(path), "parallel": source.parallel})
        self.source = source
        self.path = path
        self.spec = NumbaSpec(str(path), source.name, source.input_names, source.output_names)
        self._run = None

    def run(self, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
        if self._run is None:
            try:
                self._run = self.spec.runner()
            except Exception as e:  # noqa: BLE001
                raise CompileError(f"numba failed to compile {self.path.name}: {type(e).__name__}: "
                                   f"{str(e).splitlines()[0] if str(e) else ''}") from e
        self._run(inputs, outputs)
