"""Lineage in MLflow where MLflow users look for it: run names and descriptions, parent runs, dataset inputs, and
the registered version a model URI resolved to.

Descriptions are the `mlflow.note.content` tag (the run page's Description, Markdown); a nested run carries
`mlflow.parentRunId`; a dataset is a run input (the run page's Datasets; `run.inputs.dataset_inputs`) named and
digested by schedlab's dataset fingerprint, its source the dataset directory. An evaluation names the version it
scored (`models:/schedlab-host/3`, not only `@champion`), links to that version's page and logs its metrics
against the version's LoggedModel, so the model's own page lists them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

NOTE = "mlflow.note.content"  # the run's description in the MLflow UI
PARENT = "mlflow.parentRunId"
CONTEXT = "mlflow.data.context"  # what a dataset input was for: training, evaluation, generated
_SCALARS = {"string": "string", "large_string": "string", "double": "double", "float": "float", "int64": "long",
            "int32": "integer", "bool": "boolean"}  # Parquet column types the dataset schema shows


@dataclass(frozen=True)
class DatasetRef:
    """A dataset as a run input: the directory, its fingerprint, and what is in it (the UI's profile)."""

    path: str
    fingerprint: str
    target: str
    samples: int
    pipelines: int


@dataclass(frozen=True)
class ResolvedVersion:
    """The registered version a models:/ URI named when it was used."""

    name: str
    version: str
    model_id: str | None  # its LoggedModel (MLflow 3), None for versions registered without one

    @property
    def uri(self) -> str:
        return f"models:/{self.name}/{self.version}"

    @property
    def label(self) -> str:
        """`schedlab-host-v3`: the version in a run name."""
        return f"{self.name}-v{self.version}"

    def link(self) -> str:
        """Markdown link to the version's page in the MLflow UI (relative: works behind any server address)."""
        return f"[{self.name} version {self.version}](#/models/{self.name}/versions/{self.version})"


def run_tags(description: str, parent_run_id: str | None = None) -> dict[str, str]:
    """Tags a new run starts with: its description, and its parent when nested."""
    return {NOTE: description, **({PARENT: parent_run_id} if parent_run_id else {})}


def new_run_tags(description: str, parent_run_id: str | None = None) -> dict[str, str]:
    """run_tags plus what MLflow's fluent API records for a run it starts (source: the command's script and its
    git commit, user): a run made through MlflowClient.create_run gets none of them otherwise."""
    from mlflow.tracking.context.registry import resolve_tags

    return resolve_tags(run_tags(description, parent_run_id))


def describe(client, run_id: str, description: str) -> None:
    client.set_tag(run_id, NOTE, description)


def log_dataset(client, run_id: str, data: DatasetRef, context: str) -> None:
    """Record `data` as an input of the run, with what it was used for (`context`)."""
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.data.sources import LocalArtifactDatasetSource
    from mlflow.entities import Dataset, DatasetInput, InputTag

    meta = MetaDataset(LocalArtifactDatasetSource(str(Path(data.path).resolve())), name=data.fingerprint,
                       digest=data.fingerprint, schema=_schema(data.path, data.target)).to_dict()
    profile = json.dumps({"samples": data.samples, "pipelines": data.pipelines, "target": data.target})
    entity = Dataset(name=meta["name"], digest=meta["digest"], source_type=meta["source_type"],
                     source=meta["source"], schema=meta.get("schema"), profile=profile)
    client.log_inputs(run_id, datasets=[DatasetInput(entity, tags=[InputTag(CONTEXT, context)])])


def _schema(path: str, target: str):
    """The scalar columns of the dataset's Parquet files (the features, nested lists, are left out)."""
    import pyarrow.parquet as pq
    from mlflow.types import ColSpec, Schema

    first = next(iter(sorted((Path(path) / f"target={target}").glob("batch-*.parquet"))), None)
    if first is None:
        return None
    cols = [ColSpec(_SCALARS[str(f.type)], f.name) for f in pq.read_schema(first) if str(f.type) in _SCALARS]
    return Schema(cols) if cols else None


def resolve_version(uri: str, store: str) -> ResolvedVersion | None:
    """The registered version behind models:/<name>@<alias>, /<version> or /latest now; None for every other
    model (analytical, random, runs:/, files) or when the store does not know it."""
    from mlflow.exceptions import MlflowException

    from ir.errors import SchedlabError

    from . import registry

    if not uri.startswith("models:/") or uri.startswith("models:/m-") or not registry.store_exists(store):
        return None
    try:
        name, _, version = registry._resolve_registered(uri, store)[len("models:/"):].partition("/")
        mv = registry._client(store).get_model_version(name, version)
    except (SchedlabError, MlflowException):
        return None
    source = mv.source or ""  # a version registered from a LoggedModel names it as its source: models:/m-<id>
    model_id = getattr(mv, "model_id", None) or (source[len("models:/"):] if source.startswith("models:/m-") else None)
    return ResolvedVersion(name, str(mv.version), model_id)


def link_model(client, run_id: str, version: ResolvedVersion) -> None:
    """Record the version's LoggedModel as an input of the run (MLflow 3: the run page lists it)."""
    if version.model_id is None:
        return
    from mlflow.entities import LoggedModelInput

    client.log_inputs(run_id, models=[LoggedModelInput(version.model_id)])


def slug(text: str) -> str:
    """A run-name part from a model spec: `random:3` -> `random-3`, `/abs/model.pt` -> `model.pt`."""
    text = text.rstrip("/").rsplit("/", 1)[-1] if "/" in text and not text.startswith("models:/") else text
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text.removeprefix("models:/")).strip("-")
