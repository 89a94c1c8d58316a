"""ir.logs: the chatter of MLflow and Lightning off in a command, nothing else touched (each case runs in a
fresh interpreter: logging and warning filters are per process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import logging, sys, warnings
if {quiet}:
    from ir.logs import quiet_third_party
    quiet_third_party()
import mlflow
from lightning.pytorch.utilities._pytree import _tree_flatten
_tree_flatten(1)                                  # Lightning makes a torch LeafSpec: a FutureWarning
logging.getLogger("mlflow.store.db.utils").info("Creating initial MLflow database tables...")
warnings.warn("a warning of ours", UserWarning)   # not Lightning's: still shown
print(logging.getLogger("mlflow").getEffectiveLevel())
"""


def _run(quiet: bool, mlflow_level: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_LOGGING_LEVEL"}
    env["PYTHONPATH"] = str(ROOT)
    if mlflow_level:
        env["MLFLOW_LOGGING_LEVEL"] = mlflow_level
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(quiet=quiet)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    return r


def test_a_command_hears_neither_mlflow_info_nor_lightnings_deprecations_but_other_warnings():
    loud = _run(False)
    assert "LeafSpec" in loud.stderr and "Creating initial MLflow database tables" in loud.stderr  # the chatter
    quiet = _run(True)
    assert "LeafSpec" not in quiet.stderr and "Creating initial" not in quiet.stderr, quiet.stderr
    assert "a warning of ours" in quiet.stderr and quiet.stdout.strip() == "30"  # mlflow at WARNING


def test_a_users_mlflow_logging_level_wins():
    r = _run(True, "INFO")
    assert "Creating initial MLflow database tables" in r.stderr and r.stdout.strip() == "20"
