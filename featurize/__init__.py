"""Featurization: what the cost model sees of a (pipeline, schedule), and the dataset that stores it.

    from featurize import featurize
    f = featurize(pipeline, loopnest, target="host")
    f.stages                    # [(func, stage index), ...] in DAG order
    f.pipeline                  # float32 [n_stages, 40, 7]   (schedule-independent)
    f.schedule                  # float32 [n_stages, 41]

`featurize` is the CPU shortcut; `get_extractor(target).extract(...)` is the FeatureExtractor of any target
kind that has one, and its `.schema` names what the features mean (featurize.schema).
"""

from __future__ import annotations

import ir  # noqa: F401 - first: its import hook serves this package's hot modules compiled (ir/hot.py)

from dataclasses import dataclass

import numpy as np

from .schema import CPU_ADAMS2019, DTYPE, SCHEMA, SCHEMA_VERSION, FeatureDef, FeatureSchema, describe, get_schema

__all__ = ["CPU_ADAMS2019", "SCHEMA", "SCHEMA_VERSION", "FeatureDef", "FeatureExtractor", "FeatureSchema",
           "Features", "describe", "featurize", "get_extractor", "get_schema", "register_extractor"]


@dataclass
class Features:
    stages: list[tuple[str, int]]  # (func, stage index), DAG order: outputs first
    pipeline: np.ndarray  # [n, 40, 7]
    schedule: np.ndarray  # [n, 41]
    inlined: list[bool]

    def by_name(self, func: str, stage: int = 0) -> dict[str, float]:
        """A stage's schedule features as {name: value}: what to read when debugging a cost model."""
        from .schema import SCHEDULE_FEATURES

        i = self.stages.index((func, stage))
        return dict(zip(SCHEDULE_FEATURES, (float(x) for x in self.schedule[i])))

    def describe(self, stage: int | None = None) -> str:
        """The schedule features by name with their definitions (zeros left out)."""
        return describe(self, CPU_ADAMS2019, stage)


def featurize(pipeline, loopnest, target="host", pending_parallel=frozenset(), complete: bool | None = None,
              plan=None) -> Features:
    """Features of every scheduled stage of `loopnest` (a complete or, during search, partial schedule), by the
    extractor registered for the target's kind; a kind with none is refused with one line."""
    from ir.target import get_target

    tgt = get_target(target)
    return get_extractor(tgt).extract(pipeline, loopnest, tgt, pending_parallel, complete, plan)


def _featurize_cpu(pipeline, loopnest, target, pending_parallel=frozenset(), complete: bool | None = None,
                   plan=None) -> Features:
    from ir.plan import Plan
    from ir.target import get_target

    from .schedule import schedule_features

    tgt = get_target(target)
    dag = pipeline.dag if hasattr(pipeline, "dag") else pipeline
    if plan is None:
        if complete is None:
            complete = loopnest.scheduled_funcs() >= {n.name for n in dag.nodes}
        plan = Plan(dag, loopnest, tgt, complete=complete)
    sched = schedule_features(plan, tgt, frozenset(pending_parallel))
    algo = cached_pipeline_features(dag)
    stages = [(n.name, s.index) for n in dag.nodes for s in n.stages if (n.name, s.index) in sched]
    inlined = plan.inlined
    return Features(stages,
                    np.stack([algo[k] for k in stages]).astype(DTYPE) if stages else np.zeros((0, *SCHEMA.pipeline_shape), DTYPE),
                    np.stack([sched[k] for k in stages]).astype(DTYPE) if stages else np.zeros((0, SCHEMA.schedule_width), DTYPE),
                    [k[0] in inlined for k in stages])


def cached_pipeline_features(dag) -> dict:
    """Per-stage algorithm features of a FunctionDAG, computed once and kept in its analysis cache."""
    from .algorithm import pipeline_features

    return dag.analysis("featurize.pipeline_features", lambda: pipeline_features(dag))


from .extractor import FeatureExtractor, get_extractor, register_extractor  # noqa: E402  (needs Features above)
