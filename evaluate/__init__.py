"""Evaluating cost models and schedulers (DESIGN §2, §5).

    python -m evaluate model=models:/schedlab-host@champion data=DIR   # ranking metrics on held-out pipelines
    python -m evaluate.apps apps=blur,unsharp size=full model=champion # the app suite against baselines, measured

    evaluate.models.evaluate_model(EvalConfig(...)) -> EvalResult
    evaluate.apps.evaluate_apps(AppsConfig(...)) -> AppsResult

Both log to an MLflow run (in the store tracking_uri= names, else $MLFLOW_TRACKING_URI, else the per-user one).
Nothing else in schedlab imports this package; its __init__ stays light (no torch, MLflow or numba until a
command runs).
"""

from __future__ import annotations

__all__: list[str] = []
