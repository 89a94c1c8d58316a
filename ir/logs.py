"""Third-party chatter off for schedlab's commands: each command's entry point calls `quiet_third_party()`.

Between a command's own lines a user would otherwise read MLflow's INFO log (`Creating initial MLflow
database tables...`, `Validating input example against model signature`), alembic's migration log,
Lightning's banners (`GPU available: False, used: False`, `Trainer.fit stopped`) and the deprecation
warnings Lightning's code triggers in torch (`isinstance(treespec, LeafSpec)` is deprecated). Library
modules never call this, so a program that imports schedlab keeps its own logging; only the named loggers
and warnings are touched, their warnings and errors still print, and a user's MLFLOW_LOGGING_LEVEL wins.
(MLflow's registry prints, Lightning's experiment notice and Ray's start-up line are avoided where schedlab
calls them: train.registry, train.run, generator.job.driver.)
"""

from __future__ import annotations

import logging
import os
import warnings

# INFO chatter: loggers set to WARNING (MLflow's own level comes from MLFLOW_LOGGING_LEVEL, read when it is
# imported, since importing mlflow configures its loggers afresh)
LOGGERS = (
    "alembic",  # MLflow's SQLite migrations: "Context impl SQLiteImpl.", "Running upgrade ..."
    "lightning.pytorch.utilities.rank_zero",  # "GPU available: False, used: False", "Trainer.fit stopped: ..."
    "lightning.pytorch.accelerators.cuda",  # "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: ..."
    "lightning.fabric.utilities.seed",  # "Seed set to 0"
)

# warnings raised inside Lightning (or torch, for Lightning's calls) about how Lightning, not our code, works
WARNINGS = (
    # torch deprecates LeafSpec; Lightning's _pytree still makes one (a FutureWarning attributed to Lightning)
    dict(message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning, module=r"lightning\."),
    # the cost-model batches are in memory: worker processes would only slow loading down
    dict(message=r".*does not have many workers", category=UserWarning),
    # resume= continues in the run's own checkpoint directory
    dict(message=r".*Checkpoint directory .* exists and is not empty", category=UserWarning),
)


def quiet_third_party() -> None:
    """Silence the chatter above in this process (calling it again changes nothing)."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("DO_NOT_TRACK", "true")
    level = os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING").upper()
    if isinstance(logging.getLevelName(level), int):  # for an mlflow imported already (it reads the variable then)
        logging.getLogger("mlflow").setLevel(level)
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    for spec in WARNINGS:
        warnings.filterwarnings("ignore", **spec)
