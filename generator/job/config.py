"""The data-generation job's config: `conf/datagen.yaml` with key=value overrides (ir.config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from backends.protocols import ProtocolName
from generator.random_pipeline import DEFAULT_MOTIF_KINDS, MixWeights
from ir.progress import ProgressSetting
from train.config import LossName, ModelKind

FAULT_KINDS = ("crash", "hang", "die")


@dataclass(frozen=True)
class Fault:
    """A failure injected into one sample, to test that it becomes a status row (config key `faults`):
    crash — the benchmarked kernel aborts its process; hang — it never returns; die — the Ray worker
    compiling it exits (retried, then recorded as worker_died)."""

    kind: str
    seed: int  # pipeline seed
    index: int  # sample index in the pipeline's batch

    @staticmethod
    def parse(text: str) -> tuple[Fault, ...]:
        faults = []
        for item in (t.strip() for t in text.split(",")):
            if not item:
                continue
            kind, *rest = item.split(":")
            if kind not in FAULT_KINDS or len(rest) != 2 or not all(r.isdigit() for r in rest):
                raise ValueError(f"fault {item!r} must be KIND:SEED:INDEX with KIND one of {', '.join(FAULT_KINDS)}")
            faults.append(Fault(kind, int(rest[0]), int(rest[1])))
        return tuple(faults)


@dataclass(frozen=True)
class RoundTraining:
    """Training between rounds (bootstrapping, adams2019 §5): on everything written so far, registered as a
    new version of schedlab-<target>, which samples the next round."""

    enabled: bool = True  # train a model between rounds (false: every round samples with the same model)
    model: ModelKind = "hybrid"  # train's model
    loss: LossName = "relative_throughput"  # train's loss
    epochs: int = 30  # train's epochs
    lr: float = 1e-3  # train's learning rate
    weight_decay: float = 0.0  # train's weight decay
    min_schedules: int = 8  # train's min_schedules: pipelines with fewer are skipped
    val_fraction: float = 0.125  # train's share of pipelines held out for validation
    max_spread: float | None = 0.25  # train's max_spread: labels whose own repeats disagree more are dropped
    promote: bool = True  # move the champion alias when the new version beats every baseline (train.promotion)
    promotion: Literal["baselines", "always"] = "baselines"  # train's promotion rule
    experiment: str = "schedlab-datagen"  # MLflow experiment of the training runs


@dataclass(frozen=True)
class JobConfig:
    target: str = "host"  # host, or a conf/targets/<name>.yaml target; the dataset partition
    backend: Literal["numba", "llvm", "halide"] = "llvm"  # what compiles the schedules (llvm: 1.40x Halide's valid
    #   samples per core-hour at the default sizes, Halide 2.4x numba's, benchmarks/datagen_throughput.py)
    rounds: int = 2  # data-generation rounds, a model trained after each
    pipelines_per_round: int = 12  # random pipelines generated per round
    schedules_per_pipeline: int = 16  # one beam-search sample + random-dropout samples (adams2019 §5)
    seed: int = 0  # round r's pipeline i is random pipeline seed + r * pipelines_per_round + i
    max_stages: int = 20  # most stages of a random pipeline, input and output included (>= 3)
    output_size: tuple[int, int, int] = (2000, 2000, 3)  # W,H,C of the random pipelines' outputs (the largest
    #   with naive_runtime)
    naive_runtime: tuple[float, float] | None = (0.005, 1.0)  # LO,HI seconds: scale each output (aspect kept) so the
    #   estimated naive runtime is a log-uniform draw from [LO, HI] (generator.sizing); none: output_size as given
    markov: bool = False  # draw stage kinds from the GPU variant's Markov transition matrix (generator.random_pipeline)
    mix_weights: MixWeights = "indices"  # where channel mixes get their weights: computed from the channel indices
    #   (Halide's generator) or read from an input, as layers' are (generator.random_pipeline.MIX_WEIGHTS)
    motifs: float = 0.0  # chance that a stage slot draws an app-like motif (of motif_kinds) instead of one random
    #   stage (generator.random_pipeline.MOTIFS); 0 is Halide's generator and keeps the batch names
    motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS  # the motifs a slot draws from (random_pipeline.MOTIFS:
    #   pyramid, stencil_chain, conv_layer, depthwise_separable, max_filter); the default keeps the batch names
    beam_size: int = 8  # beam width of the beam-search sample
    passes: int = 2  # coarse-to-fine passes of the beam-search sample
    dropout: float = 1.0  # % chance that a dropout sample is the fully greedy schedule (HL_RANDOM_DROPOUT)
    baselines: tuple[str, ...] = ()  # generator.batch.BASELINES planned before the beam sample (naive, simple)
    random_fill: bool = False  # random schedules (ir.sampling) when beam + dropout find too few distinct ones
    first_sampler: str = "random"  # what samples round 0: random (random weights, as adams2019 §5 starts), analytical
    #   or analytical:N (a prior: beam samples worth contrasting), builtin[:name] (a shipped model: its own picks
    #   measured), or a registered models:/... version
    rivals: tuple[str, ...] = ()  # cost models by registered name (analytical, builtin:host-halide, ...) whose beam
    #   picks are planned right after the sampler's, so a model learns where its own picks lose to another model's
    contrasts: int = 0  # one-decision contrasts of the beam sample (generator.contrast: a parallel level run
    #   serially, a Func inlined, SIMD or unrolling off), planned after it in place of dropout samples; 0 keeps the batch names
    contrast_kinds: tuple[str, ...] = ("serial", "inline", "scalar", "rolled")  # the contrasts' kinds, taken in turn
    #   (generator.contrast.KINDS; add compute: an inlined Func computed); the default keeps the batch names
    protocol: ProtocolName = "full-ordered"  # backends.PROTOCOLS ("default" = full); full: labels agree on 0.87 of
    #   pairs in two job runs, quick on 0.80, at the same wall time; full-retire: settled kernels leave the interleaved
    #   rounds; full-ordered (the default since 2026-12-05): a kernel leaves them once its order with the block's others
    #   is settled, 1.26-1.31x the throughput of full, the same agreement over pairs >= 10 % apart (docs/generator.md)
    measurement: Literal["interleaved", "sequential"] = "interleaved"  # generator.batch.MEASUREMENTS: a pipeline's
    #   schedules timed together in rounds (their order repeats from run to run), or one after another
    compile_timeout: float = 600.0  # seconds per compilation (adams2019 §5: a 10-minute kill)
    benchmark_timeout: float = 60.0  # seconds per measurement, output check included
    check_outputs: bool = True  # every schedule's output against the reference interpreter
    out: str = "data"  # dataset root: batches go to <out>/target=<name>/batch-<id>.parquet
    tracking_uri: str | None = None  # none: $MLFLOW_TRACKING_URI, else the per-user store (train.registry)
    ray_address: str | None = None  # none: the cluster of `ray job submit` (RAY_ADDRESS), else a local one
    num_cpus: int | None = None  # CPUs of a local cluster (none: all)
    benchmark_cpus: float | None = None  # CPUs reserved for a node's benchmarking actor (its measurements run one at a
    #   time); none: 0 with quiet_measurement, whose lock keeps a measurement alone on its node (a reserved CPU idled
    #   between measurements: 1.34x valid samples per core-hour on 2 cores, docs/generator.md), else 1
    quiet_measurement: bool = True  # a measurement waits for the node's planning and compiling and runs alone
    max_retries: int = 2  # a Ray worker that dies is retried this often, then its samples are worker_died
    in_flight: int = 0  # batches under way at once (0: twice the cluster's CPUs)
    kernel_cache_gb: float | None = 20.0  # each node's compiled-kernel cache is pruned to this before the job, least recently used first (none: never)
    train: RoundTraining = field(default_factory=RoundTraining)
    faults: str = ""  # testing: KIND:SEED:INDEX,... (see Fault)
    progress: ProgressSetting = "auto"  # auto: a bar on a terminal, a line per sample elsewhere; bar | lines | false

    def __post_init__(self):
        for name in ("rounds", "pipelines_per_round", "schedules_per_pipeline", "max_stages", "beam_size", "passes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_stages < 3:
            raise ValueError(f"max_stages must be >= 3, got {self.max_stages}")
        if len(self.output_size) != 3 or min(self.output_size) < 1:
            raise ValueError(f"output_size must be three positive ints, got {self.output_size}")
        from generator.sizing import check_naive_runtime

        object.__setattr__(self, "naive_runtime", check_naive_runtime(self.naive_runtime))
        if not 0 < self.dropout <= 100:
            raise ValueError(f"dropout must be a percentage in (0, 100], got {self.dropout}")
        from generator.batch import check_contrasts, normal_contrast_kinds

        check_contrasts(self.contrasts, self.schedules_per_pipeline)
        normal_contrast_kinds(self.contrast_kinds)
        s = self.first_sampler
        if not (s in ("random", "analytical", "builtin") or s.startswith(("analytical:", "builtin:", "models:/"))):
            raise ValueError(f"first_sampler must be random, analytical[:N], builtin[:name] or models:/<name>/<version>, "
                             f"got {s!r}")
        for name in ("compile_timeout", "benchmark_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0 seconds, got {getattr(self, name)}")
        if self.benchmark_cpus is None:
            object.__setattr__(self, "benchmark_cpus", 0.0 if self.quiet_measurement else 1.0)
        if self.max_retries < 0 or self.in_flight < 0 or self.benchmark_cpus < 0:
            raise ValueError("max_retries, in_flight and benchmark_cpus must be >= 0")
        if self.kernel_cache_gb is not None and not self.kernel_cache_gb > 0:
            raise ValueError(f"kernel_cache_gb must be > 0 (or none: never prune), got {self.kernel_cache_gb}")
        if self.num_cpus is not None and self.num_cpus < 1:
            raise ValueError(f"num_cpus must be >= 1, got {self.num_cpus}")
        if not self.out:
            raise ValueError("out must name the dataset directory")
        Fault.parse(self.faults)
        from generator.batch import get_baseline

        for name in self.baselines:
            get_baseline(name)
        from generator.batch import check_rivals

        object.__setattr__(self, "rivals", check_rivals(self.rivals))
        from generator.random_pipeline import check_motif_kinds, check_motifs

        object.__setattr__(self, "motifs", check_motifs(self.motifs))
        object.__setattr__(self, "motif_kinds", check_motif_kinds(self.motif_kinds))

    @property
    def fault_list(self) -> tuple[Fault, ...]:
        return Fault.parse(self.faults)

    def pipeline_seeds(self, round_: int) -> range:
        start = self.seed + round_ * self.pipelines_per_round
        return range(start, start + self.pipelines_per_round)
