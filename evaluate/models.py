"""`evaluate_model(cfg)`: how well one cost model ranks the schedules of pipelines it was not trained on.

The pipelines are those training held out (split=val: train.data.is_validation with training's
val_fraction, after the same filters) or every pipeline of a dataset generated apart from the training data
(split=all). Metrics and figures are training's own (train.metrics, train.plots), so an evaluation run and
a training run of the same model on the same pipelines agree, and both can be compared in the MLflow UI.
MLflow gets the metrics as `eval/<name>` (the champion on split=val gives its training run's `best/<name>`),
the top-k curve as `eval/topk_score` at steps k, and the counts of pipelines and schedules as params.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ir.errors import SchedlabError
from ir.units import format_seconds
from train.metrics import RankingMetrics

from .config import EvalConfig, EvaluateError


@dataclass
class EvalResult:
    run_id: str
    experiment_id: str
    tracking_uri: str
    model: str  # the model evaluated, as resolved (champion -> models:/schedlab-<target>@champion)
    split: str
    metrics: RankingMetrics
    topk: dict[int, float]  # k -> mean top-k score
    pipeline_ids: tuple[str, ...]  # the pipelines scored, sorted
    fingerprint: str  # of the whole dataset, as training logs it
    seconds: float
    split_note: str = ""  # how split=val was chosen (from the model's own training run)
    model_version: str = ""  # the registered version `model` resolved to: models:/schedlab-<target>/<n> ('' if none)
    decisions: tuple = ()  # train.decisions.DecisionAccuracy per one-decision contrast kind in the scored pipelines

    def summary(self) -> str:
        m = self.metrics
        which = "held-out" if self.split == "val" else "all"
        return "\n".join([
            (f"evaluated {self.model} on {which} {m.pipelines} pipelines ({m.samples} schedules) of dataset "
             f"{self.fingerprint} in {format_seconds(self.seconds)}"),
            (f"pairwise accuracy {m.pairwise_accuracy:.3f}, top-1 score {m.top1_score:.3f}, top-5 "
             f"{m.top5_score:.3f}, Kendall tau {m.kendall_tau:.3f}, ordering@1.3x {m.ordering_rate_1_3:.3f}, "
             f"R2(log) {m.r2_log_runtime:.3f}"),
            *([("one decision, contrast vs its beam sample ordered as measured: "
                + "; ".join(d.describe() for d in self.decisions))] if self.decisions else []),
            *([f"{self.model} resolved to {self.model_version}"] if self._resolved else []),
            *([self.split_note] if self.split_note else []),
            f"MLflow run {self.run_id} (experiment {self.experiment_id}) in {self.tracking_uri}",
            f"open: mlflow ui --backend-store-uri {self.tracking_uri}",
        ])


    @property
    def _resolved(self) -> bool:
        return bool(self.model_version) and self.model_version != self.model


class _Totals:
    """A scheduler.cost.CostModel as train.run.predict_groups calls a network: predict(...) -> totals [B]."""

    def __init__(self, model):
        self.model = model

    def predict(self, pipeline_features, schedule_features):
        return self.model.predict(pipeline_features, schedule_features).total


def load_network(uri: str, target: str, tracking: str | None):
    """(the cost model behind `uri` as predict_groups scores with it, its resolved name): any of
    scheduler.cost.load_model's sources — a learned model, random:<seed>, analytical (which scores the
    stored features with its fixed coefficients) or a registered toy."""
    from ir.target import get_target
    from scheduler.cost import AnalyticalModel, load_model
    from scheduler.cost.registry import ChampionFallbackWarning
    from train.registry import model_name, tracking_uri

    with warnings.catch_warnings():  # the fallback below is an error here, not a warning
        warnings.simplefilter("ignore", ChampionFallbackWarning)
        loaded = load_model(uri, get_target(target), tracking)
    if uri == "champion" and (isinstance(loaded, AnalyticalModel) or loaded.name.startswith("builtin")):
        # the scheduler's fallbacks: not a champion
        raise EvaluateError(f"model=champion: no models:/{model_name(target)}@champion in {tracking_uri(tracking)}; "
                            "no model has beaten the baselines yet (python -m train promote=true); give "
                            f"model=models:/{model_name(target)}/latest or another URI")
    return _Totals(loaded), loaded.name


def load_split(cfg: EvalConfig):
    """(batches of the pipelines to score, the dataset's DataStats). Loaded with val_fraction 0 (every pipeline
    after training's filters), then held out by the predicate training splits with."""
    from featurize.dataset import dataset_roots
    from train.data import DataConfig, TrainingData, is_validation

    missing = [str(r) for r in dataset_roots(cfg.data) if not r.is_dir()]  # one root, or several as training reads
    if missing:
        raise EvaluateError(f"data={cfg.data}: no such directory {', '.join(missing)}; give the dataset root, or "
                            "several comma-separated (python -m generator.datagen seeds=0:64 out=DIR writes one)")
    data = TrainingData.load(DataConfig(path=cfg.data, target=cfg.target, min_schedules=cfg.min_schedules,
                                        val_fraction=0.0, max_spread=cfg.max_spread))
    batches = data.train
    if cfg.split == "val":
        batches = [b for b in batches if is_validation(b.pipeline_id, cfg.val_fraction)]
        if not batches:
            raise EvaluateError(
                f"{cfg.data}: none of its {data.stats.train_pipelines} pipelines is held out at val_fraction="
                f"{cfg.val_fraction:g}; give the val_fraction the model was trained with, or split=all for a "
                "dataset generated apart from the training data")
    return batches, data.stats


def evaluate_model(cfg: EvalConfig) -> EvalResult:
    """Score, log and summarize one model as `cfg` says; raises SchedlabError subclasses for bad input."""
    from ir.progress import Progress
    from ir.target import get_target
    from train import lineage, plots
    from train.metrics import largest_group, ranking_metrics, topk_scores
    from train.decisions import decision_accuracy, samplers_of, scored_pipelines
    from train.registry import tracking_uri
    from train.run import groups_of

    from .plots import tracked_run

    t0 = time.time()
    cfg, split_note = model_split(cfg)
    batches, stats = load_split(cfg)
    network, name = load_network(cfg.model, cfg.target, cfg.tracking_uri)
    shown = Progress(len(batches), "batch", cfg.progress, desc="scoring", min_interval=10.0, leave=False)
    scored = list(scored_pipelines(network, shown.iterate(batches)))
    groups = groups_of(scored)
    decisions = decision_accuracy(scored, samplers_of(cfg.data, cfg.target, groups))
    metrics = ranking_metrics(groups.values())
    # k beyond the largest pipeline's schedules scores 1 for any model: the curve stops there
    topk = topk_scores(groups.values(), range(1, min(cfg.max_k, largest_group(groups.values())) + 1))
    version = lineage.resolve_version(name, tracking_uri(cfg.tracking_uri))
    extra = {"model_uri": name, "model_version": version.uri if version else name,
             "data_fingerprint": stats.fingerprint, "data_pipelines": stats.train_pipelines, "data_samples": stats.train_samples,
             "eval_pipelines": metrics.pipelines, "eval_samples": metrics.samples}
    which = "the pipelines it held out in training" if cfg.split == "val" else "every pipeline"
    about = (f"Evaluates {version.link() if version else name}" + (f" (as {name})" if version else "") +
             f" on {which} of dataset {stats.fingerprint} ({metrics.pipelines} pipelines, {metrics.samples} "
             f"schedules, {cfg.data}): ranking metrics and top-k scores.")
    dataset = lineage.DatasetRef(cfg.data, stats.fingerprint, get_target(cfg.target).name, stats.train_samples,
                                 stats.train_pipelines)
    run_name = cfg.run_name or f"eval-{version.label if version else lineage.slug(name)}-{cfg.split}"
    with tracked_run(cfg.tracking_uri, cfg.experiment, run_name, cfg, extra, description=about, dataset=dataset,
                     version=version) as run:
        run.log_metrics(metrics.scores(f"{PREFIX}/"))
        for d in decisions:
            run.log_metrics({f"{PREFIX}/decision_{d.decision}_accuracy": d.accuracy,
                             f"{PREFIX}/decision_{d.decision}_pairs": d.pairs})
        for k, score in topk.items():
            run.log_metrics({f"{PREFIX}/topk_score": score}, step=k)
        plots.log_figures(run.run_id, _figures(groups, f"{name} on {cfg.split}", topk), tracking=run.tracking_uri)
    return EvalResult(run.run_id, run.experiment_id, run.tracking_uri, name, cfg.split, metrics, topk,
                      tuple(sorted(groups)), stats.fingerprint, time.time() - t0, split_note,
                      version.uri if version else "", decisions)


def model_split(cfg: EvalConfig) -> tuple[EvalConfig, str]:
    """split=val scores the pipelines the model itself was validated on: a registered model's recorded
    val_fraction and min_schedules replace the config's (a note says so when they differ), so an evaluation never
    scores a model on its own training pipelines."""
    from dataclasses import replace

    from train.registry import model_name, recorded_split

    if cfg.split != "val":
        return cfg, ""
    uri = f"models:/{model_name(cfg.target)}@champion" if cfg.model == "champion" else cfg.model
    data_note = ""
    if uri.partition(":")[0] == "builtin":  # the built-in model's lineage records its split and its data
        from ir.target import get_target
        from train.builtin import builtin_dir, dataset_of, find_builtin, read_builtin

        path = builtin_dir() / uri.partition(":")[2] if ":" in uri else None
        found = find_builtin(get_target(cfg.target).name) if path is None else (
            read_builtin(path) if path.is_dir() else None)
        if found is None:
            return cfg, ""  # load_network names what is built in
        uri = str(found.path)
        shipped = dataset_of(found)
        if cfg.data == EvalConfig.data and not Path(cfg.data).is_dir() and shipped is not None:
            cfg = replace(cfg, data=str(shipped))
            data_note = f"; data={shipped} (the dataset the built-in model was trained on, shipped with it)"
    try:
        recorded = recorded_split(uri, cfg.tracking_uri)
    except SchedlabError:
        recorded = None  # load_network reports an unknown model with its own one-line error
    if recorded is None:
        return cfg, ""
    r = recorded
    note = (f"held out as in the model's training: val_fraction={r.val_fraction:g}, min_schedules={r.min_schedules}, "
            f"max_spread={r.max_spread}")
    if (r.val_fraction, r.min_schedules, r.max_spread) != (cfg.val_fraction, cfg.min_schedules, cfg.max_spread):
        note += f" (the config said {cfg.val_fraction:g}, {cfg.min_schedules}, {cfg.max_spread})"
    note += data_note
    return replace(cfg, val_fraction=r.val_fraction, min_schedules=r.min_schedules, max_spread=r.max_spread), note


PREFIX = "eval"  # the MLflow prefix of an evaluation's metrics


def _figures(groups: dict[str, tuple[np.ndarray, np.ndarray]], title: str, topk: dict[int, float]) -> dict:
    """Predicted vs measured, raw (what r2_log_runtime measures) and relative to each pipeline's best (what
    search needs: the order within a pipeline), one colour per pipeline, and the top-k curve against a random
    order's."""
    from train import plots
    from train.metrics import random_topk_scores

    ids = np.concatenate([np.full(len(t), pid, dtype=object) for pid, (_, t) in groups.items()])
    pred = np.concatenate([p for p, _ in groups.values()])
    measured = np.concatenate([t for _, t in groups.values()])
    return {
        "predicted_vs_measured": plots.predicted_vs_measured(pred, measured, title, pipelines=ids),
        "predicted_vs_measured_relative": plots.predicted_vs_measured(pred, measured, title, pipelines=ids,
                                                                      relative=True),
        "topk_score": plots.topk_curve(topk, f"{title}: top-k score",
                                       random=random_topk_scores(groups.values(), topk)),
    }
