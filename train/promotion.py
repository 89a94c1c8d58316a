"""Whether a freshly trained model deserves the champion alias: it must beat, on the very pipelines it was
validated on, every model a user could have instead — the same network with random weights, the analytical
model, and the current champion, each scored afresh (never read from tags recorded on another split).

The score is (top-1 score, pairwise accuracy), compared in that order: what search needs first is the
fastest schedule on top, then the order of the rest. A model that does not beat them all is registered
but not promoted, and the summary says which baseline it lost to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal

RULES = ("baselines", "always")
Rule = Literal["baselines", "always"]
SCORE = ("val_top1_score", "val_pairwise_accuracy")  # compared in this order


@dataclass(frozen=True)
class Baseline:
    name: str  # "random weights", "analytical", "champion v3"
    metrics: dict[str, float]  # validation metrics on the challenger's validation pipelines
    note: str = ""  # why it could not be scored, if it could not

    @property
    def score(self) -> tuple[float, ...]:
        return _score(self.metrics)


@dataclass(frozen=True)
class PromotionDecision:
    promote: bool
    reason: str  # one line: what it beat, or what it lost to
    baselines: tuple[Baseline, ...] = field(default_factory=tuple)

    def lines(self, val: dict[str, float]) -> list[str]:
        out = [f"  {'this model':16s} top-1 {val.get(SCORE[0], math.nan):.3f}  pairwise {val.get(SCORE[1], math.nan):.3f}"]
        for b in self.baselines:
            if b.metrics:
                out.append(f"  {b.name:16s} top-1 {b.metrics.get(SCORE[0], math.nan):.3f}  "
                           f"pairwise {b.metrics.get(SCORE[1], math.nan):.3f}")
            else:
                out.append(f"  {b.name:16s} not scored: {b.note}")
        return out


def _score(metrics: dict[str, float]) -> tuple[float, ...]:
    return tuple(-math.inf if not math.isfinite(metrics.get(k, math.nan)) else metrics[k] for k in SCORE)


def decide(val: dict[str, float], baselines: list[Baseline], requested: bool, rule: Rule = "baselines") -> PromotionDecision:
    """The decision for a model with validation metrics `val` (keys val_*), given the baselines scored on the
    same pipelines. rule "always": promoted whenever requested (pinning, as moving the alias by hand)."""
    bs = tuple(baselines)
    if not requested:
        return PromotionDecision(False, "promotion not requested (promote=false)", bs)
    if rule == "always":
        return PromotionDecision(True, "promoted: promotion=always", bs)
    mine = _score(val)
    if not math.isfinite(mine[0]):
        return PromotionDecision(False, "not promoted: no finite validation top-1 score", bs)
    lost = [b for b in bs if b.metrics and not mine > b.score]
    if lost:
        b = lost[0]
        return PromotionDecision(False, f"not promoted: does not beat {b.name} on the same validation pipelines "
                                        f"(top-1 {mine[0]:.3f} vs {b.score[0]:.3f}, pairwise {mine[1]:.3f} vs "
                                        f"{b.score[1]:.3f})", bs)
    beaten = ", ".join(b.name for b in bs if b.metrics)
    return PromotionDecision(True, f"promoted: beats {beaten} on the same validation pipelines", bs)


def score_baselines(val_batches, target, init_val: dict[str, float], champion_loader: Callable[[], object | None],
                    predict_groups: Callable) -> list[Baseline]:
    """Random weights (the challenger's own initialization, already scored as `init_val`), the analytical model
    and the current champion (loaded by `champion_loader`, None when there is none), on `val_batches`."""
    from .analytical import AnalyticalCost
    from .metrics import ranking_metrics

    out = [Baseline("random weights", dict(init_val))]
    analytical = AnalyticalCost(getattr(target, "cores", 1))
    out.append(Baseline("analytical", ranking_metrics(predict_groups(analytical, val_batches).values())
                        .as_dict("val_")))
    try:
        champion = champion_loader()
    except Exception as e:  # noqa: BLE001 - a champion this schedlab cannot load cannot defend its title
        from ir.errors import first_line

        return out + [Baseline("champion", {}, f"not loadable here: {first_line(e)}")]
    if champion is not None:
        name, model = champion
        out.append(Baseline(name, ranking_metrics(predict_groups(model, val_batches).values()).as_dict("val_")))
    return out

