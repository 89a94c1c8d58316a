"""Losses over one batch = B schedules of ONE pipeline: predicted and measured runtimes, both [B], > 0.

relative_throughput — seeds/adams2019 §4.2 and Halide's retraining (reference §5): L2 on throughput
    relative to the batch's fastest measured schedule, so that the model spends its capacity telling fast
    schedules apart rather than predicting how slow the very bad ones are.
pairwise_rank — RankNet: a logistic loss on every pair of schedules with different measured runtimes;
    it sees only the order of the predictions, never their scale.
lambdarank — LambdaRank: RankNet's pairs, each weighted by how much swapping the two schedules in the
    predicted order would change NDCG, so that the order among the fast schedules (the ones a search keeps)
    counts more than the order among the slow ones (TLP and Pruner report it beating regression losses).
pairwise_rank_apart — RankNet's pairs weighted by how far apart they were measured, full weight from 10 % on:
    near-ties are what two measurements disagree on.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import functional as F

MIN_PREDICTION = 1e-10  # Halide's floor on the scaled prediction before inverting it


def _check(pred_runtime: Tensor, true_runtime: Tensor) -> None:
    if pred_runtime.ndim != 1 or pred_runtime.shape != true_runtime.shape or pred_runtime.numel() == 0:
        raise ValueError(f"losses take two non-empty [B] tensors, got {list(pred_runtime.shape)} and "
                         f"{list(true_runtime.shape)}")


def relative_throughput_loss(pred_runtime: Tensor, true_runtime: Tensor) -> Tensor:
    """Sum over the batch of (1/p_rel - 1/t_rel)^2, with p_rel = p / t_ref, t_rel = t / t_ref.

    As Halide's retrain_cost_model: t_ref is the batch's fastest MEASURED runtime and both predictions and
    measurements are divided by it (bringing pipelines of very different runtimes into one range), the
    scaled prediction is floored at 1e-10 before inversion, and the errors are summed, not averaged. So the
    loss is 0 only when predictions equal measurements: it is invariant to the unit of time (scaling both
    by one factor) but not to scaling the predictions alone: the model predicts absolute runtime, as
    Halide's does, so predictions stay comparable with measured times (train.metrics' R^2 on log runtime).
    Halide's 1e-5 dead-ReLU regulariser is not here: train.model's coefficients use softplus instead.
    """
    _check(pred_runtime, true_runtime)
    t_ref = true_runtime.min().detach()
    p_rel = (pred_runtime / t_ref).clamp_min(MIN_PREDICTION)
    t_rel = true_runtime / t_ref
    return ((1 / p_rel - 1 / t_rel) ** 2).sum()


def pairwise_ranking_loss(pred_runtime: Tensor, true_runtime: Tensor) -> Tensor:
    """Mean over ordered pairs (i slower than j, measured) of log(1 + exp(-(log p_i - log p_j))).

    Scores are log predicted runtimes, so the loss is invariant to the predictions' scale; pairs whose
    measured runtimes are equal carry no order and are skipped. With no such pair the loss is 0 (still
    attached to the graph, so backward works).
    """
    pairs = _ordered_pairs(pred_runtime, true_runtime)
    if pairs is None:
        return pred_runtime.sum() * 0
    _, slower, margin = pairs
    return F.softplus(-margin).mean()


def _ordered_pairs(pred_runtime: Tensor, true_runtime: Tensor) -> tuple[Tensor, Tensor, Tensor] | None:
    """What the ranking losses share: the scores (log predicted runtimes), the [i, j] mask of i measured slower
    than j, and the margins log p_i - log p_j of those pairs; None when no pair has a measured order."""
    _check(pred_runtime, true_runtime)
    score = torch.log(pred_runtime.clamp_min(torch.finfo(pred_runtime.dtype).tiny))
    slower = true_runtime[:, None] > true_runtime[None, :]  # [i, j]: i measured slower than j
    if not bool(slower.any()):
        return None
    return score, slower, (score[:, None] - score[None, :])[slower]


def lambdarank_loss(pred_runtime: Tensor, true_runtime: Tensor) -> Tensor:
    """Sum over ordered pairs (i slower than j, measured) of |dNDCG_ij| * log(1 + exp(-(log p_i - log p_j))).

    The relevance of a schedule is its relative throughput t_min / t in (0, 1] (the quantity
    relative_throughput's loss compares), its position is its rank in the predicted order (fastest
    prediction first, ties by index), and dNDCG_ij = |g_i - g_j| * |1/log2(1 + r_i) - 1/log2(1 + r_j)| / IDCG
    is the NDCG lost if i and j traded places. The weights are constants of each step (Burges 2010: the
    gradient of this loss is the lambda-gradient); like RankNet's, the loss sees only the order and the
    ratios of the predictions. Pairs with equal measurements carry no order and are skipped; with none, 0
    (attached to the graph).
    """
    pairs = _ordered_pairs(pred_runtime, true_runtime)
    if pairs is None:
        return pred_runtime.sum() * 0
    score, slower, margin = pairs
    with torch.no_grad():
        gain = true_runtime.min() / true_runtime
        rank = torch.empty_like(score)
        rank[torch.argsort(score.detach(), stable=True)] = torch.arange(1, len(score) + 1, dtype=score.dtype)
        discount = 1 / torch.log2(1 + rank)
        ideal = (torch.sort(gain, descending=True).values / torch.log2(
            torch.arange(2, len(gain) + 2, dtype=gain.dtype))).sum()
        weight = ((gain[:, None] - gain[None, :]).abs() * (discount[:, None] - discount[None, :]).abs() / ideal)
    return (weight[slower] * F.softplus(-margin)).sum()


LossFn = Callable[[Tensor, Tensor], Tensor]
NEAR_TIE = 1.1  # pairs measured less than this far apart weigh in pairwise_rank_apart by their share of it


def pairwise_rank_apart_loss(pred_runtime: Tensor, true_runtime: Tensor) -> Tensor:
    """RankNet's pairs weighted by how far apart they were measured: min(1, log(t_i / t_j) / log(NEAR_TIE)), the
    weighted mean of their logistic losses. Two measurements of the same schedules order pairs less than 10 % apart
    alike far less often than the rest (docs/generator.md), so such near-ties count in proportion: the model
    spends its capacity on the orders the labels are sure of."""
    pairs = _ordered_pairs(pred_runtime, true_runtime)
    if pairs is None:
        return pred_runtime.sum() * 0
    _, slower, margin = pairs
    with torch.no_grad():
        t = torch.log(true_runtime)
        weight = ((t[:, None] - t[None, :])[slower] / math.log(NEAR_TIE)).clamp(max=1.0)
    return (weight * F.softplus(-margin)).sum() / weight.sum()


LOSSES: dict[str, LossFn] = {"relative_throughput": relative_throughput_loss, "pairwise_rank": pairwise_ranking_loss,
                             "lambdarank": lambdarank_loss, "pairwise_rank_apart": pairwise_rank_apart_loss}


def get_loss(name: str) -> LossFn:
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; losses: {', '.join(LOSSES)}") from None
