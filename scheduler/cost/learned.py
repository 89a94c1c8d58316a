"""The learned cost model: a trained train.model network (hybrid or mlp) — registered
(`models:/schedlab-<target>@champion`), any MLflow model URI, or a checkpoint file — in eval mode, with the
target and backend whose runtimes it learned, and `update` fine-tuning it on measured runtimes (autotune)."""

from __future__ import annotations

import numpy as np
import torch

from . import CostModel, CostModelError, PredictedCosts
from .registry import register_cost_model

FINE_TUNE_STEPS = 50
FINE_TUNE_LR = 1e-3


@register_cost_model("learned")
class LearnedModel(CostModel):
    """A train.model.CostNetwork behind the CostModel interface."""

    def __init__(self, network, name: str = "learned", target: str | None = None, backend: str | None = None):
        self.network = network.eval()
        self.name = name
        self.target = target
        self.backend = backend
        self._embeddings: dict[int, tuple[np.ndarray, torch.Tensor, torch.Tensor]] = {}

    @classmethod
    def load(cls, arg: str, target, backend: str = "numba", tracking: str | None = None) -> LearnedModel:
        from train.registry import RegistryError, load_cost_model, recorded_target

        if not arg:
            raise CostModelError("write learned:<MLflow model URI or checkpoint path>")
        try:
            network = load_cost_model(arg, tracking)
            learned_target, learned_backend = recorded_target(arg, tracking)
        except RegistryError as e:
            raise CostModelError(str(e)) from None
        return cls(network, arg, learned_target, learned_backend)

    def _inputs(self, pipeline_features: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """(pipeline features as a tensor, their embedding), once per array (CostModel.pipeline_features
        hands the search the same array for a pipeline and stage set)."""
        hit = self._embeddings.get(id(pipeline_features))
        if hit is None or hit[0] is not pipeline_features:
            pf = torch.as_tensor(np.asarray(pipeline_features, dtype=np.float32))
            with torch.no_grad():
                hit = (pipeline_features, pf, self.network.embed_pipeline(pf))
            if len(self._embeddings) >= 1024:  # many pipelines (evaluation): keep the cache bounded
                self._embeddings.clear()
            self._embeddings[id(pipeline_features)] = hit
        return hit[1], hit[2]

    def predict(self, pipeline_features: np.ndarray, schedule_features: np.ndarray) -> PredictedCosts:
        pf, emb = self._inputs(pipeline_features)
        sf_array = np.asarray(schedule_features, dtype=np.float32)
        if sf_array.ndim == 2:
            sf_array = sf_array[None]
        sf = torch.as_tensor(sf_array)
        # the hand-designed terms in numpy: the bits torch computes, without its dispatch per small operation
        terms = self.network.terms(pf.numpy(), sf_array)
        from train.model import MIN_RUNTIME

        with torch.no_grad():  # the total as the network's forward computes it
            stages = self.network.stage_costs(pf, sf, emb, None if terms is None else torch.from_numpy(terms))
            total = stages.sum(-1).clamp_min(MIN_RUNTIME)
        return PredictedCosts(total.double().numpy(), stages.double().numpy())

    def update(self, pipeline_features: np.ndarray, schedule_features: np.ndarray, runtimes: np.ndarray) -> None:
        """A few Adam steps of the relative-throughput loss (adams2019 §4.2) on these measured schedules;
        fewer than two finite runtimes teach nothing. Fine-tunes this model's network in place."""
        from train.loss import relative_throughput_loss

        t = np.asarray(runtimes, dtype=np.float64)
        ok = np.isfinite(t)
        if ok.sum() < 2:
            return
        net = self.network
        algo = torch.as_tensor(np.asarray(pipeline_features, dtype=np.float32))
        sched = torch.as_tensor(np.asarray(schedule_features, dtype=np.float32)[ok])
        rt = torch.as_tensor(t[ok], dtype=torch.float32)
        opt = torch.optim.Adam(net.parameters(), lr=FINE_TUNE_LR)
        net.train()
        for _ in range(FINE_TUNE_STEPS):
            opt.zero_grad()
            relative_throughput_loss(net(algo, sched), rt).backward()
            opt.step()
        net.eval()
        self._embeddings.clear()

    def save(self, path) -> None:
        """A checkpoint file `load_model(path)` reads back, with the target and backend it learned."""
        from train.model import save_checkpoint_dict

        ckpt = save_checkpoint_dict(self.network)
        ckpt.update({k: v for k, v in (("target", self.target), ("backend", self.backend)) if v is not None})
        torch.save(ckpt, path)
