"""python -m generator.job [--config conf/datagen.yaml] [key=value ...]

Generates measured schedules of random pipelines on Ray (the cluster of `ray job submit`, RAY_ADDRESS or
ray_address=..., else a local cluster), training a cost model between rounds. Every key of
generator/job/config.py JobConfig can be given as key=value (nested: train.epochs=10). A rerun with the
same config skips the batches already written. A bad key or value stops with one line naming what to fix
(exit status 2); an interrupted job prints its summary and exits with 130.
"""

from __future__ import annotations

import sys

PROG = "python -m generator.job"


def main(argv=None) -> int:
    from ir.config import doc_body, run_cli

    from .config import JobConfig

    return run_cli(JobConfig, _run, argv, PROG, doc_body(__doc__))


def _run(cfg) -> int:
    from .driver import run_job

    try:
        summary = run_job(cfg)
    except OSError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    for line in summary.lines():
        print(line, flush=True)
    if summary.interrupted:
        return 130
    return 0 if summary.status["ok"] or summary.samples_existing else 1


if __name__ == "__main__":
    sys.exit(main())
