"""python -m generator.dataset stats [data=DIR]
python -m generator.dataset refeaturize data=DIR [l2_kib=1024]

stats: what a generated dataset holds: per target partition, pipelines, samples, yield by status, the runtime
distribution of ok samples, their label spread (how well the protocol's repeats agreed), compile times and
the partition's files and size on disk. Reads only the small columns, so it is quick on any dataset.

refeaturize: rewrite the batch files written under an older feature schema version with the current one's
features, computed again from the pipelines and LoopNests they store (featurize.refeaturize); the features both
versions share must come out as stored, or the file is left as it was. Labels are kept.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

PROG = "python -m generator.dataset"
COMMANDS = ("stats", "refeaturize")


@dataclass
class StatsConfig:
    data: str = "data"  # the dataset root: the job's out= (holds target=<name>/batch-*.parquet)


@dataclass
class RefeaturizeConfig:
    data: str = "data"  # the dataset root (or several, comma-separated)
    l2_kib: int = 1024  # L2 of the machine that measured files which do not record it


def main(argv=None) -> int:
    from ir.config import doc_body, run_cli

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        got = repr(argv[0]) if argv else "nothing"
        print(f"{PROG}: error: give a command first ({', '.join(COMMANDS)}), got {got}; "
              f"e.g. {PROG} stats data=data", file=sys.stderr)
        return 2
    if argv[0] == "refeaturize":
        return run_cli(RefeaturizeConfig, _refeaturize, argv[1:], f"{PROG} refeaturize", doc_body(__doc__))
    return run_cli(StatsConfig, _stats, argv[1:], f"{PROG} stats", doc_body(__doc__))


def _stats(cfg: StatsConfig) -> int:
    from featurize.dataset_stats import dataset_stats

    print(dataset_stats(cfg.data).report())
    return 0


def _refeaturize(cfg: RefeaturizeConfig) -> int:
    import time

    from featurize.refeaturize import refeaturize_dataset

    t0 = time.time()

    def progress(i, n, path):
        print(f"[{i + 1}/{n}] {path.name} ({time.time() - t0:.0f} s)", flush=True)

    print(refeaturize_dataset(cfg.data, cfg.l2_kib, progress).report() + f" in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
