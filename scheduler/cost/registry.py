"""Cost models by name: `register_cost_model(name)` and `load_model(spec, target, ...)`.

A spec is a registered name with an optional argument (`analytical`, `random:3`, `learned:<uri>`),
`champion` (the target's registered champion; while none is registered, the built-in model of the target and
backend, train.builtin, else the analytical model), `builtin` (that built-in model), or an
MLflow model URI or checkpoint path (a learned model). A learned model records the target and backend
whose runtimes it learned; using it for others is refused unless `allow_mismatch=True`.
"""

from __future__ import annotations

from ir.errors import SchedlabWarning

from .. import cost as _cost

COST_MODELS: dict[str, type] = {}


def register_cost_model(name: str):
    """Class decorator: `@register_cost_model("toy") class Toy(CostModel): ...` makes `load_model("toy")` work."""
    def deco(cls):
        COST_MODELS[name] = cls
        cls.name = name
        return cls
    return deco


def get_cost_model(name: str) -> type:
    """The class registered as `name`; one line listing the registered names otherwise."""
    cls = COST_MODELS.get(name)
    if cls is None:
        raise _cost.CostModelError(f"unknown cost model {name!r}; registered: {', '.join(sorted(COST_MODELS))}, "
                                   "champion, or an MLflow model URI / checkpoint path")
    return cls


def _looks_like_uri(spec: str) -> bool:
    return "/" in spec or "." in spec or spec.startswith("models:") or spec.startswith("runs:")


def load_model(model, target, tracking: str | None = None, *, backend: str | None = None,
               allow_mismatch: bool = False):
    """A CostModel from what a user passes: a CostModel, a train.model network, a registered name
    (`name[:arg]`), "champion", or any URI train.registry.load_cost_model understands. `target` is the
    ir.target Target (or its name) the search is for, `backend` the backend its schedules compile with
    (None: the one the model learned, which the search then compiles with)."""
    import torch

    from ir.target import get_target

    tgt = get_target(target)
    learned = COST_MODELS["learned"]
    if isinstance(model, _cost.CostModel):
        return check_model(model, tgt.name, backend, allow_mismatch)
    if isinstance(model, torch.nn.Module):
        return learned(model)
    if model is None:
        model = "analytical"
    if not isinstance(model, str):
        raise _cost.CostModelError(f"model must be a cost model, a registered name ({', '.join(sorted(COST_MODELS))}), "
                                   f"'champion' or a URI; got {model!r}")
    if model == "champion":
        return _champion(tgt, backend, tracking, allow_mismatch)
    name, _, arg = model.partition(":")
    if name in COST_MODELS:
        loaded = COST_MODELS[name].load(arg, tgt, backend, tracking)
    elif _looks_like_uri(model):
        loaded = learned.load(model, tgt, backend, tracking)
    else:
        get_cost_model(name)  # raises, listing the registered names
    return check_model(loaded, tgt.name, backend, allow_mismatch)


def check_model(model, target: str, backend: str | None, allow_mismatch: bool = False):
    """`model`, unless it learned another target's or backend's runtimes (then one line, unless allowed);
    backend None accepts the model's."""
    wrong = []
    if model.target is not None and model.target != target:
        wrong.append(f"target {model.target} (not {target})")
    if backend is not None and model.backend is not None and model.backend != backend:
        wrong.append(f"backend {model.backend} (not {backend})")
    if wrong and not allow_mismatch:
        on = f" on backend {backend}" if backend is not None else ""
        raise _cost.CostModelError(f"cost model {model.name} learned the runtimes of {' and '.join(wrong)}: load a "
                                   f"model of target {target}{on}, or pass allow_mismatch=True")
    return model


class ChampionFallbackWarning(SchedlabWarning):
    """model=champion found no champion: the search uses the built-in model of the target and backend, else the
    analytical model (the message names the store and the model)."""


def _champion(tgt, backend: str | None, tracking: str | None, allow_mismatch: bool):
    import warnings

    from ir.errors import first_line
    from train.registry import model_name, tracking_uri

    uri = f"models:/{model_name(tgt.name)}@champion"
    try:
        model = COST_MODELS["learned"].load(uri, tgt, backend, tracking)
    except _cost.CostModelError as e:  # none registered (or unreadable): the built-in model, else the analytical
        fallback = _builtin_or_analytical(tgt, backend, tracking)
        warnings.warn(f"model=champion: no {uri} in {tracking_uri(tracking)} ({first_line(e)}); using the "
                      f"{fallback.name if fallback.name.startswith('builtin') else 'analytical'} model instead",
                      ChampionFallbackWarning, stacklevel=4)
        return fallback
    return check_model(model, tgt.name, backend, allow_mismatch)


def _builtin_or_analytical(tgt, backend: str | None, tracking: str | None):
    from train.builtin import find_builtin

    if find_builtin(tgt.name, backend) is not None:
        return COST_MODELS["builtin"].load("", tgt, backend, tracking)
    return COST_MODELS["analytical"].load("", tgt, backend, tracking)
