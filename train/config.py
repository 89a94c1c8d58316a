"""The training config: one flat dataclass, read from `conf/train.yaml` with key=value overrides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ir.progress import ProgressSetting

from .analytical import PRIOR

# the names a config accepts, one place for every config that names them (the job's, evaluate.compare's)
ModelKind = Literal["hybrid", "mlp", "residual", "calibrated"]  # train.model.MODEL_KINDS
LossName = Literal["relative_throughput", "pairwise_rank", "lambdarank", "pairwise_rank_apart"]  # train.loss.LOSSES
TrunkInputs = Literal["raw", "normalized"]  # train.model.TRUNK_INPUTS
SelectMetric = Literal["top1", "pairwise"]  # the validation metric that picks the registered epoch
AnalyticalPrior = Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # train.analytical.PRIORS


@dataclass(frozen=True)
class TrainConfig:
    data: str = "data"  # dataset root (holds target=<name>/batch-*.parquet), or several, comma-separated
    target: str = "host"  # dataset partition, and the registered model's name: schedlab-<target>
    backend: str | None = None  # whose runtimes to learn (numba, halide); none: the data's only backend
    model: ModelKind = "hybrid"  # hybrid: adams2019's per-stage network; mlp: a plain MLP baseline;
                                 #   residual: the analytical model's coefficients with learned corrections
                                 #   per stage; calibrated: one learned scale per analytical term
    loss: LossName = "relative_throughput"  # train.loss.LOSSES
    epochs: int = 30  # passes over the training pipelines
    lr: float = 1e-3  # Adam learning rate
    weight_decay: float = 0.0  # Adam weight decay
    embedding: int = 24  # width of the hybrid model's embeddings
    hidden: int = 64  # width of the MLP model
    residual_range: float = 1.0  # residual model: each coefficient within e^-r..e^r of the analytical model's
    prior: AnalyticalPrior = PRIOR  # residual model: the analytical prior it corrects (train.analytical.PRIORS)
    trunk_inputs: TrunkInputs = "raw"  # hybrid, residual: raw (adams2019) | normalized (each embedding standardized
    #   per stage before the trunk: a residual's trust region no longer saturates; docs/train.md)
    batch_size: int = 64  # most schedules in one batch (each batch holds one pipeline's schedules)
    min_schedules: int = 8  # pipelines with fewer measured schedules are skipped
    val_fraction: float = 0.125  # share of pipelines (by hash) held out for validation
    train_fraction: float = 1.0  # share of the other pipelines trained on (by a second hash; nested subsets: python -m train.compare's learning curve)
    folds: int = 1  # cross-validation (evaluate.compare folds=K): with more than one, fold `fold` of the pipelines
    fold: int = 0  #   (by a third hash) is a test set kept out of training and validation, scored after training
    max_spread: float | None = 0.25  # skip labels whose own best repeats disagree by more (none: keep all)
    seed: int = 0  # seeds weight init and batch order
    select: SelectMetric = "top1"  # which epoch's weights are registered: best validation top-1 (the first to reach
    #   it), or best pairwise accuracy, finer where top-1 on few pipelines moves in steps
    tracking_uri: str | None = None  # MLflow tracking URI (none: $MLFLOW_TRACKING_URI, else the per-user store, train.registry)
    experiment: str = "schedlab-train"  # MLflow experiment of the run
    run_name: str | None = None  # MLflow run name (none: MLflow picks one)
    register: bool = True  # log the model and register it as schedlab-<target>
    promote: bool = False  # set the champion alias if this version beats every baseline (see promotion)
    promotion: Literal["baselines", "always"] = "baselines"  # baselines: beat random weights, the analytical model
    #   and the current champion on the same validation pipelines; always: take the alias (pinning, as by hand)
    checkpoint_dir: str = ".cache/checkpoints"  # where Lightning writes the run's checkpoints
    resume: str | None = None  # a Lightning checkpoint (.ckpt) to continue from
    progress: ProgressSetting = "auto"  # auto: a bar on a terminal, a line per epoch elsewhere; bar | lines | false
    threads: int = 1  # torch intra-op threads; the models are small, more threads mostly add overhead (0: torch's default)

    def __post_init__(self):
        for name in ("epochs", "batch_size", "min_schedules", "embedding", "hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {self.val_fraction}")
        if not 0 < self.train_fraction <= 1:
            raise ValueError(f"train_fraction must be in (0, 1], got {self.train_fraction}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.folds < 1 or not 0 <= self.fold < self.folds:
            raise ValueError(f"fold must be in 0..folds-1 with folds >= 1, got fold={self.fold} folds={self.folds}")
        if self.folds > 1 and self.register:
            raise ValueError(f"folds={self.folds} holds a test fold out of training, for cross-validation only; a "
                             "registered model learns from every pipeline: set register=false or folds=1")
