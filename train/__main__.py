"""python -m train [--config conf/train.yaml] [key=value ...]

Trains a cost model on a schedlab dataset, logs the run to MLflow and registers the model as
schedlab-<target>. Every key of train/config.py TrainConfig can be given as key=value, e.g.
`python -m train --config conf/train.yaml data=data target=host model=mlp epochs=50 promote=true`.
A bad key, value or dataset stops with one line naming what to fix (exit status 2).
"""

from __future__ import annotations

import sys

PROG = "python -m train"


def main(argv=None) -> int:
    from ir.config import doc_body, run_cli

    from .config import TrainConfig

    return run_cli(TrainConfig, _run, argv, PROG, doc_body(__doc__), default_config="conf/train.yaml")


def _run(cfg) -> int:
    from .run import train

    print(train(cfg).summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
