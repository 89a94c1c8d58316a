"""python -m train [--config conf/train.yaml] [key=value ...]

Trains a cost model on a schedlab dataset, logs the run to MLflow and registers the model as
schedlab-<target>. Every key of train/config.py TrainConfig can be given as key=value, e.g.
`python -m train --config conf/train.yaml data=data target=host model=mlp epochs=50 promote=true`.
A bad key, value or dataset stops with one line naming what to fix (exit status 2).
"""

from __future__ import annotations

import argparse
import sys

PROG = "python -m train"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[2])
    ap.add_argument("--config", default=None, help="YAML config (default: the built-in defaults, as conf/train.yaml)")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    a = ap.parse_args(argv)

    from ir.config import load_config
    from ir.errors import SchedlabError

    from .config import TrainConfig

    try:
        cfg = load_config(TrainConfig, a.config, a.overrides)
        from .run import train

        result = train(cfg)
    except SchedlabError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
