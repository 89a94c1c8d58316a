"""The scheduler: search space, search algorithms and cost models (DESIGN §3.9).

    from scheduler import autoschedule
    s = autoschedule(pipeline, target="host", model="champion", algorithm="beam", beam_size=32, passes=5,
                     backend="numba")   # algorithm: a registered SearchStrategy; model: a registered CostModel
    print(s)                  # the LoopNest as pseudo-code
    s.predicted_cost, s.stats # model cost; states evaluated, seconds and where they went
    kernel = s.compile()

Importing it does not import Ray, Lightning or MLflow (a registered model loads MLflow when asked for).
"""

from __future__ import annotations

import ir  # noqa: F401 - first: its import hook serves this package's hot modules compiled (ir/hot.py)

from .space import SearchError

__all__ = ["BeamSearch", "CostModel", "Schedule", "SearchConfig", "SearchError", "SearchSpace", "SearchStrategy",
           "autoschedule", "load_model", "register_cost_model", "register_strategy"]


def __getattr__(name):
    if name in ("autoschedule", "Schedule"):
        from . import api

        return getattr(api, name)
    if name in ("BeamSearch", "SearchConfig", "SearchResult", "SearchStats"):
        from . import search

        return getattr(search, name)
    if name == "SearchSpace":
        from .space import SearchSpace

        return SearchSpace
    if name in ("load_model", "CostModel", "register_cost_model"):
        from . import cost

        return getattr(cost, name)
    if name in ("SearchStrategy", "register_strategy", "get_strategy"):
        from . import strategy

        return getattr(strategy, name)
    raise AttributeError(f"module 'scheduler' has no attribute {name!r}")
