"""python -m evaluate [--config conf/evaluate.yaml] [key=value ...]

Ranks the schedules of held-out pipelines with a cost model; logs the metrics and figures to MLflow.
The metrics and figures are training's. Every key of evaluate/config.py EvalConfig can be given as
key=value, e.g.
`python -m evaluate model=models:/schedlab-host@champion data=data split=val`.
A bad key, value, dataset or model stops with one line naming what to fix (exit status 2).
"""

from __future__ import annotations

import sys

PROG = "python -m evaluate"


def main(argv=None) -> int:
    from ir.config import doc_body

    from .config import EvalConfig, run_command
    from .models import evaluate_model

    return run_command(PROG, doc_body(__doc__), EvalConfig, "conf/evaluate.yaml", evaluate_model, argv)


if __name__ == "__main__":
    sys.exit(main())
