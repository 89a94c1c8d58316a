"""The measured-schedule dataset as training batches (halide-autoschedulers.md §5, DESIGN §3.7).

    data = TrainingData.load(DataConfig(path="data", target="host"))
    data.train, data.val            # lists of PipelineBatch: schedules of one pipeline each
    print(data.stats)               # what was read, dropped, merged and split; the dataset fingerprint
    dm = CostModelDataModule(data)  # the same for a Lightning Trainer

Rules, after Halide's trainer:
- a model is trained on ONE backend's runtimes (DataConfig.backend; required when the data holds several):
  records are keyed by (pipeline, schedule, backend, target), and two backends' runtimes are never merged;
- feature shapes come from the FeatureSchema the dataset files record (TrainingData.schema), and
  `check_schema` refuses a model built for another schema;
- only status "ok" rows are learned from (failures are data for the generator's yield, not for a model);
  rows the reader screens out (bad features, absurd runtimes) never arrive here;
- a schedule measured more than once on the backend (same pipeline_id and schedule_id, e.g. in two rounds) is
  one sample with the minimum runtime, the protocol's own estimator of the noise-free time;
- pipelines with fewer than `min_schedules` schedules are skipped: the loss compares schedules of one
  pipeline, so a pipeline with few gives little signal and much noise;
- a batch holds schedules of one pipeline only; a pipeline with more than `batch_size` schedules is split
  into near-equal chunks in schedule-id order (deterministic, and no runt chunk);
- validation is split by a hash of the pipeline id (never by sample, so no pipeline is on both sides, and
  independent of the seed, so a pipeline validated on in one run is never trained on in another).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field

import lightning as L
import numpy as np
import torch

from featurize.dataset import DatasetError, read_dataset
from featurize.schema import CPU_ADAMS2019, FeatureSchema, check_schema

__all__ = ["CostModelDataModule", "DataConfig", "DataStats", "PipelineBatch", "TrainingData", "is_validation"]


@dataclass
class PipelineBatch:
    """All the schedules of one pipeline (or a chunk of them)."""

    pipeline_id: str
    pipeline_features: torch.Tensor  # [S, rows, columns] float32 (the schema's pipeline_shape: 40 x 7)
    schedule_features: torch.Tensor  # [B, S, width] float32 (the schema's schedule_width: 41)
    runtimes: torch.Tensor  # [B] float64 seconds (min over duplicates)
    schedule_ids: list[str]

    def __len__(self) -> int:
        return len(self.schedule_ids)

    def to(self, device) -> PipelineBatch:
        return PipelineBatch(self.pipeline_id, self.pipeline_features.to(device), self.schedule_features.to(device),
                             self.runtimes.to(device), self.schedule_ids)


@dataclass(frozen=True)
class DataConfig:
    path: str
    target: str = "host"
    min_schedules: int = 8
    val_fraction: float = 0.125
    batch_size: int = 64  # most schedules per batch; larger pipelines are chunked
    seed: int = 0  # shuffles training batches per epoch; the split does not depend on it
    backend: str | None = None  # whose runtimes to learn; None: the only backend in the data
    max_spread: float | None = None  # drop labels whose own repeats disagree more (spread = 3rd best / best - 1)
    train_fraction: float = 1.0  # share of the training pipelines kept, by hash: nested subsets (learning curves)
    folds: int = 1  # cross-validation: pipelines fall in `folds` folds by a third hash; with more than one, ...
    fold: int = 0  # ... fold `fold` is the test set, held out of training and validation alike (TrainingData.test)

    def __post_init__(self):
        if self.folds < 1:
            raise DatasetError(f"folds must be >= 1, got {self.folds}")
        if not 0 <= self.fold < self.folds:
            raise DatasetError(f"fold must be in 0..{self.folds - 1} (folds={self.folds}), got {self.fold}")
        if not 0.0 < self.train_fraction <= 1.0:
            raise DatasetError(f"train_fraction must be in (0, 1], got {self.train_fraction}")
        if self.max_spread is not None and not self.max_spread > 0:
            raise DatasetError(f"max_spread must be > 0 (or none), got {self.max_spread}")
        if self.min_schedules < 1:
            raise DatasetError(f"min_schedules must be >= 1, got {self.min_schedules}")
        if not 0.0 <= self.val_fraction < 1.0:
            raise DatasetError(f"val_fraction must be in [0, 1), got {self.val_fraction}")
        if self.batch_size < 1:
            raise DatasetError(f"batch_size must be >= 1, got {self.batch_size}")


def machines_of(files) -> str:
    """`<machine> (N files) | not recorded (M files)`: which machines measured `files`, most files first. Labels of
    two machines do not rank schedules alike (docs/generator.md, "Which machine measured")."""
    from featurize.dataset_stats import machine_counts

    return " | ".join(f"{m or 'not recorded'} ({n} files)" for m, n in machine_counts(files))


@dataclass
class DataStats:
    files: int = 0
    samples_read: int = 0  # rows in the files of the target
    backend: str = ""  # the backend whose runtimes are kept
    other_backends_dropped: int = 0  # rows measured on other backends (never merged with this one's)
    rejected: int = 0  # screened out by the reader (features or runtime unusable)
    failed_dropped: int = 0  # status other than ok
    noisy_dropped: int = 0  # ok, but the label's spread is above max_spread
    duplicates_merged: int = 0  # rows folded into another row of the same schedule
    inconsistent_dropped: int = 0  # stage list differs from the rest of its pipeline's schedules
    pipelines_skipped: int = 0  # fewer than min_schedules distinct ok schedules
    train_pipelines_left_out: int = 0  # training pipelines outside the train_fraction subset
    schedules_skipped: int = 0  # their schedules
    train_pipelines: int = 0
    val_pipelines: int = 0
    train_samples: int = 0
    val_samples: int = 0
    train_batches: int = 0
    val_batches: int = 0
    test_pipelines: int = 0  # the held-out fold's (DataConfig.folds > 1): in neither training nor validation
    test_samples: int = 0
    fingerprint: str = ""
    rejected_reasons: dict[str, int] = field(default_factory=dict)
    machines: str = ""  # which machines measured the files (featurize.dataset.file_machine), with their file counts

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return (f"{self.samples_read} samples read from {self.files} files: backend {self.backend} "
                f"({self.other_backends_dropped} rows of other backends left out), {self.rejected} rejected, "
                f"{self.failed_dropped} failed, {self.noisy_dropped} with a label spread above max_spread, "
                f"{self.duplicates_merged} duplicates merged, "
                f"{self.pipelines_skipped} pipelines skipped (< min schedules)"
                + (f", {self.train_pipelines_left_out} outside train_fraction" if self.train_pipelines_left_out else "")
                + f"; train {self.train_pipelines} "
                f"pipelines / {self.train_samples} samples, validation {self.val_pipelines} / {self.val_samples}"
                + (f", test fold {self.test_pipelines} / {self.test_samples}" if self.test_pipelines else "") + "; "
                f"fingerprint {self.fingerprint}; measured on {self.machines}")


def is_validation(pipeline_id: str, fraction: float) -> bool:
    """Held out iff the pipeline id's hash, as a number in [0, 1), is below `fraction` (Halide holds out
    pipelines whose feature hash & 7 == 0)."""
    return _unit_hash(pipeline_id) < fraction


def in_training_subset(pipeline_id: str, fraction: float) -> bool:
    """Whether a training pipeline is in the `fraction` subset of a learning curve: by a second hash, independent
    of the validation split, so a smaller fraction's pipelines are a subset of a larger one's."""
    return _unit_hash("train-subset:" + pipeline_id) < fraction


def fold_of(pipeline_id: str, folds: int) -> int:
    """The cross-validation fold (0..folds-1) of a pipeline: by a third hash, independent of the validation split
    and of the learning curve's subsets, so the folds partition the pipelines and each fold's remainder is split
    into training and validation as a dataset without folds would be."""
    return min(int(_unit_hash("fold:" + pipeline_id) * folds), folds - 1)


def _unit_hash(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2.0**64


def fingerprint(target: str, ids: list[str], runtimes: np.ndarray, backend: str = "",
                schema: FeatureSchema = CPU_ADAMS2019) -> str:
    """A stable hash of what a model is trained on: the schema version and name, the target, the backend the
    runtimes were measured on and each kept sample's id with its (merged) runtime, in sorted order. It names the
    data's content, not its packing: the same samples in other files, another root or re-compressed give the same
    fingerprint; a new measurement, another backend, a filter setting that drops pipelines, or a re-featurization
    under a new schema give another."""
    h = hashlib.sha256(f"schedlab-dataset\0{schema.version}\0{target}\0".encode())
    h.update(f"{schema.name}\0{backend}\0".encode())
    for sample_id, runtime in sorted(zip(ids, (float(t) for t in runtimes))):
        h.update(f"{sample_id}\0{runtime.hex()}\n".encode())
    return h.hexdigest()[:16]


@dataclass
class TrainingData:
    """The loaded, filtered and split dataset; plain data, no Lightning."""

    config: DataConfig
    train: list[PipelineBatch]
    val: list[PipelineBatch]
    stats: DataStats
    schema: FeatureSchema = CPU_ADAMS2019  # the feature schema of the dataset's files
    test: list[PipelineBatch] = field(default_factory=list)  # the held-out fold (DataConfig.folds > 1), else empty

    def check_schema(self, model_schema: FeatureSchema) -> None:
        """Refuse (one line) to train or evaluate a model built for `model_schema` on this data's features."""
        check_schema(self.schema.name, self.schema.version, model_schema, f"dataset {self.config.path}")

    @staticmethod
    def load(config: DataConfig) -> TrainingData:
        from ir.target import get_target

        target = get_target(config.target).name
        ds = read_dataset(config.path, target)
        stats = DataStats(files=len(ds.files), samples_read=ds.samples.height + ds.rejected.height,
                          rejected=ds.rejected.height, rejected_reasons=_reasons(ds.rejected),
                          machines=machines_of(ds.files))
        samples = _ok_merged(_one_backend(ds.samples, config, stats), stats, config.max_spread)
        stages = _stage_rows(ds.stages, samples, stats)
        samples, stages = _min_schedules(samples, stages, config.min_schedules, stats)
        batches = _batches(samples, stages, config.batch_size, ds.schema)
        test: list[PipelineBatch] = []
        if config.folds > 1:
            test = [b for b in batches if fold_of(b.pipeline_id, config.folds) == config.fold]
            batches = [b for b in batches if fold_of(b.pipeline_id, config.folds) != config.fold]
        train = [b for b in batches if not is_validation(b.pipeline_id, config.val_fraction)]
        val = [b for b in batches if is_validation(b.pipeline_id, config.val_fraction)]
        if config.train_fraction < 1.0:
            kept = [b for b in train if in_training_subset(b.pipeline_id, config.train_fraction)]
            stats.train_pipelines_left_out = len({b.pipeline_id for b in train} - {b.pipeline_id for b in kept})
            train = kept
        _count(stats, train, val)
        stats.test_pipelines, stats.test_samples = len({b.pipeline_id for b in test}), sum(len(b) for b in test)
        stats.fingerprint = fingerprint(target, samples["sample_id"].to_list(), samples["runtime_s"].to_numpy(),
                                        stats.backend, ds.schema)
        _check_size(config, stats)
        return TrainingData(config, train, val, stats, ds.schema, test)


def _reasons(rejected) -> dict[str, int]:
    return {r: int(n) for r, n in rejected.group_by("reason").len().iter_rows()} if rejected.height else {}


def _one_backend(samples, config: DataConfig, stats: DataStats):
    """The rows of the one backend the model learns: config.backend, or the data's only backend."""
    import polars as pl

    backends = sorted(samples["backend"].unique().to_list())
    backend = config.backend
    if backend is None:
        if len(backends) > 1:
            raise DatasetError(f"{config.path} holds runtimes of backends {', '.join(backends)}; name the one to "
                               "train on (backend=...): runtimes of two backends are never pooled")
        backend = backends[0] if backends else ""
    elif backend not in backends:
        raise DatasetError(f"{config.path} has no runtimes of backend {backend!r}; it has "
                           f"{', '.join(backends) or 'none'}")
    mine = samples.filter(pl.col("backend") == backend)
    stats.backend, stats.other_backends_dropped = backend, samples.height - mine.height
    return mine


def _ok_merged(samples, stats: DataStats, max_spread: float | None = None):
    """Rows with status ok whose label spread is at most `max_spread` (a row without a recorded spread is kept),
    one per (pipeline, schedule) with the minimum runtime; `samples` hold one backend's rows, so the merge never
    crosses backends."""
    import polars as pl

    assert samples["backend"].n_unique() <= 1, "runtimes of two backends must not be merged"
    from ir.status import Status

    ok = samples.filter(pl.col("status") == Status.OK)
    stats.failed_dropped = samples.height - ok.height
    if max_spread is not None:
        clean = ok.filter(~(pl.col("spread").fill_nan(None).fill_null(0.0) > max_spread))
        stats.noisy_dropped = ok.height - clean.height
        ok = clean
    merged = (ok.group_by("sample_id")
              .agg(pl.col("pipeline_id").first(), pl.col("schedule_id").first(), pl.col("runtime_s").min())
              .sort("sample_id"))
    stats.duplicates_merged = ok.height - merged.height
    return merged


def _stage_rows(stages, samples, stats: DataStats):
    """One row per (kept sample, stage), ordered by pipeline, schedule and stage; a schedule whose stage list
    is not the one most of its pipeline's schedules have is dropped (its features would not line up)."""
    import polars as pl

    st = (stages.join(samples.select("sample_id"), on="sample_id", how="semi")
          .unique(subset=["sample_id", "stage_pos"], keep="first")  # duplicates: the same schedule, same features
          .sort(["pipeline_id", "schedule_id", "stage_pos"]))
    sig = (st.group_by("sample_id", maintain_order=True)
           .agg(pl.col("pipeline_id").first(),
                pl.concat_str([pl.col("func"), pl.col("stage_index").cast(pl.String)], separator=".")
                .str.join(",").alias("signature")))
    common = (sig.group_by(["pipeline_id", "signature"]).len()
              .sort(["pipeline_id", "len", "signature"], descending=[False, True, False])
              .unique(subset="pipeline_id", keep="first", maintain_order=True))
    good = sig.join(common.select(["pipeline_id", "signature"]), on=["pipeline_id", "signature"], how="semi")
    stats.inconsistent_dropped = samples.height - good.height
    return st.join(good.select("sample_id"), on="sample_id", how="semi")


def _min_schedules(samples, stages, minimum: int, stats: DataStats):
    import polars as pl

    samples = samples.join(stages.select("sample_id").unique(), on="sample_id", how="semi")
    counts = samples.group_by("pipeline_id").len()
    keep = counts.filter(pl.col("len") >= minimum).select("pipeline_id")
    stats.pipelines_skipped = counts.height - keep.height
    stats.schedules_skipped = int(counts.filter(pl.col("len") < minimum)["len"].sum())
    samples = samples.join(keep, on="pipeline_id", how="semi").sort(["pipeline_id", "schedule_id"])
    return samples, stages.join(keep, on="pipeline_id", how="semi")


def _batches(samples, stages, batch_size: int, schema: FeatureSchema) -> list[PipelineBatch]:
    """PipelineBatches in (pipeline id, chunk) order. `samples` and `stages` are sorted alike, so each
    pipeline is a contiguous block of both."""
    import polars as pl

    width = schema.schedule_width
    sched = stages.select([f"s_{n}" for n in schema.schedule_names]).to_numpy().astype(np.float32, copy=False)
    n_stages = stages.group_by("sample_id", maintain_order=True).len()["len"].to_numpy()
    runtimes = samples["runtime_s"].to_numpy().astype(np.float64)
    ids = samples["schedule_id"].to_list()
    per_pipeline = samples.group_by("pipeline_id", maintain_order=True).len()
    first_row = stages.with_row_index("_row").group_by("pipeline_id", maintain_order=True).agg(pl.col("_row").first())
    out, s0, r0 = [], 0, 0
    for (pid, count), (_, row) in zip(per_pipeline.iter_rows(), first_row.iter_rows()):
        s = int(n_stages[s0])
        pf = _pipeline_features(stages, row, s, schema.pipeline_shape)
        block = torch.from_numpy(sched[r0:r0 + count * s].reshape(count, s, width).copy())
        rt = torch.from_numpy(runtimes[s0:s0 + count].copy())
        for part in np.array_split(np.arange(count), math.ceil(count / batch_size)):
            a, b = int(part[0]), int(part[-1]) + 1
            out.append(PipelineBatch(pid, pf, block[a:b], rt[a:b], ids[s0 + a:s0 + b]))
        s0, r0 = s0 + count, r0 + count * s
    return out


def _pipeline_features(stages, row: int, n: int, shape: tuple[int, int]) -> torch.Tensor:
    """[n, rows, columns] (40 x 7 for cpu-adams2019) from the stage rows of one schedule (they are
    schedule-independent)."""
    flat = stages["pipeline_features"].slice(row, n).explode().to_numpy().astype(np.float32)
    return torch.from_numpy(flat.reshape(n, *shape))


def _count(stats: DataStats, train: list[PipelineBatch], val: list[PipelineBatch]) -> None:
    stats.train_pipelines = len({b.pipeline_id for b in train})
    stats.val_pipelines = len({b.pipeline_id for b in val})
    stats.train_samples = sum(len(b) for b in train)
    stats.val_samples = sum(len(b) for b in val)
    stats.train_batches, stats.val_batches = len(train), len(val)


def _check_size(config: DataConfig, stats: DataStats) -> None:
    n = stats.train_pipelines + stats.val_pipelines
    if stats.train_pipelines and (stats.val_pipelines or config.val_fraction == 0):
        return
    raise DatasetError(
        f"{config.path}: too small to train on: {n} pipelines with >= {config.min_schedules} ok schedules "
        f"({stats.train_pipelines} for training, {stats.val_pipelines} for validation at val_fraction "
        f"{config.val_fraction:g}); generate more pipelines (python -m generator.datagen) or lower min_schedules")


class _Batches(torch.utils.data.Dataset):
    def __init__(self, batches: list[PipelineBatch]):
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, i: int) -> PipelineBatch:
        return self.batches[i]


class EpochShuffle(torch.utils.data.Sampler):
    """A permutation per epoch drawn from (seed, epoch): reproducible, and the same after a resume, because
    Lightning calls set_epoch before each epoch; without it, each pass counts as the next epoch."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        self.epoch += 1
        return iter(torch.randperm(self.n, generator=g).tolist())


def _one(item: PipelineBatch) -> PipelineBatch:
    return item


class CostModelDataModule(L.LightningDataModule):
    """TrainingData for a Lightning Trainer: each item is one PipelineBatch (batch_size=None)."""

    def __init__(self, data: TrainingData | DataConfig):
        super().__init__()
        self.config = data.config if isinstance(data, TrainingData) else data
        self.data = data if isinstance(data, TrainingData) else None
        self.save_hyperparameters({f"data_{k}": v for k, v in asdict(self.config).items()})

    def setup(self, stage: str | None = None) -> None:
        if self.data is None:
            self.data = TrainingData.load(self.config)

    def _loaded(self) -> TrainingData:
        self.setup()
        assert self.data is not None
        return self.data

    def train_dataloader(self):
        batches = self._loaded().train
        return torch.utils.data.DataLoader(_Batches(batches), batch_size=None, collate_fn=_one,
                                           sampler=EpochShuffle(len(batches), self.config.seed))

    def val_dataloader(self):
        return torch.utils.data.DataLoader(_Batches(self._loaded().val), batch_size=None, collate_fn=_one,
                                           shuffle=False)

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        return batch.to(device) if isinstance(batch, PipelineBatch) else super().transfer_batch_to_device(
            batch, device, dataloader_idx)
