"""Halide kernels compiled ahead of time: one object file per schedule in the node's kernel cache, loaded by any
process on the node in milliseconds.

Why: the data generator compiles a schedule in one process (a compile task) and measures it in another (the
node's benchmarker). Halide's JIT code lives and dies with its process, so the benchmarker compiled every
Halide schedule a second time (about a second each, one at a time on the node's only benchmarker). Now the
compile task writes `Pipeline.compile_to_object` output to `$SCHEDLAB_CACHE_DIR/halide/<digest>.o` with a
small JSON sidecar (entry point, argument order, compile seconds), and a runner maps it with llvmlite's
MCJIT — the LLVM layer numba already brings, so no C compiler or linker is needed — and calls its `_argv`
entry point through ctypes with `halide_buffer_t`s over the harness's arrays. The same code runs as under
JIT (same target, StrictFloat, same schedule): tests compare the two bit for bit. A pipeline scheduled by one
of Halide's autoschedulers (Adams2019, Mullapudi2016, Li2018) is compiled the same way by the process that ran
the search, and its sidecar also keeps the chosen schedule and the search seconds.

Every buffer handed to a kernel starts on a 128-byte boundary (backends.kernel.BUFFER_ALIGNMENT), as Halide's own
allocator's do. Halide may store to an output with an aligned vector instruction: fuzz pair 68069/2110146 (an
output 16 lanes wide, its update vectorized by 16 on AVX-512) compiles to a `vmovdqa64` to the output's first
element, which faults on numpy's 16-byte-aligned arrays — a segfault that came and went with where numpy put the
array. The harness allocates aligned outputs (no copy in a timed call); the runner copies an unaligned Input once
when it lays it out, and runs into an aligned copy of an unaligned output another caller passes.

Kernels are compiled without the Halide runtime (compiling it into every object cost ~0.7 s a schedule, as
much as the kernel); the node compiles Halide's standalone runtime once, and a process maps it into an
engine that then takes up to `GENERATION` kernels, which resolve their runtime calls to it. A process keeps
the last `LOADED` kernels mapped; an engine whose kernels are all dropped shuts its thread pool down and
frees its code. The digest covers the pipeline, the LoopNest, StrictFloat, the host target string, the
Halide version and schedlab's code that translates and schedules for Halide (backends/halide, ir): a change to the
translation compiles anew instead of loading the kernel of the code before.
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

from ..cache import cache_dir, touch, translator_digest
from ..kernel import aligned
from .diagnostics import planned_warnings_filtered

LOADED = 16  # kernels a process keeps mapped
GENERATION = 64  # kernels mapped into one engine (beside its runtime) before the next engine starts


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
    return _describe(flat.dtype, shape, mins, flat.ctypes.data)


def _describe(dtype: np.dtype, shape: tuple[int, ...], mins: tuple[int, ...],
              host: int | None) -> tuple[_Buffer, object]:
    """A halide_buffer_t of `dtype` over `shape` at `mins`, dense strides; `host` None: no memory, so the entry point
    only fills in the region the buffer must cover (Halide's bounds query). The dims array is returned to keep it
    alive (and to read what a bounds query filled in)."""
    dims = (_Dim * len(shape))()
    stride = 1
    for i, (extent, lo) in enumerate(zip(shape, mins)):
        dims[i] = _Dim(int(lo), int(extent), stride, 0)
        stride *= int(extent)
    bits = 1 if dtype.kind == "b" else dtype.itemsize * 8
    buf = _Buffer(0, None, host, 0, _Type(_CODES[dtype.kind], bits, 1), len(shape), dims, None)
    return buf, dims


@dataclass(frozen=True)
class ObjectInfo:
    """The sidecar of an object file: what its entry point takes, in order, and what compiling it cost."""

    function: str  # the entry point is <function>_argv
    inputs: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]  # (name, region as (min, extent) per dim)
    outputs: tuple[tuple[str, tuple[int, ...]], ...]  # (name, size)
    compile_s: float
    schedule_source: str = ""  # an autoscheduler's choice as Halide C++ directives
    search_s: float = 0.0  # the seconds that autoscheduler searched


def _digest(*parts) -> str:
    import halide as hl

    from .compiler import halide_host_target

    blob = json.dumps([*parts, halide_host_target().to_string(), getattr(hl, "__version__", ""),
                       translator_digest(*TRANSLATOR_PACKAGES)], sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


# the code that decides what Halide is given for a (pipeline, LoopNest): the translation and the schedule's bounds
# (a kernel compiled by other code is another kernel; the numba, llvm and cuda caches key on their generated source)
TRANSLATOR_PACKAGES = ("backends/halide", "ir")


def object_path(spec) -> Path:
    """Where `spec`'s object file lives in this node's cache."""
    return cache_dir("halide") / f"k{_digest(list(spec.key))}.o"


def runtime_path() -> Path:
    """Halide's standalone runtime for this host, compiled once per node (the kernels are compiled without it;
    the runtime itself refuses StrictFloat, which concerns the kernels' arithmetic only)."""
    import halide as hl

    from .compiler import halide_host_target

    path = cache_dir("halide") / f"runtime-{_digest('runtime')}.o"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(suffix=".o", dir=path.parent)
        os.close(fd)
        try:
            hl.compile_standalone_runtime(tmp, halide_host_target())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return path


def _info_path(obj: Path) -> Path:
    return obj.with_suffix(".json")


def compile_object(spec) -> float:
    """Compile `spec` to its object file unless the node has it; returns the seconds compiling took (recorded
    the first time). A LoopNest spec is translated and scheduled; an autoscheduler spec runs Halide's search
    here, and its chosen schedule and search seconds go into the sidecar (`object_info`), so that the process
    that measures the kernel loads it instead of searching again."""
    obj = object_path(spec)
    info = _read_info(obj)
    if info is not None:
        touch(obj)  # in use: kept by backends.cache.prune_kernels
        return info.compile_s
    import halide as hl

    from ir.pipeline import Pipeline

    from .compiler import host_target
    from .translate import translate

    p = Pipeline.from_json(json.loads(spec.pipeline_json))
    hp = translate(p, clamp_inputs=False)  # Inputs come padded (runner): no clamp at every read
    source, search_s = "", 0.0
    if spec.autoscheduler:
        from .autoschedule import run_autoscheduler

        hpipe = hp.pipeline()
        source, search_s = run_autoscheduler(hpipe, spec.autoscheduler, dict(spec.autoscheduler_params),
                                             host_target(spec.strict_float))
    else:
        from ir.loopnest import LoopNest
        from ir.plan import Plan

        from .schedule import apply

        apply(hp, Plan(p.dag, LoopNest.loads(spec.loopnest_json)))
        hpipe = hp.pipeline()
    names = list(hp.params)
    t0 = time.perf_counter()
    fd, tmp = tempfile.mkstemp(suffix=".o", dir=obj.parent)
    os.close(fd)
    try:
        function = obj.stem  # unique: kernels share an engine
        target = host_target(spec.strict_float).with_feature(hl.TargetFeature.NoRuntime)
        with planned_warnings_filtered():
            hpipe.compile_to_object(tmp, [hp.params[n] for n in names], function, target)
        seconds = time.perf_counter() - t0
        info = ObjectInfo(function, tuple((n, tuple((lo, e) for lo, e in p.input_regions[n])) for n in names),
                          tuple((o, tuple(p.output_sizes[o])) for o in hp.outputs), seconds, source, search_s)
        _write_atomically(_info_path(obj), json.dumps({"function": function, "inputs": info.inputs,
                                                       "outputs": info.outputs, "compile_s": seconds,
                                                       "schedule_source": source, "search_s": search_s}).encode())
        os.replace(tmp, obj)  # the object last: a reader that finds it finds its sidecar
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return seconds


def object_info(spec) -> ObjectInfo:
    """The sidecar of `spec`'s object file, compiled first if the node does not have it."""
    compile_object(spec)
    info = _read_info(object_path(spec))
    if info is None:  # pragma: no cover - pruned between the two lines
        raise RuntimeError(f"{object_path(spec).name} vanished from the kernel cache")
    return info


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
    if "function" not in d:
        return None
    return ObjectInfo(d["function"], tuple((n, tuple(tuple(r) for r in reg)) for n, reg in d["inputs"]),
                      tuple((n, tuple(s)) for n, s in d["outputs"]), float(d["compile_s"]),
                      str(d.get("schedule_source", "")), float(d.get("search_s", 0.0)))


_ERROR_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)  # halide_error_handler_t


class _Engine:
    """An MCJIT engine holding Halide's runtime and up to GENERATION kernels that call into it."""

    _initialized = False

    def __init__(self):
        import llvmlite.binding as llvm

        if not _Engine._initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _Engine._initialized = True
        machine = llvm.Target.from_default_triple().create_target_machine()
        self.llvm = llvm
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(runtime_path().read_bytes()))
        self.engine.finalize_object()
        shutdown = self.engine.get_function_address("halide_shutdown_thread_pool")
        self.shutdown = ctypes.CFUNCTYPE(None)(shutdown) if shutdown else None
        self.kernels = 0
        # Halide's default error handler prints the message and aborts the process, so a kernel that fails at
        # run time (an allocation over 2^31 bytes, an input too small) killed its worker with SIGABRT and the
        # message was lost on stderr; this handler keeps the message and lets the kernel return its error code
        self.errors, self.last_error = 0, ""  # messages Halide gave, and the last one
        self._on_error = _ERROR_HANDLER(self._record_error)  # kept alive as long as the runtime that calls it
        set_handler = self.engine.get_function_address("halide_set_error_handler")
        if set_handler:
            ctypes.CFUNCTYPE(ctypes.c_void_p, _ERROR_HANDLER)(set_handler)(self._on_error)

    def _record_error(self, user_context, message) -> None:  # may run on one of Halide's pool threads
        self.last_error = (message or b"").decode("utf-8", "replace").strip()
        self.errors += 1

    def add(self, obj: Path, function: str):
        self.engine.add_object_file(self.llvm.ObjectFileRef.from_data(obj.read_bytes()))
        touch(obj)
        self.engine.finalize_object()
        self.kernels += 1
        address = self.engine.get_function_address(f"{function}_argv")
        if not address:
            raise RuntimeError(f"{obj.name} has no {function}_argv")
        return ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))(address)

    def __del__(self):  # no kernel of it is held any more: its threads, then its code
        try:
            if self.shutdown is not None:
                self.shutdown()
            self.engine.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


@dataclass
class _Loaded:
    engine: _Engine  # kept alive while the kernel is
    entry: object  # the ctypes entry point
    info: ObjectInfo


_loaded: OrderedDict[Path, _Loaded] = OrderedDict()
_current: list[_Engine] = []  # the engine new kernels go into
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
        if not _current or _current[0].kernels >= GENERATION:
            _current[:] = [_Engine()]
        engine = _current[0]
        k = _loaded[obj] = _Loaded(engine, engine.add(obj, info.function), info)
        while len(_loaded) > LOADED:
            _loaded.popitem(last=False)  # its engine goes once no kernel or runner holds it
    return k


class PaddedInput(np.ndarray):
    """An Input laid out as its kernel reads it (flat, Fortran order) over `bounds`, (min, extent) per dimension:
    its region, widened to what the kernel's bounds query asks for with the edge values repeated. What
    `Runner.prepare` makes once for a run timed again and again on the same inputs."""

    bounds: tuple[tuple[int, int], ...]


class Runner:
    """run(inputs, outputs) for one kernel over the harness's flat Fortran-order arrays.

    The kernel reads its Inputs unclamped (translate(clamp_inputs=False)): a tail tile may compute points past a
    Func's region and so read an Input past its region. The first call asks the kernel, by Halide's bounds query,
    which region of each Input it reads; an Input whose region does not cover that is passed as a copy padded to
    it, edge values repeated (what a clamped read would give, so the values computed are the same). Arrays from
    `prepare` are used as they are: the harness times repeated calls on the same inputs without copying them."""

    def __init__(self, k: _Loaded):
        self.k = k
        self.bounds: list[tuple[tuple[int, int], ...]] | None = None  # per input: the region the kernel reads
        self.argv_cache: dict = {}

    def _ensure_bounds(self, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        """The region of each Input the kernel reads, asked once (Halide's bounds query), widened to cover the
        Input's own region."""
        if self.bounds is not None:
            return
        info = self.k.info
        bufs = [_describe(a.dtype, (0,) * len(reg), (0,) * len(reg), None) for a, (_, reg) in zip(inputs, info.inputs)]
        bufs += [_describe(a.dtype, size, (0,) * len(size), None) for a, (_, size) in zip(outputs, info.outputs)]
        self._enter((ctypes.c_void_p * len(bufs))(*[ctypes.addressof(b) for b, _ in bufs]))
        self.bounds = []
        for (buf, dims), (_, reg) in zip(bufs, info.inputs):
            asked = [(dims[i].min, dims[i].extent) for i in range(len(reg))]
            lo = [min(r[0], a[0]) for r, a in zip(reg, asked)]
            hi = [max(r[0] + r[1], a[0] + a[1]) for r, a in zip(reg, asked)]
            self.bounds.append(tuple((a, b - a) for a, b in zip(lo, hi)))

    def _enter(self, argv) -> None:
        k = self.k
        seen = k.engine.errors
        rc = k.entry(argv)
        if rc != 0:  # a message from before this call is another kernel's
            said = k.engine.last_error if k.engine.errors > seen else "Halide gave no message"
            raise RuntimeError(f"the Halide kernel returned error {rc}: {said}")

    def _laid_out(self, i: int, a: np.ndarray) -> np.ndarray:
        """Input i as the kernel reads it: padded to its bounds, at an aligned address (the module docstring)."""
        if isinstance(a, PaddedInput):
            return a
        reg, bounds = self.k.info.inputs[i][1], self.bounds[i]
        if bounds == tuple(reg):
            return aligned(a)
        pads = [(r[0] - b[0], b[0] + b[1] - r[0] - r[1]) for r, b in zip(reg, bounds)]
        box = np.pad(a.reshape(tuple(e for _, e in reg), order="F"), pads, mode="edge")
        return aligned(box.ravel(order="F"))

    def prepare(self, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
                shared: dict | None = None) -> dict[str, np.ndarray]:
        """The inputs as the kernel reads them, made once (a copy where the kernel reads past an Input's region):
        a timed loop passes these instead. Valid while the arrays given are not changed. `shared`: copies already
        made for other kernels timed on the same arrays (a block's interleaved kernels), by array and bounds."""
        self._ensure_bounds([inputs[n] for n, _ in self.k.info.inputs], [outputs[n] for n, _ in self.k.info.outputs])
        shared = {} if shared is None else shared
        out = {}
        for i, (n, _) in enumerate(self.k.info.inputs):
            key = (id(inputs[n]), self.bounds[i])
            view = shared.get(key)
            if view is None:
                view = self._laid_out(i, inputs[n]).view(PaddedInput)
                view.bounds = self.bounds[i]
                shared[key] = view
            out[n] = view
        return {**inputs, **out}

    def __call__(self, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
        info = self.k.info
        ins = [inputs[n] for n, _ in info.inputs]
        outs = [outputs[n] for n, _ in info.outputs]
        self._ensure_bounds(ins, outs)
        ins = [self._laid_out(i, a) for i, a in enumerate(ins)]
        given = outs
        outs = [aligned(a) for a in outs]  # the harness allocates aligned outputs; another caller's are copied
        arrays = ins + outs
        key = tuple((id(a), a.ctypes.data) for a in arrays)
        cache = self.argv_cache
        argv = cache.get("argv") if cache.get("key") == key else None
        if argv is None:  # the harness times repeated calls on the same arrays: build the buffers once
            bufs = [_halide_buffer(a, tuple(e for _, e in b), tuple(lo for lo, _ in b))
                    for a, b in zip(ins, self.bounds)]
            bufs += [_halide_buffer(a, size, (0,) * len(size)) for a, (_, size) in zip(outs, info.outputs)]
            argv = (ctypes.c_void_p * len(bufs))(*[ctypes.addressof(b) for b, _ in bufs])
            cache.update(key=key, argv=argv, keep=(bufs, arrays))
        self._enter(argv)
        for mine, theirs in zip(outs, given):
            if mine is not theirs:
                theirs[...] = mine


def runner(spec) -> Runner:
    """run(inputs, outputs) for `spec`'s object file (compiled here if the node does not have it yet)."""
    return Runner(_load(spec))
