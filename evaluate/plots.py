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
    from train.run import _quiet

    _quiet()  # again: importing mlflow sets its loggers to INFO
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
