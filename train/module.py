"""The LightningModule around a cost model: the loss per pipeline batch, Adam, and the ranking metrics.

A batch is the schedules of one pipeline (train.data.PipelineBatch), so the loss compares schedules
only with their siblings, as in Adams 2019 §4.2. Metrics are computed per epoch over whole pipelines
(chunks of one pipeline are joined again), on the predictions made during the epoch for train and on
the fixed model for validation.

MLflow gets them at each epoch's end with step = the epoch (0-based, as Lightning counts), grouped by stage:
`train/loss`, `train/top1_score`, ..., `val/loss`, `val/pairwise_accuracy`, ... So runs of different lengths, or
rounds of the data-generation job, overlay epoch by epoch. `self.log` still feeds the progress bar and
ModelCheckpoint's monitor (`val_top1`), with logger=False: Lightning's logger would use the global step.
"""

from __future__ import annotations

from collections import defaultdict

import lightning as L
import numpy as np
import torch

from .loss import get_loss
from .metrics import ranking_metrics
from .model import ModelConfig, build_model


class CostModelModule(L.LightningModule):
    def __init__(self, model_config: dict, loss: str = "relative_throughput", lr: float = 1e-3,
                 weight_decay: float = 0.0, seed: int = 0):
        super().__init__()
        self.save_hyperparameters()
        self.model = build_model(ModelConfig.from_dict(model_config), seed=seed)
        self.loss_fn = get_loss(loss)
        self._groups: dict[str, dict[str, list]] = {"train": defaultdict(list), "val": defaultdict(list)}
        self._losses: dict[str, list[tuple[float, int]]] = {"train": [], "val": []}  # (batch mean, batch size)

    def forward(self, batch):
        return self.model(batch.pipeline_features, batch.schedule_features)

    def _step(self, batch, stage: str):
        pred = self(batch)
        loss = self.loss_fn(pred, batch.runtimes.to(pred.dtype))
        self.log(f"{stage}_loss", loss, batch_size=len(batch.runtimes), on_step=False, on_epoch=True,
                 prog_bar=True, logger=False)
        self._losses[stage].append((float(loss.detach()), len(batch.runtimes)))
        groups = self._groups[stage]
        groups[batch.pipeline_id].append((pred.detach().double().cpu().numpy(), batch.runtimes.double().cpu().numpy()))
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def on_train_epoch_end(self):
        self._log_metrics("train")

    def on_validation_epoch_end(self):
        if self.trainer.sanity_checking:
            self._groups["val"].clear()
            self._losses["val"].clear()
            return
        self._log_metrics("val")

    def _log_metrics(self, stage: str) -> None:
        groups, losses = self._groups[stage], self._losses[stage]
        values = {}
        if losses:  # the mean over samples, as Lightning's epoch mean weighted by batch_size
            values["loss"] = sum(v * n for v, n in losses) / sum(n for _, n in losses)
        if groups:
            joined = [(np.concatenate([p for p, _ in parts]), np.concatenate([t for _, t in parts]))
                      for parts in groups.values()]
            m = ranking_metrics(joined)
            values.update(m.scores())
            if stage == "val":
                self.log("val_top1", m.top1_score, prog_bar=True, logger=False)
                self.log("val_pairwise", m.pairwise_accuracy, logger=False)
        finite = {f"{stage}/{k}": float(v) for k, v in values.items() if np.isfinite(v)}
        if finite and self.logger is not None:
            self.logger.log_metrics(finite, step=self.current_epoch)
        groups.clear()
        losses.clear()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)


class EpochLines(L.Callback):
    """Training's progress outside a terminal: one line per epoch with its losses (ir.progress lines), in place
    of Lightning's bar, whose redraws would fill a log with '\\r' frames."""

    def __init__(self, epochs: int):
        self.epochs = epochs
        self.shown = None

    def on_train_start(self, trainer, pl_module) -> None:
        from ir.progress import Progress

        self.shown = Progress(self.epochs, "epoch", "lines", desc="train")
        if trainer.current_epoch:  # a resumed run starts past 0
            self.shown.set(trainer.current_epoch, "resumed")

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        m = trainer.callback_metrics
        note = ", ".join(f"{k} {float(m[k]):.4g}" for k in ("train_loss", "val_loss", "val_top1") if k in m)
        self.shown.update(1, f"epoch {trainer.current_epoch}: {note}" if note else f"epoch {trainer.current_epoch}")
