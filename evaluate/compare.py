"""python -m evaluate.compare data=DIR [key=value ...]

Trains every model kind with every loss on the same pipelines and scores them on the same held-out pipelines,
next to the analytical model and random weights, in one table; and a learning curve (the same metrics against
the number of training pipelines, nested subsets by hash) logged to MLflow as a plot. The validation pipelines
never change across rows, so the rows compare models, not splits. Nothing is registered.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from ir.errors import SchedlabError
from ir.progress import ProgressSetting
from train.config import AnalyticalPrior, LossName, ModelKind, SelectMetric, TrainConfig, TrunkInputs

PROG = "python -m evaluate.compare"
APART = "val_pairwise_accuracy_1_1"  # with folds: pairwise accuracy on pairs measured >= 1.1x apart
METRICS = (("val_pairwise_accuracy", "pairwise"), ("val_top1_score", "top-1"), ("val_top5_score", "top-5"),
           ("val_kendall_tau", "tau"), ("val_r2_log_runtime", "R2(log)"), ("val_ordering_rate_1_3", "ord@1.3x"))


class CompareError(SchedlabError):
    """A comparison that cannot run as configured; the message says what to fix."""


@dataclass(frozen=True)
class CompareConfig:
    """python -m evaluate.compare: model kinds x losses x training-set sizes on one split."""

    data: str = "data"  # dataset root (holds target=<name>/batch-*.parquet)
    target: str = "host"  # dataset partition
    backend: str | None = None  # whose runtimes to learn (none: the data's only backend)
    models: tuple[ModelKind, ...] = ("hybrid", "residual", "calibrated", "mlp")  # model kinds (train.model.MODEL_KINDS)
    losses: tuple[LossName, ...] = ("relative_throughput", "pairwise_rank", "lambdarank")  # train.loss.LOSSES
    fractions: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0)  # shares of the training pipelines: the learning curve's points
    epochs: int = TrainConfig.epochs  # passes over the training pipelines, every row
    val_fraction: float = TrainConfig.val_fraction  # share of pipelines (by hash) held out, the same for every row
    min_schedules: int = TrainConfig.min_schedules  # pipelines with fewer ok schedules are skipped
    max_spread: float | None = TrainConfig.max_spread  # labels noisier than this are skipped (none: keep all)
    seed: int = 0  # weight init and batch order of every row
    lr: float = TrainConfig.lr  # Adam learning rate of every row
    weight_decay: float = TrainConfig.weight_decay  # Adam weight decay of every row
    residual_range: float = TrainConfig.residual_range  # residual and calibrated rows: the trust region e^-r..e^r
    prior: AnalyticalPrior = TrainConfig.prior  # residual and calibrated rows: the analytical prior they correct
    trunk_inputs: TrunkInputs = TrainConfig.trunk_inputs  # hybrid and residual rows: raw | normalized (train.config)
    select: SelectMetric = TrainConfig.select  # the validation metric that picks each row's epoch
    folds: int = 1  # 1: score every row on one validation split, the one that also picks each row's epoch (so its
    #   figures lean optimistic); K > 1: K-fold cross-validation, every row trained K times, each time with one fold
    #   of the pipelines (by hash) held out of training and of the epoch's choice, and scored on the K folds pooled
    tracking_uri: str | None = None  # MLflow tracking URI (none: $MLFLOW_TRACKING_URI, else the per-user store)
    experiment: str = "schedlab-compare"  # MLflow experiment of the comparison run (the trainings nest under it)
    progress: ProgressSetting = "auto"  # auto: a line per training; bar | lines | false

    def __post_init__(self):
        if not self.models or not self.losses or not self.fractions:
            raise ValueError("models, losses and fractions each need at least one value")
        if any(not 0 < f <= 1 for f in self.fractions):
            raise ValueError(f"fractions must be in (0, 1], got {', '.join(map(str, self.fractions))}")
        if 1.0 not in self.fractions:
            raise ValueError("fractions must include 1 (the table compares models trained on every training pipeline)")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.folds < 1:
            raise ValueError(f"folds must be >= 1, got {self.folds}")


@dataclass(frozen=True)
class Row:
    """One training: a model kind and loss on a share of the training pipelines, scored on the validation ones."""

    model: str
    loss: str
    fraction: float
    train_pipelines: int
    train_samples: int
    val: dict[str, float]  # val_* metrics of the registered-equivalent weights (the best epoch) on the held-out
    #   pipelines: the validation split, or with folds the test folds pooled
    init_val: dict[str, float]  # the same network's random weights
    seconds: float
    run_id: str  # the training's MLflow run (with folds, the last fold's)
    selection_val: dict[str, float] | None = None  # with folds: the validation metrics that picked the epochs,
    #   averaged over the folds' validation splits (what the row would have read without folds)

    @property
    def label(self) -> str:
        return f"{self.model} / {self.loss}"


@dataclass(frozen=True)
class Comparison:
    rows: tuple[Row, ...]
    analytical: dict[str, float]  # the analytical model on the same validation pipelines
    val_pipelines: int
    val_samples: int
    fingerprint: str
    run_id: str
    tracking_uri: str
    seconds: float
    folds: int = 1

    @property
    def held_out(self) -> str:
        return "validation" if self.folds == 1 else f"{self.folds}-fold test"

    def table(self) -> str:
        sel = self.folds > 1
        head = (f"{'model':34s} {'train':>11s} " + " ".join(f"{h:>9s}" for _, h in METRICS)
                + (f" {'pw@1.1x':>9s} {'val(sel)':>9s}" if sel else ""))
        lines = [head, "-" * len(head)]

        def line(name: str, train: str, m: dict[str, float], chosen: dict[str, float] | None = None) -> str:
            return (f"{name:34s} {train:>11s} " + " ".join(f"{m.get(k, math.nan):9.3f}" for k, _ in METRICS)
                    + (f" {m.get(APART, math.nan):9.3f}" if sel else "")
                    + (f" {chosen['val_pairwise_accuracy']:9.3f}" if chosen else (f" {'':9s}" if sel else "")))

        lines.append(line("analytical (adams2019 App. B)", "-", self.analytical))
        seen = set()
        for r in self.full():
            if r.model not in seen:  # one random-weights row per network kind (its init is the loss-independent seed)
                seen.add(r.model)
                lines.append(line(f"random weights ({r.model})", "-", r.init_val))
        for r in self.full():
            lines.append(line(r.label, f"{r.train_pipelines} pipes", r.val, r.selection_val))
        if sel:
            lines.append(f"metrics on the {self.val_pipelines} pipelines of the {self.folds} test folds pooled, each "
                         "scored by the model its fold was held out of; pw@1.1x: pairwise on the pairs measured >= 1.1x "
                         "apart (near-ties left out); val(sel): pairwise on the validation splits "
                         "that chose each fold's epoch (optimistic: the same pipelines picked it)")
        return "\n".join(lines)

    def full(self) -> list[Row]:
        return [r for r in self.rows if r.fraction == 1.0]

    def curve(self) -> str:
        out = [f"learning curve ({self.held_out} pairwise / top-1 by training pipelines):"]
        for label in dict.fromkeys(r.label for r in self.rows):
            pts = sorted((r for r in self.rows if r.label == label), key=lambda r: r.fraction)
            out.append(f"  {label:32s} " + "  ".join(
                f"{r.train_pipelines}: {r.val['val_pairwise_accuracy']:.3f}/{r.val['val_top1_score']:.3f}" for r in pts))
        return "\n".join(out)

    def summary(self) -> str:
        from ir.units import format_seconds

        return "\n".join([
            f"compared {len(self.full())} models on the same {self.val_pipelines} held-out pipelines ({self.held_out}) "
            f"({self.val_samples} schedules) of dataset {self.fingerprint} in {format_seconds(self.seconds)}",
            self.table(), self.curve(),
            f"MLflow run {self.run_id} in {self.tracking_uri} (each training nested under it; plots/learning_curve.png)",
            f"open: mlflow ui --backend-store-uri {self.tracking_uri}"])


def compare(cfg: CompareConfig, echo=print) -> Comparison:
    """Train every (model, loss, fraction) of `cfg` (unregistered, nested under one comparison run), score the
    analytical model on the same validation pipelines, log the table and the learning curve."""
    from train import lineage
    from train.data import DataConfig, TrainingData
    from train.run import train

    from .plots import tracked_run

    t0 = time.time()
    data = TrainingData.load(DataConfig(path=cfg.data, target=cfg.target, min_schedules=cfg.min_schedules,
                                        val_fraction=cfg.val_fraction, backend=cfg.backend,
                                        max_spread=cfg.max_spread))
    stats = data.stats
    smallest = min(cfg.fractions)
    if round(stats.train_pipelines * smallest) < 2:
        raise CompareError(f"{cfg.data}: {stats.train_pipelines} training pipelines leave ~"
                           f"{stats.train_pipelines * smallest:.1f} at fraction {smallest:g}; give larger fractions "
                           "or more data")
    about = (f"Compares model kinds {', '.join(cfg.models)} and losses {', '.join(cfg.losses)} trained on "
             f"{', '.join(f'{f:g}' for f in sorted(cfg.fractions))} of the training pipelines of dataset "
             f"{stats.fingerprint}, all scored on the same {stats.val_pipelines} held-out pipelines.")
    dataset = lineage.DatasetRef(cfg.data, stats.fingerprint, cfg.target, stats.train_samples + stats.val_samples,
                                 stats.train_pipelines + stats.val_pipelines)
    import tempfile

    checkpoints = tempfile.TemporaryDirectory(prefix="schedlab-compare-")  # nothing is registered: throwaway
    rows: list[Row] = []
    runs = [(m, loss, f) for m in cfg.models for loss in cfg.losses for f in sorted(cfg.fractions, reverse=True)]
    with tracked_run(cfg.tracking_uri, cfg.experiment, f"compare-{cfg.target}-{stats.fingerprint[:8]}", cfg,
                     description=about, dataset=dataset) as run:
        analytical = None
        held_out = (stats.val_pipelines, stats.val_samples)
        for i, (kind, loss, fraction) in enumerate(runs):
            t = time.time()
            results = []
            for fold in range(cfg.folds):
                tc = TrainConfig(data=cfg.data, target=cfg.target, backend=cfg.backend, model=kind, loss=loss,
                                 epochs=cfg.epochs, val_fraction=cfg.val_fraction, min_schedules=cfg.min_schedules,
                                 max_spread=cfg.max_spread, seed=cfg.seed, train_fraction=fraction,
                                 lr=cfg.lr, weight_decay=cfg.weight_decay, residual_range=cfg.residual_range,
                                 prior=cfg.prior, trunk_inputs=cfg.trunk_inputs,
                                 select=cfg.select, folds=cfg.folds,
                                 fold=fold, tracking_uri=run.tracking_uri,
                                 experiment=cfg.experiment, register=False,
                                 run_name=f"{kind}-{loss}-{fraction:g}" + (f"-fold{fold}" if cfg.folds > 1 else ""),
                                 progress=False, checkpoint_dir=checkpoints.name)
                results.append(train(tc, parent_run_id=run.run_id))
            if cfg.folds == 1:
                result = results[0]
                if analytical is None:
                    analytical = next(b.metrics for b in result.promotion.baselines if b.name == "analytical")
                row = Row(kind, loss, fraction, result.train_pipelines, result.samples - stats.val_samples,
                          result.val, result.init_val, time.time() - t, result.run_id)
            else:
                pooled = pool_folds(results)
                if analytical is None:
                    analytical = pooled.analytical
                    held_out = (pooled.pipelines, pooled.samples)
                row = Row(kind, loss, fraction, round(pooled.train_pipelines), round(pooled.train_samples),
                          pooled.model, pooled.random_weights, time.time() - t, results[-1].run_id, pooled.selection)
            rows.append(row)
            if cfg.progress is not False:
                echo(f"[{i + 1}/{len(runs)}] {row.label} on {row.train_pipelines} pipelines"
                     + (f" (mean of {cfg.folds} folds)" if cfg.folds > 1 else "") + ": pairwise "
                     f"{row.val['val_pairwise_accuracy']:.3f}, top-1 {row.val['val_top1_score']:.3f} "
                     f"({row.seconds:.0f} s)")
        comparison = Comparison(tuple(rows), analytical, held_out[0], held_out[1], stats.fingerprint,
                                run.run_id, run.tracking_uri, time.time() - t0, cfg.folds)
        _log(run, comparison)
    checkpoints.cleanup()
    return comparison


@dataclass(frozen=True)
class PooledFolds:
    """The test folds of one row's K trainings as one held-out set: every pipeline scored by the model its fold was
    held out of (the folds are disjoint, so each pipeline counts once), metrics as val_* like a validation split."""

    model: dict[str, float]
    random_weights: dict[str, float]
    analytical: dict[str, float]
    selection: dict[str, float]  # each fold's validation split scored by the epoch it chose, averaged over folds
    pipelines: int
    samples: int
    train_pipelines: float  # mean over the folds
    train_samples: float


def pool_folds(results) -> PooledFolds:
    """PooledFolds of train() results made with folds=K, fold=0..K-1 (each carries its HeldOutFold)."""
    from train.metrics import pairwise_accuracy_apart, ranking_metrics

    def pooled(part: str) -> dict[str, float]:
        groups = {}
        for r in results:
            groups.update(getattr(r.test, part))
        return {**ranking_metrics(groups.values()).as_dict("val_"),
                APART: pairwise_accuracy_apart(groups.values(), 1.1)}

    folds = [r.test for r in results]
    if any(f is None for f in folds) or sorted(f.fold for f in folds) != list(range(len(results))):
        raise CompareError("pool_folds needs one scored test fold per training, folds 0..K-1")
    model = pooled("model")
    keys = [k for k, _ in METRICS]
    # each fold's validation split scored by the epoch it chose (the selection-biased figure), averaged over folds
    selection = {k: float(np.mean([r.val[k] for r in results])) for k in keys}
    return PooledFolds(model, pooled("random_weights"), pooled("analytical"), selection,
                       int(model["val_pipelines"]), int(model["val_samples"]),
                       float(np.mean([r.train_pipelines for r in results])),
                       float(np.mean([r.samples - r.val["val_samples"] for r in results])))


def _log(run, c: Comparison) -> None:
    from train import plots as train_plots

    for r in c.rows:
        key = f"{r.model}_{r.loss}"
        run.log_metrics({f"{key}/pairwise_accuracy": r.val["val_pairwise_accuracy"],
                         f"{key}/top1_score": r.val["val_top1_score"]}, step=r.train_pipelines)
    for r in c.full():
        run.log_metrics({f"final/{r.model}_{r.loss}_{k[4:]}": r.val[k] for k, _ in METRICS})
    run.log_metrics({f"analytical/{k[4:]}": v for k, v in c.analytical.items() if k in dict(METRICS)})
    table = [{"model": "analytical", "loss": "", "train_pipelines": 0, **c.analytical}] + [
        {"model": r.model, "loss": r.loss, "train_pipelines": r.train_pipelines, "fraction": r.fraction, **r.val,
         **{f"random_{k}": v for k, v in r.init_val.items()}} for r in c.rows]
    run.client.log_text(run.run_id, json.dumps(table, indent=1), "comparison.json")
    run.client.log_text(run.run_id, c.summary(), "comparison.txt")
    train_plots.log_figures(run.run_id, {"learning_curve": learning_curve(c)}, tracking=run.tracking_uri)


def learning_curve(c: Comparison):
    """Validation pairwise accuracy and top-1 against training pipelines, one line per model and loss, the
    analytical model and each kind's random weights as horizontal references."""
    from matplotlib.figure import Figure

    from matplotlib.ticker import FixedLocator, NullLocator

    fig = Figure(figsize=(12, 4.4), layout="constrained")
    axes = fig.subplots(1, 2)
    labels = list(dict.fromkeys(r.label for r in c.rows))
    sizes = sorted({r.train_pipelines for r in c.rows})
    for ax, (key, name) in zip(axes, METRICS[:2]):
        for i, label in enumerate(labels):
            pts = sorted((r for r in c.rows if r.label == label), key=lambda r: r.train_pipelines)
            ax.plot([r.train_pipelines for r in pts], [r.val[key] for r in pts], marker="o", color=f"C{i}",
                    label=label)
        ax.axhline(c.analytical.get(key, math.nan), color="black", linestyle="--", label="analytical")
        for style, kind in zip((":", "-."), dict.fromkeys(r.model for r in c.full())):
            init = next(r.init_val for r in c.full() if r.model == kind)
            ax.axhline(init.get(key, math.nan), color="grey", linestyle=style, label=f"random weights ({kind})")
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(FixedLocator(sizes))  # the measured sizes, as plain integers
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(n) for n in sizes])
        ax.set_xlabel("training pipelines (log scale)")
        ax.set_ylabel(f"{c.held_out} {name} (fraction, higher is better)")
        ax.set_title(f"{name} on the same {c.val_pipelines} held-out pipelines ({c.held_out})", fontsize=10)
        ax.grid(True, alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside right center", fontsize=8)
    fig.suptitle(f"learning curve, dataset {c.fingerprint}", fontsize=11)
    return fig


def main(argv=None) -> int:
    from ir.config import doc_body, run_cli

    return run_cli(CompareConfig, _run, argv, PROG, doc_body(__doc__))


def _run(cfg: CompareConfig) -> int:
    print(compare(cfg, echo=lambda s: print(s, file=sys.stderr, flush=True)).summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
