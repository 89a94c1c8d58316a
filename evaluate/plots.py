"""The MLflow run an evaluate command logs into, and the speedup bar charts of evaluate.apps.

Figures are matplotlib `Figure` objects rendered by Agg (never pyplot), logged with train.plots.log_figures,
as training's are.
"""

from __future__ import annotations

import contextlib
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

    def log_metrics(self, values: dict[str, float], step: int = 0) -> None:
        """Finite values only: MLflow stores NaN, but the UI cannot compare or chart it."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(k, float(v), now, step) for k, v in values.items() if np.isfinite(v)]
        if metrics:
            self.client.log_batch(self.run_id, metrics=metrics)


@contextlib.contextmanager
def tracked_run(tracking: str | None, experiment: str, run_name: str | None, cfg,
                extra: dict[str, object] | None = None) -> Iterator[TrackedRun]:
    """A new run in `experiment` (created next to the store as training's are) with `cfg`'s keys and `extra`
    as params; FINISHED when the block ends, FAILED when it raises."""
    from mlflow import MlflowClient
    from mlflow.entities import Param

    from train.registry import ensure_experiment, tracking_uri

    uri = tracking_uri(tracking)
    client = MlflowClient(tracking_uri=uri)
    experiment_id = ensure_experiment(experiment, uri)
    run = client.create_run(experiment_id, run_name=run_name)
    tracked = TrackedRun(client, run.info.run_id, experiment_id, uri)
    params = {**flat_items(cfg), **(extra or {})}
    try:
        client.log_batch(tracked.run_id, params=[Param(k, _param(v)) for k, v in params.items()])
        yield tracked
    except BaseException:
        client.set_terminated(tracked.run_id, "FAILED")
        raise
    client.set_terminated(tracked.run_id, "FINISHED")


def _param(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)


def speedup_bars(apps: list[str], methods: list[str], speedups: np.ndarray, geomeans: list[float],
                 title: str, ylabel: str = "speedup over naive (log)") -> Figure:
    """Grouped bars of speedup over a naive schedule, one group per app and a last group of geometric means;
    `speedups` is [apps, methods] with NaN where a method failed or does not apply (no bar). Log scale, so
    2x faster and 2x slower are the same height above and below the 1x line."""
    values = np.vstack([np.asarray(speedups, np.float64).reshape(len(apps), len(methods)),
                        np.asarray(geomeans, np.float64).reshape(1, len(methods))])
    groups = [*apps, "geomean"]
    width = 0.8 / max(1, len(methods))
    fig = Figure(figsize=(min(30.0, 4.5 + 0.22 * len(groups) * max(2, len(methods))), 4.5), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(groups))
    for j, method in enumerate(methods):
        ok = np.isfinite(values[:, j]) & (values[:, j] > 0)
        # from the 1x line up or down: a slowdown is a bar below the line, not a short bar from the axis
        ax.bar(x[ok] + (j - (len(methods) - 1) / 2) * width, values[ok, j] - 1.0, width, bottom=1.0, label=method)
    ax.axhline(1.0, color="black", linewidth=1)
    ax.axvline(len(apps) - 0.5, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    speedup_label = FuncFormatter(lambda v, _: f"{v:g}x")
    ax.yaxis.set_major_formatter(speedup_label)
    ax.yaxis.set_minor_formatter(speedup_label)
    ax.set_xticks(x, groups, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title}\nno bar: failed or not applicable (see apps.csv)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3, which="both")
    return fig
