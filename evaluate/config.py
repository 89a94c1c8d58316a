"""The configs of the two evaluate commands: flat frozen dataclasses, read from `conf/evaluate.yaml` and
`conf/evaluate_apps.yaml` with key=value overrides (ir.config.load_config)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from backends.protocols import ProtocolName
from ir.errors import SchedlabError
from ir.progress import ProgressSetting
from train.config import TrainConfig

ALGORITHMS = ("greedy", "beam", "hierarchical")  # the searches evaluate.apps runs under the chosen model
BASELINES = ("expert", "random", "random_weights")  # besides naive, which is always measured (the denominator)
Algorithm = str  # a registered search strategy (scheduler.strategy): greedy, beam, hierarchical, polymage-dp, ...
Baseline = Literal["expert", "random", "random_weights"]
HALIDE_AUTOSCHEDULERS = ("Adams2019", "Mullapudi2016")  # Halide's own searches evaluate.apps compares against
HalideAutoscheduler = Literal["Adams2019", "Mullapudi2016", "Li2018"]
MatchedBudget = Literal["evaluations", "seconds"]  # what MCTS is given of beam's own search, per app


class EvaluateError(SchedlabError):
    """Input an evaluation cannot use (no data, an empty split, an unknown app); the message says what to fix."""


@dataclass(frozen=True)
class EvalConfig:
    """python -m evaluate: ranking metrics of one cost model on held-out pipelines."""

    model: str = "champion"  # champion (models:/schedlab-<target>@champion), any train.registry URI or path, random:<seed>
    data: str = "data"  # dataset root (holds target=<name>/batch-*.parquet), or several comma-separated
    target: str = "host"  # dataset partition (and the registered model champion names)
    split: Literal["val", "all"] = "val"  # val: the pipelines training held out; all: every pipeline of `data`
    val_fraction: float = TrainConfig.val_fraction  # must be the value the model was trained with
    min_schedules: int = TrainConfig.min_schedules  # pipelines with fewer ok schedules are skipped, as in training
    max_spread: float | None = TrainConfig.max_spread  # labels noisier than this are skipped, as in training
    max_k: int = 32  # the top-k curve runs k = 1..max_k (at most the largest pipeline's schedule count)
    tracking_uri: str | None = None  # MLflow tracking URI (none: $MLFLOW_TRACKING_URI, else the per-user store, train.registry)
    experiment: str = "schedlab-evaluate"  # MLflow experiment of the run
    run_name: str | None = None  # MLflow run name (none: MLflow picks one)
    progress: ProgressSetting = "auto"  # auto: a bar on a terminal, lines elsewhere; bar | lines | false

    def __post_init__(self):
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {self.val_fraction}")
        for name in ("min_schedules", "max_k"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class AppsConfig:
    """python -m evaluate.apps: searched schedules of the app suite against baselines, measured."""

    apps: tuple[str, ...] = ()  # names from generator.apps; empty: every app
    size: Literal["small", "full"] = "full"  # app sizes: full (the benchmark's) or small (quick)
    target: str = "host"  # host, or a conf/targets/<name>.yaml target
    model: str = "champion"  # the cost model the searches use: champion, analytical, random:<seed>, any URI or path
    algorithms: tuple[Algorithm, ...] = ALGORITHMS  # search strategies run with the model (scheduler.strategy)
    # more cost models whose searches (the same algorithms) are rows too, named <algorithm>:<model as given>, so a
    # learned model and the analytical one are compared in one run: compare_models=[analytical]
    compare_models: tuple[str, ...] = ()
    beam_size: int = 8  # beam and hierarchical
    passes: int = 2  # coarse-to-fine passes of beam and hierarchical
    seed: int = 0  # seeds the searches, the random schedules and the random weights
    baselines: tuple[Baseline, ...] = BASELINES  # measured besides naive (always measured, the denominator)
    random_schedules: int = 8  # the random baseline: the median runtime of this many random schedules
    backend: Literal["numba", "llvm", "halide"] = "numba"  # compiles and measures every row (halide: no <m>@halide twins)
    mcts_budget: int = 2000  # mcts and mcts-real: cost-model evaluations (states scored)
    # MCTS again at beam's own budget of each app: evaluations = as many states scored as beam, seconds = the
    # same wall-clock as beam's search (rows mcts=beam-evaluations, mcts=beam-seconds; needs beam in algorithms)
    mcts_matched: tuple[MatchedBudget, ...] = ()
    # schedules top-k, mcts-real and autotune measure while searching (autotune: its base result, then 2 rounds
    # of (measurements - 1) // 2 dropout samples), with the rows' backend
    measurements: int = 8
    protocol: ProtocolName = "full"  # backends.PROTOCOLS; "default" = full
    # interleaved: an app's schedules (every row's, Halide's included) are searched and compiled first, then timed
    # together in rounds (backends.run_interleaved), so drift of the machine moves them alike and their ratios
    # repeat; sequential: each method's schedules timed as its search ends, one after another
    measurement: Literal["interleaved", "sequential"] = "interleaved"
    # seconds one row's measurement may take, output check included: the full protocol runs a schedule at least
    # 5 times, and naive lens_blur at full size runs 11 s (the protocol's own 60 s timed it out)
    measure_timeout: float = 600.0
    # also compile naive, expert and the searched LoopNests with Halide, and run Halide's autoschedulers:
    # auto = when the halide package is installed; true = required (an error without it); false = never
    halide: bool | Literal["auto"] = "auto"
    halide_autoschedulers: tuple[HalideAutoscheduler, ...] = HALIDE_AUTOSCHEDULERS  # Halide's own searches compared with halide on
    tracking_uri: str | None = None  # MLflow tracking URI (none: the embedded SQLite store .cache/mlflow/mlflow.db)
    experiment: str = "schedlab-evaluate-apps"  # MLflow experiment of the run
    run_name: str | None = None  # MLflow run name (none: MLflow picks one)
    progress: ProgressSetting = "auto"  # auto: a bar on a terminal, a line per schedule elsewhere; bar | lines | false
    # an earlier (interrupted) run's id: the apps it finished are taken from its apps.csv and only the rest are
    # measured, into a new run (params resume, resumed_apps); refused unless its settings equal these
    resume: str | None = None
    # a directory (created if missing; commit it to go on elsewhere) where the run keeps its rows after every
    # method; a run given it again measures only what is missing there (evaluate.checkpoint)
    checkpoint: str | None = None

    def __post_init__(self):
        for name in ("beam_size", "passes", "random_schedules", "mcts_budget"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.measure_timeout > 0:
            raise ValueError(f"measure_timeout must be > 0 seconds, got {self.measure_timeout}")
        from scheduler.strategy import get_strategy

        for a in self.algorithms:
            get_strategy(a)  # a one-line error listing the registered strategies
        if self.measurements < 3:
            raise ValueError(f"measurements must be >= 3 (autotune's base result and a sample per round), "
                             f"got {self.measurements}")
        if self.mcts_matched and "beam" not in self.algorithms:
            raise ValueError("mcts_matched gives MCTS beam's budget: add beam to algorithms")
        if self.resume and self.checkpoint:
            raise ValueError("give resume= (an MLflow run) or checkpoint= (a directory), not both")
        if self.halide not in (True, False, "auto"):
            raise ValueError(f"halide must be auto, true or false, got {self.halide!r}")
        if self.compare_models and not self.algorithms:
            raise ValueError("compare_models searches with the algorithms: give at least one in algorithms")
        if self.model in self.compare_models:
            raise ValueError(f"compare_models lists {self.model}, the model of the main rows; list the others")
        for name in ("apps", "algorithms", "compare_models", "baselines", "halide_autoschedulers", "mcts_matched"):
            values = getattr(self, name)
            if len(set(values)) != len(values):
                raise ValueError(f"{name} lists a value twice: {', '.join(values)}")


def run_command(prog: str, description: str, config_cls, default_config: str, evaluate, argv=None) -> int:
    """Both commands' shape, as python -m train's (ir.config.run_cli): run `evaluate` on the config, print its
    summary; a SchedlabError is one line on stderr and exit status 2, an interrupt exit status 130."""
    import sys

    from ir.config import run_cli

    def run(cfg) -> int:
        try:
            result = evaluate(cfg)
        except KeyboardInterrupt:
            print(f"{prog}: interrupted; the MLflow run is marked FAILED and keeps what was logged", file=sys.stderr)
            return 130
        print(result.summary())
        return 0

    return run_cli(config_cls, run, argv, prog, description, default_config=default_config)
