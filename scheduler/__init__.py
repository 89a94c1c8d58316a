"""The scheduler: search space, search algorithms and cost models (DESIGN §3.9).

    from scheduler import autoschedule
    s = autoschedule(pipeline, target="host", model="champion", algorithm="beam", beam_size=32, passes=5)
    print(s)                  # the LoopNest as pseudo-code
    s.predicted_cost, s.stats # model cost; states evaluated, seconds and where they went
    kernel = s.compile()

Importing it does not import Ray, Lightning or MLflow (a registered model loads MLflow when asked for).
"""

from __future__ import annotations

from .space import SearchError

__all__ = ["BeamSearch", "Schedule", "SearchConfig", "SearchError", "SearchSpace", "autoschedule", "load_model"]


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
    if name == "load_model":
        from .cost import load_model

        return load_model
    raise AttributeError(f"module 'scheduler' has no attribute {name!r}")
