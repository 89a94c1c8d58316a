"""The MLflow run an evaluate command logs into, and the speedup bar charts of evaluate.apps.

Figures are matplotlib `Figure` objects rendered by Agg (never pyplot), logged with train.plots.log_figures,
as training's are.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ir.config import flat_items


@dataclass(frozen=True)
class TrackedRun:
    """One MLflow run, written through the client (no fluent-API global state is touched)."""

    client: object  # mlflow.MlflowClient
    run_id: str
    experiment_id: str
    tracking_uri: str
    model_id: str | None = None  # the evaluated version's LoggedModel: its page lists these metrics too
    dataset: tuple[str, str] | None = None  # (name, digest) of the dataset input the metrics were computed on

    def log_metrics(self, values: dict[str, float], step: int = 0) -> None:
        """Finite values only: MLflow stores NaN, but the UI cannot compare or chart it."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        name, digest = self.dataset or (None, None)
        metrics = [Metric(k, float(v), now, step, model_id=self.model_id, dataset_name=name, dataset_digest=digest)
                   for k, v in values.items() if np.isfinite(v)]
        if metrics:
            self.client.log_batch(self.run_id, metrics=metrics)


@contextlib.contextmanager
def tracked_run(tracking: str | None, experiment: str, run_name: str, cfg, extra: dict[str, object] | None = None,
                *, description: str = "", dataset=None, version=None) -> Iterator[TrackedRun]:
    """A new run `run_name` in `experiment` (created next to the store as training's are) with `cfg`'s keys and
    `extra` as params, `description` (Markdown), the train.lineage.DatasetRef it read as an evaluation input and
    the train.lineage.ResolvedVersion it evaluated (tags, a LoggedModel input, metrics logged against it);
    FINISHED when the block ends, FAILED when it raises."""
    from mlflow import MlflowClient
    from mlflow.entities import Param

    from train import lineage
    from train.registry import ensure_experiment, writable_store

    uri = writable_store(tracking)
    experiment_id = ensure_experiment(experiment, uri)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    tags = lineage.new_run_tags(description)
    if version is not None:
        tags.update(model_version=version.uri, registered_model=version.name)
    run = client.create_run(experiment_id, run_name=run_name, tags=tags)
    tracked = TrackedRun(client, run.info.run_id, experiment_id, uri, getattr(version, "model_id", None),
                         (dataset.fingerprint, dataset.fingerprint) if dataset is not None else None)
    params = {**flat_items(cfg), **(extra or {})}
    try:
        if dataset is not None:
            lineage.log_dataset(client, tracked.run_id, dataset, "evaluation")
        if version is not None:
            lineage.link_model(client, tracked.run_id, version)
            client.set_model_version_tag(version.name, version.version, f"last_run.{experiment}",
                                         f"{run_name} ({tracked.run_id})")  # on the version's page
        client.log_batch(tracked.run_id, params=[Param(k, _param(v)) for k, v in params.items()])
        yield tracked
    except BaseException:
        client.set_terminated(tracked.run_id, "FAILED")
        raise
    client.set_terminated(tracked.run_id, "FINISHED")


def _param(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


def speedup_bars(apps: list[str], methods: list[str], speedups: np.ndarray, geomeans: list[float],
                 title: str, ylabel: str = "speedup (× over naive)", reference: np.ndarray | None = None,
                 reference_label: str = "expert") -> Figure:
    """Grouped bars of speedup over a naive schedule, one group per app and a last group of geometric means;
    `speedups` is [apps, methods] with NaN where a method failed or does not apply (no bar). Log scale, so
    2x faster and 2x slower are the same height above and below the naive 1× line; ticks at powers of 2 are
    labelled on both sides of it. `reference` (per app, then its geomean; e.g. the expert schedule's speedups)
    is a black line across each group, the level the bars are read against."""
    values = np.vstack([np.asarray(speedups, np.float64).reshape(len(apps), len(methods)),
                        np.asarray(geomeans, np.float64).reshape(1, len(methods))])
    groups = [*apps, "geomean"]
    width = 0.8 / max(1, len(methods))
    fig = Figure(figsize=(min(30.0, 5.0 + 0.22 * len(groups) * max(2, len(methods))), 4.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(groups))
    colors = method_colors(len(methods))
    for j, method in enumerate(methods):
        ok = np.isfinite(values[:, j]) & (values[:, j] > 0)
        # from the 1x line up or down: a slowdown is a bar below the line, not a short bar from the axis
        ax.bar(x[ok] + (j - (len(methods) - 1) / 2) * width, values[ok, j] - 1.0, width, bottom=1.0, label=method,
               color=colors[j])
    ax.axhline(1.0, color="black", linewidth=1, label="naive (1×)")
    shown = [values[np.isfinite(values) & (values > 0)]]
    if reference is not None:
        ref = np.asarray(reference, np.float64).ravel()
        ok = np.isfinite(ref) & (ref > 0)
        if ok.any():
            ax.hlines(ref[ok], x[ok] - 0.45, x[ok] + 0.45, colors="black", linestyles="--", linewidth=1.5,
                      label=reference_label)
            shown.append(ref[ok])
    ax.axvline(len(apps) - 0.5, color="grey", linewidth=0.8, linestyle=":")
    speedup_axis(ax, np.concatenate(shown))
    ax.set_xticks(x, groups, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    from train.plots import wrap

    chars = int(fig.get_figwidth() * 10)  # about 10 characters per inch at the title's size
    ax.set_title(wrap(f"{title}\nno bar: failed or not applicable (see apps.csv)", chars), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3, which="major")
    return fig


def method_colors(n: int) -> list:
    """n distinct colours: matplotlib's default cycle up to 10 methods, tab20 beyond (the default cycle repeats
    after 10, and a comparison of every strategy has more)."""
    from matplotlib import colormaps

    if n <= 10:
        return [f"C{j}" for j in range(n)]
    cmap = colormaps["tab20"]
    return [cmap(j % 20) for j in range(n)]


def geomean_bars(geomeans: list, reference: np.ndarray | None, title: str) -> Figure:
    """One bar per method: its geometric-mean speedup over naive, fastest first, labelled with the value and
    the number of apps it is the mean over (methods that failed on some apps are averaged over fewer);
    `reference` (per app then its geomean, e.g. the expert schedule's) is a dashed line at its geomean."""
    shown = sorted((g for g in geomeans if math.isfinite(g.speedup) and g.speedup > 0), key=lambda g: -g.speedup)
    fig = Figure(figsize=(max(6.0, 1.0 + 0.55 * len(shown)), 4.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(shown))
    values = np.array([g.speedup for g in shown], np.float64)
    ax.bar(x, values - 1.0, 0.7, bottom=1.0, color=method_colors(len(shown)))
    for xi, g in zip(x, shown):
        ax.annotate(f"{speedup_label(g.speedup)}\n{g.apps} apps", (xi, g.speedup), ha="center",
                    va="bottom" if g.speedup >= 1 else "top", fontsize=7, xytext=(0, 2 if g.speedup >= 1 else -2),
                    textcoords="offset points")
    ax.axhline(1.0, color="black", linewidth=1, label="naive (1×)")
    levels = [values]
    if reference is not None and np.isfinite(reference[-1]) and reference[-1] > 0:
        ax.axhline(reference[-1], color="black", linestyle="--", linewidth=1.5,
                   label=f"expert ({speedup_label(float(reference[-1]))})")
        levels.append(np.array([reference[-1]]))
    speedup_axis(ax, np.concatenate([*levels, values * 1.3]))  # room for the labels above the bars
    ax.set_xticks(x, [g.method for g in shown], rotation=30, ha="right")
    ax.set_ylabel("geometric-mean speedup (× over naive)")
    from train.plots import wrap

    ax.set_title(wrap(f"{title}\ngeometric mean over the apps where each method ran", int(fig.get_figwidth() * 10)),
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(axis="y", alpha=0.3, which="major")
    return fig


def speedup_axis(ax, values: np.ndarray) -> None:
    """A log y axis of speedups: limits covering `values` and 1×, major ticks at powers of 2 labelled 0.5×, 1×,
    2×, 4×, ... above and below 1× (fewer, still powers of 2, on a wide range; 0.75×, 1.25×, 1.5× added on a
    narrow one), minor ticks unlabelled."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    lo = min(1.0, float(v.min()) if v.size else 1.0)
    hi = max(1.0, float(v.max()) if v.size else 1.0)
    lo_e, hi_e = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    if hi_e - lo_e < 2:  # at least 0.5x .. 2x, so a tick sits above and below the line
        lo_e, hi_e = min(lo_e, -1), max(hi_e, 1)
    step = max(1, math.ceil((hi_e - lo_e) / 10))  # at most about 10 labels
    ticks = [2.0 ** e for e in range(lo_e - lo_e % step, hi_e + step, step)]
    if hi_e - lo_e <= 2:  # a narrow range (0.5x .. 2x): labels between the powers too
        ticks = sorted({*ticks, 0.75, 1.25, 1.5})
    ax.set_yscale("log")
    ax.set_ylim(2.0 ** lo_e / 1.15, 2.0 ** hi_e * 1.15)
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: speedup_label(y)))
    ax.yaxis.set_minor_formatter(NullFormatter())


def speedup_label(x: float) -> str:
    """1×, 2×, 1024×, 0.5×, 0.125×, then 1/16×, 1/64×: powers of 2 written exactly and short; anything else
    to 3 significant digits."""
    if x >= 0.125 or not math.log2(x).is_integer():
        return f"{x:g}×" if x >= 1 or math.log2(x).is_integer() else f"{x:.3g}×"
    return f"1/{round(1 / x)}×"
