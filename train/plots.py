"""Figures for a training run, logged as MLflow images under plots/.

Figures are built with matplotlib's object API (`matplotlib.figure.Figure`, rendered by Agg when saved), never
through pyplot, so no GUI backend is touched and no global figure list grows in long jobs.
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib.figure import Figure

PLOT_DIR = "plots"


def predicted_vs_measured(pred: np.ndarray, measured: np.ndarray, title: str,
                          groups: np.ndarray | None = None) -> Figure:
    """Log-log scatter of predicted vs measured runtime with the y = x line; the title gives R^2 of log runtime.

    groups (e.g. pipeline ids, one per sample): divide each sample by its group's best measured runtime (and
    predictions by the group's best prediction), so pipelines of very different sizes share one scale and the
    plot shows what search needs: the ranking within a pipeline. Non-positive or non-finite pairs cannot be
    drawn on log axes; they are dropped and counted in the title."""
    pred, measured = np.asarray(pred, np.float64).ravel(), np.asarray(measured, np.float64).ravel()
    if pred.shape != measured.shape:
        raise ValueError(f"pred has {pred.size} values, measured {measured.size}")
    ok = np.isfinite(pred) & np.isfinite(measured) & (pred > 0) & (measured > 0)
    if groups is not None:
        pred, measured = _normalize(pred, measured, np.asarray(groups).ravel(), ok)
    x, y = measured[ok], pred[ok]
    fig = Figure(figsize=(5.5, 5), layout="constrained")
    ax = fig.add_subplot()
    ax.scatter(x, y, s=8, alpha=0.5, linewidths=0)
    if x.size:
        lo, hi = min(x.min(), y.min()), max(x.max(), y.max())
        ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="y = x")
        ax.legend(loc="upper left")
    ax.set_xscale("log")
    ax.set_yscale("log")
    unit = "relative to pipeline best" if groups is not None else "runtime"
    ax.set_xlabel(f"measured ({unit})")
    ax.set_ylabel(f"predicted ({unit})")
    dropped = f", {int((~ok).sum())} dropped" if (~ok).any() else ""
    ax.set_title(f"{title}\nR² (log) = {r2_log(y, x):.3f}, n = {x.size}{dropped}")
    return fig


def r2_log(pred: np.ndarray, measured: np.ndarray) -> float:
    """Coefficient of determination of log(pred) against log(measured) (nan with fewer than 2 points)."""
    lp, lm = np.log(pred), np.log(measured)
    if lm.size < 2:
        return float("nan")
    ss_tot = float(((lm - lm.mean()) ** 2).sum())
    ss_res = float(((lm - lp) ** 2).sum())
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


def _normalize(pred, measured, groups, ok):
    if groups.shape != pred.shape:
        raise ValueError(f"groups has {groups.size} values, pred {pred.size}")
    pred, measured = pred.copy(), measured.copy()
    for g in np.unique(groups[ok]):
        m = ok & (groups == g)
        pred[m] /= pred[m].min()
        measured[m] /= measured[m].min()
    return pred, measured


def topk_curve(scores: dict[int, float], title: str) -> Figure:
    """Top-k score (best measured runtime over the best among the model's top k; 1 is perfect) against k."""
    ks = sorted(scores)
    fig = Figure(figsize=(5.5, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(ks, [scores[k] for k in ks], marker="o")
    for k in ks:
        ax.annotate(f"{scores[k]:.3f}", (k, scores[k]), textcoords="offset points", xytext=(0, 6), ha="center",
                    fontsize=8)
    ax.set_xlabel("k (schedules benchmarked from the model's top k)")
    ax.set_ylabel("top-k score")
    ax.set_ylim(0, 1.08)
    if ks:
        ax.set_xticks(ks)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    return fig


def log_figures(run_id: str, figures: dict[str, Figure], tracking: str | None = None) -> list[str]:
    """Log each figure as plots/<name>.png in run `run_id` (no active run needed), then close it.
    Returns the artifact paths."""
    from .registry import _client, tracking_uri

    client = _client(tracking_uri(tracking))
    paths = []
    try:
        for name, fig in figures.items():
            path = f"{PLOT_DIR}/{name if name.endswith(('.png', '.svg', '.pdf')) else name + '.png'}"
            client.log_figure(run_id, fig, path)
            paths.append(path)
    finally:
        for fig in figures.values():
            _close(fig)
    return paths


def _close(fig: Figure) -> None:
    """Release a figure: pyplot keeps its own figures alive until closed; plain Figures just need dropping."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close(fig)
