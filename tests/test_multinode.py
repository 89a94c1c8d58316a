"""Multi-node Ray for real: a head and a worker node on loopback (two `ray start`), the data-generation job
submitted as users do (`ray job submit --working-dir . --runtime-env conf/runtime_env.yaml`) and run across
both. The worker node imports a stale copy of schedlab (its PYTHONPATH): a plain driver refuses it with one
line naming the node, the submitted job runs the driver's code everywhere. Then the worker node is killed
mid-round (its raylet and its workers, by pid), and the job still ends with every batch written exactly once
and every sample measured (a measurement lost with the node is measured again on the head). Measurement stays
one at a time per node. The nodes are stopped by signalling the processes this test started
(never `ray stop`, which would stop every Ray process of this user, other tests' included)."""

from __future__ import annotations

import os
import signal
import subprocess
import shutil
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

from .local_servers import PY, RAY, free_port, ray_env, stop

ROOT = Path(__file__).resolve().parent.parent
PIPELINES, SCHEDULES = 6, 3


def _pids_with(text: str) -> list[int]:
    """Processes whose command line contains `text`."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if text in (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is `pid`, with their titles (Ray titles a worker ray::<task> while it runs one)."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            title = (d / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out[int(d.name)] = title
    return out


def _busy(children: dict[int, str]) -> list[str]:
    """Titles of the Ray workers running one of the job's tasks (ray::IDLE, or the bare actor name, otherwise)."""
    return [t for t in children.values() if t.startswith("ray::") and
            any(task in t for task in ("plan_task", "compile_task", "Benchmarker."))]


def _alive_nodes(address: str) -> int:
    code = ("import ray, json; ray.init(address=%r, logging_level='ERROR'); "
            "print(json.dumps(sum(n['Alive'] for n in ray.nodes())))" % address)
    # a probe of a cluster still starting can hang in ray.init; it counts as no node yet, and the caller's
    # deadline, not one probe, decides when the cluster failed to start (CI of stop 63: one probe hung 120 s)
    try:
        r = subprocess.run([PY, "-c", code], env=ray_env(), capture_output=True, text=True, timeout=45,
                           check=False)
        return int(r.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return 0


def _stale_checkout(root: Path) -> Path:
    """A copy of schedlab's packages with one file changed: what a node with an older checkout imports."""
    from generator.job.nodes import PACKAGES

    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "generator" / "job" / "driver.py", "a") as f:
        f.write("# an older checkout\n")
    return root


@pytest.fixture
def two_nodes(tmp_path):
    """A head (with the dashboard, for ray job submit) and a worker node whose PYTHONPATH points at a stale
    copy of schedlab, as a node with an old checkout would import."""
    temp = Path(tempfile.mkdtemp(prefix="mn", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    worker_temp = Path(tempfile.mkdtemp(prefix="mw", dir="/tmp"))
    port, dash, worker_port = free_port(), free_port(), free_port()
    address = f"127.0.0.1:{port}"
    common = ["--block", "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
    # every node's dashboard agent on its own port: the default (52365) is one per machine, and a second cluster
    # of another test (ray job submit needs its agent) must not find it taken
    agent = lambda: ["--dashboard-agent-listen-port", str(free_port())]  # noqa: E731
    env = {**ray_env(), "SCHEDLAB_CACHE_DIR": str(tmp_path / "kernels")}  # cold: every sample really compiles
    stale = _stale_checkout(tmp_path / "stale")
    head = subprocess.Popen([RAY, "start", "--head", "--port", str(port), "--temp-dir", str(temp),
                             "--include-dashboard", "true", "--dashboard-host", "127.0.0.1", "--dashboard-port",
                             str(dash), *agent(), *common], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    procs = [head]
    try:
        deadline = time.monotonic() + 300  # a loaded 2-core machine starts Ray slowly
        # `ray start` exits 0 once its node is launched, which may be before the cluster lists the node alive:
        # only a nonzero exit is a failure
        while _alive_nodes(address) < 1:
            assert head.poll() in (None, 0) and time.monotonic() < deadline, "the head node did not start"
            time.sleep(1)
        # its own temp dir, as on another machine: nodes sharing one would unpack the job's working directory
        # into the same place, one deleting it under the other's processes
        worker = subprocess.Popen([RAY, "start", "--address", address, "--node-manager-port", str(worker_port),
                                   "--temp-dir", str(worker_temp), *agent(), *common], env={**env, "PYTHONPATH": str(stale)},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(worker)
        while _alive_nodes(address) < 2:
            assert worker.poll() in (None, 0) and time.monotonic() < deadline, "the worker node did not join"
            time.sleep(1)
        yield address, f"http://127.0.0.1:{dash}", worker_port, stale
    finally:
        stop(procs)
        for pid in _pids_with(str(temp)) + _pids_with(str(worker_temp)):  # anything of this cluster still around
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(temp, ignore_errors=True)
        shutil.rmtree(worker_temp, ignore_errors=True)


def _submit(dashboard: str, args: list[str], log: Path) -> subprocess.Popen:
    """`ray job submit` of the job with the project's runtime environment, following its log into `log`;
    retried while the head's job agent is not up yet (it answers after the dashboard, slowly under load)."""
    cmd = [RAY, "job", "submit", "--address", dashboard, "--working-dir", ".", "--runtime-env",
           "conf/runtime_env.yaml", "--", "python", *args]
    for _ in range(60):
        with open(log, "w") as f:
            job = subprocess.Popen(cmd, cwd=ROOT, env=ray_env(), stdout=f, stderr=subprocess.STDOUT, text=True)
        try:
            job.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return job  # submitted and running
        if "No available agent to submit job" not in log.read_text():
            pytest.fail(f"ray job submit ended at once: {log.read_text()[-3000:]}")
        time.sleep(3)
    pytest.fail("the head's job agent never accepted the job")


def test_a_node_dies_mid_round_and_nothing_is_lost_or_duplicated(two_nodes, tmp_path):
    address, dashboard, worker_port, stale = two_nodes
    out = tmp_path / "data"
    args = ["-m", "generator.job", "--config", str(ROOT / "conf" / "datagen.yaml"), f"out={out}",
            f"tracking_uri=sqlite:///{tmp_path / 'ml' / 'mlflow.db'}", "rounds=1", f"pipelines_per_round={PIPELINES}", "seed=40",
            f"schedules_per_pipeline={SCHEDULES}", "train.enabled=false", "benchmark_cpus=0", "max_retries=2",
            "backend=numba", "max_stages=4", "output_size=[64,48,3]", "naive_runtime=null", "beam_size=2", "passes=1", "progress=false",
            "compile_timeout=300",
            "benchmark_timeout=60"]
    # run as a plain driver, the job finds the worker node importing the stale copy and refuses to start
    # (from another directory: Ray puts the driver's directory on every worker's path, which on one machine
    # would hide the stale copy; schedlab comes from its installation)
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in ray_env().items() if k != "PYTHONPATH"}
    plain = subprocess.run([PY, *args, f"ray_address={address}"], cwd=away, env=env, capture_output=True,
                           text=True, timeout=300, check=False)
    err = [line for line in plain.stderr.splitlines() if line.startswith("python -m generator.job: error:")]
    assert plain.returncode == 2 and len(err) == 1, plain.stderr[-3000:]
    assert "imports other schedlab code" in err[0] and str(stale) in err[0] and "--working-dir" in err[0], err
    assert not out.exists() or not list(out.rglob("*.parquet"))

    # submitted with the project's runtime environment, every node runs the driver's code
    log = tmp_path / "submit.log"
    job = _submit(dashboard, args, log)
    part = out / "target=host"
    deadline = time.monotonic() + 600
    while not list(part.glob("batch-*.parquet")) and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    if job.poll() is not None:
        pytest.fail(f"the job ended before the worker node could be killed: {log.read_text()[-4000:]}")
    raylets = [p for p in _pids_with(f"--node_manager_port={worker_port}") if "raylet" in
               (Path("/proc") / str(p) / "cmdline").read_bytes().decode(errors="replace")]
    assert len(raylets) == 1, raylets
    while not _busy(_children(raylets[0])) and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # kill it while it works on the job
    # the whole node dies at once, as a machine does: its raylet and every worker under it, with whatever they
    # were planning, compiling, measuring (killed alone, the raylet leaves its workers running for a moment, and
    # a measurement could still finish and reply to the driver directly)
    children = _children(raylets[0])
    busy = _busy(children)
    written_before = len(list(part.glob("batch-*.parquet")))
    for pid in (raylets[0], *children):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert busy, "the worker node had no task of the job when it was killed"

    job.wait(timeout=900)
    stdout = log.read_text()
    assert job.returncode == 0 and "succeeded" in stdout, stdout[-4000:]
    nodes = [line for line in stdout.splitlines() if line.startswith("node ")]
    assert len(nodes) == 2 and len({line.rsplit("code ", 1)[1] for line in nodes}) == 1, nodes
    assert written_before < PIPELINES, "every batch was written before the node died: nothing was tested"
    files = sorted(part.glob("batch-*.parquet"))
    rows = pl.concat([pl.read_parquet(f).with_columns(pl.lit(f.name).alias("file")) for f in files])
    assert len(files) == PIPELINES and rows["pipeline_id"].n_unique() == PIPELINES  # every batch, once
    assert rows.group_by("file").len()["len"].to_list() == [SCHEDULES] * PIPELINES  # every sample, once
    assert rows.select("pipeline_id", "schedule_id").is_duplicated().sum() == 0
    # plan and compile tasks are retried by Ray; a measurement whose benchmarker died is measured again on the
    # head: nothing is lost
    assert set(rows["status"].to_list()) == {"ok"}, rows.filter(pl.col("status") != "ok").select("status", "error")
    print("killed while busy with", busy, *[ln for ln in stdout.splitlines() if ln.startswith("samples:")])
    if any("Benchmarker.measure" in t for t in busy):
        assert "measured again after their benchmarker died" in stdout, stdout[-3000:]
    assert "data generation done" in stdout and f"{PIPELINES} batches written" in stdout, stdout
    assert not list(part.glob(".*.tmp"))
