"""Cost models behind one batched interface: `score(dag, states) -> costs` (larger = slower).

* `LearnedModel` — a trained train.model network: registered (`models:/schedlab-cpu@champion`), any
  MLflow model URI, or a local checkpoint file.
* `RandomModel` — the hybrid network with uniformly random weights, as the first data-generation round
  of adams2019 §5 samples with.
* `AnalyticalModel` — the hand-designed terms of adams2019 Appendix B with fixed coefficients (rough
  nanosecond costs) and the parallel speed-up made explicit: the scheduler works before any model exists.

States of one batch are grouped by the stages they have scheduled, so each group is one forward pass with
the pipeline embedding computed once per pipeline.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from weakref import WeakKeyDictionary

import numpy as np
import torch

from featurize import cached_pipeline_features
from featurize.schema import PIPELINE_ROWS, SCHEDULE_INDEX
from ir.dag import OP_TYPES
from ir.target import CpuTarget

from .space import SearchError, State

StageKeys = tuple[tuple[str, int], ...]


class CostModel:
    """Predicted cost of states of one pipeline; subclasses give per-stage costs for a batch."""

    name: str = "model"

    def stage_costs(self, dag, keys: StageKeys, schedule: np.ndarray) -> np.ndarray:
        """[B, S, 39] schedule features of the stages `keys` -> [B, S] costs."""
        raise NotImplementedError

    def score(self, dag, states: Sequence[State]) -> np.ndarray:
        """Costs of `states`, [B]; also records each state's per-stage costs (freezing ranks stages by them)."""
        out = np.zeros(len(states))
        groups: dict[StageKeys, list[int]] = {}
        for i, s in enumerate(states):
            groups.setdefault(stage_keys(dag, s), []).append(i)
        for keys, idx in groups.items():
            if not keys:
                continue
            sched = np.stack([np.stack([states[i].features[k] for k in keys]) for i in idx])
            costs = self.stage_costs(dag, keys, sched)
            for row, i in zip(costs, idx):
                states[i].stage_costs = dict(zip(keys, (float(c) for c in row)))
                out[i] = float(row.sum())
        return out


def stage_keys(dag, s: State) -> StageKeys:
    order = dag.analysis("scheduler.stage_keys", lambda: [(n.name, st.index) for n in dag.nodes for st in n.stages])
    return tuple(k for k in order if k in s.features)


class LearnedModel(CostModel):
    """A train.model.CostModel (hybrid or mlp), in eval mode without gradients."""

    def __init__(self, network, name: str = "learned"):
        self.network = network.eval()
        self.name = name
        # per DAG (weakly: an id() would be reused by the next DAG once one is collected), per stage set
        self._embeddings: WeakKeyDictionary = WeakKeyDictionary()

    def pipeline_inputs(self, dag, keys: StageKeys):
        """(algorithm features [S, 40, 7], their embedding), computed once per pipeline and stage set."""
        per_dag = self._embeddings.setdefault(dag, {})
        hit = per_dag.get(keys)
        if hit is None:
            algo = cached_pipeline_features(dag)
            pf = torch.as_tensor(np.stack([algo[x] for x in keys]), dtype=torch.float32)
            with torch.no_grad():
                hit = (pf, self.network.embed_pipeline(pf))
            per_dag[keys] = hit
        return hit

    def forget_embeddings(self) -> None:
        """After the weights change (autotune's fine-tuning)."""
        self._embeddings.clear()

    def stage_costs(self, dag, keys: StageKeys, schedule: np.ndarray) -> np.ndarray:
        pf, emb = self.pipeline_inputs(dag, keys)
        with torch.no_grad():
            sf = torch.as_tensor(schedule, dtype=torch.float32)
            return self.network.stage_costs(pf, sf, emb).double().numpy()


class RandomModel(LearnedModel):
    """The hybrid network, randomly initialized from `seed` (Halide's random weights)."""

    def __init__(self, seed: int = 0, cores: int = 1):
        from train.model import ModelConfig, build_model

        super().__init__(build_model(ModelConfig(kind="hybrid", num_cores=max(1, cores)), seed=seed),
                         name=f"random:{seed}")


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


class AnalyticalModel(CostModel):
    """Fixed-coefficient cost of the Appendix B terms: no training needed."""

    name = "analytical"

    def __init__(self, target: CpuTarget):
        self.cores = max(1, target.cores)

    def _ops_per_point(self, dag, keys: StageKeys) -> np.ndarray:
        def compute():
            algo = cached_pipeline_features(dag)
            return np.array([max(1.0, float(algo[x][_OPS].sum())) for x in keys])

        return dag.analysis(("scheduler.ops_per_point", keys), compute)

    def stage_costs(self, dag, keys: StageKeys, schedule: np.ndarray) -> np.ndarray:
        from train.model import cost_terms

        terms = cost_terms(torch.as_tensor(schedule, dtype=torch.float64), float(self.cores)).numpy()
        terms[..., _COMPUTE_TERMS] *= self._ops_per_point(dag, keys)[None, :, None]
        f = np.clip(schedule.astype(np.float64), 0, None)
        tasks = np.maximum(1.0, f[..., SCHEDULE_INDEX["inner_parallelism"]] * f[..., SCHEDULE_INDEX["outer_parallelism"]])
        speedup = np.minimum(tasks, self.cores)
        terms[..., _PARALLEL_TERMS] /= speedup[..., None]
        return (terms * _ANALYTICAL).sum(-1) * 1e-9


def load_model(model, target: CpuTarget, tracking: str | None = None) -> CostModel:
    """A cost model from what a user passes: a CostModel, a train.model network, "analytical",
    "random" / "random:<seed>", "champion" (this target's registered champion, or the analytical model
    when none is registered yet), or any URI train.registry.load_cost_model understands."""
    if isinstance(model, CostModel):
        return model
    if isinstance(model, torch.nn.Module):
        return LearnedModel(model)
    if model is None or model == "analytical":
        return AnalyticalModel(target)
    if not isinstance(model, str):
        raise SearchError(f"model must be a cost model, a URI, 'analytical', 'random' or 'champion'; got {model!r}")
    if model == "random" or model.startswith("random:"):
        seed = model.partition(":")[2] or "0"
        if not seed.isdigit():
            raise SearchError(f"model {model!r}: write random:<integer seed>")
        return RandomModel(int(seed), target.cores)
    from train.registry import RegistryError, load_cost_model, model_name

    if model == "champion":
        uri = f"models:/{model_name(target.name)}@champion"
        try:
            return LearnedModel(load_cost_model(uri, tracking), name=uri)
        except RegistryError:
            return AnalyticalModel(target)
    try:
        return LearnedModel(load_cost_model(model, tracking), name=model)
    except RegistryError as e:
        raise SearchError(str(e)) from None


def timed_score(model: CostModel, dag, states: Sequence[State], timing) -> np.ndarray:
    t0 = time.perf_counter()
    try:
        return model.score(dag, states)
    finally:
        timing.model_s += time.perf_counter() - t0


__all__ = ["AnalyticalModel", "CostModel", "LearnedModel", "RandomModel", "load_model", "timed_score"]
