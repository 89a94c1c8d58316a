"""The Halide backend: a schedlab (pipeline, LoopNest) translated to Halide and JIT-compiled
(DESIGN §3.4; docs/halide.md). Importing it needs the `halide` extra.

    kernel = backends.compile(pipeline, loopnest, backend="halide")
    anchor = autoschedule(pipeline, "Adams2019"); kernel = anchor.compile()   # Halide's own search
"""

from ..base import Backend, register_backend
from .autoschedule import AnchorSchedule, autoschedule
from .compiler import HalideKernel, HalideSpec, compile_halide
from .schedule import apply as apply_schedule
from .translate import HalidePipeline, TranslateError, translate

__all__ = ["AnchorSchedule", "HalideBackend", "HalideKernel", "HalidePipeline", "HalideSpec", "TranslateError",
           "apply_schedule", "autoschedule", "compile_halide", "translate"]


@register_backend("halide")
class HalideBackend(Backend):
    target_kinds = frozenset({"cpu"})  # JIT for the host CPU

    def build(self, pipeline, loopnest, target, *, timeout: float | None = 600.0, worker=None,
              isolate: bool = True) -> HalideKernel:
        return compile_halide(pipeline, loopnest, target, timeout=timeout, isolate=isolate, worker=worker)
