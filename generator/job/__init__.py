"""The data-generation job (DESIGN §3.7; adams2019 §5): random pipelines, schedules sampled by the current
cost model, compiled and benchmarked on a Ray cluster, written as one Parquet file per pipeline, and a
model trained and registered between rounds.

    ray job submit --working-dir . -- python -m generator.job --config conf/datagen.yaml out=/abs/data
    python -m generator.job --config conf/datagen.yaml rounds=1     # a local Ray cluster started on the spot

Ray is imported only when a job runs: `from generator.job import JobConfig` stays light.
"""

from .config import Fault, JobConfig, RoundTraining

__all__ = ["Fault", "JobConfig", "RoundTraining", "run_job"]


def run_job(cfg: JobConfig, progress=None):  # progress: an ir.progress.ProgressSetting overriding cfg.progress
    from .driver import run_job as run

    return run(cfg, progress)
