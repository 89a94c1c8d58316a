"""Built-in cost models: a registered version exported as plain data into the source tree, so that a search has a
learned model before its user trains one (as Halide ships Adams2019's weights).

    python -m train.builtin model=models:/schedlab-host/3          # -> train/builtin_models/host-halide/

A built-in model is a directory `<target>-<backend>/` holding `config.json` and `state_dict.pt` (the checkpoint
format of registered versions: JSON + tensors, loaded with weights_only) and `lineage.json`: the version it came
from and that version's tags (target, backend, dataset fingerprint and size, the split it was validated on, its
validation metrics). `scheduler.cost` loads it as `model=builtin`, and `model=champion` falls back to it when the
user's store has no champion; a champion of the user's own always takes precedence.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ir.errors import SchedlabError

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin_models"
REPO = Path(__file__).resolve().parent.parent
BUILTIN_ENV = "SCHEDLAB_BUILTIN_MODELS"  # another directory of built-in models (a site's own; tests)
LINEAGE = "lineage.json"
PROG = "python -m train.builtin"


class BuiltinError(SchedlabError):
    """A built-in model that is missing, or an export that would overwrite one."""


@dataclass(frozen=True)
class BuiltinModel:
    """One built-in model directory and what its lineage says about it."""

    path: Path
    target: str
    backend: str
    source: str  # the registered version it was exported from, e.g. models:/schedlab-host/3
    tags: dict[str, str]  # that version's tags, verbatim
    dataset_path: str = ""  # the `data=` its training read, relative to the repository when inside it
    training_params: tuple[tuple[str, str], ...] = ()  # the training run's params (lineages written since 2026-11-29)

    @property
    def name(self) -> str:
        return f"builtin:{self.path.name}"

    def train_command(self) -> str:
        """The `python -m train` line that rebuilds this model from its dataset (training is seeded): the keys of
        conf/train.yaml whose values the run logged ('' when the lineage predates training_params)."""
        from .config import TrainConfig

        keys = {f.name for f in dataclasses.fields(TrainConfig)} - {"tracking_uri", "checkpoint_dir", "progress",
                                                                      "run_name", "resume", "promote", "register"}
        args = [f"{k}={v}" for k, v in self.training_params if k in keys and v != "None"]
        return f"python -m train {' '.join(args)}" if args else ""


def read_builtin(path: Path) -> BuiltinModel:
    """The built-in model stored in directory `path` (one line naming the missing file otherwise)."""
    lineage = path / LINEAGE
    if not (path / "config.json").is_file() or not lineage.is_file():
        raise BuiltinError(f"{path} is not a built-in cost model (it needs config.json, state_dict.pt and {LINEAGE}; "
                           f"write one with {PROG} model=<registered version>)")
    data = json.loads(lineage.read_text())
    tags = {str(k): str(v) for k, v in data.get("tags", {}).items()}
    params = tuple((str(k), str(v)) for k, v in sorted(data.get("training_params", {}).items()))
    return BuiltinModel(path, tags.get("target", ""), tags.get("backend", ""), str(data.get("source", "")), tags,
                        str(data.get("dataset_path", "")), params)


def dataset_of(model: BuiltinModel) -> str | None:
    """The dataset a built-in model was trained on, when it is here: the lineage's `data=` with each of its
    comma-separated datasets made absolute (a path in the lineage is relative to the repository when the data lives
    in it, as the committed datasets/ do); None when any of them is missing."""
    from featurize.dataset import dataset_roots

    if not model.dataset_path:
        return None
    paths = [d if d.is_absolute() else REPO / d for d in dataset_roots(model.dataset_path)]
    return ",".join(map(str, paths)) if all(p.is_dir() for p in paths) else None


def builtin_dir() -> Path:
    """Where built-in models are read from and exported to: $SCHEDLAB_BUILTIN_MODELS, else train/builtin_models."""
    return Path(os.environ[BUILTIN_ENV]).expanduser() if os.environ.get(BUILTIN_ENV) else BUILTIN_DIR


def builtin_models(directory: Path | None = None) -> list[BuiltinModel]:
    """Every built-in model in `directory` (default builtin_dir()), by name."""
    directory = builtin_dir() if directory is None else directory
    if not directory.is_dir():
        return []
    return [read_builtin(p) for p in sorted(directory.iterdir()) if (p / LINEAGE).is_file()]


def find_builtin(target: str, backend: str | None = None, directory: Path | None = None) -> BuiltinModel | None:
    """The built-in model of `target` that learned `backend`'s runtimes (backend None: the target's only one, or
    its Halide one when there are several); None when none is shipped."""
    found = [m for m in builtin_models(directory) if m.target == target and (backend is None or m.backend == backend)]
    if len(found) > 1:
        found.sort(key=lambda m: m.backend != "halide")
    return found[0] if found else None


def export_builtin(model: str, tracking: str | None = None, out: Path | None = None, replace: bool = False
                   ) -> BuiltinModel:
    """Write the registered version behind `model` (models:/<name>/<version> or @alias) as a built-in model into
    `out` (default builtin_dir()/<target>-<backend>). An existing directory is kept unless replace=True."""
    from .registry import _download, _resolve_registered, _version_tags, load_cost_model, store_exists, tracking_uri

    if not model.startswith("models:/") or model.startswith("models:/m-"):
        raise BuiltinError(f"model={model}: give a registered version, models:/<name>/<version> or "
                           "models:/<name>@<alias> (its tags are the built-in model's lineage)")
    store = tracking_uri(tracking)
    if not store_exists(store):
        raise BuiltinError(f"no MLflow store at {store}: give tracking_uri=<uri> or set MLFLOW_TRACKING_URI")
    version = _resolve_registered(model, store)
    tags = {k: v for k, v in (_version_tags(version, store) or {}).items()
            if not k.startswith("last_run.")}  # pointers into the exporting user's store mean nothing elsewhere
    if "target" not in tags or "backend" not in tags:
        raise BuiltinError(f"{version} records no target/backend tags (registered by an older schedlab): retrain it")
    load_cost_model(version, store)  # refuses another feature schema version before anything is written
    dest = Path(out) if out is not None else builtin_dir() / f"{tags['target']}-{tags['backend']}"
    if dest.exists() and not replace:
        raise BuiltinError(f"{dest} exists (built from {_source_of(dest)}): pass replace=true to overwrite it")
    with tempfile.TemporaryDirectory() as tmp:
        local = _download(version, version, store, tmp)
        checkpoint = next(p for p in (local / "data" / "checkpoint", local / "checkpoint", local)
                          if (p / "config.json").is_file())
        staged = Path(tmp) / "staged"
        staged.mkdir()
        for name in ("config.json", "state_dict.pt"):
            shutil.copyfile(checkpoint / name, staged / name)
        params = _training_params(version, store)
        if params.get("data"):  # one dataset or several, comma-separated (train's data=)
            from featurize.dataset import dataset_roots

            params["data"] = ",".join(_relative(str(d)) for d in dataset_roots(params["data"]))
        lineage = {"source": version, "given_as": model, "store": store, "dataset_path": params.get("data", ""),
                   "training_params": params,
                   "exported": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   "schedlab_commit": _commit(), "tags": dict(sorted(tags.items()))}
        (staged / LINEAGE).write_text(json.dumps(lineage, indent=1) + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staged, dest)
    return read_builtin(dest)


def _training_params(version: str, store: str) -> dict[str, str]:
    """The params of the run that trained `version` (its `python -m train` keys: what rebuilds it from the data)."""
    from .registry import _client

    name, _, number = version[len("models:/"):].partition("/")
    client = _client(store)
    run_id = client.get_model_version(name, number).run_id
    return dict(sorted(client.get_run(run_id).data.params.items())) if run_id else {}


def _relative(data: str) -> str:
    """A dataset path relative to the repository when inside it (the committed datasets/), else absolute."""
    if not data:
        return ""
    path = Path(data).expanduser().resolve()
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def _source_of(path: Path) -> str:
    try:
        return read_builtin(path).source or "unknown"
    except (BuiltinError, ValueError):
        return "unknown"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@dataclass(frozen=True)
class ExportConfig:
    model: str = ""  # the registered version to ship: models:/schedlab-<target>/<version> or @<alias>
    tracking_uri: str | None = None  # MLflow tracking URI (none: $MLFLOW_TRACKING_URI, else the per-user store)
    out: str | None = None  # the directory to write (none: <$SCHEDLAB_BUILTIN_MODELS or train/builtin_models>/<target>-<backend>)
    replace: bool = False  # overwrite an existing built-in model of that target and backend


def main(argv=None) -> int:
    """Exports a registered cost model version as schedlab's built-in model of its target and backend
    (config.json + state_dict.pt + lineage.json), the model `model=builtin` loads and `model=champion` falls
    back to while the user's store has no champion."""
    from ir.config import run_cli

    return run_cli(ExportConfig, _run, argv, PROG, main.__doc__)


def _run(cfg: ExportConfig) -> int:
    if not cfg.model:
        raise BuiltinError("give model=models:/schedlab-<target>/<version> (the registered version to ship)")
    m = export_builtin(cfg.model, cfg.tracking_uri, Path(cfg.out) if cfg.out else None, cfg.replace)
    metrics = ", ".join(f"{k[4:]} {float(v):.3f}" for k, v in sorted(m.tags.items())
                        if k.startswith("val_") and k[4:] in ("pairwise_accuracy", "top1_score", "kendall_tau"))
    print(f"built-in model {m.name} (target {m.target}, backend {m.backend}) written to {m.path} from {m.source}"
          f" (dataset {m.tags.get('dataset_fingerprint', '?')}, {m.tags.get('dataset_samples', '?')} samples"
          f"{'; validation ' + metrics if metrics else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
