"""Cost models in MLflow: log, register as `schedlab-<target>`, promote to `champion`, load back.

    from train.registry import log_and_register, load_cost_model
    v = log_and_register(model, "host", tags={"dataset_fingerprint": fp, ...}, val_metrics={"val_top1_score": 0.91},
                         example=(pipeline_feats, schedule_feats), promote=True, run_id=logger.run_id)
    model = load_cost_model("models:/schedlab-host@champion")   # the exact CostNetwork, identical predictions

Which store (`tracking_uri`), as every MLflow tool decides it: an explicit URI, else $MLFLOW_TRACKING_URI, else
$SCHEDLAB_MLFLOW_DIR/mlflow.db, else one store per user whatever the current directory,
`${XDG_CACHE_HOME:-~/.cache}/schedlab/mlflow/mlflow.db`. Artifacts go to `artifacts/` next to a SQLite database,
never to ./mlruns. Reading never creates a store (a lookup in a missing one finds nothing); writing does
(`writable_store`). Look at it with `mlflow ui --backend-store-uri <the URI>`.

Model format: an MLflow pyfunc model in the *loader-module* form: the artifact holds the checkpoint as plain data
(`data/checkpoint/config.json` + `state_dict.pt`, written by torch.save of tensors only), and this module's
`_load_pyfunc` rebuilds it with `train.model.model_from_state`. Why not mlflow.pytorch: its 3.x default (pt2,
torch.export) loads back a GraphModule, not a CostNetwork, and its pickle format unpickles arbitrary code; a
PythonModel subclass is cloudpickled too. Here nothing is unpickled but tensors (`weights_only=True`), the class
is the one in the installed schedlab, and `mlflow.pyfunc.load_model(uri).predict({"pipeline", "schedule"})`
still works for generic MLflow tools. `load_cost_model` reads the checkpoint directly, without pyfunc.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ir.errors import SchedlabError, first_line

DEFAULT_TRACKING_DIR = "schedlab/mlflow"  # under $XDG_CACHE_HOME (~/.cache) unless $SCHEDLAB_MLFLOW_DIR is set
STORE_HINT = ("name the store with tracking_uri=<uri> (python -m scheduler: --tracking-uri) or MLFLOW_TRACKING_URI")
DEFAULT_EXPERIMENT = "schedlab-train"
CHAMPION = "champion"
SCORE_KEY = "val_top1_score"  # the version tag that decides promotion (higher is better)
MODEL_NAME = "model"  # the logged model's name inside its run
_CHECKPOINT = "checkpoint"  # the pyfunc data directory: config.json + state_dict.pt
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # models:, runs:, s3:, ... (not a drive letter)
_EXAMPLE_SCHEDULES = 4  # schedules kept in the stored input example (keeps the artifact small)


class RegistryError(SchedlabError):
    """A model URI that does not resolve, or a model this schedlab cannot use; the message names what exists."""


@dataclass(frozen=True)
class RegisteredVersion:
    name: str
    version: str
    run_id: str
    model_uri: str  # models:/<name>/<version>
    promoted: bool  # whether this version now holds the champion alias
    previous_champion: str | None  # the version that held the alias before this call (None: there was none)


# --- tracking URIs -------------------------------------------------------------------------------------------


def default_tracking_dir() -> Path:
    """The default store's directory: $SCHEDLAB_MLFLOW_DIR, else ${XDG_CACHE_HOME:-~/.cache}/schedlab/mlflow
    (never the current directory: a job, a notebook and `python -m scheduler` run from anywhere find one store)."""
    explicit = os.environ.get("SCHEDLAB_MLFLOW_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
    return (cache / DEFAULT_TRACKING_DIR).resolve()


def tracking_uri(uri: str | None = None) -> str:
    """The MLflow URI to use: `uri`, else $MLFLOW_TRACKING_URI (as every MLflow tool), else the embedded SQLite
    store in default_tracking_dir() (absolute, so every process and `mlflow ui` from any directory hits the same
    file). A bare path becomes SQLite too: `x.db` is the file, anything else a directory holding mlflow.db. A
    relative sqlite:/// path is made absolute; any other MLflow URI passes through. Nothing is created here:
    reading must not leave an empty store behind (writable_store creates one)."""
    if uri is None:
        uri = os.environ.get("MLFLOW_TRACKING_URI") or str(default_tracking_dir() / "mlflow.db")
    if uri != "databricks" and not _URI_SCHEME.match(uri):
        p = Path(uri).expanduser().resolve()
        uri = "sqlite:///" + str(p if p.suffix == ".db" else p / "mlflow.db")
    db = _sqlite_path(uri)
    if db is not None:
        query = uri.partition("?")[2]
        uri = f"sqlite:///{db}" + (f"?{query}" if query else "")  # relative -> absolute
    return uri


def writable_store(uri: str | None = None) -> str:
    """tracking_uri(uri), with a SQLite database's directory created (SQLite will not): for writers only."""
    uri = tracking_uri(uri)
    db = _sqlite_path(uri)
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
    return uri


def store_exists(uri: str) -> bool:
    """Whether a lookup can find anything in `uri` without creating it: False for a SQLite file that is not
    there (opening one creates it), True for any other store (a server answers for itself)."""
    db = _sqlite_path(uri)
    return db is None or db.is_file()


def artifact_location(uri: str, experiment: str | None = None) -> str | None:
    """Artifact root for a new experiment: `artifacts/<experiment>` next to a SQLite database, so nothing lands
    in ./mlruns of whatever directory a job runs in. None (the server's choice) for other stores. Pass it to
    Lightning's MLFlowLogger(artifact_location=...) too."""
    db = _sqlite_path(uri)
    if db is None:
        return None
    root = db.parent / "artifacts"
    if experiment:
        root = root / "".join(c if c.isalnum() or c in "-_." else "_" for c in experiment)
    return str(root)


def _sqlite_path(uri: str) -> Path | None:
    """The database file of a sqlite:/// URI (absolute), None for other URIs and in-memory databases."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///"):].split("?", 1)[0]
    return None if path in ("", ":memory:") else Path(path).expanduser().resolve()


def model_name(target: str) -> str:
    return f"schedlab-{target}"


def newest_version(target: str, tracking: str | None = None) -> str | None:
    """models:/schedlab-<target>/<newest version>, or None while nothing is registered (a data-generation round
    samples with the newest model, adams2019 §5)."""
    from mlflow.exceptions import MlflowException

    store = tracking_uri(tracking)
    if not store_exists(store):
        return None
    try:
        versions = _client(store).search_model_versions(f"name='{model_name(target)}'")
    except MlflowException:
        return None
    if not versions:
        return None
    return f"models:/{model_name(target)}/{max(int(v.version) for v in versions)}"


@contextlib.contextmanager
def _using(uri: str):
    """Point MLflow's fluent API (start_run, log_model, register_model) at `uri` for the block, then restore
    exactly what was there: MLflow keeps the URIs both in module state and in the MLFLOW_TRACKING_URI /
    MLFLOW_REGISTRY_URI environment variables, and `get_registry_uri()` answers the tracking URI while none is
    set, so restoring through the getters would pin a stale registry for every later MlflowClient."""
    import mlflow
    from mlflow.tracking._model_registry import utils as registry_state
    from mlflow.tracking._tracking_service import utils as tracking_state

    names = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
    old = (tracking_state._tracking_uri, registry_state._registry_uri, {n: os.environ.get(n) for n in names})
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        yield
    finally:
        tracking_state._tracking_uri, registry_state._registry_uri = old[0], old[1]
        for n, v in old[2].items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def _client(uri: str):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri, registry_uri=uri)


EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")  # MLflow 3 shows the model-training
# layout (runs, models, the registry) for it; without it an experiment opens in the GenAI layout
EXPERIMENT_DESCRIPTIONS = {
    "schedlab-train": "Cost models trained with `python -m train`: one run per training, its model registered "
                      "as schedlab-<target>.",
    "schedlab-datagen": "Data generation (`python -m generator.job`): one parent run per job, with the dataset "
                        "it wrote; the model trained after each round is a nested run.",
    "schedlab-evaluate": "`python -m evaluate`: how well a model ranks the schedules of held-out pipelines.",
    "schedlab-evaluate-apps": "`python -m evaluate.apps`: the app suite scheduled by each search, measured.",
}


def ensure_experiment(name: str, tracking: str | None = None) -> str:
    """The id of experiment `name`, created with our artifact location if missing (a concurrent creator wins),
    tagged as a model-development experiment with a description (added to an existing one that lacks them)."""
    from mlflow.exceptions import MlflowException

    uri = writable_store(tracking)
    client = _client(uri)
    tags = {EXPERIMENT_KIND[0]: EXPERIMENT_KIND[1],
            "mlflow.note.content": EXPERIMENT_DESCRIPTIONS.get(name, "Runs of schedlab (learned cost models for "
                                                                     "schedules).")}
    exp = client.get_experiment_by_name(name)
    if exp is None:
        try:
            return client.create_experiment(name, artifact_location=artifact_location(uri, name), tags=tags)
        except MlflowException:
            exp = client.get_experiment_by_name(name)
            if exp is None:
                raise
    for key, value in tags.items():
        if key not in exp.tags:
            client.set_experiment_tag(exp.experiment_id, key, value)
    return exp.experiment_id


# --- logging and registering ---------------------------------------------------------------------------------


def log_and_register(model, target: str, tags: dict[str, str], val_metrics: dict[str, float],
                     example: tuple[np.ndarray, np.ndarray], promote: bool, *, run_id: str | None = None,
                     tracking: str | None = None, experiment: str = DEFAULT_EXPERIMENT,
                     backend: str = "numba", decided: bool = False) -> RegisteredVersion:
    """Log `model` into a run, register it as a new version of schedlab-<target>, and maybe promote it.

    The run: `run_id` (e.g. Lightning's `MLFlowLogger.run_id`, resumed and ended again here), else the active
    run, else a new run in `experiment` (ended here). Version tags: feature_schema_version, target, backend (whose
    runtimes it learned: the scheduler refuses it for others unless asked), model_kind,
    the caller's `tags` (dataset_fingerprint, dataset_samples, dataset_pipelines, loss, ...) and the val
    metrics (keys get a `val_` prefix, `/` becomes `_`). promote=True moves `champion` here when there is no
    champion or this version's val_top1_score is strictly higher (a champion without the tag always loses; a
    version without it only wins an empty slot). decided=True: the caller decided (train.promotion scores
    every baseline afresh on one validation set), and promote alone says whether the alias moves. Not
    atomic against a concurrent promoter."""
    import mlflow

    from train.model import save_checkpoint_dict

    uri = writable_store(tracking)
    ckpt = save_checkpoint_dict(model)
    config = _config_dict(ckpt)
    metrics = {_metric_key(k): float(v) for k, v in val_metrics.items()}
    version_tags = {"feature_schema_version": str(_schema_version(config)), "target": target, "backend": backend,
                    "model_kind": str(config.get("kind", type(model).__name__)),
                    **{k: str(v) for k, v in tags.items()}, **{k: repr(v) for k, v in metrics.items()}}
    name = model_name(target)
    with _using(uri), _run(uri, run_id, experiment) as run, tempfile.TemporaryDirectory() as tmp:
        data = _write_checkpoint(ckpt, Path(tmp) / _CHECKPOINT)
        info = mlflow.pyfunc.log_model(
            name=MODEL_NAME, loader_module=__name__, data_path=str(data), pip_requirements=_pip_requirements(),
            signature=_signature(example), input_example=_input_example(example),
            tags={"target": target, "feature_schema_version": version_tags["feature_schema_version"]})
        client = _client(uri)
        mv = _new_version(client, name, info, version_tags)
        active_run_id, experiment_id = run.info.run_id, run.info.experiment_id
    client.set_registered_model_tag(name, "target", target)
    _describe(client, name, str(mv.version), target, version_tags, experiment_id, active_run_id,
              getattr(info, "model_id", None))
    previous = _champion(client, name)
    promoted = promote and (decided or _beats(version_tags.get(SCORE_KEY),
                                              previous.tags.get(SCORE_KEY) if previous else None, previous is None))
    if promoted:
        client.set_registered_model_alias(name, CHAMPION, mv.version)
    return RegisteredVersion(name, str(mv.version), active_run_id, f"models:/{name}/{mv.version}", promoted,
                             str(previous.version) if previous else None)


def _new_version(client, name: str, info, tags: dict[str, str]):
    """A new version of registered model `name` from the logged model `info`: the calls mlflow.register_model
    makes, without its prints to stderr ('Successfully registered model ...', 'Created version ...')."""
    from mlflow.exceptions import MlflowException

    try:
        client.create_registered_model(name)
    except MlflowException as e:
        if e.error_code not in ("RESOURCE_ALREADY_EXISTS", "ALREADY_EXISTS"):
            raise
    return client.create_model_version(name, info.model_uri, tags=tags, model_id=info.model_id)


def _describe(client, name: str, version: str, target: str, tags: dict[str, str], experiment_id: str, run_id: str,
              model_id: str | None) -> None:
    """Descriptions the registry pages show: the model's (once) and the version's, linking the run that trained
    it and its LoggedModel, whose page lists every metric logged against it, evaluations included."""
    if not client.get_registered_model(name).description:
        client.update_registered_model(name, description=(
            f"schedlab's learned cost models for target {target}: one version per training. The alias `champion` "
            "is what `model=champion` loads; a version takes it only by beating random weights, the analytical "
            "model and the previous champion on its validation pipelines (docs/train.md)."))
    run = client.get_run(run_id)
    text = (f"A {tags.get('model_kind', 'cost')} model trained by run [{run.info.run_name}](#/experiments/"
            f"{experiment_id}/runs/{run_id}) on dataset {tags.get('dataset_fingerprint', '?')} "
            f"({tags.get('dataset_samples', '?')} schedules); validation top-1 {tags.get(SCORE_KEY, '?')}.")
    if model_id:
        text += (f" Its metrics, those of every evaluation included, are on its [logged model's page]"
                 f"(#/experiments/{experiment_id}/models/{model_id}).")
    client.update_model_version(name, version, description=text)


@contextlib.contextmanager
def _run(uri: str, run_id: str | None, experiment: str):
    """The run to log into (see log_and_register); ends only a run it started or resumed."""
    import mlflow

    active = mlflow.active_run()
    if active is not None and (run_id is None or active.info.run_id == run_id):
        yield active
        return
    if active is not None:
        raise RegistryError(f"run {active.info.run_id} is active; cannot log into run {run_id}: end it first")
    kwargs = {"run_id": run_id} if run_id else {"experiment_id": ensure_experiment(experiment, uri)}
    with mlflow.start_run(**kwargs) as run:
        yield run


def _beats(new: str | None, champion: str | None, vacant: bool) -> bool:
    """Promotion rule: an empty slot is always taken; otherwise a strictly higher finite score wins, and a
    champion without a finite score loses to any finite one."""
    if vacant:
        return True
    new_score, old_score = _score(new), _score(champion)
    return new_score is not None and (old_score is None or new_score > old_score)


def _score(tag: str | None) -> float | None:
    try:
        value = float(tag)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _champion(client, name: str):
    from mlflow.exceptions import MlflowException

    try:
        return client.get_model_version_by_alias(name, CHAMPION)
    except MlflowException:
        return None


def _metric_key(key: str) -> str:
    key = key.replace("/", "_")
    return key if key.startswith("val_") else f"val_{key}"


def _config_dict(ckpt: dict) -> dict:
    cfg = ckpt["config"]
    return cfg if isinstance(cfg, dict) else cfg.to_dict()


def _schema_version(config: dict) -> int:
    """The feature schema version a checkpoint was trained on (its config's, else this schedlab's)."""
    for key in ("schema_version", "feature_schema_version"):
        if key in config:
            return int(config[key])
    from featurize import SCHEMA_VERSION

    return SCHEMA_VERSION


def _write_checkpoint(ckpt: dict, directory: Path) -> Path:
    import torch

    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(_config_dict(ckpt), indent=1, sort_keys=True))
    torch.save(ckpt["state_dict"], directory / "state_dict.pt")
    return directory


def _pip_requirements() -> list[str]:
    """Explicit requirements: MLflow's inference of them takes ~9 s per log_model."""
    from importlib import metadata

    reqs = []
    for dist in ("torch", "numpy", "mlflow", "schedlab"):
        try:
            reqs.append(f"{dist}=={metadata.version(dist).split('+')[0]}")
        except metadata.PackageNotFoundError:
            pass
    return reqs


def _input_example(example: tuple[np.ndarray, np.ndarray]) -> dict[str, np.ndarray]:
    pipeline, schedule = example
    return {"pipeline": np.asarray(pipeline, np.float32),
            "schedule": np.asarray(schedule, np.float32)[:_EXAMPLE_SCHEDULES]}


def _signature(example: tuple[np.ndarray, np.ndarray]):
    """Tensor signature with free stage and batch dimensions (one inferred from the example would pin them)."""
    from mlflow.models import ModelSignature
    from mlflow.types import Schema, TensorSpec

    pipeline, schedule = (np.asarray(a) for a in example)
    f32 = np.dtype(np.float32)
    return ModelSignature(
        inputs=Schema([TensorSpec(f32, (-1, *pipeline.shape[1:]), "pipeline"),
                       TensorSpec(f32, (-1, -1, *schedule.shape[2:]), "schedule")]),
        outputs=Schema([TensorSpec(np.dtype(np.float64), (-1,))]))


# --- the pyfunc loader module --------------------------------------------------------------------------------


class _PyfuncCostModel:
    """What `mlflow.pyfunc.load_model` wraps: predict({"pipeline": [S,40,7], "schedule": [B,S,41]}) -> [B]."""

    def __init__(self, model):
        self.model = model

    def predict(self, model_input, params=None):
        return self.model.predict(np.asarray(model_input["pipeline"], np.float32),
                                  np.asarray(model_input["schedule"], np.float32))


def _load_pyfunc(data_path: str, model_config=None) -> _PyfuncCostModel:
    return _PyfuncCostModel(load_checkpoint_dir(Path(data_path)))


def load_checkpoint_dir(directory: Path):
    """A CostNetwork from a checkpoint directory (config.json + state_dict.pt); tensors only are unpickled."""
    import torch

    from train.model import model_from_state

    config = json.loads((directory / "config.json").read_text())
    state = torch.load(directory / "state_dict.pt", map_location="cpu", weights_only=True)
    return model_from_state(config, state)


# --- loading -------------------------------------------------------------------------------------------------


def load_cost_model(uri: str, tracking: str | None = None):
    """The CostNetwork behind `uri`: models:/<name>@<alias>, models:/<name>/<version|latest>, models:/m-<id>,
    runs:/<run_id>/model, a local .pt file holding save_checkpoint_dict(...), or a downloaded MLflow model
    directory. Raises RegistryError (one line, naming what exists) for unknown models, versions, aliases and
    for a model trained on another feature schema version."""
    if not _URI_SCHEME.match(uri):
        return _load_local(uri, Path(uri).expanduser())
    store = tracking_uri(tracking)
    if not store_exists(store):
        raise RegistryError(f"no MLflow store at {_sqlite_path(store)}: train a model first (python -m train), or "
                            + STORE_HINT)
    source = uri
    if uri.startswith("models:/") and not uri.startswith("models:/m-"):
        source = _resolve_registered(uri, store)
    with tempfile.TemporaryDirectory() as tmp:
        local = _download(uri, source, store, tmp)
        return _from_model_dir(uri, local)


def _load_local(uri: str, path: Path):
    if path.is_dir():
        return _from_model_dir(uri, path)
    if not path.is_file():
        raise RegistryError(f"no model at '{uri}': give models:/<name>@<alias>, models:/<name>/<version>, "
                            "runs:/<run_id>/model, or a checkpoint file")
    import torch

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable file is the user's to fix
        raise RegistryError(f"{uri} is not a schedlab checkpoint: {first_line(e)}") from None
    if not isinstance(ckpt, dict) or "config" not in ckpt or "state_dict" not in ckpt:
        raise RegistryError(f"{uri} is not a schedlab checkpoint (expected a dict with 'config' and 'state_dict')")
    return _build(uri, _config_dict(ckpt), ckpt["state_dict"])


def _from_model_dir(uri: str, directory: Path):
    data = next((p for p in (directory / "data" / _CHECKPOINT, directory / _CHECKPOINT, directory)
                 if (p / "config.json").is_file()), None)
    if data is None:
        raise RegistryError(f"{uri} is not a schedlab cost model (no {_CHECKPOINT}/config.json in it)")
    import torch

    config = json.loads((data / "config.json").read_text())
    state = torch.load(data / "state_dict.pt", map_location="cpu", weights_only=True)
    return _build(uri, config, state)


def _build(uri: str, config: dict, state: dict):
    from featurize import SCHEMA_VERSION
    from train.model import model_from_state

    version = _schema_version(config)
    if version != SCHEMA_VERSION:
        raise RegistryError(f"{uri} was trained on feature schema version {version}, this schedlab computes "
                            f"version {SCHEMA_VERSION}: retrain it or load another model")
    try:
        return model_from_state(config, state)
    except (ValueError, KeyError, TypeError, RuntimeError, SchedlabError) as e:
        raise RegistryError(f"{uri}: {first_line(e)}") from None


def recorded_target(uri: str, tracking: str | None = None) -> tuple[str | None, str | None]:
    """(target, backend) whose runtimes the model behind `uri` learned, from a registered version's tags or a
    checkpoint file's keys; None for what was not recorded (runs:/ URIs, model directories, old versions)."""
    if not _URI_SCHEME.match(uri):
        path = Path(uri).expanduser()
        if path.is_dir():
            tags = _directory_tags(path) or {}
            return tags.get("target"), tags.get("backend")
        if not path.is_file():
            return None, None
        import torch

        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        return ckpt.get("target"), ckpt.get("backend")
    tags = _version_tags(uri, tracking)
    return (None, None) if tags is None else (tags.get("target"), tags.get("backend"))


@dataclass(frozen=True)
class RecordedSplit:
    """How the registered model's training chose its validation samples."""

    val_fraction: float
    min_schedules: int
    max_spread: float | None  # None: every label was kept


def recorded_split(uri: str, tracking: str | None = None) -> RecordedSplit | None:
    """The split the registered model behind `uri` was validated on, so that its evaluation on split=val scores
    exactly those samples; None when not recorded (files, runs:/ URIs, versions registered before these tags)."""
    tags = _version_tags(uri, tracking)
    if tags is None:
        return None
    try:
        spread = tags.get("max_spread", "None")
        return RecordedSplit(float(tags["val_fraction"]), int(tags["min_schedules"]),
                             None if spread == "None" else float(spread))
    except (KeyError, ValueError):
        return None


def _directory_tags(path: Path) -> dict[str, str] | None:
    """The version tags a model directory exported by train.builtin records; None for other paths."""
    lineage = path / "lineage.json"
    if not lineage.is_file():
        return None
    return {str(k): str(v) for k, v in json.loads(lineage.read_text()).get("tags", {}).items()}


def _version_tags(uri: str, tracking: str | None) -> dict[str, str] | None:
    """The tags of the registered version behind a models:/<name>/<version|alias|latest> URI, or those a built-in
    model directory's lineage.json kept (train.builtin); None for other URIs."""
    if not _URI_SCHEME.match(uri):
        return _directory_tags(Path(uri).expanduser())
    if not uri.startswith("models:/") or uri.startswith("models:/m-"):
        return None
    store = tracking_uri(tracking)
    if not store_exists(store):
        raise RegistryError(f"no MLflow store at {_sqlite_path(store)}: " + STORE_HINT)
    name, _, version = _resolve_registered(uri, store)[len("models:/"):].partition("/")
    return _client(store).get_model_version(name, version).tags or {}


def _resolve_registered(uri: str, store: str) -> str:
    """models:/<name>@<alias> or /<version> -> the version's source, checking its schema tag; errors list what
    exists."""
    from mlflow.exceptions import MlflowException

    from featurize import SCHEMA_VERSION

    rest = uri[len("models:/"):].rstrip("/")
    name, alias, ref = rest, None, None
    if "@" in rest:
        name, alias = rest.split("@", 1)
    else:
        name, _, ref = rest.partition("/")
    client = _client(store)
    try:
        rm = client.get_registered_model(name)
    except MlflowException:
        names = sorted(m.name for m in client.search_registered_models())
        raise RegistryError(f"no registered model '{name}' in {store}; registered models: "
                            f"{', '.join(names) or 'none'}") from None
    versions = sorted((v for v in client.search_model_versions(f"name='{name}'")), key=lambda v: int(v.version))
    aliases = dict(getattr(rm, "aliases", {}) or {})
    what = f"versions: {', '.join(str(v.version) for v in versions) or 'none'}; aliases: " + (
        ", ".join(f"{a} -> {v}" for a, v in sorted(aliases.items())) or "none")
    if alias is not None:
        if alias not in aliases:
            raise RegistryError(f"{name} has no alias '{alias}'; {what}")
        ref = str(aliases[alias])
    if ref in ("", "latest"):
        if not versions:
            raise RegistryError(f"{name} has no versions")
        mv = versions[-1]
    else:
        mv = next((v for v in versions if str(v.version) == ref), None)
        if mv is None:
            raise RegistryError(f"{name} has no version '{ref}'; {what}")
    tag = (mv.tags or {}).get("feature_schema_version")
    if tag is not None and tag != str(SCHEMA_VERSION):
        raise RegistryError(f"{uri} (version {mv.version}) was trained on feature schema version {tag}, this "
                            f"schedlab computes version {SCHEMA_VERSION}: retrain it or load another version; {what}")
    return f"models:/{name}/{mv.version}"


def _download(uri: str, source: str, store: str, dst: str) -> Path:
    import mlflow
    from mlflow.exceptions import MlflowException

    bar = os.environ.get("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR")
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = bar or "false"  # a bar for 8 small files is noise
    try:
        with _using(store):
            return Path(mlflow.artifacts.download_artifacts(artifact_uri=source, dst_path=dst, tracking_uri=store))
    except (MlflowException, OSError) as e:
        raise RegistryError(f"cannot load {uri} from {store}: {first_line(e)}") from None
    finally:
        if bar is None:
            del os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"]
