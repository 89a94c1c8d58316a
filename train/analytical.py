"""The analytical cost: adams2019 Appendix B's hand-designed terms with fixed coefficients (rough nanosecond
costs) and the parallel speed-up made explicit. It lives beside the learned models' terms (train.model
.cost_terms) so that training can score it as a baseline; scheduler.cost's `analytical` model wraps it."""

from __future__ import annotations

import numpy as np

from featurize.schema import PIPELINE_ROWS, SCHEDULE_INDEX
from ir.dag import OP_TYPES

# Appendix B's 27 terms (train.model.TERMS order) and a fixed cost per unit of each, in nanoseconds.
COEFFICIENTS = np.array([
    0.05, 0.5, 0.05, 0.5,  # compute: vector lanes and scalars, inlined or not (x ops per point)
    4.0, 0.02,  # lines and bytes read per realization
    0.3, 0.5, 0.5,  # vector loads per vector, scalar loads per scalar, scalar loads per vector
    0.01, 0.01, 0.1, 0.1,  # unique bytes / lines per vector
    0.02, 1.0,  # unique bytes / lines per task
    4.0, 4.0, 4.0, 0.05, 0.05, 0.05,  # lines and bytes written (parallel, output, other)
    0.1, 0.0005, 40.0, 2000.0, 200.0, 0.0,  # false sharing, page faults, malloc, launch, per task, working set
])
PARALLEL_TERMS = slice(0, 21)  # compute, loads and stores divide among the cores running tasks
COMPUTE_TERMS = slice(0, 4)
OPS = [PIPELINE_ROWS.index(op) for op in OP_TYPES if op not in ("Variable", "Param", "Const", "Let")]


def analytical_terms(pipeline_features, schedule_features, cores: float):
    """The Appendix B terms as the analytical model charges them, torch [..., S, 27] in the schedule features'
    dtype: compute terms times the stage's operations per point, and the terms that divide among cores (compute,
    loads, stores) divided by the cores its tasks occupy. The cost is their dot product with COEFFICIENTS, so a
    model that rescales those coefficients (train.model's `residual` kind) starts from exactly this cost."""
    import torch

    from .model import cost_terms

    sf = schedule_features
    terms = cost_terms(sf, float(cores)).clone()
    ops = pipeline_features[:, OPS, :].sum((1, 2)).to(sf.dtype).clamp_min(1)  # ops per point of each stage
    x = sf.clamp_min(0)
    tasks = (x[..., SCHEDULE_INDEX["inner_parallelism"]] * x[..., SCHEDULE_INDEX["outer_parallelism"]]).clamp_min(1)
    terms[..., COMPUTE_TERMS] = terms[..., COMPUTE_TERMS] * ops[:, None]
    terms[..., PARALLEL_TERMS] = terms[..., PARALLEL_TERMS] / torch.clamp(tasks, max=float(cores))[..., None]
    return terms


def analytical_stage_costs(pipeline_features: np.ndarray, schedule_features: np.ndarray, cores: int) -> np.ndarray:
    """Seconds per stage, [schedules, stages], for schedule features [schedules, stages, 39] (or one schedule)
    of a pipeline whose pipeline features are [stages, 40, 7]."""
    import torch

    schedule = np.asarray(schedule_features)
    if schedule.ndim == 2:
        schedule = schedule[None]
    pf = torch.as_tensor(np.asarray(pipeline_features, dtype=np.float32))
    terms = analytical_terms(pf, torch.as_tensor(schedule, dtype=torch.float64), cores).numpy()
    return (terms * COEFFICIENTS).sum(-1) * 1e-9


class AnalyticalCost:
    """predict(pf, sf) -> total seconds per schedule: what train.run.predict_groups scores with."""

    def __init__(self, cores: int):
        self.cores = max(1, int(cores))

    def predict(self, pipeline_features, schedule_features) -> np.ndarray:
        return analytical_stage_costs(pipeline_features, schedule_features, self.cores).sum(-1)
