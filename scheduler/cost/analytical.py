"""The analytical cost model: adams2019 Appendix B's hand-designed terms with fixed coefficients (rough
nanosecond costs, train.analytical) and the parallel speed-up made explicit, so the scheduler works before
any model is trained, and so it can be evaluated on stored features like any model.

`analytical` is the current prior (train.analytical.PRIOR, 7); `analytical:1` to `analytical:3`, `analytical:5` and
`analytical:6` earlier ones and `analytical:4` a candidate not kept (docs/train.md), kept so that searches and
benchmarks can set them side by side."""

from __future__ import annotations

import numpy as np

from train.analytical import PRIOR, PRIORS, analytical_stage_costs

from . import CostModel, CostModelError, PredictedCosts
from .registry import register_cost_model


@register_cost_model("analytical")
class AnalyticalModel(CostModel):
    """Fixed-coefficient cost of the Appendix B terms: no training needed; `update` learns nothing."""

    def __init__(self, target=None, prior: int = PRIOR):
        self.cores = max(1, getattr(target, "cores", 1) if target is not None else 1)
        self.prior = prior
        self.name = "analytical" if prior == PRIOR else f"analytical:{prior}"

    @classmethod
    def load(cls, arg: str, target, backend: str = "numba", tracking: str | None = None) -> AnalyticalModel:
        if not arg:
            return cls(target)
        if not arg.isdigit() or int(arg) not in PRIORS:
            raise CostModelError(f"no analytical prior {arg!r}; write analytical (prior {PRIOR}) or analytical:<prior> "
                                 f"with a prior in {', '.join(map(str, PRIORS))}")
        return cls(target, int(arg))

    def predict(self, pipeline_features: np.ndarray, schedule_features: np.ndarray) -> PredictedCosts:
        stages = analytical_stage_costs(pipeline_features, schedule_features, self.cores, self.prior)
        return PredictedCosts(stages.sum(-1), stages)
