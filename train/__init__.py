"""Training learned cost models (seeds/adams2019 §4.2, DESIGN §3.8).

    train.model    the cost models as plain torch modules (the scheduler imports only this)
    train.loss     relative-throughput (Halide) and pairwise-ranking losses
    train.metrics  ranking/regression metrics on per-pipeline groups (numpy only)

This package's __init__ stays light on purpose: importing `train` or `train.model` must not pull in
Lightning or MLflow, which only the training entry point needs.
"""

from __future__ import annotations

import ir  # noqa: F401  (installs ir.hot's import hook first: train.analytical_rows is a hot module)

__all__: list[str] = []
