"""Halide's own autoschedulers (Adams2019, Mullapudi2016, Li2018) on a schedlab pipeline: the
baselines schedlab's scheduler is judged against (DESIGN §1, evaluate).

    anchor = autoschedule(pipeline, "Adams2019", params={"parallelism": "8"})
    kernel = anchor.compile()                      # a Kernel: measure it like any other
    backends.measure(kernel, inputs, expected=...)

The search runs in the worker process: Halide's plugins abort the process on an unknown or
unparsable parameter, so parameters are checked against the plugins' own names first, and a crash
is a CompileError, never a dead caller.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from ..kernel import CompileError

# parameter names each plugin accepts (halide 21), all values are strings
PARAMS = {
    "Adams2019": ("parallelism", "beam_size", "random_dropout", "random_dropout_seed", "weights_path",
                  "disable_subtiling", "disable_memoized_features", "disable_memoized_blocks", "memory_limit"),
    "Mullapudi2016": ("parallelism", "last_level_cache_size", "balance", "experimental_gpu_schedule"),
    "Li2018": ("parallelism",),
    "Anderson2021": ("parallelism", "beam_size", "random_dropout", "random_dropout_seed", "weights_path",
                     "disable_subtiling", "randomize_tilings", "search_space_options", "freeze_inline_compute_root",
                     "partial_schedule_path", "num_passes", "stack_factor", "shared_memory_limit_kb",
                     "shared_memory_sm_limit_kb", "active_block_limit", "active_warp_limit"),
}

_loaded: set[str] = set()


@dataclass(frozen=True)
class AnchorSchedule:
    """What a Halide autoscheduler chose for a pipeline, and how long it searched."""

    scheduler: str
    params: tuple[tuple[str, str], ...]
    schedule_source: str  # the chosen schedule as Halide C++ directives
    search_seconds: float
    compile_seconds: float
    pipeline: object  # the schedlab Pipeline

    def compile(self, *, timeout: float | None = 600.0, worker=None, isolate: bool = True):
        """A Kernel running this schedule (the worker that searched compiled it to the node's kernel cache)."""
        from ir.target import get_target

        from .aot import compile_object
        from .compiler import HalideKernel

        spec = _spec(self.pipeline, self.scheduler, self.params)
        if not isolate:
            compile_object(spec)
        return HalideKernel(self.pipeline, None, get_target("host"), spec, self.compile_seconds)


def autoschedule(pipeline, scheduler: str, target="host", params: dict[str, str] | None = None, *,
                 timeout: float | None = 600.0, worker=None, isolate: bool = True) -> AnchorSchedule:
    """Run Halide's `scheduler` on `pipeline` (estimates from its sizes) for the host CPU, or for a CUDA target
    (Anderson2021, Mullapudi2016, Li2018: search and PTX only, see backends.halide.gpu)."""
    from ir.target import get_target

    from ..base import compile_in_worker, get_backend

    tgt = get_target(target)
    if tgt.kind == "cuda":
        from .gpu import autoschedule_gpu

        return autoschedule_gpu(pipeline, scheduler, tgt, params, timeout=timeout, worker=worker, isolate=isolate)
    get_backend("halide").check_target(tgt)
    if scheduler == "Anderson2021":
        raise CompileError("Anderson2021 schedules for GPUs; give a cuda target (h100, a100, ...)")
    if scheduler not in PARAMS:
        raise CompileError(f"unknown Halide autoscheduler {scheduler!r}; choose one of {', '.join(PARAMS)}")
    given = {"parallelism": str(tgt.cores)} | dict(params or {})
    bad = [k for k in given if k not in PARAMS[scheduler]]
    if bad:
        raise CompileError(f"{scheduler} has no parameter {bad[0]!r}; its parameters are {', '.join(PARAMS[scheduler])}")
    spec = _spec(pipeline, scheduler, tuple(sorted((k, str(v)) for k, v in given.items())))
    # a malformed parameter value aborts the plugin's process: a CompileError saying "aborted the worker"
    source, search_s, compile_s = compile_in_worker(scheduler, _search_here, spec, timeout=timeout, worker=worker,
                                                    isolate=isolate)
    return AnchorSchedule(scheduler, spec.autoscheduler_params, source, search_s, compile_s, pipeline)


def _spec(pipeline, scheduler: str, params: tuple[tuple[str, str], ...]):
    from .compiler import HalideSpec

    return HalideSpec(json.dumps(pipeline.to_json(), sort_keys=True), autoscheduler=scheduler,
                      autoscheduler_params=params)


def _search_here(spec) -> tuple[str, float, float]:
    """Search and compile to the node's kernel cache (a node that already has the object returns what its
    first search recorded)."""
    from .aot import object_info

    info = object_info(spec)
    return info.schedule_source, info.search_s, info.compile_s


def run_autoscheduler(hpipe, scheduler: str, params: dict[str, str], target) -> tuple[str, float]:
    """Apply `scheduler` to a Halide Pipeline in place; (schedule source, seconds searched)."""
    import halide as hl

    if scheduler not in _loaded:
        hl.load_plugin(os.path.join(hl.install_dir(), "lib64", f"libautoschedule_{scheduler.lower()}.so"))
        _loaded.add(scheduler)
    # Adams2019 unrolls loops whose extent Halide cannot prove constant (local_laplacian's); as in Halide's
    # own autotune loop, such an unroll becomes a plain loop instead of an error (results are unchanged)
    os.environ.setdefault("HL_PERMIT_FAILED_UNROLL", "1")
    t0 = time.perf_counter()
    r = hpipe.apply_autoscheduler(target, hl.AutoschedulerParams(scheduler, params))
    return r.schedule_source, time.perf_counter() - t0
