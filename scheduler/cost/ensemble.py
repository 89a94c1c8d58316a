"""An ensemble of cost models: the geometric mean of its members' predicted costs.

    model = load_model("ensemble:learned:/models/a+learned:/models/b+learned:/models/c", target)

Why: residual models trained alike but for their weight seed agree on held-out random pipelines and disagree on the
full-size apps, where their corrections extrapolate (docs/train.md, "An ensemble of seeds"). Averaging the members'
log costs keeps what they agree on and shrinks what only one of them believes, as bagging does for any learner of
high variance. Members are any cost-model specs (`learned:<dir or URI>`, `builtin`, `analytical`, ...), joined by
`+` (a `,` would split the benchmarks' model lists). They must have learned the same target and backend.
"""

from __future__ import annotations

import numpy as np

from . import CostModel, CostModelError, PredictedCosts
from .registry import register_cost_model

SEPARATOR = "+"
TINY = 1e-30  # a floor under costs before their logarithm (a stage a model charges nothing)


@register_cost_model("ensemble")
class EnsembleModel(CostModel):
    """Members' totals combined by their geometric mean; the stages of that total split as the members' mean split."""

    def __init__(self, members, name: str | None = None):
        members = tuple(members)
        if len(members) < 2:
            raise CostModelError(f"an ensemble needs two or more cost models, got {len(members)}")
        for attr in ("target", "backend"):
            learned = {getattr(m, attr) for m in members} - {None}
            if len(learned) > 1:
                raise CostModelError(f"the ensemble's members learned different {attr}s ({', '.join(sorted(learned))})"
                                     f": combine models of one {attr}")
            setattr(self, attr, next(iter(learned), None))
        self.members = members
        self.name = name or "ensemble:" + SEPARATOR.join(m.name for m in members)

    @classmethod
    def load(cls, arg: str, target, backend: str | None = None, tracking: str | None = None) -> EnsembleModel:
        from .registry import load_model

        specs = [s for s in arg.split(SEPARATOR) if s]
        if len(specs) < 2:
            raise CostModelError(f"write ensemble:<model>{SEPARATOR}<model>[{SEPARATOR}...] (two or more cost models, "
                                 f"e.g. ensemble:learned:/a{SEPARATOR}learned:/b), got {'ensemble:' + arg!r}")
        members = [load_model(s, target, tracking, backend=backend, allow_mismatch=True) for s in specs]
        return cls(members, "ensemble:" + arg)

    def predict(self, pipeline_features: np.ndarray, schedule_features: np.ndarray) -> PredictedCosts:
        costs = [m.predict(pipeline_features, schedule_features) for m in self.members]
        total = np.exp(np.mean([np.log(np.maximum(c.total, TINY)) for c in costs], axis=0))
        stages = np.mean([c.stages for c in costs], axis=0)
        share = stages / np.maximum(stages.sum(-1, keepdims=True), TINY)
        return PredictedCosts(total, share * total[:, None])

    def update(self, pipeline_features: np.ndarray, schedule_features: np.ndarray, runtimes: np.ndarray) -> None:
        """Each member learns from the runtimes as it would alone (autotune)."""
        for m in self.members:
            m.update(pipeline_features, schedule_features, runtimes)
