"""Halide kernels compiled ahead of time: one object file per schedule in the node's kernel cache, loaded by any
process on the node in milliseconds.

Why: the data generator compiles a schedule in one process (a compile task) and measures it in another (the
node's benchmarker). Halide's JIT code lives and dies with its process, so the benchmarker compiled every
Halide schedule a second time (about a second each, one at a time on the node's only benchmarker). Now the
compile task writes `Pipeline.compile_to_object` output (the kernel and its own copy of the Halide runtime)
to `$SCHEDLAB_CACHE_DIR/halide/<digest>.o` with a small JSON sidecar (argument order, compile seconds), and a
runner maps it with llvmlite's MCJIT — the LLVM layer numba already brings, so no C compiler or linker is
needed — and calls its `<name>_argv` entry point through ctypes with `halide_buffer_t`s over the harness's
arrays. The same code runs as under JIT (same target, StrictFloat, same schedule): tests compare the two
bit for bit.

The digest covers the pipeline, the LoopNest, StrictFloat, the host target string and the Halide version.
Each loaded kernel carries its own runtime and thread pool; a process keeps the last `LOADED` kernels mapped
and, once no runner holds a dropped one, shuts its thread pool down before freeing its code.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache import cache_dir

FUNCTION = "schedlab_kernel"  # the entry point's name in every object (each object is loaded on its own)
LOADED = 16  # kernels a process keeps mapped


class _Dim(ctypes.Structure):
    _fields_ = [("min", ctypes.c_int32), ("extent", ctypes.c_int32), ("stride", ctypes.c_int32),
                ("flags", ctypes.c_uint32)]


class _Type(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Buffer(ctypes.Structure):
    """Halide's `halide_buffer_t` (HalideRuntime.h), host memory only."""

    _fields_ = [("device", ctypes.c_uint64), ("device_interface", ctypes.c_void_p), ("host", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("type", _Type), ("dimensions", ctypes.c_int32),
                ("dim", ctypes.POINTER(_Dim)), ("padding", ctypes.c_void_p)]


_CODES = {"i": 0, "u": 1, "f": 2, "b": 1}  # halide_type_code_t: int, uint, float; bool is uint1


def _halide_buffer(flat: np.ndarray, shape: tuple[int, ...], mins: tuple[int, ...]) -> tuple[_Buffer, object]:
    """A halide_buffer_t over a flat Fortran-order array of `shape` placed at `mins` (dimension 0 innermost)."""
    if not flat.flags.c_contiguous:  # pragma: no cover - the harness passes contiguous arrays
        raise ValueError("the Halide backend needs contiguous arrays")
    dims = (_Dim * len(shape))()
    stride = 1
    for i, (extent, lo) in enumerate(zip(shape, mins)):
        dims[i] = _Dim(int(lo), int(extent), stride, 0)
        stride *= int(extent)
    bits = 1 if flat.dtype.kind == "b" else flat.dtype.itemsize * 8
    buf = _Buffer(0, None, flat.ctypes.data, 0, _Type(_CODES[flat.dtype.kind], bits, 1), len(shape), dims, None)
    return buf, dims


@dataclass(frozen=True)
class ObjectInfo:
    """The sidecar of an object file: what its entry point takes, in order, and what compiling it cost."""

    inputs: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (name, region as (min, extent) per dim)
    outputs: tuple[tuple[str, tuple[int, ...]], ...]  # (name, size)
    compile_s: float


def object_path(spec) -> Path:
    """Where `spec`'s object file lives in this node's cache."""
    import halide as hl

    from .compiler import host_target

    blob = json.dumps([list(spec.key), host_target(spec.strict_float).to_string(), getattr(hl, "__version__", "")],
                      sort_keys=True, default=str).encode()
    return cache_dir("halide") / f"{hashlib.sha256(blob).hexdigest()[:32]}.o"


def _info_path(obj: Path) -> Path:
    return obj.with_suffix(".json")


def compile_object(spec) -> float:
    """Translate, schedule and compile `spec` (a LoopNest spec) to its object file unless the node has it;
    returns the seconds compiling took (recorded the first time)."""
    obj = object_path(spec)
    info = _read_info(obj)
    if info is not None:
        return info.compile_s
    import halide as hl  # noqa: F401 - the compiler, needed only here

    from ir.loopnest import LoopNest
    from ir.pipeline import Pipeline
    from ir.plan import Plan

    from .compiler import host_target
    from .schedule import apply
    from .translate import translate

    p = Pipeline.from_json(json.loads(spec.pipeline_json))
    hp = translate(p)
    apply(hp, Plan(p.dag, LoopNest.loads(spec.loopnest_json)))
    names = list(hp.params)
    t0 = time.perf_counter()
    fd, tmp = tempfile.mkstemp(suffix=".o", dir=obj.parent)
    os.close(fd)
    try:
        hp.pipeline().compile_to_object(tmp, [hp.params[n] for n in names], FUNCTION, host_target(spec.strict_float))
        seconds = time.perf_counter() - t0
        info = ObjectInfo(tuple((n, tuple((lo, e) for lo, e in p.input_regions[n])) for n in names),
                          tuple((o, tuple(p.output_sizes[o])) for o in hp.outputs), seconds)
        _write_atomically(_info_path(obj), json.dumps({"inputs": info.inputs, "outputs": info.outputs,
                                                       "compile_s": seconds}).encode())
        os.replace(tmp, obj)  # the object last: a reader that finds it finds its sidecar
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return seconds


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _read_info(obj: Path) -> ObjectInfo | None:
    if not obj.exists():
        return None
    try:
        d = json.loads(_info_path(obj).read_text())
    except (OSError, ValueError):
        return None
    return ObjectInfo(tuple((n, tuple(tuple(r) for r in reg)) for n, reg in d["inputs"]),
                      tuple((n, tuple(s)) for n, s in d["outputs"]), float(d["compile_s"]))


class _Loaded:
    """One object file mapped into this process: its entry point, and its runtime's thread-pool shutdown."""

    _initialized = False

    def __init__(self, obj: Path, info: ObjectInfo):
        import llvmlite.binding as llvm

        if not _Loaded._initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _Loaded._initialized = True
        machine = llvm.Target.from_default_triple().create_target_machine()
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj.read_bytes()))
        self.engine.finalize_object()
        address = self.engine.get_function_address(f"{FUNCTION}_argv")
        if not address:
            raise RuntimeError(f"{obj.name} has no {FUNCTION}_argv")
        self.entry = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))(address)
        shutdown = self.engine.get_function_address("halide_shutdown_thread_pool")
        self.shutdown = ctypes.CFUNCTYPE(None)(shutdown) if shutdown else None
        self.info = info

    def __del__(self):  # the last runner using it is gone: its threads, then its code
        try:
            if self.shutdown is not None:
                self.shutdown()
            self.engine.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


_loaded: OrderedDict[Path, _Loaded] = OrderedDict()
_lock = threading.Lock()


def _load(spec) -> _Loaded:
    obj = object_path(spec)
    with _lock:
        k = _loaded.get(obj)
        if k is not None:
            _loaded.move_to_end(obj)
            return k
    info = _read_info(obj)
    if info is None:
        compile_object(spec)
        info = _read_info(obj)
    k = _Loaded(obj, info)
    with _lock:
        _loaded[obj] = k
        while len(_loaded) > LOADED:
            _loaded.popitem(last=False)  # freed when no runner holds it any more
    return k


def runner(spec):
    """run(inputs, outputs) for `spec`'s object file (compiled here if the node does not have it yet)."""
    k = _load(spec)
    argv_cache: dict = {}

    def run(inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
        arrays = [inputs[n] for n, _ in k.info.inputs] + [outputs[n] for n, _ in k.info.outputs]
        key = tuple((id(a), a.ctypes.data) for a in arrays)
        argv = argv_cache.get("argv") if argv_cache.get("key") == key else None
        if argv is None:  # the harness times repeated calls on the same arrays: build the buffers once
            bufs = [_halide_buffer(a, tuple(e for _, e in reg), tuple(lo for lo, _ in reg))
                    for a, (_, reg) in zip(arrays, k.info.inputs)]
            bufs += [_halide_buffer(a, size, (0,) * len(size)) for a, (_, size) in
                     zip(arrays[len(k.info.inputs):], k.info.outputs)]
            argv = (ctypes.c_void_p * len(bufs))(*[ctypes.addressof(b) for b, _ in bufs])
            argv_cache.update(key=key, argv=argv, keep=(bufs, arrays))
        rc = k.entry(argv)
        if rc != 0:
            raise RuntimeError(f"the Halide kernel returned error {rc} (Halide's message is on stderr)")

    return run
