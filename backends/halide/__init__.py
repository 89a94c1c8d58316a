"""The Halide backend: a schedlab (pipeline, LoopNest) translated to Halide and JIT-compiled
(DESIGN §3.4; docs/halide.md). Importing it needs the `halide` extra.

    kernel = backends.compile(pipeline, loopnest, backend="halide")
    anchor = autoschedule(pipeline, "Adams2019"); kernel = anchor.compile()   # Halide's own search
"""

from .autoschedule import AnchorSchedule, autoschedule
from .compiler import HalideKernel, HalideSpec, compile_halide
from .schedule import apply as apply_schedule
from .translate import HalidePipeline, TranslateError, translate

__all__ = ["AnchorSchedule", "HalideKernel", "HalidePipeline", "HalideSpec", "TranslateError", "apply_schedule",
           "autoschedule", "compile_halide", "translate"]
