"""The cost-model role (adams2019 §4, MetaSchedule's CostModel): one interface, registered implementations.

    model = load_model("analytical", target)   # or "random:3", "builtin", "learned:<uri>", "champion", any URI
    costs = model.predict(pipeline_features, schedule_features)   # PredictedCosts: total [B], stages [B, S]
    model.update(pipeline_features, schedule_features, runtimes)  # fine-tune on measured runtimes
    model.save(path)

The search calls `score(dag, states)`: states of one batch are grouped by the stages they have scheduled,
so each group is one `predict` with the pipeline features (and a learned model's embedding) computed once.
Implementations live in their own modules (learned, random_weights, analytical, builtin, ensemble) and register by
name.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from featurize import cached_pipeline_features
from featurize.schedule import stack_stage_features

from ..space import SearchError, State
from .threads import scoring_threads

StageKeys = tuple[tuple[str, int], ...]


class CostModelError(SearchError):
    """An unknown cost-model name, or a model used for a target or backend it did not learn."""


@dataclass(frozen=True)
class PredictedCosts:
    """What `predict` returns: the total predicted cost of each schedule (larger = slower) and its stages'."""

    total: np.ndarray  # [B] float64
    stages: np.ndarray  # [B, S] float64; total == stages.sum(-1) (a learned model clamps the total > 0)


class CostModel(ABC):
    """Predicted cost of B schedules of one pipeline from their features; the search's only view of a model.

    `target` and `backend` name whose runtimes the model learned (None: it learned none, any is fine)."""

    name: str = "model"
    target: str | None = None
    backend: str | None = None

    @classmethod
    def load(cls, arg: str, target, backend: str = "numba", tracking: str | None = None) -> CostModel:
        """The model `load_model("<name>:<arg>")` means; the default takes no argument."""
        if arg:
            raise CostModelError(f"cost model {cls.name!r} takes no argument; write {cls.name!r}, not "
                                 f"{cls.name + ':' + arg!r}")
        return cls()

    @abstractmethod
    def predict(self, pipeline_features: np.ndarray, schedule_features: np.ndarray) -> PredictedCosts:
        """[S, 40, 7] pipeline features and [B, S, 41] schedule features -> PredictedCosts (batched)."""

    def update(self, pipeline_features: np.ndarray, schedule_features: np.ndarray, runtimes: np.ndarray) -> None:
        """Learn from measured `runtimes` [B] (seconds) of these schedules; a model that learns nothing
        (analytical) ignores them."""

    def save(self, path) -> None:
        """Write the model so that `load_model(path)` reads it back."""
        raise CostModelError(f"cost model {self.name!r} has nothing to save; load it by name instead")

    def pipeline_features(self, dag, keys: StageKeys) -> np.ndarray:
        """[S, 40, 7] algorithm features of the stages `keys`, computed once per pipeline and stage set (the
        same array each time, so an implementation may cache what it derives from it by identity)."""
        def compute() -> np.ndarray:
            algo = cached_pipeline_features(dag)
            return np.stack([algo[x] for x in keys]).astype(np.float32)

        return dag.analysis(("scheduler.pipeline_features", keys), compute)

    def score_stages(self, dag, states: Sequence[State]) -> tuple[np.ndarray, list[dict | None]]:
        """(costs [B], each state's per-stage costs {(func, stage): cost}) — freezing ranks stages by them."""
        out = np.zeros(len(states))
        stages: list[dict | None] = [None] * len(states)
        groups: dict[StageKeys, list[int]] = {}
        for i, s in enumerate(states):
            groups.setdefault(stage_keys(dag, s), []).append(i)
        rows = sum(len(keys) * len(idx) for keys, idx in groups.items())
        with scoring_threads(rows):
            for keys, idx in groups.items():
                if not keys:
                    continue
                sched = stack_stage_features([states[i].features for i in idx], keys)  # [B, S, 41], as np.stack
                costs = self.predict(self.pipeline_features(dag, keys), sched)
                for row, total, i in zip(costs.stages.tolist(), costs.total.tolist(), idx):
                    stages[i] = dict(zip(keys, row))
                    out[i] = total
        return out, stages

    def score(self, dag, states: Sequence[State]) -> np.ndarray:
        """Costs of `states`, [B]: the search's convenience over `predict`."""
        return self.score_stages(dag, states)[0]


def stage_keys(dag, s: State) -> StageKeys:
    """The stages `s` has features for, in the DAG's order; remembered per set of stages (a search's states have
    a few dozen such sets)."""
    memo = dag.analysis("scheduler.stage_keys_of", dict)
    have = tuple(s.features)
    keys = memo.get(have)
    if keys is None:
        if len(memo) > 10_000:
            memo.clear()
        order = dag.analysis("scheduler.stage_keys", lambda: [(n.name, st.index) for n in dag.nodes for st in n.stages])
        keys = memo[have] = tuple(k for k in order if k in s.features)
    return keys


def timed_score(model: CostModel, dag, states: Sequence[State], timing) -> tuple[np.ndarray, list[dict | None]]:
    t0 = time.perf_counter()
    try:
        return model.score_stages(dag, states)
    finally:
        timing.model_s += time.perf_counter() - t0


from .registry import COST_MODELS, get_cost_model, load_model, register_cost_model  # noqa: E402
from .analytical import AnalyticalModel  # noqa: E402
from .learned import LearnedModel  # noqa: E402
from .random_weights import RandomModel  # noqa: E402
from .builtin import BuiltinModel  # noqa: E402
from .ensemble import EnsembleModel  # noqa: E402

__all__ = ["COST_MODELS", "AnalyticalModel", "CostModel", "CostModelError", "EnsembleModel", "LearnedModel",
           "PredictedCosts", "RandomModel", "get_cost_model", "load_model", "register_cost_model", "stage_keys",
           "timed_score"]
