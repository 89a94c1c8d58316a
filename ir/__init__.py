"""schedlab's intermediate representation: the pipeline DSL, the FunctionDAG analysis, the LoopNest
schedule representation and the reference interpreter."""

from . import hot as _hot

_hot.install()  # before any hot module loads: their Cython builds, when current (ir/hot.py)

from .errors import PipelineError, ScheduleError, SchedlabError
from .expr import (Expr, Var, RVar, cast, select, clamp, exp, log, sqrt, sin, cos, tanh, floor, ceil)
from .expr import min as min, max as max, pow as pow, round as round, abs as abs  # noqa: A004 - Halide's names
from .func import Func, Input, RDom
from .pipeline import Pipeline
from .loopnest import LoopKind, LoopNest
from .dag import FunctionDAG
from .interpret import interpret
from .target import get_target, CpuTarget, CudaTarget
from .types import Type, bool_, u8, u16, u32, i8, i16, i32, f32, f64

__all__ = [
    "PipelineError", "ScheduleError", "SchedlabError",
    # min, max, pow, round and abs are importable by name but kept out of `import *` (they would
    # shadow Python's builtins)
    "Expr", "Var", "RVar", "cast", "select", "clamp", "exp", "log", "sqrt", "sin", "cos", "tanh", "floor",
    "ceil",
    "Func", "Input", "RDom", "Pipeline", "LoopNest", "LoopKind", "FunctionDAG", "interpret", "get_target", "CpuTarget",
    "CudaTarget",
    "Type", "bool_", "u8", "u16", "u32", "i8", "i16", "i32", "f32", "f64",
]
