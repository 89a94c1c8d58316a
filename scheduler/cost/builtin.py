"""The built-in learned cost model: the model schedlab ships for a target and backend (train.builtin, as Halide
ships Adams2019's weights), so a search has a learned model before its user trains one. `model=champion` falls
back to it while the user's store has no champion; the user's own champion always takes precedence."""

from __future__ import annotations

from . import CostModelError
from .learned import LearnedModel
from .registry import register_cost_model


@register_cost_model("builtin")
class BuiltinModel(LearnedModel):
    """`builtin` (the target's, for the given backend or the one it learned) or `builtin:<target>-<backend>`."""

    @classmethod
    def load(cls, arg: str, target, backend: str | None = None, tracking: str | None = None) -> LearnedModel:
        from train.builtin import builtin_dir, builtin_models, find_builtin, read_builtin
        from train.registry import RegistryError, load_cost_model

        if arg:
            if not (builtin_dir() / arg).is_dir():
                raise CostModelError(f"no built-in model {arg!r}; built in: {_names(builtin_models()) or 'none'}")
            found = read_builtin(builtin_dir() / arg)
        else:
            found = find_builtin(target.name, backend)
            if found is None:
                on = f" on backend {backend}" if backend else ""
                raise CostModelError(f"no built-in cost model for target {target.name}{on}; built in: "
                                     f"{_names(builtin_models()) or 'none'}; give model=analytical or a trained model")
        try:
            network = load_cost_model(str(found.path))
        except RegistryError as e:
            raise CostModelError(str(e)) from None
        return LearnedModel(network, f"{found.name} ({found.source})", found.target, found.backend)


def _names(models) -> str:
    return ", ".join(m.name for m in models)
