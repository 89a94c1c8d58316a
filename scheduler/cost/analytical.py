"""The analytical cost model: adams2019 Appendix B's hand-designed terms with fixed coefficients (rough
nanosecond costs, train.analytical) and the parallel speed-up made explicit, so the scheduler works before
any model is trained, and so it can be evaluated on stored features like any model."""

from __future__ import annotations

import numpy as np

from train.analytical import analytical_stage_costs

from . import CostModel, PredictedCosts
from .registry import register_cost_model


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
        stages = analytical_stage_costs(pipeline_features, schedule_features, self.cores)
        return PredictedCosts(stages.sum(-1), stages)
