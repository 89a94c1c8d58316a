"""The job's MLflow run: one parent run per data-generation job, so the MLflow UI shows what a job did and made.

It holds the config as params; throughput, yield and status counts as metrics; the dataset it wrote as an input
(context `generated`, named and digested by the fingerprint of every row under the target's partition); and,
nested under it, the training run of each round (train(..., parent_run_id=)). Its name ends with the dataset's
fingerprint once the data is written: `datagen-host-1a2b3c4d`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ir.config import flat_items


@dataclass(frozen=True)
class JobRun:
    client: object  # mlflow.MlflowClient
    run_id: str
    tracking: str
    out: Path
    target: str

    @classmethod
    def start(cls, cfg, out: Path, tracking: str, target: str) -> JobRun:
        from mlflow import MlflowClient
        from mlflow.entities import Param

        from train.lineage import new_run_tags
        from train.registry import ensure_experiment, writable_store

        uri = writable_store(tracking)
        experiment = ensure_experiment(cfg.train.experiment, uri)
        client = MlflowClient(tracking_uri=uri, registry_uri=uri)
        about = (f"Data generation on Ray: {cfg.rounds} rounds of {cfg.pipelines_per_round} random pipelines x "
                 f"{cfg.schedules_per_pipeline} schedules for target {target} ({cfg.backend}), written to {out}"
                 + (", a model trained after each round (nested runs)." if cfg.train.enabled else "."))
        run = client.create_run(experiment, run_name=f"datagen-{target}-seed{cfg.seed}", tags=new_run_tags(about))
        params = {**flat_items(cfg), "data_path": str(out / f"target={target}")}
        client.log_batch(run.info.run_id, params=[Param(k, _param(v)) for k, v in params.items()])
        return cls(client, run.info.run_id, uri, out, target)

    def finish(self, summary) -> str:
        """Log what the job did (a JobSummary) and the dataset as it now is; end the run (KILLED if interrupted).
        Returns the run's name."""
        from mlflow.entities import Metric

        from train import lineage

        s = summary
        now = int(time.time() * 1000)
        values = {"samples_written": s.samples_written, "samples_existing": s.samples_existing,
                  "batches_written": s.batches_written, "batches_existing": s.batches_existing,
                  "pipelines_failed": s.pipelines_failed, "seconds": s.seconds,
                  "samples_per_s": s.samples_written / max(s.seconds, 1e-9),
                  "yield": s.status["ok"] / s.samples_written if s.samples_written else 0.0,
                  "samples_per_core_hour": s.samples_per_core_hour,
                  "plan_s": s.plan_s, "compile_s": s.compile_s, "measure_s": s.measure_s, "wait_s": s.wait_s,
                  **{f"status_{k}": v for k, v in s.status.items()}}
        self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), now, 0) for k, v in values.items()])
        name = f"datagen-{self.target}"
        data = dataset_ref(self.out, self.target)
        if data is not None:
            lineage.log_dataset(self.client, self.run_id, data, "generated")
            name = f"datagen-{self.target}-{data.fingerprint[:8]}"
            self.client.set_tag(self.run_id, "dataset_fingerprint", data.fingerprint)
        self.client.update_run(self.run_id, name=name)
        self.client.set_terminated(self.run_id, "KILLED" if s.interrupted else "FINISHED")
        return name

    def fail(self) -> None:
        self.client.set_terminated(self.run_id, "FAILED")


def dataset_ref(out: Path, target: str):
    """The dataset under `out` for `target` as a train.lineage.DatasetRef: every row written (any status), its
    fingerprint over (sample id, runtime) as train.data.fingerprint computes it; None while nothing is written."""
    import polars as pl

    from train.data import fingerprint
    from train.lineage import DatasetRef

    files = sorted((out / f"target={target}").glob("batch-*.parquet"))
    if not files:
        return None
    df = pl.scan_parquet([str(f) for f in files], hive_partitioning=False).select(
        ["sample_id", "pipeline_id", "runtime_s", "backend"]).collect()
    backend = ",".join(sorted(df.get_column("backend").unique().to_list()))
    fp = fingerprint(target, df.get_column("sample_id").to_list(), df.get_column("runtime_s").fill_null(float("nan"))
                     .to_numpy(), backend)
    return DatasetRef(str(out), fp, target, df.height, df.get_column("pipeline_id").n_unique())


def _param(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (tuple, list)) else str(value)
