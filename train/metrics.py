"""Ranking and regression metrics of a cost model, from per-pipeline groups of (predicted, measured) runtimes.

Both arrays of a group are runtimes (larger = slower) of schedules of ONE pipeline; orders are compared only
within a pipeline. Definitions (shared/reference/cost-model-ecosystem.md §1-3, §7):

* pairwise_accuracy — TenSet: over all pairs within a pipeline whose measured runtimes differ, the fraction
  the prediction orders the same way; pooled over the pairs of all pipelines.
* ordering_rate_1_3 — Halide's "correct ordering rate" (retrain_cost_model): for every schedule measured
  MORE than 1.3x slower than its pipeline's fastest, is it predicted slower than that fastest schedule?
  Pooled over pipelines. Pairs of two slow schedules, and schedules within 1.3x of the best, do not count.
* top{1,5}_score — TVM/TenSet top-k score: best measured runtime / best measured runtime among the k
  schedules the model predicts fastest, averaged over pipelines (unweighted); 1.0 = the model's top k
  contains the best schedule. k larger than a group takes the whole group.
* kendall_tau — tau-b per pipeline, averaged over pipelines with >= 2 distinct predicted and measured values.
* r2_log_runtime — coefficient of determination 1 - SS_res/SS_tot of log(predicted) against log(measured)
  over all samples, predictions used raw (not rescaled per pipeline): the models predict absolute runtime,
  as Halide's does and as seeds/adams2019 Fig. 7 plots it. Negative when worse than predicting the mean.

Ties and missing values, deliberately:
* a sample whose measured runtime is NaN, infinite or <= 0 has no ground truth and is dropped; a group left
  empty is dropped; nothing left at all (or no groups) is a ValueError.
* a NaN predicted runtime counts as +inf: the model could not score that schedule, so it ranks it last
  (it is never in a top k unless everything else is) rather than hiding it. Non-finite or non-positive
  predictions are left out of r2_log_runtime only.
* measured ties (exactly equal runtimes) carry no order: skipped by pairwise_accuracy, counted as ties by tau-b.
* a predicted tie on a pair with a measured order counts half-correct (a coin flip) in pairwise_accuracy and
  ordering_rate_1_3 — so a constant predictor scores 0.5, not 1 (Halide counts such ties as correct).
* in the top k, predicted ties are broken pessimistically (the slower measured schedule first), so a
  constant predictor gets the worst score, not a lucky one from the input order.
* a metric with nothing to measure (no ordered pair, no pipeline with two distinct values, no variance in
  log runtime) is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np

HALIDE_ORDERING_RATIO = 1.3
_ROW_CHUNK = 512  # rows of the pair matrix built at once: bounds memory on large groups

Group = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class RankingMetrics:
    pairwise_accuracy: float  # fraction of pairs (within a pipeline, measured runtimes differ) ordered correctly
    ordering_rate_1_3: float  # Halide: schedules > 1.3x slower than the fastest, predicted slower than it
    top1_score: float  # mean over pipelines of best measured / best measured among the model's top 1
    top5_score: float  # same with the model's top 5
    kendall_tau: float  # mean per-pipeline Kendall tau-b
    r2_log_runtime: float  # R^2 of log(predicted) vs log(measured) over all samples, raw predictions
    pipelines: int
    samples: int

    def as_dict(self, prefix: str = "") -> dict[str, float]:
        return {f"{prefix}{f.name}": float(getattr(self, f.name)) for f in fields(self)}

    def scores(self, prefix: str = "") -> dict[str, float]:
        """The ranking scores without the counts (fixed by the data: params of a run, not metrics)."""
        return {k: v for k, v in self.as_dict(prefix).items() if k.removeprefix(prefix) not in COUNTS}


COUNTS = ("pipelines", "samples")  # the RankingMetrics fields that count rather than score


@dataclass
class _Pairs:
    """Pair counts of one group (or pooled): the raw material of accuracy and tau."""

    ordered: int = 0  # pairs with different measured runtimes
    concordant: int = 0  # ordered pairs predicted in the same order
    discordant: int = 0  # ordered pairs predicted in the opposite order
    tied_pred: int = 0  # all pairs with equal predictions
    tied_true: int = 0  # all pairs with equal measurements
    total: int = 0


def clean_groups(groups: Iterable[Group]) -> list[Group]:
    """float64 copies with the missing-value rules of the module docstring applied."""
    out: list[Group] = []
    seen = 0
    for pred, true in groups:
        seen += 1
        pred = np.asarray(pred, dtype=np.float64).reshape(-1)
        true = np.asarray(true, dtype=np.float64).reshape(-1)
        if pred.shape != true.shape:
            raise ValueError(f"a group has {pred.size} predictions but {true.size} measurements")
        keep = np.isfinite(true) & (true > 0)
        pred = np.where(np.isnan(pred[keep]), np.inf, pred[keep])
        if pred.size:
            out.append((pred, true[keep]))
    if not out:
        raise ValueError("no samples to score" if seen else "no groups to score")
    return out


def _sign_rows(v: np.ndarray, rows: slice) -> np.ndarray:
    """sign(v[i] - v[j]) for i in rows, all j; comparisons, so inf vs inf is a tie, not NaN."""
    a, b = v[rows, None], v[None, :]
    return (a > b).astype(np.int8) - (a < b).astype(np.int8)


def _pair_counts(pred: np.ndarray, true: np.ndarray) -> _Pairs:
    n = pred.size
    c = _Pairs(total=n * (n - 1) // 2)
    for start in range(0, n, _ROW_CHUNK):
        rows = slice(start, min(n, start + _ROW_CHUNK))
        upper = np.arange(rows.start, rows.stop)[:, None] < np.arange(n)[None, :]  # each pair once
        sp, st = _sign_rows(pred, rows)[upper], _sign_rows(true, rows)[upper]
        agree = sp * st
        c.ordered += int(np.count_nonzero(st))
        c.concordant += int(np.count_nonzero(agree > 0))
        c.discordant += int(np.count_nonzero(agree < 0))
        c.tied_pred += int(np.count_nonzero(sp == 0))
        c.tied_true += int(np.count_nonzero(st == 0))
    return c


def _kendall_tau_b(c: _Pairs) -> float | None:
    denom = (c.total - c.tied_pred) * (c.total - c.tied_true)
    return (c.concordant - c.discordant) / np.sqrt(float(denom)) if denom > 0 else None


def _ordering_counts(pred: np.ndarray, true: np.ndarray) -> tuple[float, int]:
    """(correct, counted) for Halide's rate: slow schedules vs the fastest (its first, if tied)."""
    ref = int(np.argmin(true))
    slow = true > HALIDE_ORDERING_RATIO * true[ref]
    p = pred[slow]
    correct = np.count_nonzero(p > pred[ref]) + 0.5 * np.count_nonzero(p == pred[ref])
    return float(correct), int(np.count_nonzero(slow))


def _top_k_score(pred: np.ndarray, true: np.ndarray, k: int) -> float:
    order = np.lexsort((-true, pred))  # by prediction; ties: slower measured first (pessimistic)
    return float(true.min() / true[order[:k]].min())


def _r2_log(groups: list[Group]) -> float:
    pred = np.concatenate([p for p, _ in groups])
    true = np.concatenate([t for _, t in groups])
    ok = np.isfinite(pred) & (pred > 0)
    if np.count_nonzero(ok) < 2:
        return float("nan")
    y, yhat = np.log(true[ok]), np.log(pred[ok])
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - yhat) ** 2)) / ss_tot if ss_tot > 0 else float("nan")


def _ratio(num: float, den: float) -> float:
    return num / den if den else float("nan")


def ranking_metrics(groups: Iterable[Group]) -> RankingMetrics:
    """All metrics of the module docstring over per-pipeline (predicted, measured) groups."""
    gs = clean_groups(groups)
    correct = ordered = 0.0
    halide_correct = halide_counted = 0.0
    taus: list[float] = []
    for pred, true in gs:
        c = _pair_counts(pred, true)
        ordered += c.ordered
        correct += c.concordant + 0.5 * (c.ordered - c.concordant - c.discordant)
        tau = _kendall_tau_b(c)
        if tau is not None:
            taus.append(tau)
        hc, hn = _ordering_counts(pred, true)
        halide_correct += hc
        halide_counted += hn
    return RankingMetrics(
        pairwise_accuracy=_ratio(correct, ordered),
        ordering_rate_1_3=_ratio(halide_correct, halide_counted),
        top1_score=float(np.mean([_top_k_score(p, t, 1) for p, t in gs])),
        top5_score=float(np.mean([_top_k_score(p, t, 5) for p, t in gs])),
        kendall_tau=float(np.mean(taus)) if taus else float("nan"),
        r2_log_runtime=_r2_log(gs),
        pipelines=len(gs),
        samples=sum(t.size for _, t in gs),
    )


def pairwise_accuracy_apart(groups: Iterable[Group], ratio: float = 1.1) -> float:
    """pairwise_accuracy over the pairs whose measured runtimes are at least `ratio` apart (slower / faster): the
    pairs a re-measurement orders the same way (docs/generator.md: 0.99 of pairs >= 10 % apart), where a model's
    misses are its own and not the labels' near-ties. Predicted ties count half; NaN with no such pair."""
    correct = counted = 0.0
    for lo, hi, score in _measured_pairs(groups):
        far = hi >= ratio * lo
        correct += float(score[far].sum())
        counted += int(np.count_nonzero(far))
    return _ratio(correct, counted)


def _measured_pairs(groups: Iterable[Group]):
    """Per group, over each pair once: the faster and slower measured runtime and the pair's score (1 ordered as
    measured, 0.5 a predicted or measured tie, 0 swapped or unorderable)."""
    for pred, true in clean_groups(groups):
        i, j = np.triu_indices(true.size, 1)
        agree = np.sign(pred[i] - pred[j]) * np.sign(true[i] - true[j])
        yield np.minimum(true[i], true[j]), np.maximum(true[i], true[j]), (agree > 0) + 0.5 * (agree == 0)


APART_EDGES = (1.1, 1.3, 2.0)  # pairwise_by_apart's bucket edges: slower / faster, measured


@dataclass(frozen=True)
class ApartBucket:
    """Pairs whose measured ratio (slower / faster) lies in [lo, hi), and how many a model orders as measured."""

    lo: float
    hi: float | None  # None: no upper edge
    pairs: int
    correct: float  # predicted ties count half

    @property
    def accuracy(self) -> float:
        return _ratio(self.correct, self.pairs)

    @property
    def label(self) -> str:
        if self.hi is None:
            return f">={self.lo:g}x" if self.lo > 1.0 else "all"  # "all": no edges, one bucket
        return f"<{self.hi:g}x" if self.lo <= 1.0 else f"{self.lo:g}-{self.hi:g}x"

    @property
    def metric(self) -> str:
        """The label in characters MLflow accepts in a metric name: pairwise_below_1.1x, pairwise_1.1-1.3x, ..."""
        return "pairwise_" + self.label.replace(">=", "from_").replace("<", "below_")


def pairwise_by_apart(groups: Iterable[Group], edges: tuple[float, ...] = APART_EDGES) -> tuple[ApartBucket, ...]:
    """Pairwise accuracy split by how far apart each pair was measured (<1.1x, 1.1-1.3x, 1.3-2x, >=2x by default).
    Why: one figure over all pairs mixes near-ties, which two measurements often order differently, with pairs 2x
    apart, which a useful model must never swap; this shows where a model's misses lie. Equal runtimes are left out."""
    bounds = (1.0,) + tuple(edges) + (math.inf,)
    correct = np.zeros(len(bounds) - 1)
    counted = np.zeros(len(bounds) - 1, dtype=np.int64)
    for lo, hi, score in _measured_pairs(groups):
        keep = hi > lo
        lo, hi = lo[keep], hi[keep]
        bucket = np.zeros(hi.size, dtype=np.int64)
        for e in edges:  # pairwise_accuracy_apart's own test, one edge at a time
            bucket += hi >= e * lo
        counted += np.bincount(bucket, minlength=counted.size)
        correct += np.bincount(bucket, weights=score[keep], minlength=counted.size)
    return tuple(ApartBucket(bounds[k], None if math.isinf(bounds[k + 1]) else bounds[k + 1], int(counted[k]),
                             float(correct[k])) for k in range(counted.size))


def by_apart_side_by_side(mine: tuple[ApartBucket, ...], theirs: tuple[ApartBucket, ...]) -> str:
    """'<1.1x 0.57 / 0.53 of 7249; ...; >=2x 0.86 / 0.75 of 1421': two models on the same pairs."""
    return "; ".join(f"{a.label} {a.accuracy:.2f} / {b.accuracy:.2f} of {a.pairs}"
                     for a, b in zip(mine, theirs) if a.pairs)


def topk_scores(groups: Iterable[Group], ks: Iterable[int] = range(1, 33)) -> dict[int, float]:
    """{k: mean top-k score over pipelines}: the top-k score curve (TenSet / TVM)."""
    gs = clean_groups(groups)
    out: dict[int, float] = {}
    for k in ks:
        if k < 1:
            raise ValueError(f"top-k needs k >= 1, got {k}")
        out[int(k)] = float(np.mean([_top_k_score(p, t, int(k)) for p, t in gs]))
    return out


def random_topk_scores(groups: Iterable[Group], ks: Iterable[int] = range(1, 33)) -> dict[int, float]:
    """{k: expected top-k score of a uniformly random order}, averaged over pipelines as topk_scores: the
    reference a model's curve has to beat. Exact, no sampling: with a group's runtimes sorted t_1 <= ... <= t_n,
    the fastest of k schedules drawn without replacement is t_i with probability C(n-i, k-1) / C(n, k)."""
    gs = clean_groups(groups)
    out: dict[int, float] = {}
    for k in ks:
        if k < 1:
            raise ValueError(f"top-k needs k >= 1, got {k}")
        out[int(k)] = float(np.mean([_random_top_k_score(t, int(k)) for _, t in gs]))
    return out


def _random_top_k_score(true: np.ndarray, k: int) -> float:
    t = np.sort(true)
    n = t.size
    if k >= n:
        return 1.0
    i = np.arange(1, n + 1)
    # C(n-i, k-1) / C(n, k) through log-gamma: no overflowing binomials for large groups
    log_c = _log_comb(n - i, k - 1) - _log_comb(np.array(n), k)
    return float(np.sum(t[0] / t * np.exp(log_c)))


def _log_comb(n: np.ndarray, k: int) -> np.ndarray:
    """log C(n, k), -inf where n < k."""
    from math import lgamma

    n = np.atleast_1d(n)
    out = np.full(n.shape, -np.inf)
    ok = n >= k
    out[ok] = [lgamma(m + 1) - lgamma(k + 1) - lgamma(m - k + 1) for m in n[ok]]
    return out


def largest_group(groups: Iterable[Group]) -> int:
    """Schedules in the largest pipeline: top-k for k beyond it is 1.0 for every order, so curves stop there."""
    return max(t.size for _, t in clean_groups(groups))
