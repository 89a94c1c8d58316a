"""evaluate end to end on real parts: a dataset generated here (random pipelines x sampled schedules, compiled
and benchmarked with llvm, the job's default backend), a model trained with Lightning and registered in a SQLite
MLflow store, then `python -m evaluate` on the held-out pipelines and `python -m evaluate.apps` on two small apps,
both read back from MLflow; and the one-line errors of both commands.

The dataset (8 random pipelines x 5 schedules of up to 3 stages at 32 x 24 x 3) takes seconds to
generate (a minute and a half under numba, nearly all of it compiling); EVALUATE_TEST_DATA=<dir> keeps it there
for the next run.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from pathlib import Path

import pytest

from evaluate.config import AppsConfig, EvalConfig, EvaluateError
from generator.datagen import BatchSpec, generate_batch
from ir.config import load_config

ROOT = Path(__file__).resolve().parent.parent
PIPELINES = 8
SCHEDULES = 5
MIN_SCHEDULES = 4
VAL_FRACTION = 0.3  # 3 of the 8 pipelines
CHAMPION = "models:/schedlab-host@champion"
ENV = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """Two batches of half the pipelines each, measured at once (each batch has its own worker process). With
    EVALUATE_TEST_DATA=<dir>, the batches are written there once and found there afterwards."""
    root = Path(os.environ.get("EVALUATE_TEST_DATA") or tmp_path_factory.mktemp("data"))
    halves = (tuple(range(0, PIPELINES, 2)), tuple(range(1, PIPELINES, 2)))
    with ThreadPoolExecutor(2) as pool:
        ok = sum(s.ok for s in pool.map(lambda seeds: generate_batch(
            BatchSpec(seeds, SCHEDULES, max_stages=3, output_size=(32, 24, 3), backend="llvm"), root), halves))
    assert ok >= 0.8 * PIPELINES * SCHEDULES
    return root


@pytest.fixture(scope="module")
def tracking(tmp_path_factory) -> str:
    """A fresh SQLite store; telemetry off and matplotlib's cache in tmp for this module."""
    tmp = tmp_path_factory.mktemp("mlflow")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in ENV.items():
            mp.setenv(k, v)
        mp.setenv("MPLCONFIGDIR", str(tmp / "mpl"))
        yield f"sqlite:///{tmp}/mlflow.db"


@pytest.fixture(scope="module")
def trained(dataset, tracking, tmp_path_factory):
    """A hybrid model trained for two epochs, registered and pinned as champion of schedlab-host (promotion=always:
    these tests evaluate a champion, whether or not two epochs beat the baselines; tests/test_train.py checks the
    honest rule)."""
    from train.config import TrainConfig
    from train.run import train

    return train(TrainConfig(data=str(dataset), tracking_uri=tracking, epochs=2, progress=False,
                             min_schedules=MIN_SCHEDULES, val_fraction=VAL_FRACTION, promote=True, promotion="always",
                             checkpoint_dir=str(tmp_path_factory.mktemp("ckpt"))))


def eval_config(dataset, tracking, **kw) -> EvalConfig:
    return EvalConfig(**{"model": CHAMPION, "data": str(dataset), "val_fraction": VAL_FRACTION,
                         "min_schedules": MIN_SCHEDULES, "tracking_uri": tracking, "progress": False, **kw})


@pytest.fixture(scope="module")
def evaluated(trained, dataset, tracking):
    from evaluate.models import evaluate_model

    return evaluate_model(eval_config(dataset, tracking))


def _client(tracking):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=tracking)


def _artifacts(client, run_id: str, path: str = "") -> set[str]:
    return {a.path for a in client.list_artifacts(run_id, path)}


# -- python -m evaluate ---------------------------------------------------------------------------------------


def test_evaluate_logs_metrics_and_figures_to_mlflow(evaluated, trained, tracking):
    print(evaluated.summary())
    client = _client(tracking)
    run = client.get_run(evaluated.run_id)
    assert run.info.status == "FINISHED"
    m = run.data.metrics
    assert all(k.startswith("eval/") for k in m), sorted(m)  # one section of charts in the MLflow UI
    m = {k.removeprefix("eval/"): v for k, v in m.items()}
    for key in ("pairwise_accuracy", "ordering_rate_1_3", "top1_score", "top5_score"):
        assert 0.0 <= m[key] <= 1.0, (key, m[key])
    assert 0.0 < m["top1_score"] <= m["top5_score"] <= 1.0
    assert -1.0 <= m["kendall_tau"] <= 1.0
    assert m["r2_log_runtime"] <= 1.0
    assert "pipelines" not in m and "samples" not in m  # counts are params
    assert run.data.params["eval_pipelines"] == str(evaluated.metrics.pipelines)
    assert run.data.params["eval_samples"] == str(evaluated.metrics.samples)
    # the curve stops at the largest pipeline's schedule count, where every order scores 1
    topk = sorted(client.get_metric_history(evaluated.run_id, "eval/topk_score"), key=lambda h: h.step)
    assert [h.step for h in topk] == list(range(1, len(topk) + 1)) and MIN_SCHEDULES <= len(topk) <= SCHEDULES
    assert all(0.0 < h.value <= 1.0 for h in topk) and topk[-1].value == 1.0
    assert {"plots/predicted_vs_measured.png", "plots/predicted_vs_measured_relative.png",
            "plots/topk_score.png"} <= _artifacts(client, evaluated.run_id, "plots")
    p = run.data.params
    assert p["model_uri"] == CHAMPION and p["split"] == "val"
    assert p["data_fingerprint"] == client.get_run(trained.run_id).data.params["data_fingerprint"]
    # the training run says which machine measured its data (the fixture's data: generated on this host)
    from ir.target import machine_description

    assert client.get_run(trained.run_id).data.params["data_machines"].startswith(machine_description())


def test_an_evaluation_names_and_links_the_version_it_scored(evaluated, trained, tracking):
    """models:/schedlab-host@champion is recorded as the version it resolved to, linked both ways: the run links
    to the version's page and has its LoggedModel as an input; the LoggedModel holds the run's metrics."""
    client = _client(tracking)
    run = client.get_run(evaluated.run_id)
    v = trained.registered.version
    version = f"models:/schedlab-host/{v}"
    assert run.data.params["model_version"] == run.data.tags["model_version"] == evaluated.model_version == version
    assert run.info.run_name == f"eval-schedlab-host-v{v}-val" and version in evaluated.summary()
    assert f"(#/models/schedlab-host/versions/{v})" in run.data.tags["mlflow.note.content"]
    (data,) = run.inputs.dataset_inputs
    assert data.dataset.name == data.dataset.digest == run.data.params["data_fingerprint"]
    assert [t.value for t in data.tags] == ["evaluation"]
    (model,) = run.inputs.model_inputs
    logged = client.get_logged_model(model.model_id)
    assert logged.source_run_id == trained.run_id
    assert client.get_model_version("schedlab-host", v).source == f"models:/{model.model_id}"
    mine = {m.key: m for m in logged.metrics if m.run_id == evaluated.run_id}
    assert mine["eval/top1_score"].value == run.data.metrics["eval/top1_score"]
    assert mine["eval/top1_score"].dataset_digest == data.dataset.digest
    exp = client.get_experiment(run.info.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    train_run = client.get_run(trained.run_id)
    assert train_run.info.run_name == "train-host-hybrid"
    assert f"versions/{v})" in train_run.data.tags["mlflow.note.content"]
    (trained_on,) = train_run.inputs.dataset_inputs
    assert trained_on.dataset.digest == data.dataset.digest and [t.value for t in trained_on.tags] == ["training"]


def test_metrics_are_computed_on_exactly_the_held_out_pipelines(evaluated, trained, dataset):
    from train.data import DataConfig, TrainingData

    # the same label filter as training and evaluation (on a loaded machine a noisy label is dropped by all three)
    data = TrainingData.load(DataConfig(path=str(dataset), min_schedules=MIN_SCHEDULES, val_fraction=VAL_FRACTION,
                                        max_spread=EvalConfig.max_spread))
    held_out = {b.pipeline_id for b in data.val}
    assert held_out and evaluated.metrics.pipelines == len(held_out) == trained.val_pipelines
    assert set(evaluated.pipeline_ids) == held_out
    assert evaluated.metrics.samples == data.stats.val_samples
    # the champion is the trained model: its metrics are training's final validation metrics
    for key, value in evaluated.metrics.as_dict("val_").items():
        assert value == pytest.approx(trained.val[key], abs=1e-9, nan_ok=True), key


def test_split_val_holds_out_what_the_model_itself_held_out(evaluated, trained, dataset, tracking):
    """A config whose val_fraction differs from the model's training would score training pipelines: the model's
    recorded split wins, and the summary says so."""
    from evaluate.models import evaluate_model

    assert "held out as in the model's training: val_fraction=" in evaluated.summary()
    other = evaluate_model(eval_config(dataset, tracking, val_fraction=0.9, max_k=4))
    assert other.pipeline_ids == evaluated.pipeline_ids
    assert "(the config said 0.9," in other.summary()


def test_random_weights_on_every_pipeline(dataset, tracking):
    from evaluate.models import evaluate_model
    from train.data import DataConfig, TrainingData

    r = evaluate_model(eval_config(dataset, tracking, model="random:0", split="all", max_k=4))
    stats = TrainingData.load(DataConfig(path=str(dataset), min_schedules=MIN_SCHEDULES,
                                         val_fraction=VAL_FRACTION, max_spread=EvalConfig.max_spread)).stats
    assert r.model == "random:0" and r.metrics.pipelines == stats.train_pipelines + stats.val_pipelines
    assert sorted(r.topk) == [1, 2, 3, 4]
    assert math.isfinite(r.metrics.pairwise_accuracy)


def test_several_datasets_are_scored_as_one(dataset, tracking, tmp_path):
    """data=A,B, as training reads several datasets (a built-in model's lineage lists its several): the pipelines of
    both, scored as if one root held them all."""
    import shutil

    from evaluate.models import evaluate_model

    batches = sorted(dataset.glob("target=*/batch-*.parquet"))
    assert len(batches) >= 2
    roots = []
    for k, batch in enumerate(batches):
        part = tmp_path / f"part{k}" / batch.parent.name
        part.mkdir(parents=True)
        shutil.copy(batch, part / batch.name)
        roots.append(str(tmp_path / f"part{k}"))
    whole = evaluate_model(eval_config(dataset, tracking, model="analytical", split="all", max_k=4))
    parts = evaluate_model(eval_config(",".join(roots), tracking, model="analytical", split="all", max_k=4))
    assert parts.pipeline_ids == whole.pipeline_ids
    assert parts.metrics.as_dict() == pytest.approx(whole.metrics.as_dict(), nan_ok=True)


def test_cli_prints_a_summary(trained, dataset, tracking, capsys):
    from evaluate.__main__ import main

    assert main(["--config", str(ROOT / "conf" / "evaluate.yaml"), "model=champion", f"data={dataset}",
                 f"val_fraction={VAL_FRACTION}", f"min_schedules={MIN_SCHEDULES}", f"tracking_uri={tracking}",
                 "progress=false", "run_name=cli"]) == 0
    out = capsys.readouterr().out
    for part in (f"evaluated {CHAMPION} on held-out", "pairwise accuracy", "top-1 score", "MLflow run",
                 f"open: mlflow ui --backend-store-uri {tracking}"):
        assert part in out, (part, out)


def _main_error(capsys, main, prog: str, *args: str) -> str:
    """main(args) in this process: exit status 2 and exactly one line on stderr."""
    assert main(list(args)) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(f"{prog}: error: "), err
    return err[0]


def test_cli_bad_inputs_are_one_line(trained, dataset, tracking, tmp_path, capsys):
    from evaluate.__main__ import main

    # the fixture's val_fraction first, so that the model errors below are reached whatever pipelines a loaded
    # machine's noisy labels leave (the default 0.125 of 6-8 pipelines may hold none out); an argument overrides it
    common = [f"tracking_uri={tracking}", "progress=false", f"min_schedules={MIN_SCHEDULES}",
              f"val_fraction={VAL_FRACTION}"]

    def error(*args):
        return _main_error(capsys, main, "python -m evaluate", *common, *args)

    assert "no such directory" in error(f"data={tmp_path / 'nothing'}")
    assert "holds no dataset" in error(f"data={tmp_path}")
    # a model with no recorded split (random weights) keeps the config's val_fraction, which holds nothing out
    assert "none of its" in error(f"data={dataset}", "val_fraction=1e-9", "model=random:0")
    assert "no registered model 'nope'" in error(f"data={dataset}", "model=models:/nope@champion")
    assert "no model at" in error(f"data={dataset}", f"model={tmp_path / 'missing.pt'}")
    unknown = error(f"data={dataset}", "model=annealed")
    assert "unknown cost model 'annealed'" in unknown and "analytical" in unknown and "random" in unknown
    assert "unknown config key 'modle'" in error(f"data={dataset}", "modle=random:0")
    assert "val, all" in error(f"data={dataset}", "split=train")
    assert "val_fraction must be in (0, 1)" in error(f"data={dataset}", "val_fraction=0")
    nothing = _main_error(capsys, main, "python -m evaluate", f"data={dataset}", "model=champion",
                          f"tracking_uri={tmp_path / 'empty.db'}", "progress=false", f"min_schedules={MIN_SCHEDULES}",
                          f"val_fraction={VAL_FRACTION}")  # as above: the champion lookup is what must fail
    assert "no models:/schedlab-host@champion" in nothing and str(tmp_path / "empty.db") in nothing
    assert not (tmp_path / "empty.db").exists()  # a failed lookup leaves no empty store behind


def test_evaluate_scores_stored_features_with_the_analytical_model(dataset, tracking):
    """model=analytical is evaluated like any model: its fixed coefficients score the stored features."""
    from evaluate.models import evaluate_model
    from scheduler.cost import AnalyticalModel
    from train.data import DataConfig, TrainingData

    r = evaluate_model(eval_config(dataset, tracking, model="analytical", split="all"))
    print(r.summary())
    data = TrainingData.load(DataConfig(path=str(dataset), min_schedules=MIN_SCHEDULES, val_fraction=0.0,
                                        max_spread=EvalConfig.max_spread))
    assert r.model == "analytical" and r.split == "all"
    assert r.pipeline_ids == tuple(sorted({b.pipeline_id for b in data.train}))
    assert r.metrics.samples == sum(len(b.runtimes) for b in data.train)
    assert 0.0 <= r.metrics.pairwise_accuracy <= 1.0 and 0.0 < r.metrics.top1_score <= 1.0
    assert _client(tracking).get_run(r.run_id).data.params["model_uri"] == "analytical"
    b = data.train[0]  # what it logged is the analytical model's prediction of the stored features
    pred = AnalyticalModel().predict(b.pipeline_features.numpy(), b.schedule_features.numpy())
    assert pred.total.shape == (len(b.runtimes),) and (pred.total > 0).all()


# -- python -m evaluate.apps ----------------------------------------------------------------------------------


def apps_config(tracking, **kw) -> AppsConfig:
    """The numba-only suite (the comparison under Halide has its own tests below)."""
    return AppsConfig(**{"apps": ("blur", "unsharp"), "size": "small", "model": "champion", "beam_size": 2,
                         "passes": 1, "random_schedules": 2, "protocol": "quick", "halide": False,
                         "tracking_uri": tracking, "progress": False, **kw})


@pytest.fixture(scope="module")
def apps_run(trained, tracking):
    from evaluate.apps import evaluate_apps

    lines = []
    result = evaluate_apps(apps_config(tracking), echo=lines.append)
    return result, lines


def test_apps_rows_statuses_and_speedups(apps_run):
    from backends import STATUSES

    result, lines = apps_run
    print("\n".join(lines) + "\n" + result.summary())
    assert result.model == CHAMPION  # the trained champion searched, not the analytical fallback
    methods = ["naive", "expert", "random", "greedy-random-weights", "greedy", "beam", "hierarchical"]
    assert [(r.app, r.method) for r in result.rows] == [(a, m) for a in ("blur", "unsharp") for m in methods]
    for r in result.rows:
        assert r.status in (*STATUSES, "search_error"), r
        assert r.model == {"greedy-random-weights": "random:0", "greedy": CHAMPION, "beam": CHAMPION,
                           "hierarchical": CHAMPION}.get(r.method, "")
    naive = {r.app: r for r in result.rows if r.method == "naive"}
    assert all(n.status == "ok" for n in naive.values())
    for r in result.rows:
        if r.status == "ok":
            assert r.runtime_s > 0 and r.speedup == pytest.approx(naive[r.app].runtime_s / r.runtime_s, rel=1e-12)
        else:
            assert math.isnan(r.speedup) and r.note
    assert next(r.note for r in result.rows if r.method == "random").startswith(("2/2 ok", "1/2 ok", "0/2 ok"))
    assert len(lines) == 1 + len(result.rows) and lines[0].split()[:3] == ["app", "method", "status"]
    beam = next(g for g in result.geomeans if g.method == "beam")
    ok = [r.speedup for r in result.rows if r.method == "beam" and r.status == "ok"]
    assert beam.apps == len(ok) and beam.speedup == pytest.approx(math.prod(ok) ** (1 / len(ok)))


def test_apps_table_and_chart_are_in_mlflow(apps_run, tracking, tmp_path):
    from evaluate.apps import AppRow

    result, _ = apps_run
    client = _client(tracking)
    run = client.get_run(result.run_id)
    assert run.info.status == "FINISHED" and run.data.params["apps"] == "blur,unsharp"
    version = client.get_model_version_by_alias("schedlab-host", "champion").version  # what champion resolved to
    assert run.data.params["model_uri"] == "champion"
    assert run.data.params["model_version"] == f"models:/schedlab-host/{version}"
    assert run.info.run_name == f"apps-small-schedlab-host-v{version}"
    assert {"apps.csv", "apps_table.json", "plots"} <= _artifacts(client, result.run_id)
    assert "plots/speedups.png" in _artifacts(client, result.run_id, "plots")
    by = {(r.app, r.method): r for r in result.rows}
    table = list(csv.DictReader(io.StringIO(Path(client.download_artifacts(result.run_id, "apps.csv",
                                                                             str(tmp_path))).read_text())))
    assert [(t["app"], t["method"], t["status"]) for t in table] == [(r.app, r.method, r.status) for r in result.rows]
    assert list(table[0]) == [f.name for f in fields(AppRow)]
    logged = json.loads(Path(client.download_artifacts(result.run_id, "apps_table.json", str(tmp_path))).read_text())
    runtime, scale = logged["columns"][5], {"runtime_us": 1e6, "runtime_ms": 1e3, "runtime_s": 1.0}
    assert logged["columns"][:5] == ["app", "method", "status", "speedup_over_naive", "speedup_over_expert"]
    median = statistics.median(r.runtime_s for r in result.rows if r.status == "ok")
    assert runtime == ("runtime_us" if median < 1e-3 else "runtime_ms"), (runtime, median)
    shown = {(t["app"], t["method"]): t for t in (dict(zip(logged["columns"], d)) for d in logged["data"])}
    assert list(shown) == [(r.app, r.method) for r in result.rows]
    for (app, method), t in shown.items():
        r, expert = by[(app, method)], by[(app, "expert")]
        assert t["status"] == r.status
        if r.status == "ok":
            assert t[runtime] == pytest.approx(r.runtime_s * scale[runtime], rel=1e-3)
            assert t["speedup_over_naive"] == pytest.approx(r.speedup, rel=1e-3)
        if r.status == "ok" and expert.status == "ok":
            assert t["speedup_over_expert"] == pytest.approx(expert.runtime_s / r.runtime_s, rel=1e-3)
        else:
            assert t["speedup_over_expert"] is None
    assert shown[("blur", "naive")]["speedup_over_naive"] == 1.0
    # the geometric means are the only metrics: per-app numbers are the table's
    assert set(run.data.metrics) == {f"geomean_speedup/{g.method}" for g in result.geomeans if g.apps}
    for g in result.geomeans:
        if g.apps:
            assert run.data.metrics[f"geomean_speedup/{g.method}"] == pytest.approx(g.speedup)


def test_a_failing_search_is_a_row_not_a_crash(tracking):
    from evaluate.apps import Method, measure_app
    from generator.apps import get_app

    rows = measure_app(get_app("blur"), apps_config(tracking),
                       [Method("naive", "naive"), Method("broken", "search", "no-such-model.pt", "beam")])
    assert [r.status for r in rows] == ["ok", "search_error"]
    assert "no-such-model.pt" in rows[1].note and rows[1].model == "no-such-model.pt" and math.isnan(rows[1].speedup)


def test_a_schedule_two_methods_found_is_measured_once(tracking):
    """Two searches that return the same LoopNest get its one measurement (re-measuring the same code would
    report run-to-run noise as a difference between them); the second row says whose schedule it is."""
    from evaluate.apps import Method, measure_app
    from generator.apps import get_app

    rows = measure_app(get_app("blur"), apps_config(tracking),
                       [Method("naive", "naive"), Method("greedy", "search", "analytical", "greedy"),
                        Method("beam", "search", "analytical", "beam"),
                        Method("greedy again", "search", "analytical", "greedy")])
    by = {r.method: r for r in rows}
    assert all(r.status == "ok" for r in rows), rows
    assert by["greedy again"].runtime_s == by["greedy"].runtime_s
    assert by["greedy again"].note == "same schedule as greedy" and by["greedy"].note == ""
    assert by["naive"].runtime_s != by["greedy"].runtime_s  # different schedules are measured apart


def test_interleaved_measurement_times_an_apps_schedules_together(tracking, monkeypatch):
    """measurement=interleaved (the default): every distinct schedule of the app, the rows' backend's and Halide's,
    is built first and timed in one backends.run_interleaved block; each row's runtime is its schedule's
    measurement from that block, and a LoopNest two methods found is built and timed once."""
    pytest.importorskip("halide")
    import backends
    from evaluate.apps import halide_methods, measure_app, methods
    from generator.apps import get_app
    from scheduler.cost import load_model
    from ir.target import get_target

    blocks, real = [], backends.run_interleaved

    def spy(builts, *args, **kw):
        ms = real(builts, *args, **kw)
        blocks.append((list(builts), ms))
        return ms

    compiled, real_compile = [], backends.compile

    def compile_spy(pipeline, loopnest, *args, **kw):
        compiled.append(loopnest.fingerprint)
        return real_compile(pipeline, loopnest, *args, **kw)

    monkeypatch.setattr(backends, "run_interleaved", spy)
    monkeypatch.setattr(backends, "compile", compile_spy)  # Halide's twins
    monkeypatch.setattr(backends, "measure_many", lambda *a, **k: pytest.fail("measured one method at a time"))
    cfg = apps_config(tracking, model="analytical", algorithms=("greedy", "beam"), baselines=("expert",),
                      halide=True, backend="llvm")
    ms = methods(cfg, load_model("analytical", get_target("host")))
    rows = measure_app(get_app("blur"), cfg, ms, halide=True)
    assert [r.method for r in rows] == [m.name for m in ms + halide_methods(cfg, ms)]
    assert len(blocks) == 1
    builts, measured = blocks[0]
    assert {b.kernel.backend for b in builts} == {"llvm", "halide"}
    assert all(b.ok for b in builts) and all(r.status == "ok" for r in rows), rows
    by = {r.method: r for r in rows}
    distinct = {by[m].runtime_s for m in by}
    # every row's runtime is one of the block's measurements, and each measurement is some row's
    assert distinct == {m.min_s for m in measured}
    same = [(r.method, r.note.removeprefix("same schedule as ")) for r in rows if r.note.startswith("same schedule")]
    assert len(builts) == len(rows) - len(same)
    for method, first in same:
        assert by[method].runtime_s == by[first].runtime_s
    assert len(compiled) == len(set(compiled))  # a LoopNest two twins share is compiled by Halide once
    assert len(compiled) == sum(b.kernel.backend == "halide" for b in builts) - len(cfg.halide_autoschedulers)
    assert any(r.method.endswith("@halide") for r, _ in [(by[m], f) for m, f in same])  # greedy@halide is beam@halide


def test_apps_cli_prints_the_table_and_geomeans(tracking, capsys):
    from evaluate.apps import main

    assert main(["apps=blur", "size=small", "algorithms=greedy", "baselines=", "model=analytical",
                 "protocol=quick", "halide=off", f"tracking_uri={tracking}", "progress=false"]) == 0
    out = capsys.readouterr().out
    assert "blur" in out and "greedy" in out and "geometric mean speedup over naive" in out
    assert re.search(r"^blur +greedy +ok +[0-9.]+ (s|ms|µs) ", out, re.M), out  # ir.units.format_seconds
    assert f"open: mlflow ui --backend-store-uri {tracking}" in out


def test_apps_all_is_every_app():
    from evaluate.apps import app_names
    from generator.apps import APPS

    assert app_names(AppsConfig(apps=("all",))) == app_names(AppsConfig(apps=())) == list(APPS)
    assert len(APPS) == 17 and app_names(AppsConfig(apps=("unsharp", "blur"))) == ["unsharp", "blur"]


def test_apps_cli_bad_inputs_are_one_line(tracking, capsys):
    from evaluate.apps import main

    def error(*args):
        return _main_error(capsys, main, "python -m evaluate.apps", *args, f"tracking_uri={tracking}",
                           "progress=false")

    assert "unknown app 'blurr'; apps: all, " in error("apps=blurr")
    assert "unknown config key 'beam'" in error("beam=2")
    assert "small, full" in error("size=huge")
    assert "unknown algorithm 'annealing'; choose one of" in error("algorithms=annealing")
    assert "polymage-dp" in error("algorithms=annealing")  # the registry, not a fixed list
    assert "target=h200: no GPU present here" in error("target=h200", "apps=blur")  # GPU rows need a GPU
    assert "no model at" in error("apps=blur", "model=no-such-model.pt")
    assert "'halide' must be true, false or auto; got 'maybe'" in error("halide=maybe")


def test_compare_models_adds_each_models_searches_as_rows(tracking):
    """A learned model and the analytical one in one run: rows <algorithm> and <algorithm>:analytical, each
    searched under its own model, on schedlab's own CPU backend."""
    from evaluate.apps import evaluate_apps
    from generator.apps import get_app
    from scheduler import autoschedule

    cfg = apps_config(tracking, apps=("blur",), model="random:1", algorithms=("greedy",), baselines=(),
                      compare_models=("analytical",), backend="llvm", run_name="compare-models")
    rows = {r.method: r for r in evaluate_apps(cfg).rows}
    assert sorted(rows) == ["greedy", "greedy:analytical", "naive"]
    assert rows["greedy"].model == "random:1" and rows["greedy:analytical"].model == "analytical"
    assert all(r.status == "ok" and r.backend == "llvm" for r in rows.values())
    p = get_app("blur").build("small")
    searched = {m: autoschedule(p, model=m, algorithm="greedy", seed=0, backend="llvm").loopnest.fingerprint
                for m in ("random:1", "analytical")}
    assert searched["random:1"] != searched["analytical"], "the two models must search differently here"
    with pytest.raises(ValueError, match="compare_models lists analytical, the model of the main rows"):
        AppsConfig(model="analytical", compare_models=("analytical",))
    with pytest.raises(ValueError, match="compare_models searches with the algorithms"):
        AppsConfig(algorithms=(), compare_models=("analytical",))


def test_the_example_configs_state_the_defaults():
    assert load_config(EvalConfig, ROOT / "conf" / "evaluate.yaml") == EvalConfig()
    assert load_config(AppsConfig, ROOT / "conf" / "evaluate_apps.yaml") == AppsConfig()
    learned = load_config(AppsConfig, ROOT / "conf" / "evaluate_learned.yaml")
    assert (learned.compare_models, learned.backend, learned.halide) == (("analytical",), "llvm", True)
    assert learned.halide_autoschedulers == ("Adams2019", "Mullapudi2016", "Li2018")
    assert EvalConfig().val_fraction == 0.125 and EvalConfig().min_schedules == 8  # training's defaults


# -- python -m evaluate.apps, compared under Halide -------------------------------------------------------------

def test_the_halide_comparison_states_only_the_ratios_it_has():
    from evaluate.apps import HalideComparison

    both = HalideComparison(1.25, 3, 2.0, 4, ("naive", "beam")).lines()
    assert [line.split("(geomean")[-1] for line in both] == [" over 3 apps)", " over 4 pairs of naive, beam)"]
    # halide_autoschedulers without Adams2019 (or no beam row) and backend=halide: nothing to compare, no NaN line
    assert HalideComparison(math.nan, 0, math.nan, 0, ()).lines() == []
    assert len(HalideComparison(math.nan, 0, 2.0, 4, ("naive",)).lines()) == 1


def test_the_halide_comparison_names_the_backend_the_rows_were_compiled_by():
    from evaluate.apps import AppRow, halide_comparison

    def row(method, backend, runtime, over=math.nan):
        return AppRow("blur", method, backend, "", "ok", runtime, 1.0, 1.0, over, 0.0)

    rows = [row("naive", "llvm", 2.0), row("naive@halide", "halide", 1.0, over=2.0)]
    lines = halide_comparison(rows).lines()
    assert len(lines) == 1 and lines[0].startswith("runtime llvm / Halide 2"), lines


HALIDE_ROWS = ["naive@halide", "expert@halide", "greedy@halide", "beam@halide", "Adams2019@halide",
               "Mullapudi2016@halide"]


@pytest.fixture(scope="module")
def halide_run(tracking):
    """blur and unsharp at size small, greedy and beam under the analytical model, under numba and Halide."""
    pytest.importorskip("halide")
    from evaluate.apps import evaluate_apps

    lines = []
    cfg = apps_config(tracking, model="analytical", algorithms=("greedy", "beam"), baselines=("expert",),
                      halide=True, run_name="vs_halide")
    return evaluate_apps(cfg, echo=lines.append), lines


def test_halide_rows_speedups_and_ratios(halide_run):
    from backends import STATUSES

    result, lines = halide_run
    print("\n".join(lines) + "\n" + result.summary())
    methods = ["naive", "expert", "greedy", "beam", *HALIDE_ROWS]
    assert [(r.app, r.method) for r in result.rows] == [(a, m) for a in ("blur", "unsharp") for m in methods]
    assert len(lines) == 1 + len(result.rows)
    by = {(r.app, r.method): r for r in result.rows}
    for r in result.rows:
        assert r.status in (*STATUSES, "search_error"), r
        assert r.backend == ("halide" if r.method.endswith("@halide") else "numba")
    for app in ("blur", "unsharp"):
        for s in ("Adams2019", "Mullapudi2016"):
            row = by[(app, f"{s}@halide")]
            assert row.status == "ok" and row.search_s > 0 and math.isnan(row.numba_over_halide), row
        naive, naive_halide = by[(app, "naive")], by[(app, "naive@halide")]
        assert naive.status == naive_halide.status == "ok"
        for r in (r for r in result.rows if r.app == app and r.status == "ok"):
            assert r.speedup == pytest.approx(naive.runtime_s / r.runtime_s, rel=1e-12)
            base = naive_halide if r.backend == "halide" else naive
            assert r.speedup_same_backend == pytest.approx(base.runtime_s / r.runtime_s, rel=1e-12)
        for m in ("naive", "expert", "greedy", "beam"):  # the same LoopNest, not searched twice
            twin = by[(app, f"{m}@halide")]
            assert twin.search_s == by[(app, m)].search_s and twin.model == by[(app, m)].model
            if twin.status == "ok":
                assert twin.numba_over_halide == pytest.approx(by[(app, m)].runtime_s / twin.runtime_s, rel=1e-12)
    adams = [by[(a, "Adams2019@halide")].runtime_s / by[(a, "beam@halide")].runtime_s for a in ("blur", "unsharp")]
    assert result.halide.beam_apps == 2 and result.halide.beam_over_adams2019 == pytest.approx(math.prod(adams) ** 0.5)
    pairs = [by[(a, m)].runtime_s / by[(a, m + "@halide")].runtime_s for a in ("blur", "unsharp")
             for m in ("naive", "expert", "greedy", "beam") if by[(a, m + "@halide")].status == "ok"]
    assert result.halide.pairs == len(pairs) >= 6
    assert result.halide.numba_over_halide == pytest.approx(math.prod(pairs) ** (1 / len(pairs)))
    g = next(g for g in result.geomeans if g.method == "beam@halide")
    assert g.speedup_same_backend == pytest.approx(
        math.prod(by[(a, "beam@halide")].speedup_same_backend for a in ("blur", "unsharp")) ** 0.5)
    summary = result.summary()
    assert "runtime Adams2019@halide / beam@halide " in summary and "pairs of naive, expert, greedy, beam" in summary
    assert "runtime numba / Halide " in summary and "× faster)" in summary  # the ratio says who is faster


def test_halide_metrics_table_and_chart_are_in_mlflow(halide_run, tracking, tmp_path):
    result, _ = halide_run
    client = _client(tracking)
    run = client.get_run(result.run_id)
    assert run.info.status == "FINISHED" and run.data.params["halide"] == "True"
    assert {"plots/speedups.png", "plots/vs_halide.png"} <= _artifacts(client, result.run_id, "plots")
    m = run.data.metrics
    assert {k.split("/")[0] for k in m} == {"geomean_speedup", "geomean_speedup_same_backend", "halide"}
    table = list(csv.DictReader(io.StringIO(Path(client.download_artifacts(result.run_id, "apps.csv",
                                                                             str(tmp_path))).read_text())))
    runtime = {(t["app"], t["method"]): float(t["runtime_s"]) for t in table if t["status"] == "ok"}
    adams = [runtime[(a, "Adams2019@halide")] / runtime[(a, "beam@halide")] for a in ("blur", "unsharp")]
    assert m["halide/beam_over_adams2019"] == pytest.approx(math.prod(adams) ** 0.5, rel=1e-9)
    pairs = [runtime[(a, n)] / runtime[(a, n + "@halide")] for a in ("blur", "unsharp")
             for n in ("naive", "expert", "greedy", "beam") if (a, n + "@halide") in runtime]
    assert m["halide/numba_over_halide"] == pytest.approx(math.prod(pairs) ** (1 / len(pairs)), rel=1e-9)
    beam = [runtime[(a, "naive")] / runtime[(a, "beam@halide")] for a in ("blur", "unsharp")
            if (a, "beam@halide") in runtime]
    assert m["geomean_speedup/beam_halide"] == pytest.approx(math.prod(beam) ** (1 / len(beam)), rel=1e-9)
    assert m["geomean_speedup_same_backend/Adams2019_halide"] > 0


def test_halide_on_without_the_package_is_one_line(tracking, capsys, monkeypatch):
    from evaluate import apps

    monkeypatch.setattr(apps, "halide_installed", lambda: False)
    err = _main_error(capsys, apps.main, "python -m evaluate.apps", "apps=blur", "halide=true",
                      f"tracking_uri={tracking}", "progress=false")
    assert "pip install schedlab[halide]" in err
    assert not apps.use_halide(AppsConfig(halide="auto")) and not apps.use_halide(AppsConfig(halide=False))



# -- python -m evaluate.apps: strategies side by side at equal budgets (issue 20) -------------------------------

STRATEGIES = ("beam", "mcts", "top-k", "mcts-real", "autotune")


@pytest.fixture(scope="module")
def strategies_run(tracking):
    """blur at size small under the analytical model, every row compiled and measured by Halide: beam, MCTS at
    a fixed budget and at beam's own, and the measuring strategies at one measurement budget."""
    pytest.importorskip("halide")
    from evaluate.apps import evaluate_apps

    lines = []
    cfg = apps_config(tracking, apps=("blur",), model="analytical", algorithms=STRATEGIES,
                      mcts_matched=("evaluations", "seconds"), mcts_budget=40, measurements=3, baselines=(),
                      backend="halide", halide=True, run_name="strategies")
    return evaluate_apps(cfg, echo=lines.append), lines


def test_strategies_at_equal_budgets_are_rows_of_one_backend(strategies_run):
    result, lines = strategies_run
    print("\n".join(lines) + "\n" + result.summary())
    by = {r.method: r for r in result.rows}
    assert list(by) == ["naive", *STRATEGIES, "mcts=beam-evaluations", "mcts=beam-seconds",
                        "Adams2019@halide", "Mullapudi2016@halide"]  # no <m>@halide twins: the rows are Halide's
    assert {r.backend for r in result.rows} == {"halide"}
    assert all(r.status == "ok" for r in result.rows), [r for r in result.rows if r.status != "ok"]
    for name in (*STRATEGIES, "mcts=beam-evaluations", "mcts=beam-seconds"):
        assert by[name].evaluations > 0 and by[name].model == "analytical", by[name]
    # the fixed MCTS budget, with at most one iteration's overshoot (a greedy rollout scores a few states)
    assert by["mcts"].evaluations <= 40 + 40
    # the measuring strategies measured within the one budget (autotune: base + 2 rounds of 1 sample)
    for name in ("top-k", "mcts-real", "autotune"):
        assert 1 <= by[name].measured <= 3, by[name]
    for name in ("naive", "beam", "mcts", "Adams2019@halide"):
        assert by[name].measured == 0
    # one naive row, of the rows' backend: both speedup columns are over it
    adams = by["Adams2019@halide"]
    assert adams.speedup == pytest.approx(by["naive"].runtime_s / adams.runtime_s, rel=1e-12)
    assert adams.speedup_same_backend == pytest.approx(adams.speedup, rel=1e-12)
    assert all(math.isnan(r.numba_over_halide) for r in result.rows)
    assert result.halide.beam_apps == 1
    assert result.halide.beam_over_adams2019 == pytest.approx(adams.runtime_s / by["beam"].runtime_s, rel=1e-12)


def test_strategies_chart_and_table_are_in_mlflow(strategies_run, tracking, tmp_path):
    result, _ = strategies_run
    client = _client(tracking)
    assert {"plots/speedups.png", "plots/geomeans.png"} <= _artifacts(client, result.run_id, "plots")
    assert "plots/vs_halide.png" not in _artifacts(client, result.run_id, "plots")  # no twins to compare
    m = client.get_run(result.run_id).data.metrics
    assert m["geomean_speedup/mcts_beam-evaluations"] == pytest.approx(
        next(g.speedup for g in result.geomeans if g.method == "mcts=beam-evaluations"))
    logged = json.loads(Path(client.download_artifacts(result.run_id, "apps_table.json", str(tmp_path))).read_text())
    shown = {d[1]: dict(zip(logged["columns"], d)) for d in logged["data"]}
    assert shown["top-k"]["measured"] == next(r.measured for r in result.rows if r.method == "top-k")
    assert shown["beam"]["evaluations"] == next(r.evaluations for r in result.rows if r.method == "beam")


def test_a_matched_budget_is_beams_own_figure_of_the_app():
    from evaluate.apps import Method, SearchBudget, _search_kwargs

    budget = SearchBudget(evaluations=2000, measurements=9)
    assert budget.kwargs("top-k") == {"k": 9}
    assert budget.kwargs("autotune") == {"rounds": 2, "samples": 4}  # 1 + 2 x 4 = 9 measured at most
    assert budget.kwargs("mcts-real") == {"budget": 2000, "budget_seconds": 0.0, "measurements": 9}
    assert budget.kwargs("beam") == {}
    evals = Method("mcts=beam-evaluations", "search", None, "mcts", budget.__class__(match="evaluations"))
    secs = Method("mcts=beam-seconds", "search", None, "mcts", budget.__class__(match="seconds"))
    assert _search_kwargs(evals, (1234, 5.5))["budget"] == 1234
    kw = _search_kwargs(secs, (1234, 5.5))
    assert kw["budget_seconds"] == 5.5 and kw["budget"] >= 10**9  # the clock, not the count, ends it
    with pytest.raises(EvaluateError, match="beam's search did not run"):
        _search_kwargs(evals, None)


def test_strategy_budget_config_errors_are_one_line(tracking, capsys):
    from evaluate.apps import main

    def error(*args):
        return _main_error(capsys, main, "python -m evaluate.apps", *args, f"tracking_uri={tracking}",
                           "progress=false")

    assert "add beam to algorithms" in error("algorithms=greedy,mcts", "mcts_matched=evaluations")
    assert "measurements must be >= 3" in error("measurements=2")
    assert "evaluations, seconds" in error("mcts_matched=states")
    assert "mcts_budget must be >= 1" in error("mcts_budget=0")
    assert "measure_timeout must be > 0 seconds, got 0" in error("measure_timeout=0")
    assert "numba, llvm, halide" in error("backend=tvm")


def test_a_run_resumes_from_the_apps_an_earlier_run_finished(tracking):
    """An interrupted comparison is finished by a later process: the earlier run's rows are kept as measured,
    only the other apps are measured, and a run with other settings is refused in one line."""
    from evaluate.apps import evaluate_apps

    cfg = apps_config(tracking, apps=("blur",), model="analytical", algorithms=("greedy",), baselines=(),
                      run_name="first")
    first = evaluate_apps(cfg)
    lines = []
    second = evaluate_apps(apps_config(tracking, apps=("blur", "unsharp"), model="analytical",
                                       algorithms=("greedy",), baselines=(), run_name="second",
                                       resume=first.run_id), echo=lines.append)
    assert [(r.app, r.method) for r in second.rows] == [(a, m) for a in ("blur", "unsharp")
                                                        for m in ("naive", "greedy")]
    # kept as measured, not measured again (repr: float fields round-trip exactly, and NaN equals NaN there)
    assert [repr(r) for r in second.rows if r.app == "blur"] == list(map(repr, first.rows))
    assert all(r.status == "ok" for r in second.rows)
    assert len(lines) == 1 + len(second.rows)
    params = _client(tracking).get_run(second.run_id).data.params
    assert params["resume"] == first.run_id and params["resumed_apps"] == "blur"
    assert second.run_id != first.run_id


def test_a_checkpoint_keeps_every_method_and_a_later_run_measures_only_the_rest(tracking, tmp_path, monkeypatch):
    """checkpoint=DIR with measurement=sequential: the rows are saved after every method. A run stopped inside an
    app (here unsharp's matched MCTS search is interrupted) is finished by a later run from the directory alone:
    that run measures only the missing method, gives MCTS the beam budget from the saved beam row, and keeps the
    other rows as they were measured. Other settings, or both resume= and checkpoint=, are refused in one line."""
    from dataclasses import replace

    from evaluate import apps
    from evaluate.checkpoint import PARTIAL, WHOLE

    cp = tmp_path / "cp"
    cfg = apps_config(tracking, model="analytical", algorithms=("greedy", "beam"), baselines=("expert",),
                      mcts_matched=("evaluations",), checkpoint=str(cp), run_name="first", measurement="sequential")
    real = apps._schedules
    calls = []

    def search(method, app, *args):
        calls.append((app.name, method.name, args[-1]))
        if calls[-1][:2] == ("unsharp", "mcts=beam-evaluations") and stop:
            raise KeyboardInterrupt
        return real(method, app, *args)

    monkeypatch.setattr(apps, "_schedules", search)
    stop = True
    with pytest.raises(KeyboardInterrupt):
        apps.evaluate_apps(cfg)
    whole = apps.rows_from_csv((cp / WHOLE).read_text())
    partial = apps.rows_from_csv((cp / PARTIAL).read_text())
    assert {r.app for r in whole} == {"blur"} and len(whole) == 5
    assert [r.method for r in partial] == ["naive", "expert", "greedy", "beam"]
    beam = partial[-1]

    calls.clear()
    stop = False
    result = apps.evaluate_apps(replace(cfg, run_name="second"))
    assert calls == [("unsharp", "mcts=beam-evaluations", (beam.evaluations, beam.search_s))]
    kept = {(r.app, r.method): r.runtime_s for r in whole + partial}
    assert {(r.app, r.method): r.runtime_s for r in result.rows if (r.app, r.method) in kept} == kept
    assert [(r.app, r.method) for r in result.rows] == [(a, m) for a in ("blur", "unsharp") for m in (
        "naive", "expert", "greedy", "beam", "mcts=beam-evaluations")]
    assert all(r.status == "ok" and r.speedup > 0 for r in result.rows)  # speedups of kept rows, recomputed
    assert apps.rows_from_csv((cp / PARTIAL).read_text()) == []
    assert len(apps.rows_from_csv((cp / WHOLE).read_text())) == 10

    with pytest.raises(EvaluateError, match=r"it was measured with beam_size=2, this run has beam_size=3; use "
                                            r"the same settings or another directory$"):
        apps.evaluate_apps(replace(cfg, beam_size=3))
    # a checkpoint begun before a setting existed (measure_timeout) is accepted and gets the key from then on
    params = json.loads((cp / "params.json").read_text())
    del params["measure_timeout"]
    (cp / "params.json").write_text(json.dumps(params))
    calls.clear()
    apps.evaluate_apps(replace(cfg, run_name="third"))
    assert calls == []
    assert json.loads((cp / "params.json").read_text()) == apps.measured_settings(cfg)
    with pytest.raises(EvaluateError, match=r"it was measured with measure_timeout=600.0, this run has "
                                            r"measure_timeout=30.0; use"):
        apps.evaluate_apps(replace(cfg, measure_timeout=30.0))
    with pytest.raises(ValueError, match="not both"):
        replace(cfg, resume="0123")
    (tmp_path / "file").write_text("")
    with pytest.raises(EvaluateError, match="is a file; give a directory"):
        apps.evaluate_apps(replace(cfg, checkpoint=str(tmp_path / "file")))


def test_resuming_with_other_settings_or_an_unknown_run_is_one_line(tracking, capsys):
    from evaluate.apps import evaluate_apps, main

    first = evaluate_apps(apps_config(tracking, apps=("blur",), model="analytical", algorithms=("greedy",),
                                      baselines=(), protocol="quick"))

    def error(*args):
        return _main_error(capsys, main, "python -m evaluate.apps", "apps=blur,unsharp", "model=analytical",
                           "algorithms=greedy", "baselines=", "size=small", "halide=false", "beam_size=2",
                           "passes=1", "random_schedules=2", *args, f"tracking_uri={tracking}", "progress=false")

    assert "that run measured with protocol=quick, this one with protocol=full" in error(
        f"resume={first.run_id}", "protocol=full")
    assert "no such run" in error("resume=0123456789abcdef0123456789abcdef")
