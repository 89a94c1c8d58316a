"""The Ray data-generation job, end to end on real Ray: a cluster started with `ray start` and a job sent
with `ray job submit`; a local job interrupted and rerun; injected crashes, hangs and dying workers.

Every test here runs real compilations of small random pipelines (a few seconds each on 2 cores), so the
jobs are tiny: what is checked is the bookkeeping (rows, statuses, names, resumption), not volume.
"""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from generator.job import JobConfig
from generator.job.__main__ import main
from generator.job.driver import JobError, resolve_paths
from generator.batch import BatchKey, SamplingModel, plan_batch
from ir.config import load_config

from .chatter import CHATTER, assert_clean_log
from .local_servers import free_port, ray_cli_ok, ray_env, ray_head

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
# conf/datagen.yaml sizes 20-stage pipelines to naive runtimes of 5 ms-1 s; the tests' pipelines are tiny, compiled by
# the job's default backend (llvm; under numba, seconds a compile, these tests took 8 minutes of CI)
TINY = ["backend=llvm", "max_stages=4", "output_size=[64,48,3]", "naive_runtime=null", "beam_size=2", "passes=1",
        "progress=false", "compile_timeout=300"]


def _rows(out: Path) -> pl.DataFrame:
    files = sorted((out / "target=host").glob("batch-*.parquet"))
    assert files, f"no batch written under {out}"
    return pl.concat([pl.read_parquet(f).with_columns(pl.lit(f.name).alias("file")) for f in files], how="diagonal")


def _job(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "generator.job", *args], cwd=ROOT, env=ray_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)


def _job_runs(store: Path) -> list:
    """The data-generation jobs' runs in a store (their own experiment also holds the rounds' training runs)."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{store / 'mlflow.db'}")
    exp = client.get_experiment_by_name("schedlab-datagen")
    return [r for r in client.search_runs([exp.experiment_id]) if r.info.run_name.startswith("datagen-host")]


# -- batches and plans, without Ray -----------------------------------------------------------------------


def _key(**kw) -> BatchKey:
    base = {"target": "host", "round": 0, "seed": 7, "schedules": 6, "max_stages": 4, "output_size": (64, 48, 3),
            "markov": False, "beam_size": 2, "passes": 1, "dropout": 1.0, "job_seed": 0, "protocol": "quick",
            "check_outputs": True}
    return BatchKey(**{**base, **kw})


def test_a_batch_name_is_a_function_of_what_decides_its_rows():
    assert _key().batch_id == _key().batch_id
    names = {_key().batch_id, _key(round=1).batch_id, _key(seed=8).batch_id, _key(schedules=7).batch_id,
             _key(job_seed=1).batch_id, _key(max_stages=5).batch_id, _key(backend="halide").batch_id}
    assert len(names) == 7
    assert _key(round=1, seed=9).batch_id.startswith("r1-p9-")


def test_the_jobs_contrasts_reach_its_batches():
    from generator.batch import BatchSpec

    cfg = load_config(JobConfig, ROOT / "conf/datagen.yaml")
    assert cfg.contrasts == 0  # the committed dataset's batch names stay what they are
    spec = BatchSpec.of_job(dataclasses.replace(cfg, contrasts=3), 1)
    assert spec.contrasts == 3 and all(k.contrasts == 3 for k in spec.keys())
    assert spec.batch_ids != BatchSpec.of_job(cfg, 1).batch_ids


def test_a_plan_is_one_beam_sample_then_distinct_dropout_samples_and_reproducible():
    a = plan_batch(_key(), SamplingModel("random:0"))
    b = plan_batch(_key(), SamplingModel("random:0"))
    samplers = [s.sampler for s in a.samples]
    assert samplers[0] == "beam" and set(samplers[1:]) == {"dropout"} and len(samplers) == 6
    fps = [s.loopnest.fingerprint for s in a.samples]
    assert len(set(fps)) == len(fps)
    assert fps == [s.loopnest.fingerprint for s in b.samples]
    assert a.model == "random:0" and a.expected is not None
    assert all(s.features.schedule.shape[0] == len(s.features.stages) for s in a.samples)


# -- bad input ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, text", [
    (["rounds=0"], "rounds must be >= 1"),
    (["no_such_key=1"], "unknown config key 'no_such_key'"),
    (["faults=explode:1:2"], "fault 'explode:1:2' must be KIND:SEED:INDEX"),
    (["target=h200"], "the llvm backend compiles for cpu targets; h200 is a cuda target"),  # the default backend
    (["train.epochs=x"], "train.epochs"),
    (["baselines=[naive,expert]"], "unknown baseline 'expert'; registered: naive, simple"),
    (["naive_runtime=[1,0.5]"], "naive_runtime must be two seconds with 0 < LO <= HI, got [1, 0.5]"),
    (["naive_runtime=[0.1]"], "naive_runtime must be two seconds LO,HI"),
    (["contrasts=16"], "contrasts must be in [0, schedules_per_pipeline - 1] (room for the beam sample they come "
                       "from), got 16 with schedules_per_pipeline 16"),
    (["first_sampler=hybrid"], "first_sampler must be random, analytical[:N], builtin[:name] or models:/<name>/<version>, got 'hybrid'"),
    (["measurement=rounds"], "config key 'measurement' must be one of interleaved, sequential; got 'rounds'"),
    (["mix_weights=random"], "config key 'mix_weights' must be one of indices, buffer; got 'random'"),
    (["benchmark_cpus=-1"], "max_retries, in_flight and benchmark_cpus must be >= 0"),
])
def test_bad_config_is_one_line_and_exit_status_2(args, text, tmp_path, capsys):
    assert main(["--config", str(ROOT / "conf/datagen.yaml"), f"out={tmp_path}", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert text in err and len(err.splitlines()) == 1, err


def test_the_benchmarker_reserves_a_cpu_only_without_the_quiet_lock():
    """With quiet_measurement the lock keeps a measurement alone on its node, so no CPU is reserved for the
    benchmarker (one would idle between measurements); without it, one is. An explicit value is kept."""
    assert load_config(JobConfig, ROOT / "conf/datagen.yaml").benchmark_cpus == 0
    assert load_config(JobConfig, ROOT / "conf/datagen.yaml", ["quiet_measurement=false"]).benchmark_cpus == 1
    assert JobConfig(benchmark_cpus=0.5).benchmark_cpus == 0.5
    assert JobConfig(quiet_measurement=False, benchmark_cpus=0).benchmark_cpus == 0


def test_relative_paths_are_refused_under_ray_job_submit(monkeypatch, tmp_path):
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}")
    monkeypatch.delenv("SCHEDLAB_MLFLOW_DIR", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(JobError, match="out=data is relative"):
        resolve_paths(JobConfig(out="data", tracking_uri=f"sqlite:///{tmp_path}/m.db"))
    # no tracking_uri: the per-user store, absolute wherever the job's working directory is
    assert resolve_paths(JobConfig(out=str(tmp_path)))[1] == f"sqlite:///{tmp_path}/cache/schedlab/mlflow/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///rel/mlflow.db")
    with pytest.raises(JobError, match="tracking_uri must be absolute"):
        resolve_paths(JobConfig(out=str(tmp_path)))
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    with pytest.raises(JobError, match="tracking_uri must be absolute"):
        resolve_paths(JobConfig(out=str(tmp_path), tracking_uri="sqlite:///rel/mlflow.db"))
    out, uri = resolve_paths(JobConfig(out=str(tmp_path / "d"), tracking_uri=f"sqlite:///{tmp_path}/m.db"))
    assert out == tmp_path / "d" and uri == f"sqlite:///{tmp_path}/m.db"


# -- failures of single samples are rows ---------------------------------------------------------------------


def test_crashing_hanging_and_dying_samples_are_recorded_and_the_rest_completes(tmp_path):
    seed = 11
    r = _job(["--config", "conf/datagen.yaml", f"out={tmp_path / 'data'}", f"tracking_uri={tmp_path / 'mlflow'}",
              "rounds=1", "pipelines_per_round=1", f"seed={seed}", "schedules_per_pipeline=5", "train.enabled=false",
              "benchmark_timeout=20", "max_retries=1", f"faults=crash:{seed}:1,hang:{seed}:2,die:{seed}:3", *TINY,
              "progress=auto"])
    assert r.returncode == 0, r.stderr[-3000:]
    # stderr is a pipe: a line per sample (never a redrawn bar), whatever Ray forwards from the dying workers
    assert_clean_log(r.stderr, longest=10_000)
    pattern = rf"^\[(\d)/5\] seed {seed} (\w+): (\w+) \(ok \d, failed \d\) elapsed \d\d:\d\d$"
    events = re.findall(pattern, r.stderr, re.M)
    assert sorted(int(n) for n, _, _ in events) == [1, 2, 3, 4, 5], r.stderr[-3000:]
    assert sorted(status for _, _, status in events) == ["crash", "ok", "ok", "timeout", "worker_died"]
    rows = _rows(tmp_path / "data")  # one batch, its rows in sample order
    assert rows.height == 5 and rows["file"].n_unique() == 1
    # the node that measured them (the only one) is recorded in the file, as the job's summary names it
    from featurize.dataset import file_machine
    from backends import measuring_machine

    assert file_machine(tmp_path / "data" / "target=host" / rows["file"][0]) == measuring_machine()
    assert measuring_machine() in r.stdout
    assert rows["status"].to_list() == ["ok", "crash", "timeout", "worker_died", "ok"], rows.select("status", "error")
    assert "died" in rows["error"][1] and "within 20 s" in rows["error"][2] and "tried 2 times" in rows["error"][3]
    assert rows["runtime_s"][0] > 0 and rows["runtime_s"][4] > 0
    assert "by status:" in r.stdout and "crash 1" in r.stdout and "timeout 1" in r.stdout and "worker_died 1" in r.stdout
    (run,) = _job_runs(tmp_path / "mlflow")  # the job's MLflow run counts the same statuses
    assert run.info.status == "FINISHED" and run.info.run_id in r.stdout
    m = run.data.metrics
    assert (m["status_ok"], m["status_crash"], m["status_timeout"], m["status_worker_died"]) == (2, 1, 1, 1)
    assert m["yield"] == 0.4 and m["samples_written"] == 5


def test_the_halide_backend_generates_rows_too(tmp_path):
    pytest.importorskip("halide")
    r = _job(["--config", "conf/datagen.yaml", f"out={tmp_path / 'data'}", f"tracking_uri={tmp_path / 'mlflow'}",
              "rounds=1", "pipelines_per_round=1", "seed=40", "schedules_per_pipeline=3", "train.enabled=false",
              *TINY, "backend=halide"])
    assert r.returncode == 0, r.stderr[-3000:]
    rows = _rows(tmp_path / "data")
    assert rows["backend"].to_list() == ["halide"] * 3
    assert rows["status"].to_list() == ["ok"] * 3, rows.select("status", "error")
    assert (rows["runtime_s"] > 0).all() and (rows["compile_s"] > 0).all()
    node = next(line for line in r.stdout.splitlines() if line.startswith("node "))
    assert "; kernel cache " in node and " kernels, " in node, node  # each node pruned its cache (backends.cache)


def test_sequential_measurement_times_each_handed_over_kernel_as_it_compiles(tmp_path):
    """measurement=sequential: each compile task's kernel goes to its node's benchmarker on its own (driver.on_compile,
    Benchmarker.measure), not in a block; every sample is still an ok row with a runtime."""
    r = _job(["--config", "conf/datagen.yaml", f"out={tmp_path / 'data'}", f"tracking_uri={tmp_path / 'mlflow'}",
              "rounds=1", "pipelines_per_round=1", "seed=42", "schedules_per_pipeline=3", "train.enabled=false",
              *TINY, "measurement=sequential"])
    assert r.returncode == 0, r.stderr[-3000:]
    rows = _rows(tmp_path / "data")
    assert rows["status"].to_list() == ["ok"] * 3, rows.select("status", "error")
    assert (rows["runtime_s"] > 0).all() and (rows["compile_s"] > 0).all()
    assert re.search(r"measuring [^(]+\(sequential; \+", r.stdout), r.stdout[-2000:]


def test_the_numba_backend_generates_rows_too(tmp_path):
    r = _job(["--config", "conf/datagen.yaml", f"out={tmp_path / 'data'}", f"tracking_uri={tmp_path / 'mlflow'}",
              "rounds=1", "pipelines_per_round=1", "seed=41", "schedules_per_pipeline=3", "train.enabled=false",
              *TINY, "backend=numba"])
    assert r.returncode == 0, r.stderr[-3000:]
    rows = _rows(tmp_path / "data")
    assert rows["backend"].to_list() == ["numba"] * 3
    assert rows["status"].to_list() == ["ok"] * 3, rows.select("status", "error")
    assert (rows["runtime_s"] > 0).all() and (rows["compile_s"] > 0).all()


# -- interrupted and rerun: every batch exactly once -----------------------------------------------------------


def test_an_interrupted_job_resumes_and_writes_every_batch_exactly_once(tmp_path):
    """The last batch's first sample hangs, so the job is surely under way when it is interrupted after
    three batches; the rerun (without the fault, which does not enter batch names) finishes the fourth."""
    out = tmp_path / "data"
    args = ["--config", "conf/datagen.yaml", f"out={out}", f"tracking_uri={tmp_path / 'mlflow'}", "rounds=1",
            "pipelines_per_round=4", "seed=20", "schedules_per_pipeline=3", "in_flight=1", "train.enabled=false",
            *TINY]
    proc = subprocess.Popen([PY, "-m", "generator.job", *args, "faults=hang:23:0", "benchmark_timeout=600"],
                            cwd=ROOT, env=ray_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    part = out / "target=host"
    deadline = time.monotonic() + 600
    while len(list(part.glob("batch-*.parquet"))) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the job ignored SIGINT for 120 s: {proc.communicate()[1][-2000:]}")
    first = {f.name: f.stat().st_mtime_ns for f in part.glob("batch-*.parquet")}
    assert proc.returncode == 130, stderr[-3000:]
    (run,) = _job_runs(tmp_path / "mlflow")
    assert run.info.status == "KILLED" and run.data.metrics["batches_written"] == 3
    assert "interrupted" in stdout and "3 batches written" in stdout, stdout
    assert sorted(n.split("-")[2] for n in first) == ["p20", "p21", "p22"], sorted(first)

    r = _job(args)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "3 already there" in r.stdout and "1 batches written" in r.stdout, r.stdout
    rows = _rows(out)
    assert rows["file"].n_unique() == 4 and rows["pipeline_id"].n_unique() == 4
    assert rows.select("pipeline_id", "schedule_id").is_duplicated().sum() == 0
    assert rows.group_by("file").len()["len"].to_list() == [3] * 4
    assert rows.filter(pl.col("file").str.starts_with("batch-r0-p23-"))["status"].to_list() == ["ok"] * 3
    assert {f.name: f.stat().st_mtime_ns for f in part.glob("batch-*.parquet") if f.name in first} == first
    assert not list(part.glob(".*.tmp"))


# -- a real cluster: ray start + ray job submit, two rounds with bootstrapping -------------------------------------


@pytest.fixture
def cluster():
    """A one-node cluster on loopback with its dashboard (for `ray job submit`); yields the dashboard's address."""
    port, dash = free_port(), free_port()
    address = f"http://127.0.0.1:{dash}"
    with ray_head(["--port", str(port), "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dash),
                   "--num-cpus", "2", "--include-dashboard", "true"],
                  lambda: ray_cli_ok("job", "list", "--address", address), what="the Ray dashboard"):
        yield address


def test_ray_job_submit_generates_two_rounds_and_bootstraps_the_model(cluster, tmp_path):
    out, db = tmp_path / "data", tmp_path / "mlflow.db"
    cmd = [str(Path(PY).parent / "ray"), "job", "submit", "--address", cluster, "--working-dir", ".",
           "--runtime-env", "conf/runtime_env.yaml", "--",
           "python", "-m", "generator.job", "--config", "conf/datagen.yaml", f"out={out}", f"tracking_uri=sqlite:///{db}",
           "rounds=2", "pipelines_per_round=3", "seed=30", "schedules_per_pipeline=3", "train.min_schedules=2",
           "train.val_fraction=0.4", "train.epochs=2", "train.max_spread=null", *TINY]
    # max_spread=null: 64x48 kernels timed beside the other tests' compiles often repeat >25 % apart; with the
    # default, a round-0 pipeline could fall below min_schedules and round 1 would sample at random (CI, stop 56)
    for _ in range(60):  # the head answers `ray job list` before its job agent accepts submissions (slow under load)
        r = subprocess.run(cmd, cwd=ROOT, env=ray_env(), capture_output=True, text=True, timeout=1200, check=False)
        log = r.stdout + r.stderr
        if "No available agent to submit job" not in log:
            break
        time.sleep(3)
    assert r.returncode == 0, log[-4000:]
    assert "succeeded" in log and "data generation done" in log and "samples per hour per core" in log
    assert not [c for c in CHATTER if c in log], log[-4000:]  # two trainings and registrations, quietly

    rows = _rows(out)
    assert rows["file"].n_unique() == 6 and rows.height == 18, rows.select("file", "status")
    assert rows.filter(pl.col("round") == 0)["model_version"].unique().to_list() == ["random:30"]
    assert rows.filter(pl.col("round") == 1)["model_version"].unique().to_list() == ["models:/schedlab-host/1"], \
        [line for line in log.splitlines() if "not trained" in line or "registered" in line]
    assert rows.filter(pl.col("sampler") == "beam").height == 6
    assert rows["status"].to_list().count("ok") >= 12, rows.select("status", "error")
    for r_ in (0, 1):
        marker = json.loads((out / "job" / "target=host" / f"round-{r_}.json").read_text())
        assert marker["model"] == f"models:/schedlab-host/{r_ + 1}"
    assert "model after round 1: models:/schedlab-host/2" in log
    _check_lineage(f"sqlite:///{db}", out, rows, log)


def _check_lineage(store: str, out: Path, rows: pl.DataFrame, log: str) -> None:
    """The job is one MLflow run: its config, throughput, yield and statuses, the dataset it wrote as an input,
    and each round's training run nested under it with the data it trained on."""
    from mlflow import MlflowClient

    client = MlflowClient(store)
    exp = client.get_experiment_by_name("schedlab-datagen")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    (parent,) = [r for r in client.search_runs([exp.experiment_id]) if r.info.run_name.startswith("datagen-host-")]
    assert parent.info.status == "FINISHED" and parent.info.run_id in log
    assert parent.data.tags["mlflow.source.name"].endswith("generator/job/__main__.py")
    m, p = parent.data.metrics, parent.data.params
    ok = rows["status"].to_list().count("ok")
    assert m["samples_written"] == rows.height and m["yield"] == ok / rows.height and m["samples_per_s"] > 0
    assert m["status_ok"] == ok and sum(v for k, v in m.items() if k.startswith("status_")) == rows.height
    assert p["rounds"] == "2" and p["train.epochs"] == "2" and p["data_path"] == str(out / "target=host")
    (data,) = parent.inputs.dataset_inputs
    fp = parent.data.tags["dataset_fingerprint"]
    assert data.dataset.name == data.dataset.digest == fp and parent.info.run_name == f"datagen-host-{fp[:8]}"
    assert json.loads(data.dataset.source)["uri"] == str(out) and [t.value for t in data.tags] == ["generated"]
    assert json.loads(data.dataset.profile)["samples"] == rows.height
    assert "status" in data.dataset.schema and parent.data.tags["mlflow.note.content"].startswith("Data generation")
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert sorted(c.info.run_name for c in children) == ["train-host-round0", "train-host-round1"]
    for child in children:
        (trained_on,) = child.inputs.dataset_inputs
        assert trained_on.dataset.digest == child.data.params["data_fingerprint"]
        assert [t.value for t in trained_on.tags] == ["training"]
        assert "#/models/schedlab-host/versions/" in child.data.tags["mlflow.note.content"]
