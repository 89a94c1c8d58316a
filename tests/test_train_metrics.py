"""Ranking metrics (train.metrics): hand-computed small cases, extremes, ties, NaNs, and a brute-force check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from train.metrics import RankingMetrics, largest_group, random_topk_scores, ranking_metrics, topk_scores


def g(pred, true):
    return np.asarray(pred, dtype=float), np.asarray(true, dtype=float)


def test_three_schedules_by_hand():
    # measured 1, 2, 3; predicted 2, 1, 3: pairs (0,1) wrong, (0,2) right, (1,2) right
    m = ranking_metrics([g([2, 1, 3], [1, 2, 3])])
    assert m.pairwise_accuracy == pytest.approx(2 / 3)
    assert m.kendall_tau == pytest.approx((2 - 1) / 3)
    assert m.top1_score == pytest.approx(1 / 2)  # the model's pick runs in 2, the best in 1
    assert m.top5_score == 1.0  # the whole group
    # Halide: schedules > 1.3x slower than the fastest (runtimes 2 and 3) vs the fastest (predicted 2):
    # predicted 1 (wrong) and 3 (right)
    assert m.ordering_rate_1_3 == pytest.approx(1 / 2)
    assert (m.pipelines, m.samples) == (1, 3)


def test_scores_average_over_pipelines():
    m = ranking_metrics([g([1, 2], [1, 2]), g([2, 1], [1, 2])])
    assert m.top1_score == pytest.approx(0.75)
    assert m.kendall_tau == pytest.approx(0.0)
    assert m.pairwise_accuracy == pytest.approx(0.5)


def test_perfect_and_reversed_predictors():
    rng = np.random.default_rng(0)
    truths = [rng.uniform(1e-4, 1e-1, size=n) for n in (8, 20, 33)]
    perfect = ranking_metrics([g(t, t) for t in truths])
    for name in ("pairwise_accuracy", "ordering_rate_1_3", "top1_score", "top5_score", "kendall_tau",
                 "r2_log_runtime"):
        assert getattr(perfect, name) == pytest.approx(1.0), name
    assert ranking_metrics([g(7 * t, t) for t in truths]).kendall_tau == pytest.approx(1.0)  # scale-free ranks
    reversed_ = ranking_metrics([g(1 / t, t) for t in truths])
    assert reversed_.pairwise_accuracy == 0.0
    assert reversed_.ordering_rate_1_3 == 0.0
    assert reversed_.kendall_tau == pytest.approx(-1.0)
    assert reversed_.top1_score == pytest.approx(np.mean([t.min() / t.max() for t in truths]))
    assert reversed_.r2_log_runtime < 0


def test_measured_ties_carry_no_order():
    m = ranking_metrics([g([1, 2, 3], [1, 1, 2])])
    assert m.pairwise_accuracy == 1.0  # only (0,2) and (1,2) are ordered pairs
    assert m.kendall_tau == pytest.approx(2 / math.sqrt(3 * 2))  # tau-b: 3 pairs, one measured tie


def test_predicted_ties_are_a_coin_flip_and_pessimistic_in_the_top_k():
    m = ranking_metrics([g([5, 5, 5], [1, 2, 3])])
    assert m.pairwise_accuracy == 0.5
    assert m.ordering_rate_1_3 == 0.5  # Halide would call these correct; a constant model is no oracle
    assert math.isnan(m.kendall_tau)  # no pipeline with two distinct predictions
    assert m.top1_score == pytest.approx(1 / 3)  # the tie is broken toward the slowest schedule
    assert topk_scores([g([5, 5, 5], [1, 2, 3])], ks=[1, 2, 3]) == pytest.approx({1: 1 / 3, 2: 1 / 2, 3: 1.0})


def test_ordering_rate_ignores_close_pairs():
    # 1.2 is within 1.3x of the best: predicting it faster than the best is not counted, only the 2.0 is
    m = ranking_metrics([g([3, 1, 4], [1.0, 1.2, 2.0])])
    assert m.ordering_rate_1_3 == 1.0
    assert m.pairwise_accuracy == pytest.approx(2 / 3)  # whereas every pair counts here
    # exactly 1.3x is "within 30%" as in Halide, and two slow schedules are never compared with each other
    assert math.isnan(ranking_metrics([g([2, 1], [1.0, 1.3])]).ordering_rate_1_3)
    assert ranking_metrics([g([1, 9, 2], [1.0, 2.0, 3.0])]).ordering_rate_1_3 == 1.0


def test_missing_values():
    m = ranking_metrics([g([1, 2, 3, 4], [1, np.nan, 3, -1]), g([1, 2], [np.inf, np.nan])])
    assert (m.pipelines, m.samples) == (1, 2)  # no ground truth, no sample; an emptied group is dropped
    nan_pred = ranking_metrics([g([np.nan, 2, 3], [1, 2, 3])])
    assert nan_pred.top1_score == pytest.approx(1 / 2)  # an unscored schedule ranks last
    assert nan_pred.pairwise_accuracy == pytest.approx(1 / 3)
    assert nan_pred.r2_log_runtime == pytest.approx(1.0)  # left out of R^2 only; the rest are exact
    with pytest.raises(ValueError, match="no groups"):
        ranking_metrics([])
    with pytest.raises(ValueError, match="no samples"):
        ranking_metrics([g([1, 2], [np.nan, 0])])
    with pytest.raises(ValueError, match="predictions"):
        ranking_metrics([g([1, 2, 3], [1, 2])])


def test_r2_uses_raw_predictions():
    t = np.array([1e-3, 2e-3, 4e-3, 8e-3])
    assert ranking_metrics([g(t, t)]).r2_log_runtime == pytest.approx(1.0)
    assert ranking_metrics([g(10 * t, t)]).r2_log_runtime < 0  # right order, wrong scale: not hidden


def test_topk_curve():
    pred, true = g([1, 2, 3, 4], [4, 3, 2, 1])
    curve = topk_scores([(pred, true)], ks=range(1, 7))
    assert curve == pytest.approx({1: 1 / 4, 2: 1 / 3, 3: 1 / 2, 4: 1.0, 5: 1.0, 6: 1.0})
    assert list(topk_scores([(pred, true)])) == list(range(1, 33))
    with pytest.raises(ValueError):
        topk_scores([(pred, true)], ks=[0])


def test_random_order_topk_is_the_mean_over_every_k_subset():
    """The exact expectation against enumerating every k-subset, with ties and groups of different sizes; and
    against the mean of many seeded random permutations scored as topk_scores scores a model."""
    from itertools import combinations

    rng = np.random.default_rng(3)
    groups = [g(rng.uniform(size=n), np.round(rng.uniform(1, 4, n), 1)) for n in (7, 5, 1)]
    ks = range(1, 9)
    exact = random_topk_scores(groups, ks)
    for k in ks:
        per_group = [np.mean([t.min() / t[list(c)].min() for c in combinations(range(t.size), min(k, t.size))])
                     for _, t in groups]
        assert exact[k] == pytest.approx(np.mean(per_group), rel=1e-12), k
    shuffled = np.mean([list(topk_scores([(rng.permutation(t.size).astype(float), t) for _, t in groups],
                                         ks).values()) for _ in range(2000)], axis=0)
    assert shuffled == pytest.approx([exact[k] for k in ks], abs=0.02)
    assert exact[8] == 1.0 and exact[1] < exact[2] < exact[7]
    assert largest_group(groups) == 7
    with pytest.raises(ValueError):
        random_topk_scores(groups, ks=[0])


def test_large_groups_match_brute_force():
    """Groups larger than the pair-matrix chunk, with ties, against a direct O(n^2) count."""
    rng = np.random.default_rng(1)
    true = rng.integers(1, 200, size=700).astype(float)
    pred = true + rng.normal(0, 40, size=700).round()
    m = ranking_metrics([(pred, true)])
    correct = ordered = conc = disc = tp = tt = 0
    for i in range(len(true)):
        dp = np.sign(pred[i] - pred[i + 1:])
        dt = np.sign(true[i] - true[i + 1:])
        ordered += np.count_nonzero(dt)
        correct += np.count_nonzero((dp == dt) & (dt != 0)) + 0.5 * np.count_nonzero((dp == 0) & (dt != 0))
        conc += np.count_nonzero(dp * dt > 0)
        disc += np.count_nonzero(dp * dt < 0)
        tp += np.count_nonzero(dp == 0)
        tt += np.count_nonzero(dt == 0)
    n0 = len(true) * (len(true) - 1) / 2
    assert m.pairwise_accuracy == pytest.approx(correct / ordered)
    assert m.kendall_tau == pytest.approx((conc - disc) / math.sqrt((n0 - tp) * (n0 - tt)))


def test_as_dict():
    m = ranking_metrics([g([2, 1, 3], [1, 2, 3])])
    d = m.as_dict("val/")
    assert set(d) == {f"val/{k}" for k in RankingMetrics.__dataclass_fields__}
    assert d["val/samples"] == 3.0 and all(isinstance(v, float) for v in d.values())


def test_pairwise_accuracy_apart_counts_only_pairs_measured_far_apart():
    from train.metrics import pairwise_accuracy_apart

    true = np.array([1.0, 1.05, 2.0, 4.0])
    # (1.0, 1.05) is a near-tie: left out; of the five other pairs, the prediction swaps (2.0, 4.0) only
    pred = np.array([1.0, 0.5, 3.0, 2.5])
    assert pairwise_accuracy_apart([(pred, true)], 1.1) == pytest.approx(4 / 5)
    assert pairwise_accuracy_apart([(pred, true)], 1.01) == pytest.approx(4 / 6)  # the near-tie counts, missed
    tied = np.array([1.0, 1.0, 1.0, 1.0])  # predicted ties count half
    assert pairwise_accuracy_apart([(tied, true)], 1.1) == pytest.approx(0.5)
    assert math.isnan(pairwise_accuracy_apart([(pred[:2], true[:2])], 1.1))  # no pair that far apart


def test_pairwise_by_apart_splits_pairs_by_measured_ratio():
    from train.metrics import by_apart_side_by_side, pairwise_by_apart

    true = np.array([1.0, 1.05, 1.2, 2.0, 4.0])
    # ratios: (1,1.05) 1.05, (1,1.2) 1.2, (1,2) 2, (1,4) 4, (1.05,1.2) 1.14, (1.05,2) 1.9, (1.05,4) 3.8,
    # (1.2,2) 1.67, (1.2,4) 3.33, (2,4) 2; the prediction swaps (1, 1.05), (1, 1.2) and (2, 4), ties (1.05, 1.2)
    pred = np.array([1.0, 0.5, 0.5, 3.0, 2.5])
    below, low, mid, far = pairwise_by_apart([(pred, true), (pred[:1], true[:1])])
    assert [(b.label, b.pairs) for b in (below, low, mid, far)] == [
        ("<1.1x", 1), ("1.1-1.3x", 2), ("1.3-2x", 2), (">=2x", 5)]
    assert (below.correct, low.correct, mid.correct, far.correct) == (0.0, 0.5, 2.0, 4.0)
    assert far.accuracy == pytest.approx(0.8) and far.metric == "pairwise_from_2x" and below.metric == "pairwise_below_1.1x"
    assert sum(b.pairs for b in (below, low, mid, far)) == 10  # every pair of distinct runtimes, once
    same = pairwise_by_apart([(true, true)])
    assert all(b.accuracy == 1.0 for b in same)
    assert by_apart_side_by_side((below, far), same[::3]) == "<1.1x 0.00 / 1.00 of 1; >=2x 0.80 / 1.00 of 5"
    (empty, *_) = pairwise_by_apart([(np.array([1.0, 2.0]), np.array([3.0, 3.0]))])  # equal runtimes: no pair
    assert empty.pairs == 0 and math.isnan(empty.accuracy)
    (whole,) = pairwise_by_apart([(pred, true)], ())  # no edges: one bucket of every pair of distinct runtimes
    assert (whole.label, whole.pairs, whole.correct) == ("all", 10, 6.5)
