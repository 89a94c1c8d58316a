"""python -m generator.dataset stats [data=DIR]

What a generated dataset holds: per target partition, pipelines, samples, yield by status, the runtime
distribution of ok samples, their label spread (how well the protocol's repeats agreed), compile times and
the partition's files and size on disk. Reads only the small columns, so it is quick on any dataset.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

PROG = "python -m generator.dataset"
COMMANDS = ("stats",)


@dataclass
class StatsConfig:
    data: str = "data"  # the dataset root: the job's out= (holds target=<name>/batch-*.parquet)


def main(argv=None) -> int:
    from ir.config import doc_body, run_cli

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        got = repr(argv[0]) if argv else "nothing"
        print(f"{PROG}: error: give a command first ({', '.join(COMMANDS)}), got {got}; "
              f"e.g. {PROG} stats data=data", file=sys.stderr)
        return 2
    return run_cli(StatsConfig, _stats, argv[1:], f"{PROG} stats", doc_body(__doc__))


def _stats(cfg: StatsConfig) -> int:
    from featurize.dataset_stats import dataset_stats

    print(dataset_stats(cfg.data).report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
