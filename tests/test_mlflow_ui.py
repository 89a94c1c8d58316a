"""What an MLflow user sees: a real store written by `python -m train` and `python -m evaluate` through the standard
MLFLOW_TRACKING_URI (a tiny dataset measured here, a model trained and registered, the champion evaluated), served by
`mlflow server`, and read by headless Chromium as a user opens it: the registered model lists its version with the
champion alias, the evaluation run names the version it scored, the experiment opens in the Model training layout.

Chromium: Debian's `chromium` package (.ci/run installs it where it can); without it the browser tests are skipped
and the store test still runs. Screenshots of the three pages go to $SCHEDLAB_UI_SCREENSHOTS (default: the test's
temporary directory) for a person to look at.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from .local_servers import free_port

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium)")
MODEL = "schedlab-host"


@dataclass(frozen=True)
class Store:
    uri: str
    db: Path
    cwd: Path  # where the commands ran: nothing may land here
    home: Path  # their HOME: the default store must stay untouched
    train_run: str
    eval_run: str
    eval_experiment: str


def _run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    r = subprocess.run([PY, "-m", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, (args, r.stderr[-3000:])
    return r.stdout


def _run_id(stdout: str) -> str:
    return next(line.split()[2] for line in stdout.splitlines() if line.startswith("MLflow run "))


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    """8 random pipelines x 5 schedules measured with numba, then the two commands with no tracking_uri=: only
    MLFLOW_TRACKING_URI names the store (a directory that does not exist yet)."""
    from generator.datagen import BatchSpec, generate_batch

    tmp = tmp_path_factory.mktemp("ui")
    data, cwd, home = tmp / "data", tmp / "cwd", tmp / "home"
    cwd.mkdir()
    home.mkdir()
    halves = (tuple(range(0, 8, 2)), tuple(range(1, 8, 2)))
    with ThreadPoolExecutor(2) as pool:
        ok = sum(s.ok for s in pool.map(lambda seeds: generate_batch(
            BatchSpec(seeds, 5, max_stages=3, output_size=(32, 24, 3), backend="llvm"), data), halves))
    assert ok >= 30
    db = tmp / "store" / "mlflow.db"
    env = {k: v for k, v in os.environ.items() if k not in ("SCHEDLAB_MLFLOW_DIR", "XDG_CACHE_HOME")}
    env.update(MLFLOW_TRACKING_URI=f"sqlite:///{db}", HOME=str(home), MLFLOW_DISABLE_TELEMETRY="true",
               DO_NOT_TRACK="true", MPLCONFIGDIR=str(tmp / "mpl"), PYTHONPATH=str(ROOT))
    common = [f"data={data}", "min_schedules=4", "val_fraction=0.3", "progress=false"]
    trained = _run(["train", *common, "epochs=2", "promote=true", "promotion=always",
                    f"checkpoint_dir={tmp / 'ckpt'}"], env, cwd)
    evaluated = _run(["evaluate", "--config", str(ROOT / "conf/evaluate.yaml"), "model=champion", *common], env, cwd)
    from mlflow import MlflowClient

    eval_run = _run_id(evaluated)
    return Store(f"sqlite:///{db}", db, cwd, home, _run_id(trained), eval_run,
                 MlflowClient(f"sqlite:///{db}").get_run(eval_run).info.experiment_id)


def test_mlflow_tracking_uri_is_where_train_and_evaluate_write(store):
    from mlflow import MlflowClient

    client = MlflowClient(store.uri, registry_uri=store.uri)
    assert store.db.is_file()
    assert client.get_run(store.train_run).info.run_name == "train-host-hybrid"
    run = client.get_run(store.eval_run)
    assert run.info.run_name == "eval-schedlab-host-v1-val"
    assert run.data.params["model_uri"] == f"models:/{MODEL}@champion"
    assert run.data.params["model_version"] == f"models:/{MODEL}/1"
    assert run.data.tags["mlflow.source.name"].endswith("evaluate/__main__.py")  # the UI's Source
    assert str(client.get_model_version_by_alias(MODEL, "champion").version) == "1"
    assert list(store.cwd.iterdir()) == [] and list(store.home.iterdir()) == []  # no other store was made


# -- the UI ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(store, tmp_path_factory):
    """`mlflow server` over the store on a free loopback port, stopped by signalling the process group it leads."""
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(Path(PY).parent / "mlflow"), "server", "--backend-store-uri", store.uri,
                                 "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while True:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(2)
    yield base
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    d = Path(os.environ.get("SCHEDLAB_UI_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _chromium(url: str, profile: Path, *args: str) -> str:
    """One headless Chromium load of `url` (the UI is a React app: virtual time lets it fetch and render)."""
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        f"--user-data-dir={profile}", "--virtual-time-budget=20000", *args, url],
                       capture_output=True, text=True, timeout=180, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _page(url: str, tmp_path: Path, screenshot: Path, *expected: str) -> str:
    """The rendered DOM of `url` once it shows every `expected` text (up to three loads), and its screenshot."""
    for _ in range(3):
        dom = _chromium(url, tmp_path / "profile", "--dump-dom")
        if all(e in dom for e in expected):
            break
    _chromium(url, tmp_path / "profile", "--window-size=1400,900", f"--screenshot={screenshot}")
    assert screenshot.stat().st_size > 10_000
    return dom


@needs_chromium
def test_the_model_page_lists_its_versions_with_the_champion_alias(server, store, shots, tmp_path):
    dom = _page(f"{server}/#/models/{MODEL}", tmp_path, shots / "models.png", "Version 1", "champion")
    assert "Version 1" in dom and "champion" in dom, dom[-3000:]
    assert "learned cost models for target host" in dom  # the registered model's description


@needs_chromium
def test_the_evaluation_run_page_shows_the_version_it_scored(server, store, shots, tmp_path):
    url = f"{server}/#/experiments/{store.eval_experiment}/runs/{store.eval_run}"
    dom = _page(url, tmp_path, shots / "evaluation_run.png", "eval-schedlab-host-v1-val", f"models:/{MODEL}/1")
    assert "eval-schedlab-host-v1-val" in dom and f"models:/{MODEL}/1" in dom, dom[-3000:]
    assert f"#/models/{MODEL}/versions/1" in dom and f"{MODEL} version 1" in dom  # the description's link
    assert "Evaluation" in dom  # the dataset input's context


@needs_chromium
def test_the_experiment_opens_in_the_model_training_layout(server, store, shots, tmp_path):
    url = f"{server}/#/experiments/{store.eval_experiment}?workflowType=machine_learning"
    dom = _page(url, tmp_path, shots / "experiment.png", "eval-schedlab-host-v1-val", "Model registry")
    assert "eval-schedlab-host-v1-val" in dom and "Model registry" in dom, dom[-3000:]
    assert "how well a model ranks the schedules" in dom  # the experiment's description
