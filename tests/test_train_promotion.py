"""train.promotion.decide: a challenger takes the champion alias only by beating every baseline on the same
validation pipelines, by top-1 score first and pairwise accuracy second."""

from __future__ import annotations

import math

from train.promotion import Baseline, decide


def m(top1: float, pairwise: float) -> dict[str, float]:
    return {"val_top1_score": top1, "val_pairwise_accuracy": pairwise}


BASELINES = [Baseline("random weights", m(0.80, 0.60)), Baseline("analytical", m(0.90, 0.70))]


def test_beating_every_baseline_promotes():
    d = decide(m(0.95, 0.65), BASELINES, requested=True)
    assert d.promote and d.reason == "promoted: beats random weights, analytical on the same validation pipelines"


def test_losing_to_one_baseline_does_not_and_says_which():
    d = decide(m(0.85, 0.90), BASELINES, requested=True)
    assert not d.promote and "does not beat analytical" in d.reason and "top-1 0.850 vs 0.900" in d.reason


def test_top1_ties_are_broken_by_pairwise_accuracy():
    assert decide(m(0.90, 0.71), BASELINES, requested=True).promote
    assert not decide(m(0.90, 0.70), BASELINES, requested=True).promote  # an exact tie is not a win


def test_the_champion_must_be_beaten_too_and_an_unloadable_one_is_skipped():
    champion = Baseline("champion v3", m(0.97, 0.80))
    assert not decide(m(0.95, 0.90), [*BASELINES, champion], requested=True).promote
    gone = Baseline("champion", {}, "not loadable here: schema version 1")
    d = decide(m(0.95, 0.90), [*BASELINES, gone], requested=True)
    assert d.promote and "not loadable here" in "\n".join(d.lines(m(0.95, 0.90)))


def test_not_requested_or_no_score_never_promotes_and_always_pins():
    assert not decide(m(1.0, 1.0), BASELINES, requested=False).promote
    assert not decide(m(math.nan, 1.0), BASELINES, requested=True).promote
    assert decide(m(0.1, 0.1), BASELINES, requested=True, rule="always").promote
