"""The analytical cost model: adams2019 Appendix B's hand-designed terms with fixed coefficients (rough
nanosecond costs) and the parallel speed-up made explicit, so the scheduler works before any model is
trained, and so it can be evaluated on stored features like any model."""

from __future__ import annotations

import numpy as np
import torch

from featurize.schema import PIPELINE_ROWS, SCHEDULE_INDEX
from ir.dag import OP_TYPES

from . import CostModel, PredictedCosts
from .registry import register_cost_model

# Appendix B's 27 terms (train.model.TERMS order) and a fixed cost per unit of each, in nanoseconds.
_ANALYTICAL = np.array([
    0.05, 0.5, 0.05, 0.5,  # compute: vector lanes and scalars, inlined or not (x ops per point)
    4.0, 0.02,  # lines and bytes read per realization
    0.3, 0.5, 0.5,  # vector loads per vector, scalar loads per scalar, scalar loads per vector
    0.01, 0.01, 0.1, 0.1,  # unique bytes / lines per vector
    0.02, 1.0,  # unique bytes / lines per task
    4.0, 4.0, 4.0, 0.05, 0.05, 0.05,  # lines and bytes written (parallel, output, other)
    0.1, 0.0005, 40.0, 2000.0, 200.0, 0.0,  # false sharing, page faults, malloc, launch, per task, working set
])
_PARALLEL_TERMS = slice(0, 21)  # compute, loads and stores divide among the cores running tasks
_COMPUTE_TERMS = slice(0, 4)
_OPS = [PIPELINE_ROWS.index(op) for op in OP_TYPES if op not in ("Variable", "Param", "Const", "Let")]


@register_cost_model("analytical")
class AnalyticalModel(CostModel):
    """Fixed-coefficient cost of the Appendix B terms: no training needed; `update` learns nothing."""

    def __init__(self, target=None):
        self.cores = max(1, getattr(target, "cores", 1) if target is not None else 1)

    @classmethod
    def load(cls, arg: str, target, backend: str = "numba", tracking: str | None = None) -> AnalyticalModel:
        if arg:
            super().load(arg, target)
        return cls(target)

    def predict(self, pipeline_features: np.ndarray, schedule_features: np.ndarray) -> PredictedCosts:
        from train.model import cost_terms

        schedule = np.asarray(schedule_features)
        if schedule.ndim == 2:
            schedule = schedule[None]
        pf = np.asarray(pipeline_features, dtype=np.float32)
        ops = np.array([max(1.0, float(row[_OPS].sum())) for row in pf])  # ops per point of each stage
        terms = cost_terms(torch.as_tensor(schedule, dtype=torch.float64), float(self.cores)).numpy()
        terms[..., _COMPUTE_TERMS] *= ops[None, :, None]
        f = np.clip(schedule.astype(np.float64), 0, None)
        tasks = np.maximum(1.0, f[..., SCHEDULE_INDEX["inner_parallelism"]] * f[..., SCHEDULE_INDEX["outer_parallelism"]])
        terms[..., _PARALLEL_TERMS] /= np.minimum(tasks, self.cores)[..., None]
        stages = (terms * _ANALYTICAL).sum(-1) * 1e-9
        return PredictedCosts(stages.sum(-1), stages)
