"""Figures for a training run, logged as MLflow images under plots/.

Figures are built with matplotlib's object API (`matplotlib.figure.Figure`, rendered by Agg when saved), never
through pyplot, so no GUI backend is touched and no global figure list grows in long jobs.
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib.figure import Figure

PLOT_DIR = "plots"


LEGEND_MAX = 10  # pipelines named in a legend; more would hide the points
_TITLE_CHARS = 60  # characters per title line at the figures' 5.5 in width


def predicted_vs_measured(pred: np.ndarray, measured: np.ndarray, title: str,
                          pipelines: np.ndarray | None = None, relative: bool = False) -> Figure:
    """Log-log scatter of predicted vs measured runtime with the y = x line; the title gives R^2 of log runtime.

    pipelines (one id per sample): one colour per pipeline (a qualitative colormap; a legend when there are at
    most LEGEND_MAX), so a reader sees whether errors are one pipeline's offset or spread within pipelines.
    relative=True (needs pipelines): divide each sample by its pipeline's best measured runtime (and predictions
    by the pipeline's best prediction), so pipelines of very different sizes share one scale and the plot shows
    what search needs: the ranking within a pipeline. Otherwise runtimes are in ms or µs, chosen by magnitude.
    Non-positive or non-finite pairs cannot be drawn on log axes; they are dropped and counted in the title."""
    pred, measured = np.asarray(pred, np.float64).ravel(), np.asarray(measured, np.float64).ravel()
    if pred.shape != measured.shape:
        raise ValueError(f"pred has {pred.size} values, measured {measured.size}")
    if relative and pipelines is None:
        raise ValueError("relative=True needs the pipeline of each sample")
    ids = np.zeros(pred.size, dtype=object) if pipelines is None else np.asarray(pipelines, dtype=object).ravel()
    if ids.shape != pred.shape:
        raise ValueError(f"pipelines has {ids.size} values, pred {pred.size}")
    ok = np.isfinite(pred) & np.isfinite(measured) & (pred > 0) & (measured > 0)
    if relative:
        pred, measured = _normalize(pred, measured, ids, ok)
        label, scale = "/ its pipeline's fastest (×)", 1.0
    else:
        scale, unit = runtime_unit(measured[ok])
        label = f"runtime ({unit})"
    x, y, ids = measured[ok] * scale, pred[ok] * scale, ids[ok]
    fig = Figure(figsize=(5.5, 5), layout="constrained")
    ax = fig.add_subplot()
    names = list(dict.fromkeys(ids))
    colors = pipeline_colors(len(names)) if pipelines is not None else ["C0"]
    for name, color in zip(names, colors):
        m = ids == name
        ax.scatter(x[m], y[m], s=10, alpha=0.7, linewidths=0, color=color, label=_short(name))
    handles = ax.get_legend_handles_labels()[0] if pipelines is not None and len(names) <= LEGEND_MAX else []
    if x.size:
        lo, hi = min(x.min(), y.min()), max(x.max(), y.max())
        handles.append(ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="y = x")[0])
        ax.legend(handles=handles, loc="upper left", fontsize=7, title="pipeline" if len(handles) > 1 else None,
                  title_fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"measured {label}")
    ax.set_ylabel(f"predicted {label}")
    ax.grid(alpha=0.3, which="major")
    dropped = f", {int((~ok).sum())} dropped" if (~ok).any() else ""
    several = f", {len(names)} pipelines" if pipelines is not None else ""
    ax.set_title(wrap(f"{title}\nR² (log) = {r2_log(y, x):.3f}, n = {x.size}{several}{dropped}"), fontsize=10)
    return fig


def runtime_unit(seconds: np.ndarray) -> tuple[float, str]:
    """(factor, unit) that writes runtimes in seconds with a readable magnitude: µs below 1 ms, ms below 1 s."""
    typical = float(np.median(seconds)) if np.size(seconds) else 1e-3
    if typical < 1e-3:
        return 1e6, "µs"
    return (1e3, "ms") if typical < 1 else (1.0, "s")


def pipeline_colors(n: int) -> list:
    """n colours of a qualitative colormap (tab10, tab20 beyond 10), repeating beyond 20."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _short(name) -> str:
    text = str(name)
    return text if len(text) <= 14 else text[:12] + "…"


def wrap(title: str, width: int = _TITLE_CHARS) -> str:
    """A title broken into lines that fit the figure: matplotlib clips a long line instead of wrapping it."""
    import textwrap

    return "\n".join(line for part in title.split("\n") for line in textwrap.wrap(part, width) or [""])


def r2_log(pred: np.ndarray, measured: np.ndarray) -> float:
    """Coefficient of determination of log(pred) against log(measured) (nan with fewer than 2 points)."""
    lp, lm = np.log(pred), np.log(measured)
    if lm.size < 2:
        return float("nan")
    ss_tot = float(((lm - lm.mean()) ** 2).sum())
    ss_res = float(((lm - lp) ** 2).sum())
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


def _normalize(pred, measured, groups, ok):
    pred, measured = pred.copy(), measured.copy()
    for g in dict.fromkeys(groups[ok]):
        m = ok & (groups == g)
        pred[m] /= pred[m].min()
        measured[m] /= measured[m].min()
    return pred, measured


def topk_curve(scores: dict[int, float], title: str, random: dict[int, float] | None = None) -> Figure:
    """Top-k score (best measured runtime over the best among the model's top k; 1 is perfect) against k, with
    the expected score of a random order (train.metrics.random_topk_scores) as the reference to beat. The
    legend gives the top-1 and top-5 values; ticks are the curve's ks (integers, at most about 16 of them)."""
    from matplotlib.ticker import MaxNLocator

    ks = sorted(scores)
    fig = Figure(figsize=(5.5, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(ks, [scores[k] for k in ks], marker="o", markersize=4, label=f"model ({_headline(scores)})")
    if random:
        rk = sorted(random)
        ax.plot(rk, [random[k] for k in rk], color="grey", linestyle="--", marker=".",
                label=f"random order ({_headline(random)})")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("k (schedules benchmarked: the model's k fastest)")
    ax.set_ylabel("top-k score (fastest / fastest in top k)")
    ax.set_ylim(0, 1.05)
    if ks:
        ax.set_xlim(min(ks) - 0.5, max(ks) + 0.5)
    if len(ks) <= 16:  # every k fits, 1 included
        ax.set_xticks(ks)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=12, integer=True))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(wrap(title), fontsize=10)
    return fig


def _headline(scores: dict[int, float]) -> str:
    return ", ".join(f"top-{k} {scores[k]:.3f}" for k in (1, 5) if k in scores)


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
