"""FeatureExtractor: the role that turns a (pipeline, LoopNest, target) into the Features a cost model reads.

One extractor per target kind, each with the FeatureSchema its features follow. The CPU extractor (adams2019
features, schema cpu-adams2019) is registered for kind "cpu"; a GPU extractor (anderson2021) is one new class
and one `register_extractor("cuda")` line. `featurize()` stays the CPU shortcut.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

from .schema import CPU_ADAMS2019, FeatureSchema, SchemaError


class FeatureExtractor(ABC):
    """Features of scheduled stages for targets of one kind, following `schema`."""

    schema: FeatureSchema
    target_kind: str

    @abstractmethod
    def extract(self, pipeline, loopnest, target, pending_parallel=frozenset(), complete: bool | None = None,
                plan=None):
        """featurize.Features of every scheduled stage of `loopnest` (complete or, during search, partial)."""

    @abstractmethod
    def pipeline_features(self, dag) -> dict:
        """Schedule-independent features per stage, {(func, stage index): [rows, columns] array}."""


_EXTRACTORS: dict[str, FeatureExtractor] = {}


def register_extractor(target_kind: str) -> Callable[[type[FeatureExtractor]], type[FeatureExtractor]]:
    """Class decorator: an instance of the class extracts features for targets of `target_kind`."""

    def deco(cls: type[FeatureExtractor]) -> type[FeatureExtractor]:
        inst = cls()
        inst.target_kind = target_kind
        _EXTRACTORS[target_kind] = inst
        return cls

    return deco


def get_extractor(target) -> FeatureExtractor:
    """The extractor for `target` (a Target, a target name, or a target kind such as "cpu")."""
    kind = target if isinstance(target, str) and target in _EXTRACTORS else _kind(target)
    try:
        return _EXTRACTORS[kind]
    except KeyError:
        raise SchemaError(f"no feature extractor for {kind} targets; targets of kind "
                          f"{', '.join(sorted(_EXTRACTORS))} have one") from None


def extractor_kinds() -> tuple[str, ...]:
    return tuple(sorted(_EXTRACTORS))


def _kind(target) -> str:
    from ir.target import get_target

    return get_target(target).kind


@register_extractor("cpu")
class CpuAdams2019Extractor(FeatureExtractor):
    """adams2019's features for CPU targets: 40 x 7 pipeline counts and 41 schedule features per stage (Appendix A's
    39 and schedlab's two of what consecutive realizations share)."""

    schema = CPU_ADAMS2019

    def extract(self, pipeline, loopnest, target, pending_parallel=frozenset(), complete: bool | None = None,
                plan=None):
        from . import _featurize_cpu

        return _featurize_cpu(pipeline, loopnest, target, pending_parallel, complete, plan)

    def pipeline_features(self, dag) -> dict:
        from . import cached_pipeline_features

        return cached_pipeline_features(dag)
