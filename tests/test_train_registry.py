"""MLflow registry of cost models, against a real SQLite store in a temp directory: log + register + load back
bit-identically in a fresh process, champion promotion, refusal of other feature schemas, one-line errors that
name what exists, `mlflow ui` listing the run and the champion, and figures logged as run artifacts."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
mlflow = pytest.importorskip("mlflow")

from featurize import SCHEMA_VERSION
from featurize.schema import SCHEDULE_FEATURES
from train import plots, registry
from train.model import ModelConfig, build_model, save_checkpoint_dict
from train.registry import RegistryError, load_cost_model, log_and_register

ROOT = Path(__file__).resolve().parent.parent
TARGET = "cpu-test"
ENV = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
SCORES = (0.5, 0.4, 0.7)  # val_top1_score of versions 1, 2, 3


def features(seed: int, stages: int = 3, schedules: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Plausible non-negative raw features (counts spanning orders of magnitude)."""
    rng = np.random.default_rng(seed)
    pipeline = rng.integers(0, 20, (stages, 40, 7)).astype(np.float32)
    schedule = np.exp(rng.uniform(0, 12, (schedules, stages, len(SCHEDULE_FEATURES)))).astype(np.float32)
    return pipeline, schedule


def dataset_tags(seed: int) -> dict[str, str]:
    return {"dataset_fingerprint": f"fp{seed:04d}", "dataset_samples": "1200", "dataset_pipelines": "40",
            "loss": "relative_throughput"}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Telemetry off and matplotlib's cache in tmp, for this module; MLflow's global URIs restored after."""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in ENV.items():
            mp.setenv(k, v)
        mp.setenv("MPLCONFIGDIR", str(tmp_path_factory.mktemp("mpl")))
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        old = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
        yield
        mlflow.set_tracking_uri(old[0])
        mlflow.set_registry_uri(old[1])


@pytest.fixture(scope="module")
def store(env, tmp_path_factory):
    """One SQLite store with three versions of schedlab-cpu-test, logged the three ways a run can be chosen:
    an explicit run id (as Lightning's MLFlowLogger leaves it, already terminated), the active run, a new run."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = registry.tracking_uri(str(root / "mlflow.db"))
    client = registry._client(uri)
    exp = registry.ensure_experiment(registry.DEFAULT_EXPERIMENT, uri)
    models = [build_model(ModelConfig(kind=k), seed=s) for k, s in (("hybrid", 0), ("mlp", 1), ("hybrid", 2))]
    example = features(0)
    versions = []

    run = client.create_run(exp, run_name="lightning-like")
    client.set_terminated(run.info.run_id)
    versions.append(log_and_register(models[0], TARGET, dataset_tags(0), {"val_top1_score": SCORES[0]}, example,
                                     promote=True, run_id=run.info.run_id, tracking=uri))
    mlflow.set_tracking_uri(uri)
    with mlflow.start_run(experiment_id=exp, run_name="active") as active:
        versions.append(log_and_register(models[1], TARGET, dataset_tags(1), {"val/top1_score": SCORES[1]}, example,
                                         promote=True, tracking=uri))
    assert versions[1].run_id == active.info.run_id
    versions.append(log_and_register(models[2], TARGET, dataset_tags(2), {"top1_score": SCORES[2], "kendall": 0.3},
                                     example, promote=True, tracking=uri))
    return {"root": root, "uri": uri, "versions": versions, "models": models, "first_run": run.info.run_id}


def test_the_store_is_found_as_mlflow_finds_it_and_reading_creates_nothing(tmp_path, monkeypatch):
    """An explicit URI, else $MLFLOW_TRACKING_URI, else $SCHEDLAB_MLFLOW_DIR, else the per-user cache: never
    the current directory. Only a writer creates the store's directory."""
    monkeypatch.chdir(tmp_path)
    for name in ("MLFLOW_TRACKING_URI", "SCHEDLAB_MLFLOW_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert registry.tracking_uri(None) == f"sqlite:///{tmp_path / 'home/.cache/schedlab/mlflow/mlflow.db'}"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert registry.tracking_uri(None) == f"sqlite:///{tmp_path / 'xdg/schedlab/mlflow/mlflow.db'}"
    assert registry.tracking_uri("rel/x.db") == f"sqlite:///{tmp_path / 'rel/x.db'}"
    assert registry.tracking_uri("somedir") == f"sqlite:///{tmp_path / 'somedir/mlflow.db'}"
    assert registry.tracking_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    assert registry.tracking_uri("sqlite:///r.db?timeout=5") == f"sqlite:///{tmp_path / 'r.db'}?timeout=5"
    monkeypatch.setenv("SCHEDLAB_MLFLOW_DIR", str(tmp_path / "elsewhere"))
    assert registry.tracking_uri(None) == f"sqlite:///{tmp_path / 'elsewhere/mlflow.db'}"
    assert registry.artifact_location(registry.tracking_uri(None), "a b") == str(tmp_path / "elsewhere/artifacts/a_b")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///env/m.db")
    assert registry.tracking_uri(None) == f"sqlite:///{tmp_path / 'env/m.db'}"
    assert registry.tracking_uri("x.db") == f"sqlite:///{tmp_path / 'x.db'}"  # explicit beats the environment
    # lookups in a store that is not there find nothing and leave nothing behind
    assert registry.newest_version(TARGET) is None
    assert "no MLflow store" in one_line_error(lambda: load_cost_model(f"models:/schedlab-{TARGET}@champion"))
    assert "tracking_uri=" in one_line_error(lambda: load_cost_model(f"models:/schedlab-{TARGET}@champion"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [], list(tmp_path.rglob("*"))
    assert registry.writable_store(None) == f"sqlite:///{tmp_path / 'env/m.db'}" and (tmp_path / "env").is_dir()
    assert registry.model_name("cpu") == "schedlab-cpu"


def test_experiments_open_in_the_model_training_layout(store):
    client = registry._client(store["uri"])
    exp = client.get_experiment_by_name(registry.DEFAULT_EXPERIMENT)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    assert "python -m train" in exp.tags["mlflow.note.content"]
    bare = client.create_experiment("made-elsewhere")  # e.g. by an older schedlab: tagged when next used
    assert "mlflow.experimentKind" not in client.get_experiment(bare).tags
    assert registry.ensure_experiment("made-elsewhere", store["uri"]) == bare
    tags = client.get_experiment(bare).tags
    assert tags["mlflow.experimentKind"] == "custom_model_development" and tags["mlflow.note.content"]


def test_registered_versions_carry_tags_and_live_in_the_store(store):
    client = registry._client(store["uri"])
    v1, v2, v3 = store["versions"]
    assert [v.version for v in store["versions"]] == ["1", "2", "3"]
    assert v1.run_id == store["first_run"] and v3.run_id not in (v1.run_id, v2.run_id)
    assert v3.model_uri == f"models:/schedlab-{TARGET}/3"
    tags = client.get_model_version(f"schedlab-{TARGET}", "3").tags
    assert tags["feature_schema_version"] == str(SCHEMA_VERSION) and tags["target"] == TARGET
    assert tags["model_kind"] == "hybrid" and tags["loss"] == "relative_throughput"
    assert tags["dataset_fingerprint"] == "fp0002" and tags["dataset_samples"] == "1200"
    assert tags["dataset_pipelines"] == "40"
    assert float(tags["val_top1_score"]) == SCORES[2] and float(tags["val_kendall"]) == 0.3
    assert client.get_model_version(f"schedlab-{TARGET}", "2").tags["model_kind"] == "mlp"
    assert float(client.get_model_version(f"schedlab-{TARGET}", "2").tags["val_top1_score"]) == SCORES[1]
    # runs ended (the Lightning-like one resumed and ended again), artifacts under the store, not ./mlruns
    for v in store["versions"]:
        assert client.get_run(v.run_id).info.status == "FINISHED"
    source = client.get_model_version(f"schedlab-{TARGET}", "1").source
    logged = client.get_logged_model(source.removeprefix("models:/"))
    assert str(store["root"]) in logged.artifact_location


def test_promotion_follows_val_top1_score(store):
    v1, v2, v3 = store["versions"]
    assert (v1.promoted, v1.previous_champion) == (True, None)  # no champion yet
    assert (v2.promoted, v2.previous_champion) == (False, "1")  # 0.4 < 0.5
    assert (v3.promoted, v3.previous_champion) == (True, "1")  # 0.7 > 0.5
    client = registry._client(store["uri"])
    assert str(client.get_model_version_by_alias(f"schedlab-{TARGET}", "champion").version) == "3"


def test_promote_false_and_ties_leave_the_champion(store):
    model = build_model(ModelConfig(kind="mlp", hidden=8), seed=5)
    tie = log_and_register(model, TARGET + "-tie", {}, {"val_top1_score": 0.5}, features(1), promote=True,
                           tracking=store["uri"])
    again = log_and_register(model, TARGET + "-tie", {}, {"val_top1_score": 0.5}, features(1), promote=True,
                             tracking=store["uri"])
    off = log_and_register(model, TARGET + "-tie", {}, {"val_top1_score": 0.9}, features(1), promote=False,
                           tracking=store["uri"])
    assert (tie.promoted, again.promoted, off.promoted) == (True, False, False)
    assert again.previous_champion == off.previous_champion == "1"


def test_load_in_fresh_process_gives_identical_predictions(store, tmp_path):
    pipeline, schedule = features(7, stages=3, schedules=9)  # other batch size than the logged example
    np.save(tmp_path / "p.npy", pipeline)
    np.save(tmp_path / "s.npy", schedule)
    name = f"schedlab-{TARGET}"
    uris = [f"models:/{name}/1", f"models:/{name}@champion", f"models:/{name}/2", f"runs:/{store['first_run']}/model"]
    script = textwrap.dedent(f"""
        import sys, numpy as np
        from train.registry import load_cost_model
        p, s = np.load({str(tmp_path / 'p.npy')!r}), np.load({str(tmp_path / 's.npy')!r})
        for i, uri in enumerate(sys.argv[1:]):
            m = load_cost_model(uri, tracking={store['uri']!r})
            print(i, type(m).__name__, m.config.kind)
            np.save({str(tmp_path)!r} + f"/out{{i}}.npy", m.predict(p, s))
    """)
    proc = subprocess.run([sys.executable, "-c", script, *uris], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **ENV, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = [store["models"][0], store["models"][2], store["models"][1], store["models"][0]]
    kinds = [line.split()[1:] for line in proc.stdout.splitlines()]
    assert kinds == [[type(m).__name__, m.config.kind] for m in expected]
    for i, model in enumerate(expected):
        got = np.load(tmp_path / f"out{i}.npy")
        want = model.predict(pipeline, schedule)
        assert got.dtype == np.float64 and got.shape == (9,)
        assert np.array_equal(got, want), uris[i]
    assert len(set(np.load(tmp_path / "out0.npy").tolist())) > 1  # the features tell schedules apart


def test_load_in_process_and_from_checkpoint_file(store, tmp_path):
    pipeline, schedule = features(3)
    model = store["models"][1]
    loaded = load_cost_model(f"models:/schedlab-{TARGET}/2", tracking=store["uri"])
    assert type(loaded) is type(model) and loaded.config == model.config
    assert np.array_equal(loaded.predict(pipeline, schedule), model.predict(pipeline, schedule))
    torch.save(save_checkpoint_dict(model), tmp_path / "m.pt")
    from_file = load_cost_model(str(tmp_path / "m.pt"))
    assert np.array_equal(from_file.predict(pipeline, schedule), model.predict(pipeline, schedule))
    latest = load_cost_model(f"models:/schedlab-{TARGET}/latest", tracking=store["uri"])
    assert latest.config == store["models"][2].config


def test_pyfunc_flavour_predicts_too(store):
    pipeline, schedule = features(4)
    mlflow.set_tracking_uri(store["uri"])
    mlflow.set_registry_uri(store["uri"])
    pyfunc = mlflow.pyfunc.load_model(f"models:/schedlab-{TARGET}@champion")
    out = pyfunc.predict({"pipeline": pipeline, "schedule": schedule})
    assert np.array_equal(np.asarray(out), store["models"][2].predict(pipeline, schedule))


def one_line_error(fn) -> str:
    with pytest.raises(RegistryError) as e:
        fn()
    message = str(e.value)
    assert "\n" not in message and message
    return message


def test_other_feature_schema_is_refused(store, tmp_path):
    stale = build_model(ModelConfig(kind="hybrid", schema_version=SCHEMA_VERSION + 1), seed=3)
    v = log_and_register(stale, TARGET + "-stale", {}, {"val_top1_score": 0.9}, features(0), promote=True,
                         tracking=store["uri"])
    client = registry._client(store["uri"])
    assert client.get_model_version(v.name, v.version).tags["feature_schema_version"] == str(SCHEMA_VERSION + 1)
    for uri in (f"models:/{v.name}@champion", f"models:/{v.name}/1"):
        msg = one_line_error(lambda: load_cost_model(uri, tracking=store["uri"]))
        assert f"feature schema version {SCHEMA_VERSION + 1}" in msg and f"version {SCHEMA_VERSION}" in msg
    # without the registry's tag (a run URI, a file) the checkpoint's own config is checked
    msg = one_line_error(lambda: load_cost_model(f"runs:/{v.run_id}/model", tracking=store["uri"]))
    assert f"feature schema version {SCHEMA_VERSION + 1}" in msg
    torch.save(save_checkpoint_dict(stale), tmp_path / "stale.pt")
    assert "feature schema" in one_line_error(lambda: load_cost_model(str(tmp_path / "stale.pt")))


def test_unknown_model_alias_version_name_what_exists(store, tmp_path):
    uri = store["uri"]
    msg = one_line_error(lambda: load_cost_model("models:/schedlab-nope@champion", tracking=uri))
    assert "schedlab-nope" in msg and f"schedlab-{TARGET}" in msg
    msg = one_line_error(lambda: load_cost_model(f"models:/schedlab-{TARGET}@best", tracking=uri))
    assert "'best'" in msg and "champion -> 3" in msg and "1, 2, 3" in msg
    msg = one_line_error(lambda: load_cost_model(f"models:/schedlab-{TARGET}/9", tracking=uri))
    assert "'9'" in msg and "1, 2, 3" in msg
    msg = one_line_error(lambda: load_cost_model("models:/schedlab-x@champion", tracking=str(tmp_path / "none.db")))
    assert "no MLflow store" in msg and not (tmp_path / "none.db").exists()
    msg = one_line_error(lambda: load_cost_model("runs:/0123456789abcdef/model", tracking=uri))
    assert "runs:/0123456789abcdef/model" in msg
    assert "no model at" in one_line_error(lambda: load_cost_model(str(tmp_path / "missing.pt")))
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    assert "not a schedlab checkpoint" in one_line_error(lambda: load_cost_model(str(tmp_path / "junk.pt")))


def test_plots_are_logged_as_run_artifacts(store):
    pred = np.array([1e-3, 2e-3, 5e-3, 1e-2, 0.0, 3e-2])
    measured = np.array([1.1e-3, 2.5e-3, 4e-3, 1.2e-2, 1e-3, 2.5e-2])
    fig = plots.predicted_vs_measured(pred, measured, "val")
    assert "1 dropped" in fig.axes[0].get_title() and "n = 5" in fig.axes[0].get_title()
    grouped = plots.predicted_vs_measured(pred, measured, "val", pipelines=np.array([0, 0, 0, 1, 1, 1]),
                                          relative=True)
    assert "fastest" in grouped.axes[0].get_xlabel()
    assert plots.r2_log(measured[:4], measured[:4]) == 1.0
    curve = plots.topk_curve({1: 0.8, 5: 0.93, 10: 0.97}, "top-k")
    client = registry._client(store["uri"])
    run_id = store["versions"][2].run_id
    paths = plots.log_figures(run_id, {"predicted_vs_measured": fig, "grouped": grouped, "topk": curve},
                              tracking=store["uri"])
    assert paths == ["plots/predicted_vs_measured.png", "plots/grouped.png", "plots/topk.png"]
    listed = sorted(a.path for a in client.list_artifacts(run_id, "plots"))
    assert listed == sorted(paths)
    assert all(a.file_size > 1000 for a in client.list_artifacts(run_id, "plots"))


# --- mlflow ui ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture
def ui_server(store, tmp_path):
    """`mlflow ui` on the store (one worker, no job runner), in its own process group; always stopped."""
    port = free_port()
    log = open(tmp_path / "ui.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", store["uri"],
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, **ENV})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"mlflow ui did not answer: {(tmp_path / 'ui.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield base
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


def test_mlflow_ui_lists_run_and_champion(store, ui_server):
    api = ui_server + "/api/2.0/mlflow"
    exps = http_json(api + "/experiments/search", {"max_results": 50})["experiments"]
    exp_ids = [e["experiment_id"] for e in exps]
    runs = http_json(api + "/runs/search", {"experiment_ids": exp_ids, "max_results": 100})["runs"]
    run_ids = {r["info"]["run_id"] for r in runs}
    assert {v.run_id for v in store["versions"]} <= run_ids
    name = f"schedlab-{TARGET}"
    model = http_json(api + "/registered-models/get?" + urllib.parse.urlencode({"name": name}))["registered_model"]
    assert {"alias": "champion", "version": "3"} in model["aliases"]
    listed = http_json(api + "/registered-models/search?max_results=100")["registered_models"]
    assert name in {m["name"] for m in listed}
    alias = http_json(api + "/registered-models/alias?" + urllib.parse.urlencode({"name": name, "alias": "champion"}))
    tags = {t["key"]: t["value"] for t in alias["model_version"]["tags"]}
    assert alias["model_version"]["version"] == "3" and tags["feature_schema_version"] == str(SCHEMA_VERSION)


def test_versions_record_the_backend_and_the_scheduler_refuses_a_mismatch(store, tmp_path):
    """Every version is tagged with the target and backend whose runtimes it learned; the scheduler loads a
    model for another target, or another backend than the one it is told to compile with, only when told to
    (allow_mismatch=True), champion included."""
    from ir.target import get_target
    from scheduler.cost import CostModelError, load_model

    client = registry._client(store["uri"])
    assert client.get_model_version(f"schedlab-{TARGET}", "3").tags["backend"] == "numba"
    assert registry.recorded_target(f"models:/schedlab-{TARGET}@champion", store["uri"]) == (TARGET, "numba")
    host = get_target("host")
    with pytest.raises(CostModelError, match=f"learned the runtimes of target {TARGET} \\(not host\\): .*allow_mismatch=True"):
        load_model(f"models:/schedlab-{TARGET}/3", host, store["uri"])
    m = load_model(f"models:/schedlab-{TARGET}/3", host, store["uri"], allow_mismatch=True)
    assert (m.target, m.backend, m.name) == (TARGET, "numba", f"models:/schedlab-{TARGET}/3")

    uri = registry.tracking_uri(str(tmp_path / "halide.db"))
    log_and_register(build_model(ModelConfig(kind="hybrid"), seed=5), "host", dataset_tags(5),
                     {"val_top1_score": 0.6}, features(0), promote=True, tracking=uri, backend="halide")
    assert load_model("champion", host, uri, backend="halide").backend == "halide"
    with pytest.raises(CostModelError, match="backend halide \\(not numba\\)"):
        load_model("champion", host, uri, backend="numba")  # a search told to compile with numba
    assert load_model("champion", host, uri, backend="numba", allow_mismatch=True).name == \
        "models:/schedlab-host@champion"
    assert load_model("champion", host, uri).backend == "halide"  # told nothing: the champion's own backend


def test_registering_leaves_mlflows_global_uris_as_they_were(env, tmp_path, monkeypatch):
    """log_and_register points MLflow at its store only for the call: afterwards neither the module state nor the
    MLFLOW_* environment pins a registry, so a later MlflowClient(other_store) reads other_store's registry."""
    from mlflow.tracking._model_registry import utils as registry_state

    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    monkeypatch.setattr(registry_state, "_registry_uri", None)
    uri = f"sqlite:///{tmp_path}/a.db"
    log_and_register(build_model(ModelConfig(kind="hybrid"), seed=0), TARGET, dataset_tags(9), {"val_top1_score": 0.5},
                     features(9), promote=False, tracking=uri)
    assert registry_state._registry_uri is None and "MLFLOW_REGISTRY_URI" not in os.environ
    other = f"sqlite:///{tmp_path}/b.db"
    assert mlflow.MlflowClient(other)._registry_uri == other
