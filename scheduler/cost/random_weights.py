"""The random cost model: the hybrid network with uniformly random weights from a seed, as the first
data-generation round of adams2019 §5 samples with (Halide's random weights). It learned no runtimes, so
it suits any target and backend."""

from __future__ import annotations

from . import CostModelError
from .learned import LearnedModel
from .registry import register_cost_model


@register_cost_model("random")
class RandomModel(LearnedModel):
    """The hybrid network, randomly initialized from `seed`."""

    def __init__(self, seed: int = 0, cores: int = 1):
        from train.model import ModelConfig, build_model

        super().__init__(build_model(ModelConfig(kind="hybrid", num_cores=max(1, cores)), seed=seed),
                         name=f"random:{seed}")

    @classmethod
    def load(cls, arg: str, target, backend: str = "numba", tracking: str | None = None) -> RandomModel:
        seed = arg or "0"
        if not seed.isdigit():
            raise CostModelError(f"model 'random:{arg}': write random:<integer seed>")
        return cls(int(seed), target.cores)
