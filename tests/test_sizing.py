"""generator.sizing: output sizes that put random pipelines' naive runtimes in a range, and its plumbing
through the batch keys, the job's config and `python -m generator.random --stats`."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict
from pathlib import Path

import pytest

from generator.batch import BatchSpec
from generator.random_pipeline import random_pipeline
from generator.sizing import (MIN_SIDE, NAIVE_SECONDS_PER_OP_POINT, check_naive_runtime, estimate_naive_seconds,
                              naive_work, sized_output, target_naive_seconds)

RANGE = (0.005, 1.0)
LARGEST = (2000, 2000, 3)


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_naive_work_is_points_times_operations_of_every_stage(seed):
    p = random_pipeline(seed, 8, (40, 30, 3))
    from featurize import featurize
    from featurize.schema import SCHEDULE_INDEX
    from ir.builder import naive_schedule

    f = featurize(p, naive_schedule(p))
    by_stage = dict(zip(f.stages, f.schedule[:, SCHEDULE_INDEX["points_computed_total"]]))
    expected = 0.0
    for node in p.dag.nodes:
        for stage in node.stages:
            ops = sum(stage.op_histogram.values())  # the DAG's histogram, not the feature matrix
            expected += float(by_stage[(node.name, stage.index)]) * (ops + 1)
    assert naive_work(p) == pytest.approx(expected, rel=1e-6)
    assert estimate_naive_seconds(p) == pytest.approx(naive_work(p) * NAIVE_SECONDS_PER_OP_POINT)


def test_naive_work_grows_with_the_output_area():
    small, big = random_pipeline(5, 2, (64, 48, 3)), random_pipeline(5, 2, (128, 96, 3))
    # input -> output copy: the output's points and the input's region both grow 4x
    assert naive_work(big) == pytest.approx(4 * naive_work(small), rel=0.05)


@pytest.mark.parametrize("seed", range(8))
def test_sized_outputs_land_on_the_seeds_draw_or_at_an_end_of_the_size_range(seed):
    size = sized_output(seed, 20, LARGEST, RANGE)
    assert size == sized_output(seed, 20, LARGEST, RANGE)  # a pure function: every node agrees
    w, h, c = size
    assert c == 3 and w == h and MIN_SIDE <= w <= 2000  # aspect and channels kept
    target = target_naive_seconds(seed, RANGE)
    assert RANGE[0] <= target <= RANGE[1]
    est = estimate_naive_seconds(random_pipeline(seed, 20, size))
    if w == 2000:
        assert est <= target * 1.25  # even the largest size is too cheap: the largest it is
    elif w == MIN_SIDE:
        assert est >= target / 1.25
    else:
        assert abs(math.log(est / target)) < math.log(1.25), (size, est, target)


def test_the_draws_spread_over_the_range_log_uniformly():
    draws = [target_naive_seconds(s, RANGE) for s in range(400)]
    assert min(draws) >= RANGE[0] and max(draws) <= RANGE[1]
    mid = math.sqrt(RANGE[0] * RANGE[1])  # the log-scale midpoint: about half fall below it
    assert 0.4 < sum(d < mid for d in draws) / len(draws) < 0.6


@pytest.mark.parametrize("value, text", [
    ((1.0, 0.5), "0 < LO <= HI"), ((0.0, 1.0), "0 < LO <= HI"), ((0.1,), "two seconds LO,HI"),
    (("a", "b"), "two seconds LO,HI"), ((0.1, math.inf), "0 < LO <= HI")])
def test_a_bad_range_is_one_line_naming_the_key(value, text):
    with pytest.raises(ValueError, match="naive_runtime must be") as e:
        check_naive_runtime(value)
    assert text in str(e.value) and "\n" not in str(e.value)
    assert check_naive_runtime(None) is None and check_naive_runtime([]) is None
    assert check_naive_runtime([0.002, "0.5"]) == (0.002, 0.5)


def test_batch_keys_size_their_pipelines_and_old_batch_names_are_kept():
    fixed = BatchSpec(seeds=(3,), max_stages=20, output_size=LARGEST).key(3)
    sized = BatchSpec(seeds=(3,), max_stages=20, output_size=LARGEST, naive_runtime=[0.005, 1]).key(3)
    assert fixed.pipeline_size == LARGEST
    assert sized.pipeline_size == sized_output(3, 20, LARGEST, RANGE) != LARGEST
    assert sized.batch_id != fixed.batch_id
    # a key without the range hashes the fields it had before the range existed (nor the contrasts and their
    # kinds, added later, nor a sequential measurement, nor mix_weights' default, nor rivals, nor motifs and their
    # default kinds), so written batches keep their names (and a rerun skips them)
    assert fixed.measurement == "sequential" and fixed.mix_weights == "indices" and fixed.rivals == ()
    assert fixed.motifs == 0.0 and fixed.motif_kinds == ("pyramid", "stencil_chain")
    fields = {k: v for k, v in asdict(fixed).items()
              if k not in ("naive_runtime", "contrasts", "contrast_kinds", "measurement", "mix_weights", "rivals",
                           "motifs", "motif_kinds")}
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
    assert fixed.batch_id == f"r0-p3-{hashlib.sha256(blob).hexdigest()[:12]}"


def test_the_job_config_defaults_to_realistic_pipelines():
    from generator.job.config import JobConfig
    from ir.config import load_config

    cfg = load_config(JobConfig, Path(__file__).resolve().parents[1] / "conf" / "datagen.yaml")
    assert cfg.max_stages == 20 and cfg.naive_runtime == RANGE and cfg.output_size == LARGEST
    spec = BatchSpec.of_job(cfg, 0)
    assert spec.naive_runtime == RANGE and spec.key(0).pipeline_size == sized_output(0, 20, LARGEST, RANGE)


def test_generator_random_stats_reports_naive_runtimes_next_to_the_apps(capsys):
    from generator.apps import APPS
    from generator.random import main

    main(["--stats", "12", "--naive-runtime", "0.005,1"])  # 1 when a stage kind is missing from 12 pipelines
    out = capsys.readouterr().out
    assert "outputs scaled from 2000x2000x3 so that estimated naive runtimes are log-uniform in [0.005, 1] s" in out
    table = out[out.index("naive runtimes (everything at root"):]
    rows = [line.split() for line in table.splitlines()[2:9]]
    assert sum(int(r[-4]) for r in rows) == 12 and sum(int(r[-2]) for r in rows) == len(APPS)
    # every random pipeline's estimate is within the range, up to the sizing's tolerance
    counts = {" ".join(r[:-4]): int(r[-4]) for r in rows}
    assert counts["< 0.1 ms"] == counts["0.1-1 ms"] == counts[">= 10 s"] == 0, counts
    for name in APPS:
        assert f"\n    {name} " in table
    assert "Naive runtimes: " in out and "of 12 random pipelines" in out


@pytest.mark.parametrize("args", [["--show", "1", "--naive-runtime", "0.1,1"], ["--stats", "3", "--naive-runtime", "1,0.1"],
                                  ["--check", "1", "--measure", "2"]])
def test_generator_random_sizing_options_are_checked_in_one_line(args, capsys):
    from generator.random import main

    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1 and "error" in err


def test_a_batch_plans_its_pipeline_at_the_sized_output():
    from generator.batch import SamplingModel, plan_batch

    largest, rng = (256, 192, 3), (1e-4, 2e-4)
    key = BatchSpec(seeds=(4,), max_stages=4, output_size=largest, naive_runtime=rng, schedules_per_pipeline=2,
                    beam_size=2, passes=1, baselines=()).key(4)
    plan = plan_batch(key, SamplingModel("random:0"))
    (out,) = plan.pipeline.output_names
    assert tuple(plan.pipeline.output_sizes[out]) == key.pipeline_size != largest
    assert plan.expected[out].shape == key.pipeline_size  # the reference outputs are computed at that size too
    assert plan.pipeline.fingerprint == random_pipeline(4, 4, key.pipeline_size).fingerprint


def test_motifs_name_their_batches_and_shape_their_pipelines():
    """A key with app-like motifs is another batch, sized and prepared from the pipeline with motifs."""
    from generator.batch import prepare_pipeline
    from generator.random_pipeline import MOTIF_KINDS, stage_kind

    plain = BatchSpec(seeds=(3,), max_stages=20, output_size=LARGEST, naive_runtime=RANGE).key(3)
    motifs = BatchSpec(seeds=(3,), max_stages=20, output_size=LARGEST, naive_runtime=RANGE, motifs=0.5).key(3)
    assert motifs.batch_id != plain.batch_id
    assert motifs.pipeline_size == sized_output(3, 20, LARGEST, RANGE, motifs=0.5)
    p, _, _ = prepare_pipeline(3, 20, (40, 30, 3), check_outputs=False, motifs=motifs.motifs)
    assert {stage_kind(f.name) for f in p.funcs} & set(MOTIF_KINDS)
    q, _, _ = prepare_pipeline(3, 20, (40, 30, 3), check_outputs=False)
    assert not {stage_kind(f.name) for f in q.funcs} & set(MOTIF_KINDS)


def test_motif_kinds_name_their_batches_and_pick_the_motifs():
    """Other motif kinds are another batch and another pipeline; the default kinds, or kinds without motifs, keep
    the batch name they had before motif_kinds existed."""
    from generator.batch import prepare_pipeline
    from generator.random_pipeline import stage_kind

    spec = dict(seeds=(3,), max_stages=20, output_size=LARGEST, naive_runtime=RANGE)
    default = BatchSpec(**spec, motifs=0.5).key(3)
    assert BatchSpec(**spec, motifs=0.5, motif_kinds=("pyramid", "stencil_chain")).key(3).batch_id == default.batch_id
    assert (BatchSpec(**spec, motif_kinds=("conv_layer",)).key(3).batch_id
            == BatchSpec(**spec).key(3).batch_id)  # no motif drawn: the kinds change nothing
    conv = BatchSpec(**spec, motifs=0.5, motif_kinds=["conv_layer"]).key(3)
    assert conv.motif_kinds == ("conv_layer",) and conv.batch_id != default.batch_id
    assert conv.pipeline_size == sized_output(3, 20, LARGEST, RANGE, motifs=0.5, motif_kinds=("conv_layer",))
    p, _, _ = prepare_pipeline(3, 20, (40, 30, 3), check_outputs=False, motifs=0.5, motif_kinds=conv.motif_kinds)
    kinds = {stage_kind(f.name) for f in p.funcs}
    assert "conv_layer" in kinds and not kinds & {"pyr_down", "pyr_up", "pyr_mix", "stencil2d"}
