"""`train(config)`: load the dataset, fit a cost model with Lightning, log to MLflow, register it.

One MLflow run per call: the config and the split's sizes as params; loss and ranking metrics per epoch as
`train/*` and `val/*` with step = the epoch (train.module); the registered weights' validation metrics as the
run's headline metrics `best/*` (with `best/epoch`); `summary.json`, a table of this model against the untrained
network and every baseline on the same validation pipelines (what a single number per run would have been as a
metric); predicted-vs-measured and top-k figures; and the model registered as schedlab-<target>.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from featurize.extractor import get_extractor
from ir.config import flat_items
from ir.target import get_target
from ir.units import format_seconds

from .config import TrainConfig


@dataclass(frozen=True)
class HeldOutFold:
    """A cross-validation fold held out of training and of the epoch's choice, scored after training: per pipeline
    (predicted, measured) runtimes, so evaluate.compare pools the folds into metrics over every pipeline."""

    fold: int
    folds: int
    model: dict[str, tuple[np.ndarray, np.ndarray]]  # the trained model (its registered-equivalent epoch)
    random_weights: dict[str, tuple[np.ndarray, np.ndarray]]  # the same network before training
    analytical: dict[str, tuple[np.ndarray, np.ndarray]]  # the analytical model on the same pipelines


@dataclass
class TrainResult:
    run_id: str
    experiment_id: str
    tracking_uri: str
    init_val: dict[str, float]  # validation metrics of the randomly initialized model
    val: dict[str, float]  # validation metrics of the trained model
    samples: int
    pipelines: int
    train_pipelines: int
    val_pipelines: int
    checkpoint: str
    registered: object | None  # train.registry.RegisteredVersion
    seconds: float
    best_epoch: int = 0  # the epoch whose weights were registered (best by `selected_by`), from 0 as MLflow's steps
    promotion: object | None = None  # train.promotion.PromotionDecision
    decisions: tuple = ()  # train.decisions.DecisionAccuracy of this model per contrast kind, on validation
    analytical_decisions: tuple = ()  # the analytical model's, on the same pairs
    machines: str = ""  # which machines measured the data (train.data.machines_of)
    selected_by: str = "top1"  # TrainConfig.select: the validation metric that picked best_epoch
    test: HeldOutFold | None = None  # with TrainConfig.folds > 1: the held-out fold, scored
    by_apart: tuple = ()  # train.metrics.ApartBucket: validation pairwise by how far apart pairs were measured
    analytical_by_apart: tuple = ()  # the analytical model's, on the same pairs
    at_bound: float | None = None  # residual: share of its validation corrections at the trust region's bound

    def summary(self) -> str:
        v, i = self.val, self.init_val
        lines = [
            (f"trained on {self.samples} schedules of {self.pipelines} pipelines "
             f"({self.train_pipelines} train / {self.val_pipelines} validation) in {format_seconds(self.seconds)}"
             + (f", measured on {self.machines}" if self.machines else "")),
            (f"validation: pairwise accuracy {v['val_pairwise_accuracy']:.3f} "
             f"(untrained {i['val_pairwise_accuracy']:.3f}), "
             f"top-1 score {v['val_top1_score']:.3f} (untrained {i['val_top1_score']:.3f}), "
             f"top-5 {v['val_top5_score']:.3f}, Kendall tau {v['val_kendall_tau']:.3f}, "
             f"ordering@1.3x {v['val_ordering_rate_1_3']:.3f}, R2(log) {v['val_r2_log_runtime']:.3f}"),
            f"MLflow run {self.run_id} (experiment {self.experiment_id}) in {self.tracking_uri}",
            f"checkpoint: {self.checkpoint}; registered weights: epoch {self.best_epoch} (best validation "
             f"{'top-1' if self.selected_by == 'top1' else 'pairwise accuracy'}; "
             "epochs count from 0, as the MLflow steps)",
        ]
        if self.test is not None:
            from .metrics import ranking_metrics

            t = {name: ranking_metrics(g.values()) for name, g in (("model", self.test.model),
                 ("untrained", self.test.random_weights), ("analytical", self.test.analytical))}
            lines.append(f"test fold {self.test.fold} of {self.test.folds} ({t['model'].pipelines} pipelines, "
                         f"{t['model'].samples} schedules, in neither training nor the epoch's choice): pairwise "
                         + ", ".join(f"{k} {m.pairwise_accuracy:.3f}" for k, m in t.items()) + "; top-1 "
                         + ", ".join(f"{k} {m.top1_score:.3f}" for k, m in t.items()))
        if self.promotion is not None:
            lines.append("on the same validation pipelines:")
            lines += self.promotion.lines(self.val)
        if self.decisions:
            from .decisions import side_by_side

            lines.append("one decision (a contrast vs its beam sample, ordered as measured), this model / analytical: "
                         + side_by_side(self.decisions, self.analytical_decisions))
        if self.at_bound is not None:
            from .model import TRUST_REGION_EDGE

            lines.append(f"trust region: {100 * self.at_bound:.0f} % of the validation corrections at its bound "
                         f"(past {TRUST_REGION_EDGE:g} ranges: gradients ~0, each such coefficient e^+-range times "
                         "the analytical one)")
        if self.by_apart:
            from .metrics import by_apart_side_by_side

            lines.append("pairwise by how far apart each pair was measured, this model / analytical: "
                         + by_apart_side_by_side(self.by_apart, self.analytical_by_apart))
        r = self.registered
        if r is not None:
            alias = " -> alias champion" if r.promoted else ""
            lines.append(f"registered: models:/{r.name}/{r.version}{alias}")
        if self.promotion is not None:
            lines.append(self.promotion.reason)
        lines.append(f"open: mlflow ui --backend-store-uri {self.tracking_uri}")
        return "\n".join(lines)


def predict_groups(model, batches) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{pipeline_id: (predicted, measured)} over `batches`, chunks of a pipeline joined."""
    from .decisions import scored_pipelines

    return groups_of(scored_pipelines(model, batches))


def groups_of(scored) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """predict_groups' {pipeline_id: (predicted, measured)} from train.decisions.scored_pipelines' tuples."""
    return {pid: (pred, true) for pid, _, pred, true in scored}


def train(cfg: TrainConfig, *, parent_run_id: str | None = None) -> TrainResult:
    """Fit, log and register one cost model as `cfg` says; raises SchedlabError subclasses for bad input.
    parent_run_id: nest the run under that one (the data-generation job's run). MLflow's global tracking URI
    (which Lightning's MLFlowLogger sets, environment variable included) is restored afterwards, so this store
    never becomes the default of what runs next in the process."""
    from .registry import _using, tracking_uri

    with _using(tracking_uri(cfg.tracking_uri)):
        return _train(cfg, parent_run_id)


def _train(cfg: TrainConfig, parent_run_id: str | None) -> TrainResult:
    import lightning as L
    import torch
    from lightning.pytorch.callbacks import ModelCheckpoint, TQDMProgressBar

    from ir.progress import progress_mode
    from lightning.pytorch.loggers import MLFlowLogger

    from . import lineage, plots, registry
    from .data import CostModelDataModule, DataConfig, TrainingData
    from .decisions import scored_pipelines
    from .metrics import largest_group, pairwise_by_apart, random_topk_scores, ranking_metrics, topk_scores
    from .model import ResidualCostModel
    from .module import CostModelModule, EpochLines

    t0 = time.time()
    if cfg.resume is not None and not Path(cfg.resume).is_file():
        raise registry.RegistryError(f"resume={cfg.resume}: no such checkpoint file")
    data = TrainingData.load(DataConfig(path=cfg.data, target=cfg.target, min_schedules=cfg.min_schedules,
                                        val_fraction=cfg.val_fraction, batch_size=cfg.batch_size, seed=cfg.seed,
                                        backend=cfg.backend, max_spread=cfg.max_spread,
                                        train_fraction=cfg.train_fraction, folds=cfg.folds, fold=cfg.fold))
    schema = get_extractor(cfg.target).schema  # what the model reads; the data must have been written under it
    data.check_schema(schema)
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    model_config = {"kind": cfg.model, "embedding": cfg.embedding, "hidden": cfg.hidden,
                    "num_cores": get_target(cfg.target).cores, "residual_range": cfg.residual_range,
                    "trunk_inputs": cfg.trunk_inputs,
                    "prior": cfg.prior}
    module = CostModelModule(model_config, cfg.loss, cfg.lr, cfg.weight_decay, cfg.seed)
    uri = registry.writable_store(cfg.tracking_uri)
    registry.ensure_experiment(cfg.experiment, uri)  # tagged for MLflow's model-training layout
    stats = data.stats
    samples, pipelines = stats.train_samples + stats.val_samples, stats.train_pipelines + stats.val_pipelines
    about = (f"Trains a {cfg.model} cost model ({cfg.loss} loss) for target {cfg.target} on dataset "
             f"{stats.fingerprint}: {samples} schedules of {pipelines} pipelines in {cfg.data}.")
    logger = MLFlowLogger(experiment_name=cfg.experiment, tracking_uri=uri,
                          run_name=cfg.run_name or f"train-{cfg.target}-{cfg.model}",
                          artifact_location=registry.artifact_location(uri, cfg.experiment), log_model=False,
                          tags=lineage.run_tags(about, parent_run_id))
    run_id = logger.run_id
    lineage.log_dataset(logger.experiment, run_id, lineage.DatasetRef(
        cfg.data, stats.fingerprint, get_target(cfg.target).name, samples, pipelines), "training")
    logger.log_hyperparams({**flat_items(cfg), "data_fingerprint": stats.fingerprint, "dataset_backend": stats.backend,
                            "feature_schema": schema.name, "feature_schema_version": schema.version,
                            "data_samples": stats.train_samples + stats.val_samples, "data_machines": stats.machines,
                            "data_pipelines": stats.train_pipelines + stats.val_pipelines,
                            "train_pipelines": stats.train_pipelines, "val_pipelines": stats.val_pipelines,
                            "train_samples": stats.train_samples, "val_samples": stats.val_samples})

    init = ranking_metrics(predict_groups(module.model, data.val).values()).as_dict("val_")
    init_test = predict_groups(module.model, data.test) if data.test else {}  # before training changes the weights

    ckpt_dir = Path(cfg.checkpoint_dir).resolve() / run_id
    # the best epoch by validation top-1 (or pairwise accuracy: cfg.select), and the latest epoch (what resume=
    # continues from)
    best = ModelCheckpoint(dirpath=ckpt_dir, filename="best-epoch{epoch}", save_top_k=1, monitor=f"val_{cfg.select}",
                           mode="max", auto_insert_metric_name=False)
    last = ModelCheckpoint(dirpath=ckpt_dir, filename="last", save_top_k=1, enable_version_counter=False)
    shown = progress_mode(cfg.progress, sys.stdout)  # where Lightning's bar goes
    callbacks = [best, last] + {"bar": [TQDMProgressBar(refresh_rate=10)], "lines": [EpochLines(cfg.epochs)],
                                "off": []}[shown]
    trainer = L.Trainer(max_epochs=cfg.epochs, accelerator="cpu", devices=1, logger=logger, callbacks=callbacks,
                        deterministic=True, enable_progress_bar=shown == "bar", enable_model_summary=False,
                        log_every_n_steps=1, num_sanity_val_steps=0)
    trainer.fit(module, datamodule=CostModelDataModule(data), ckpt_path=cfg.resume)

    best_epoch = _load_best(module, best.best_model_path, trainer.current_epoch - 1)  # what gets registered
    model = module.model.eval()
    scored = list(scored_pipelines(model, data.val))  # scored once: the ranking metrics and the decisions
    groups = groups_of(scored)
    final = ranking_metrics(groups.values())
    val = final.as_dict("val_")
    from .promotion import decide, score_baselines

    baselines = score_baselines(data.val, get_target(cfg.target), init, lambda: _champion(cfg, uri), predict_groups)
    decision = decide(val, baselines, cfg.register and cfg.promote, cfg.promotion)
    analytical_scored = list(scored_pipelines(_analytical(cfg), data.val))  # once: the decisions and the buckets
    decisions, analytical_decisions = _decisions(cfg, scored, analytical_scored)
    for prefix, ds in ((HEADLINE, decisions), ("analytical", analytical_decisions)):
        logger.log_metrics({f"{prefix}/decision_{d.decision}_accuracy": d.accuracy for d in ds if d.pairs},
                           step=best_epoch)
    by_apart, analytical_by_apart = (pairwise_by_apart(groups.values()),
                                     pairwise_by_apart(groups_of(analytical_scored).values()))
    for prefix, buckets in ((HEADLINE, by_apart), ("analytical", analytical_by_apart)):
        logger.log_metrics({f"{prefix}/{b.metric}": b.accuracy for b in buckets if b.pairs}, step=best_epoch)
    at_bound = None  # residual models only: the share of their validation corrections at the trust region's bound
    if isinstance(model, ResidualCostModel) and data.val:
        at_bound = model.share_at_trust_region_bound((b.pipeline_features, b.schedule_features) for b in data.val)
        logger.log_metrics({"trust_region_at_bound": at_bound}, step=best_epoch)
    logger.experiment.set_tag(run_id, "promotion", decision.reason)
    logger.log_metrics(headline_metrics(val, best_epoch), step=best_epoch)
    _log_summary(logger.experiment, run_id, val, best_epoch, baselines)
    test = None
    if data.test:  # the held-out fold: never seen by training, nor by the choice of the epoch (unlike val)
        test = HeldOutFold(cfg.fold, cfg.folds, predict_groups(model, data.test), init_test,
                        predict_groups(_analytical(cfg), data.test))
        logger.log_metrics(ranking_metrics(test.model.values()).as_dict("test_"), step=best_epoch)
    ids = np.concatenate([np.full(len(t), pid, dtype=object) for pid, (_, t) in groups.items()])
    pred = np.concatenate([p for p, _ in groups.values()])
    measured = np.concatenate([t for _, t in groups.values()])
    ks = range(1, min(32, largest_group(groups.values())) + 1)
    plots.log_figures(run_id, {
        "predicted_vs_measured": plots.predicted_vs_measured(pred, measured, f"{cfg.model} on validation",
                                                             pipelines=ids),
        "topk_score": plots.topk_curve(topk_scores(groups.values(), ks), f"{cfg.model}: top-k score on validation",
                                       random=random_topk_scores(groups.values(), ks)),
    }, tracking=uri)

    registered = None
    if cfg.register:
        first = data.val[0]
        tags = {"dataset_fingerprint": stats.fingerprint, "dataset_machines": stats.machines,
                "dataset_samples": str(stats.train_samples + stats.val_samples),
                "dataset_pipelines": str(stats.train_pipelines + stats.val_pipelines), "model_kind": cfg.model,
                "loss": cfg.loss, "feature_schema": schema.name, "dataset_backend": stats.backend,
                "val_fraction": repr(cfg.val_fraction), "min_schedules": str(cfg.min_schedules),
                "max_spread": repr(cfg.max_spread), "train_fraction": repr(cfg.train_fraction),
                "best_epoch": str(best_epoch), "promotion": decision.reason}
        registered = registry.log_and_register(
            model, cfg.target, tags, val, (first.pipeline_features.numpy(), first.schedule_features.numpy()),
            promote=decision.promote, run_id=run_id, tracking=uri, backend=stats.backend or "numba", decided=True)
        version = lineage.ResolvedVersion(registered.name, registered.version, None)
        lineage.describe(logger.experiment, run_id, f"{about}\n\nRegistered as {version.link()}"
                         f"{' (alias champion)' if registered.promoted else ''}. {decision.reason}")
    return TrainResult(run_id, logger.experiment_id, uri, init, val,
                       stats.train_samples + stats.val_samples, stats.train_pipelines + stats.val_pipelines,
                       stats.train_pipelines, stats.val_pipelines, str(ckpt_dir / "last.ckpt"), registered,
                       time.time() - t0, best_epoch, decision, decisions, analytical_decisions, stats.machines,
                       cfg.select, test, by_apart, analytical_by_apart, at_bound)


def _analytical(cfg: TrainConfig):
    """The analytical model on the target's cores: the baseline every validation figure stands beside."""
    from ir.target import get_target

    from .analytical import AnalyticalCost

    return AnalyticalCost(getattr(get_target(cfg.target), "cores", 1))


def _decisions(cfg: TrainConfig, scored: list, analytical_scored: list) -> tuple[tuple, tuple]:
    """train.decisions.DecisionAccuracy of the model and of the analytical model (their `scored` validation
    pipelines) on the one-decision contrasts of those pipelines (both empty when the dataset has none)."""
    from .decisions import decision_accuracy, samplers_of

    samplers = samplers_of(cfg.data, cfg.target, {pipeline_id for pipeline_id, *_ in scored})
    if not any(k.startswith("contrast-") for k in samplers.values()):
        return (), ()
    return decision_accuracy(scored, samplers), decision_accuracy(analytical_scored, samplers)


def _load_best(module, path: str, last_epoch: int) -> int:
    """Load the best checkpoint's weights (by the validation metric cfg.select) into `module`; its epoch (from 0, as
    Lightning and the MLflow steps count). Without one (no validation epoch ran), the last epoch's weights stay."""
    import torch

    if not path or not Path(path).is_file():
        return last_epoch
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    module.load_state_dict(ckpt["state_dict"])
    return int(ckpt.get("epoch", last_epoch))


HEADLINE = "best"  # the MLflow prefix of the registered weights' validation metrics


def headline_metrics(val: dict[str, float], best_epoch: int) -> dict[str, float]:
    """The run's few single-value metrics, for comparing runs: the registered (best-epoch) weights' validation
    ranking metrics as best/<name> and best/epoch; finite values only, counts left to the params."""
    from .metrics import COUNTS

    out = {f"{HEADLINE}/{k.removeprefix('val_')}": v for k, v in val.items()
           if k.removeprefix("val_") not in COUNTS and np.isfinite(v)}
    return {**out, f"{HEADLINE}/epoch": float(best_epoch)}


def _champion(cfg: TrainConfig, uri: str):
    """("champion v<N>", its network) of schedlab-<target> in the store, or None when there is none."""
    from . import registry

    client = registry._client(uri)
    current = registry._champion(client, registry.model_name(cfg.target))
    if current is None:
        return None
    return f"champion v{current.version}", registry.load_cost_model(
        f"models:/{registry.model_name(cfg.target)}/{current.version}", uri)


SUMMARY_TABLE = "summary.json"
BASELINES_CSV = "baselines.csv"


def _log_summary(client, run_id: str, val: dict[str, float], best_epoch: int, baselines) -> None:
    """summary.json (an MLflow table: the artifact view shows it as one) and baselines.csv, the same rows: this
    model's registered weights, then each baseline (random weights = the untrained network), on the same
    validation pipelines; the ranking metrics first, the counts last."""
    import csv
    import io

    first = ("top1_score", "top5_score", "pairwise_accuracy", "kendall_tau", "ordering_rate_1_3", "r2_log_runtime")
    names = [k.removeprefix("val_") for k in val]
    keys = [*(k for k in first if k in names), *(k for k in names if k not in first)]
    rows = [(f"this model (epoch {best_epoch})", val, ""), *((b.name, b.metrics, b.note) for b in baselines)]
    table = {"model": [name for name, _, _ in rows],
             **{k: [_cell(m.get(f"val_{k}")) for _, m, _ in rows] for k in keys},
             "note": [note for _, _, note in rows]}
    client.log_table(run_id, table, SUMMARY_TABLE)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(table))
    for i in range(len(rows)):
        w.writerow([table[c][i] if c in ("model", "note") or table[c][i] is None else f"{table[c][i]:.6g}"
                    for c in table])
    client.log_text(run_id, buf.getvalue(), BASELINES_CSV)


def _cell(value) -> float | int | None:
    """A table cell: counts as integers, scores to 4 decimals; None (empty) where a metric was not scored or has
    nothing to measure (NaN)."""
    if value is None or not np.isfinite(value):
        return None
    return int(value) if float(value).is_integer() and abs(value) > 1 else round(float(value), 4)

