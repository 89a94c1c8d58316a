"""Local data generation: the job's batches (generator.batch) on this host. Deterministic pipelines and
schedules from the one sampler, one atomic Parquet file per pipeline seed that a rerun never duplicates,
failures kept as rows with their status, the command line, and a local run writing exactly the files and
schedules the job plans for the same config. One tiny batch is compiled and measured for real (numba) once
for the module."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from backends import STATUSES, measuring_machine
from featurize import featurize
from featurize.dataset import batch_path, file_machine, read_dataset
from generator import batch as batch_module
from generator import datagen
from generator.batch import BaselineError, BatchKey, BatchSpec, SamplingModel, plan_batch, register_baseline
from generator.datagen import generate_batch, sample_schedules
from generator.job import JobConfig
from generator.random_pipeline import random_pipeline
from ir import LoopNest, Pipeline

from .chatter import assert_clean_log

ROOT = Path(__file__).resolve().parent.parent

# 3 Funcs per pipeline at 32 x 24: about 1-3 s per schedule to compile cold on 2 cores, milliseconds cached.
# A small beam keeps planning fast; the baselines come first and must compile and match the interpreter.
SPEC = BatchSpec(seeds=(1, 2), schedules_per_pipeline=5, max_stages=3, output_size=(32, 24, 3), beam_size=2,
                 passes=1, baselines=("naive", "simple"))


def pipeline_of(spec: BatchSpec, seed: int):
    return random_pipeline(seed, spec.max_stages, spec.output_size, spec.markov)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    calls = []
    t0 = time.perf_counter()
    summary = generate_batch(SPEC, root, progress=lambda done, total, note: calls.append((done, total, note)))
    return root, summary, calls, time.perf_counter() - t0


def rows(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


# -- sampling, without measuring ------------------------------------------------------------------------


def test_same_spec_gives_the_same_pipelines_and_distinct_schedules():
    spec = BatchSpec(seeds=(0, 3, 5), schedules_per_pipeline=8, max_stages=4, output_size=(32, 24, 3), beam_size=2,
                     passes=1, baselines=("naive", "simple"))
    for seed in spec.seeds:
        first = sample_schedules(pipeline_of(spec, seed), spec, seed)
        again = sample_schedules(pipeline_of(spec, seed), spec, seed)
        assert pipeline_of(spec, seed).fingerprint == pipeline_of(spec, seed).fingerprint
        prints = [ln.fingerprint for _, ln in first]
        assert prints == [ln.fingerprint for _, ln in again]
        assert len(set(prints)) == len(prints) == spec.schedules_per_pipeline
        assert [name for name, _ in first[:3]] == ["naive", "simple", "beam"]
        assert {name for name, _ in first[3:]} == {"dropout"}
    other = dataclasses.replace(spec, schedule_seed=1)
    p = pipeline_of(spec, 0)
    assert [ln.fingerprint for _, ln in sample_schedules(p, spec, 0)][3:] != \
        [ln.fingerprint for _, ln in sample_schedules(p, other, 0)][3:]
    with pytest.raises(ValueError, match="not the random pipeline of seed 3"):
        sample_schedules(p, spec, 3)


def test_schedules_are_deduplicated_by_fingerprint():
    """A one-Func 1x1 pipeline has few distinct schedules: the dropout draws repeat the beam's schedule or a
    baseline. Without random fill the batch has fewer schedules than asked rather than duplicates; with it,
    random schedules (about half of them repeats too) make up the count."""
    spec = BatchSpec(seeds=(1,), schedules_per_pipeline=16, max_stages=2, output_size=(1, 1, 1), beam_size=2,
                     passes=1, random_fill=False)
    got = sample_schedules(pipeline_of(spec, 1), spec, 1)
    assert len({ln.fingerprint for _, ln in got}) == len(got)
    assert 1 <= len(got) < 16 and got[0][0] == "naive"
    filled = sample_schedules(pipeline_of(spec, 1), dataclasses.replace(spec, random_fill=True), 1)
    assert len({ln.fingerprint for _, ln in filled}) == len(filled) == 16
    assert filled[:len(got)] == got and {name for name, _ in filled[len(got):]} == {"random"}


def _differing_nodes(a: LoopNest, b: LoopNest) -> list[tuple[LoopNest, LoopNest]]:
    """(a node, b node) pairs that differ other than in their children, walking both trees in step."""
    out = []
    if a.replace(children=()) != b.replace(children=()):
        out.append((a, b))
    assert len(a.children) == len(b.children)
    for x, y in zip(a.children, b.children):
        out += _differing_nodes(x, y)
    return out


@pytest.mark.parametrize("app", ["blur", "unsharp", "harris", "conv_layer", "hist_eq"])
def test_contrasts_differ_from_the_schedule_in_one_decision_and_are_legal_and_correct(app):
    from generator.apps import get_app
    from generator.contrast import one_decision_contrasts
    from ir.loopnest import LoopKind
    from ir.target import get_target
    import backends
    from ir import interpret

    tgt = get_target("host")
    a = get_app(app)
    p = a.build("small")
    ln = a.schedule(p, tgt)
    contrasts = one_decision_contrasts(p, ln, tgt)
    assert contrasts and contrasts[0].decision == "serial", "a parallel level is offered first"
    assert len({c.loopnest.fingerprint for c in contrasts} | {ln.fingerprint}) == len(contrasts) + 1
    inlines = [c for c in contrasts if c.decision == "inline"]
    if app in ("blur", "unsharp", "harris"):  # their experts compute a single pure Func inside another's tiles
        assert inlines
    for c in inlines:  # one Func moved from its own loops into its readers; every other Func where it was
        f = c.where
        assert f in ln.computed_funcs() and f not in c.loopnest.computed_funcs()
        assert c.loopnest.inlined_funcs() == ln.inlined_funcs() | {f}
        assert [g for g in ln.computed_funcs() if g != f] == c.loopnest.computed_funcs()
        assert all(f not in n.store_at for n, _ in c.loopnest.nodes())
    for c in contrasts:
        if c.decision == "inline":
            continue
        ((old, new),) = _differing_nodes(ln, c.loopnest)
        assert (old.func, old.stage, old.size, old.store_at, old.inlined, old.vector_dim) == \
            (new.func, new.stage, new.size, new.store_at, new.inlined, new.vector_dim)
        if c.decision == "serial":
            assert old.kind is LoopKind.PARALLEL and not new.parallel and new.vectorized_loop == old.vectorized_loop
        elif c.decision == "scalar":
            assert old.vectorized_loop >= 0 and new.vectorized_loop == -1 and new.kind is not LoopKind.VECTORIZED
        else:
            assert old.kind is LoopKind.UNROLLED and new.kind is not LoopKind.UNROLLED
        assert c.where.startswith(f"{old.func}.s{old.stage} depth ")
    inputs = p.random_inputs(1)
    expected = interpret(p, inputs)
    ms = backends.measure_many([backends.MeasureInput(p, c.loopnest, inputs, expected) for c in contrasts], tgt,
                               backend="llvm", protocol="check")
    assert [m.status for m in ms] == ["ok"] * len(contrasts), [m.error for m in ms]
    assert one_decision_contrasts(p, ln, tgt, limit=1) == contrasts[:1]


def _placements(ln: LoopNest) -> dict[tuple[str, int], list]:
    """Per stage, its levels as (size, kind, SIMD loop, stored Funcs) and the stage its chain is computed inside."""
    out: dict[tuple[str, int], list] = {}
    for n, p in ln.nodes():
        if not n.is_root:
            out.setdefault((n.func, n.stage), []).append((n.size, n.kind, n.vectorized_loop, n.store_at,
                                                          None if p.is_root else (p.func, p.stage)))
    return out


@pytest.mark.parametrize("app", ["unsharp", "harris", "bilateral_grid"])
def test_compute_contrasts_compute_one_inlined_func_and_leave_the_rest(app):
    from generator.apps import get_app
    from generator.contrast import KINDS, one_decision_contrasts
    from ir.target import get_target
    import backends
    from ir import interpret

    tgt = get_target("host")
    a = get_app(app)
    p = a.build("small")
    ln = a.schedule(p, tgt)
    assert one_decision_contrasts(p, ln, tgt) == [c for c in one_decision_contrasts(
        p, ln, tgt, kinds=("serial", "inline", "scalar", "rolled"))]  # the default kinds, in their order
    assert not [c for c in one_decision_contrasts(p, ln, tgt) if c.decision == "compute"]  # only when asked
    computes = [c for c in one_decision_contrasts(p, ln, tgt, kinds=KINDS) if c.decision == "compute"]
    assert computes, f"{app}'s expert inlines Funcs that one stage reads"
    before = _placements(ln)
    for c in computes:
        f = c.where
        assert f in ln.inlined_funcs() and c.loopnest.inlined_funcs() == ln.inlined_funcs() - {f}
        assert sorted(c.loopnest.computed_funcs()) == sorted(ln.computed_funcs() + [f])
        after = _placements(c.loopnest)
        for key, levels in before.items():  # every other stage keeps its levels; a level may store f too
            assert [(s, k, v, tuple(g for g in st if g != f), at) for s, k, v, st, at in after[key]] == levels
        assert sum(f in n.store_at for n, _ in c.loopnest.nodes()) == 1
    inputs = p.random_inputs(1)
    expected = interpret(p, inputs)
    ms = backends.measure_many([backends.MeasureInput(p, c.loopnest, inputs, expected) for c in computes], tgt,
                               backend="llvm", protocol="check")
    assert [m.status for m in ms] == ["ok"] * len(computes), [m.error for m in ms]


def test_contrast_kinds_keep_the_default_batch_names_and_refuse_unknown_kinds():
    spec = dataclasses.replace(SPEC, schedules_per_pipeline=8, baselines=(), random_fill=False, contrasts=3)
    assert dataclasses.replace(spec, contrast_kinds=("serial", "inline", "scalar", "rolled")).batch_ids == \
        spec.batch_ids  # the default order, spelled out, is the default
    asked = dataclasses.replace(spec, contrast_kinds=("inline", "compute"))
    assert asked.batch_ids != spec.batch_ids and asked.contrast_kinds == ("inline", "compute")
    for bad in (("parallel",), ("inline", "inline")):
        with pytest.raises(ValueError, match="contrast_kinds must list distinct kinds among serial, inline, compute"):
            dataclasses.replace(spec, contrast_kinds=bad)
    with pytest.raises(ValueError, match="contrast_kinds must list distinct kinds"):
        JobConfig(contrasts=2, contrast_kinds=("serial", "unroll"))
    assert JobConfig(contrasts=2, contrast_kinds=("compute", "inline")).contrast_kinds == ("compute", "inline")


def test_a_batch_with_contrasts_measures_them_right_after_the_beam_sample():
    spec = dataclasses.replace(SPEC, schedules_per_pipeline=8, baselines=(), random_fill=False, contrasts=3)
    base = dataclasses.replace(spec, contrasts=0)
    for seed in (1, 2, 5):
        got = sample_schedules(pipeline_of(spec, seed), spec, seed)
        assert got[0][0] == "beam"
        names = [n for n, _ in got]
        k = sum(n.startswith("contrast-") for n in names)
        assert names[1:1 + k] == [n for n in names if n.startswith("contrast-")]  # right after the beam sample
        assert 0 < k <= 3 and len({ln.fingerprint for _, ln in got}) == len(got)
        beam = got[0][1]
        for name, ln in got[1:1 + k]:
            if name == "contrast-inline":  # one Func's levels gone, the Func inlined into its readers
                (f,) = set(beam.computed_funcs()) - set(ln.computed_funcs())
                assert ln.inlined_funcs() == beam.inlined_funcs() | {f}
            else:  # one level's loop kind
                assert len(_differing_nodes(beam, ln)) == 1
        without = sample_schedules(pipeline_of(base, seed), base, seed)
        assert without[0] == got[0] and not any(n.startswith("contrast") for n, _ in without)
    assert spec.batch_ids != base.batch_ids and base.batch_ids == dataclasses.replace(SPEC, schedules_per_pipeline=8,
                                                                                      baselines=(),
                                                                                      random_fill=False).batch_ids
    for bad in (-1, 8):
        with pytest.raises(ValueError, match=f"contrasts must be in \\[0, schedules_per_pipeline - 1\\].*got {bad} "):
            dataclasses.replace(spec, contrasts=bad)
    with pytest.raises(ValueError, match="contrasts must be in"):
        JobConfig(contrasts=16)


def test_a_rivals_beam_pick_is_planned_right_after_the_beam_sample_and_is_that_models_search():
    """A rival is another cost model's beam pick for the same pipeline, measured next to the sampler's: the pair a
    comparison of two models in search turns on (docs/generator.md, "Rival beam samples")."""
    from scheduler import autoschedule
    from scheduler.cost import load_model

    spec = dataclasses.replace(SPEC, schedules_per_pipeline=8, baselines=(), random_fill=False, contrasts=2,
                               rivals=("analytical",))
    base = dataclasses.replace(spec, rivals=())
    rivals_seen = 0
    for seed in (1, 2, 5):
        p = pipeline_of(spec, seed)
        got = sample_schedules(p, spec, seed)
        without = sample_schedules(p, base, seed)
        assert got[0] == without[0]  # the sampler's own beam pick is unchanged
        key = spec.key(seed)
        want = autoschedule(p, "host", model=load_model("analytical", "host"), algorithm="beam",
                            beam_size=key.beam_size, passes=key.passes,
                            seed=batch_module.derived_seed(key.job_seed, seed, 0), register_tiles=False)
        names = [n for n, _ in got]
        if want.loopnest.fingerprint == got[0][1].fingerprint:  # the two models agree: one sample, not two
            assert "beam-analytical" not in names
            continue
        rivals_seen += 1
        assert names[1] == "beam-analytical" and got[1][1].fingerprint == want.loopnest.fingerprint
        assert names[2:] == [n for n, _ in without[1:]][:len(names) - 2]  # contrasts, then dropout, as before
    assert rivals_seen  # the random-weight sampler and the analytical model disagree somewhere
    assert spec.batch_ids != base.batch_ids and base.batch_ids == dataclasses.replace(SPEC, schedules_per_pipeline=8,
                                                                                      baselines=(), random_fill=False,
                                                                                      contrasts=2).batch_ids
    for bad in (("learned:models:/x/1",), ("hybrid",), ("analytical", "analytical")):
        with pytest.raises(ValueError, match="rivals must be"):
            dataclasses.replace(spec, rivals=bad)
    with pytest.raises(ValueError, match="rivals must be registered cost model names"):
        JobConfig(rivals=("models:/schedlab-host/1",))
    assert BatchSpec.of_job(JobConfig(rivals=("analytical:7",)), 0).rivals == ("analytical:7",)
    shipped = f"learned:{ROOT / 'train/builtin_models/host-halide'}"  # a model directory: candidates side by side
    assert dataclasses.replace(spec, rivals=(shipped, "analytical")).rivals == (shipped, "analytical")


@pytest.mark.parametrize("dataset, seed, overrides", [
    ("random-host-llvm-epyc", 5749, []),
    ("random-host-llvm-epyc-buffer-weights", 5115, ["mix_weights=buffer"]),
    ("random-host-halide-rivals", 7000, ["backend=halide", "contrasts=4", "contrast_kinds=[serial,inline,compute,rolled]",
                                         "first_sampler=builtin:host-halide", "rivals=[analytical]"]),
    ("random-host-halide-motifs", 7500, ["backend=halide", "contrasts=4", "contrast_kinds=[serial,inline,compute,rolled]",
                                         "first_sampler=builtin:host-halide", "rivals=[analytical]", "motifs=0.15",
                                         "compile_timeout=120"]),
    ("random-host-halide-conv", 7700, ["backend=halide", "contrasts=4", "contrast_kinds=[serial,inline,compute,rolled]",
                                       "first_sampler=builtin:host-halide", "rivals=[analytical]", "motifs=0.2",
                                       "motif_kinds=[conv_layer]", "compile_timeout=120"]),
    ("random-host-halide-dwmax", 7900, ["backend=halide", "contrasts=4", "contrast_kinds=[serial,inline,compute,rolled]",
                                        "first_sampler=builtin:host-halide", "rivals=[analytical]", "motifs=0.25",
                                        "motif_kinds=[depthwise_separable,max_filter]", "compile_timeout=120"]),
])
def test_the_committed_datasets_commands_name_their_batches(dataset, seed, overrides):
    """The job resumes a dataset by its batch names: the command each committed dataset's README gives (protocol=full,
    the default when they were made) names the batch already there, so the default mix_weights (indices) keeps the
    names written before the option existed, and the default protocol since (full-ordered) does not resume them."""
    from ir.config import load_config

    cfg = load_config(JobConfig, ROOT / "conf/datagen.yaml", [
        f"out={ROOT / 'datasets' / dataset}", f"seed={seed}", "rounds=1", "pipelines_per_round=400", "contrasts=5",
        "contrast_kinds=[serial,inline,compute,scalar,rolled]", "first_sampler=analytical", "train.enabled=false",
        "protocol=full", *overrides])
    batch_id = BatchSpec.of_job(cfg, 0).key(seed).batch_id
    assert (ROOT / "datasets" / dataset / "target=host" / f"batch-{batch_id}.parquet").is_file(), batch_id
    assert BatchSpec.of_job(dataclasses.replace(cfg, protocol="full-ordered"), 0).key(seed).batch_id != batch_id
    other = "buffer" if cfg.mix_weights == "indices" else "indices"
    assert BatchSpec.of_job(dataclasses.replace(cfg, mix_weights=other), 0).key(seed).batch_id != batch_id
    with pytest.raises(ValueError, match="mix_weights must be one of indices, buffer"):
        dataclasses.replace(SPEC, mix_weights="random")


def test_batch_ids_are_a_stable_function_of_the_key():
    assert SPEC.batch_ids == BatchSpec(seeds=[1, 2], schedules_per_pipeline=5, max_stages=3, output_size=[32, 24, 3],
                                       beam_size=2, passes=1, baselines=["naive", "simple"]).batch_ids
    assert [i.split("-")[:2] for i in SPEC.batch_ids] == [["r0", "p1"], ["r0", "p2"]]
    assert dataclasses.replace(SPEC, seeds=(2, 1)).batch_ids == SPEC.batch_ids[::-1], "one file per seed"
    # what does not decide the rows does not enter the name
    assert dataclasses.replace(SPEC, compile_timeout=1.0, benchmark_timeout=1.0).batch_ids == SPEC.batch_ids
    variants = [dataclasses.replace(SPEC, **{k: v}) for k, v in
                [("schedules_per_pipeline", 6), ("schedule_seed", 1), ("markov", True), ("output_size", (32, 24, 1)),
                 ("protocol", "default"), ("round", 1), ("beam_size", 3), ("dropout", 2.0), ("baselines", ("naive",)),
                 ("baselines", ()), ("random_fill", False)]]
    assert len({v.batch_ids[0] for v in variants} | {SPEC.batch_ids[0]}) == len(variants) + 1
    # without baselines a key names its batch as the job did before baselines existed, so a job resumes old data
    key = BatchKey("host", 0, 7, 6, 4, (64, 48, 3), False, 2, 1, 1.0, 0, "quick", True)
    assert key.batch_id == "r0-p7-e8b1d993bab5"


def test_bad_specs_are_refused():
    with pytest.raises(ValueError, match="protocol"):
        BatchSpec(seeds=(1,), protocol="slow")
    with pytest.raises(ValueError, match="at least one"):
        BatchSpec(seeds=())
    with pytest.raises(BaselineError, match="unknown baseline 'expert'; registered: .*naive, simple"):
        BatchSpec(seeds=(1,), baselines=("expert",))
    with pytest.raises(BaselineError, match="unknown baseline 'expert'"):
        JobConfig(baselines=("expert",))


def test_a_new_baseline_is_one_function_and_one_registration(monkeypatch):
    """A toy baseline, the naive schedule under another name, planned first when a key names it."""
    from ir.builder import naive_schedule

    monkeypatch.setattr(batch_module, "BASELINES", dict(batch_module.BASELINES))

    @register_baseline("toy")
    def toy(pipeline, target):
        return naive_schedule(pipeline)

    spec = BatchSpec(seeds=(1,), schedules_per_pipeline=3, max_stages=3, output_size=(32, 24, 3), beam_size=2,
                     passes=1, baselines=("toy",), check_outputs=False)
    plan = plan_batch(spec.key(1), SamplingModel(spec.random_model))
    assert [s.sampler for s in plan.samples] == ["toy", "beam", "dropout"]
    assert plan.samples[0].loopnest.fingerprint == naive_schedule(plan.pipeline).fingerprint
    assert spec.batch_ids != dataclasses.replace(spec, baselines=()).batch_ids


# -- one real batch -------------------------------------------------------------------------------------


def test_a_batch_is_one_file_per_pipeline_of_its_schedules(generated):
    root, summary, calls, seconds = generated
    paths = [batch_path(root, "host", i) for i in SPEC.batch_ids]
    assert summary.paths == paths and all(p.exists() for p in paths) and not summary.reused
    assert {file_machine(p) for p in paths} == {measuring_machine()}  # this host measured them, its workers' malloc too
    assert summary.batch_ids == list(SPEC.batch_ids)
    assert summary.pipelines == 2 and summary.schedules == 10 and summary.pipelines_skipped == 0
    assert summary.ok + sum(summary.failed_by_status.values()) == 10
    for seed, path, batch_id in zip(SPEC.seeds, paths, SPEC.batch_ids):
        p = pipeline_of(SPEC, seed)
        mine = rows(path)
        assert len(mine) == 5 and {r["batch_id"] for r in mine} == {batch_id}
        assert {r["pipeline_id"] for r in mine} == {p.fingerprint}
        expected = sample_schedules(p, SPEC, seed)
        assert [r["schedule_id"] for r in mine] == [ln.fingerprint for _, ln in expected]
        assert [r["sampler"] for r in mine] == [name for name, _ in expected]
        assert {(r["round"], r["model_version"]) for r in mine} == {(0, "random:0")}
        for r in mine:
            assert r["status"] in STATUSES and r["backend"] == "numba"
            assert (r["status"] == "ok") == (r["runtime_s"] is not None and r["runtime_s"] > 0)
        assert {r["status"] for r in mine[:2]} == {"ok"}, "the baselines compile and match the interpreter"
    assert sum(r["status"] == "ok" for p in paths for r in rows(p)) == summary.ok
    assert str(summary).startswith("2 batches (0 already written), 2 pipelines, 10 schedules")
    assert str(summary.batches[0]).startswith(f"batch {SPEC.batch_ids[0]}: 1 pipelines, 5 schedules")
    print(f"\n{summary} ({seconds / 10:.2f} s per schedule)")


def test_rows_recompile_to_their_features(generated):
    root, _, _, _ = generated
    r = rows(batch_path(root, "host", SPEC.batch_ids[-1]))[-1]
    p = Pipeline.from_json(json.loads(r["pipeline_json"]))
    f = featurize(p, LoopNest.loads(r["schedule_json"]))
    assert np.array_equal(np.asarray(r["schedule_features"], np.float32), f.schedule)
    assert np.array_equal(np.asarray(r["pipeline_features"], np.float32), f.pipeline.reshape(len(f.stages), -1))


def test_progress_is_reported_per_schedule(generated):
    _, _, calls, _ = generated
    assert [d for d, _, _ in calls] == list(range(1, 11))
    assert calls[-1][1] == 10 and all("seed" in note for _, _, note in calls)


def test_a_rerun_never_duplicates_rows(generated, tmp_path):
    root, summary, _, _ = generated
    paths = summary.paths
    stamps = [p.stat().st_mtime_ns for p in paths]
    again = generate_batch(SPEC, root)
    assert again.reused and again.paths == paths and [p.stat().st_mtime_ns for p in paths] == stamps
    assert (again.schedules, again.ok, again.failed_by_status) == (10, summary.ok, summary.failed_by_status)
    redone = generate_batch(SPEC, root, overwrite=True)  # compiled kernels come from the disk cache
    assert not redone.reused and all(p.stat().st_mtime_ns != s for p, s in zip(paths, stamps))
    assert sorted(paths[0].parent.iterdir()) == sorted(paths), "no temporaries or second files left behind"
    ds = read_dataset(root, "host")
    assert ds.samples.height == 10 and ds.samples["sample_id"].n_unique() == 10


def test_failures_are_rows_with_their_status(tmp_path):
    """A fresh worker cannot import numba in 10 ms: every compile times out, and every schedule is a row."""
    spec = BatchSpec(seeds=(2,), schedules_per_pipeline=3, max_stages=3, output_size=(32, 24, 3), beam_size=2,
                     passes=1, compile_timeout=0.01)
    summary = generate_batch(spec, tmp_path)
    assert (summary.ok, summary.schedules, summary.failed_by_status) == (0, 3, {"timeout": 3})
    table = rows(summary.paths[0])
    assert [r["status"] for r in table] == ["timeout"] * 3
    assert all(r["runtime_s"] is None and "timed out" in r["error"] for r in table)
    assert all(len(r["schedule_features"]) == len(r["stage_func"]) > 0 for r in table), "features are kept"
    ds = read_dataset(tmp_path, "host")
    assert ds.samples.height == 3 and ds.rejected.height == 0


def test_a_pipeline_that_cannot_be_generated_is_skipped(tmp_path):
    """Skipped and counted, and written by no file, so that a rerun (local or the job) tries it again."""
    spec = BatchSpec(seeds=(1, 2), schedules_per_pipeline=2, max_stages=1, output_size=(32, 24, 3))
    seen = []
    summary = generate_batch(spec, tmp_path, progress=lambda *a: seen.append(a))
    assert (summary.pipelines, summary.pipelines_skipped, summary.schedules) == (0, 2, 0)
    assert len(summary.errors) == 2 and all("max_stages" in e and "\n" not in e for e in summary.errors)
    assert summary.paths == [] and not list(tmp_path.rglob("*.parquet"))
    assert [note for *_, note in seen] == ["seed 1: pipeline skipped", "seed 2: pipeline skipped"]


# -- the command line -----------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["seeds=5:2", "out=x"], "select no seed"),
    (["seeds=a:b", "out=x"], "seeds must be"),
    (["out=x"], "give the pipeline seeds: seeds=A:B"),
    (["seeds=0:2", "schedules_per_pipeline=0", "out=x"], "schedules_per_pipeline must be >= 1"),
    (["seeds=0:2", "max_stages=1", "out=x"], "max_stages counts the input and output stages"),
    (["seeds=0:2", "output_size=3,3", "out=x"], "W,H,C"),
    (["seeds=0:2", "target=v100", "out=x"], "cuda target"),
    (["seeds=0:2", "target=nosuch", "out=x"], "unknown target"),
    (["seeds=0:2", "baselines=naive,expert", "out=x"], "unknown baseline 'expert'; registered: "),
    (["seeds=0:2", "dropout=0", "out=x"], "percentage in (0, 100]"),
    (["seeds=0:2", "per_batch=2", "out=x"], "unknown config key 'per_batch'"),
    (["seeds=0:2", "motifs=2", "out=x"], "motifs must be a number in [0, 1]"),
    (["seeds=0:2", "motifs=0.2", "motif_kinds=[conv]", "out=x"], "motif_kinds must be distinct names among"),
    (["seeds=0:2", "rivals=[nosuch]", "out=x"], "rivals must be registered cost model names"),
    (["--seeds", "0:2"], "unrecognized arguments: --seeds; settings are key=value (seeds=...)"),  # the old flags
])
def test_bad_arguments_are_one_line(argv, message, capsys):
    try:
        status = datagen.main(argv)
    except SystemExit as e:  # argparse exits, rather than returns, on arguments it cannot parse
        status = e.code
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("python -m generator.datagen: error: ") and message in err, err
    assert err.count("\n") == 1, err


def test_seeds_a_to_b_is_a_range_not_a_base_60_number(tmp_path):
    """YAML 1.1 reads 1:3 as 63 (base 60); ir.config reads it as the text, and seeds= as the range 1, 2."""
    from ir.config import load_config

    assert load_config(datagen.DatagenConfig, None, ["seeds=1:3"]).seed_list == (1, 2)
    conf = tmp_path / "d.yaml"
    conf.write_text("seeds: 1:30\n")
    assert load_config(datagen.DatagenConfig, conf).seed_list == tuple(range(1, 30))
    assert load_config(datagen.DatagenConfig, None, ["seeds=4,7"]).seed_list == (4, 7)
    assert load_config(datagen.DatagenConfig, None, ["seeds=5"]).seed_list == (5,)


def test_a_model_that_cannot_load_is_one_line(tmp_path, capsys):
    assert datagen.main(["seeds=0:2", "model=nosuch", f"out={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert "model: unknown cost model 'nosuch'" in err and "checkpoint path" in err and err.count("\n") == 1
    assert not list(tmp_path.rglob("*.parquet"))


def test_the_command_line_writes_a_batch_per_pipeline(generated, tmp_path, capsys):
    argv = ["seeds=1,2", "schedules_per_pipeline=2", "max_stages=3", "output_size=32,24,3", "beam_size=2",
            "passes=1", f"out={tmp_path}"]
    assert datagen.main(argv) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("2 batches (0 already written), 2 pipelines (0 skipped), 4 schedules: ok 4;")
    assert len(list((tmp_path / "target=host").glob("batch-*.parquet"))) == 2
    assert datagen.main(argv) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("2 batches (2 already written)")
    assert read_dataset(tmp_path, "host").samples.height == 4


def test_outside_a_terminal_the_log_is_one_line_per_event(tmp_path):
    """stdout and stderr to pipes, as in a file, CI or `ray job logs`: each measured schedule is one complete
    line on stderr (no redrawn bar), each batch one line on stdout, then the summary; no third-party chatter."""
    argv = ["seeds=1:3", "schedules_per_pipeline=3", "max_stages=3", "output_size=32,24,3", "beam_size=2",
            "passes=1", f"out={tmp_path}"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "generator.datagen", *argv, *extra], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600, check=False)

    r = run()
    assert r.returncode == 0, r.stderr[-3000:]
    events = assert_clean_log(r.stderr)
    assert len(events) == 6, r.stderr
    for i, (line, sampler) in enumerate(zip(events, ["naive", "simple", "beam"] * 2)):
        pattern = rf"\[{i + 1}/6\] seed {1 + i // 3} {sampler}: ok [0-9.]+ (s|ms|µs) elapsed \d\d:\d\d"
        assert re.fullmatch(pattern, line), line
    out = assert_clean_log(r.stdout)
    assert [ln.split(":")[0] for ln in out[:2]] == [f"batch {p.stem[6:]}" for p in
                                                    sorted((tmp_path / "target=host").glob("batch-r0-p*.parquet"))]
    assert len(out) == 3 and out[2].startswith("2 batches (0 already written), 2 pipelines (0 skipped), 6 schedules")

    r = run("progress=false")  # a rerun: nothing measured, no progress; the batches and summary still print
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.count("already written") == 3


# -- one data-generation path: the local run writes the job's files --------------------------------------


def test_round_0_samples_with_the_first_sampler_asked_for(tmp_path):
    """first_sampler: random weights by default (adams2019 §5), or an analytical prior, whose beam samples (and
    their one-decision contrasts) are schedules worth measuring; its name is what every sample records."""
    from generator.job.driver import Job
    from ir.target import get_target

    tgt = get_target("host")
    cfg = JobConfig(pipelines_per_round=1, seed=3, schedules_per_pipeline=4, max_stages=4, output_size=(32, 24, 3),
                    naive_runtime=None, backend="numba", beam_size=2, passes=1, out=str(tmp_path), contrasts=2)
    assert Job(cfg, tmp_path, "sqlite:///unused.db", tgt, 1.0).sampling_model(0).name == "random:3"
    cfg = dataclasses.replace(cfg, first_sampler="analytical:2")
    model = Job(cfg, tmp_path, "sqlite:///unused.db", tgt, 1.0).sampling_model(0)
    assert model.name == "analytical:2" and model.cost_model(tgt).prior == 2
    (key,) = BatchSpec.of_job(cfg, 0).keys()
    plan = plan_batch(key, model)
    assert plan.model == "analytical:2" and plan.samples[0].sampler == "beam"
    cfg = dataclasses.replace(cfg, first_sampler="builtin")  # the shipped model, so its own picks get measured
    model = Job(cfg, tmp_path, "sqlite:///unused.db", tgt, 1.0).sampling_model(0)
    assert model.name == "builtin" and model.cost_model(tgt).name.startswith("builtin")


def test_a_local_run_writes_the_batches_and_schedules_the_job_plans_for_the_same_config(tmp_path, capsys):
    """The job's round-0 batches of a config (its keys, its sampling model, plan_batch) against what the
    command line writes with the same settings: the same file names, schedules, samplers and model. A job
    over this config would find every batch written and skip it (its resume check is the file name)."""
    from generator.job.driver import Job
    from ir.target import get_target

    cfg = JobConfig(pipelines_per_round=2, seed=1, schedules_per_pipeline=3, max_stages=3, output_size=(32, 24, 3),
                    naive_runtime=None, backend="numba", beam_size=2, passes=1, out=str(tmp_path))  # the job's sampling: no baselines, no random fill
    assert datagen.main(["seeds=1:3", "seed=1", "schedules_per_pipeline=3", "max_stages=3",
                         "output_size=32,24,3", "beam_size=2", "passes=1", "baselines=", "random_fill=false",
                         "measurement=interleaved", f"out={tmp_path}"]) == 0
    capsys.readouterr()
    job = Job(cfg, tmp_path, "sqlite:///unused.db", get_target(cfg.target), 1.0)
    model = job.sampling_model(0)
    keys = BatchSpec.of_job(cfg, 0).keys()
    assert [k.seed for k in keys] == [1, 2]
    written = sorted(p.name for p in (tmp_path / "target=host").glob("batch-*.parquet"))
    assert written == sorted(f"batch-{k.batch_id}.parquet" for k in keys)
    for key in keys:
        plan = plan_batch(key, model)
        table = rows(batch_path(tmp_path, "host", key.batch_id))
        assert [r["schedule_id"] for r in table] == [s.loopnest.fingerprint for s in plan.samples]
        assert [r["sampler"] for r in table] == [s.sampler for s in plan.samples] == ["beam", "dropout", "dropout"]
        assert {r["model_version"] for r in table} == {plan.model} == {"random:1"}
        assert {r["pipeline_id"] for r in table} == {plan.pipeline.fingerprint}
