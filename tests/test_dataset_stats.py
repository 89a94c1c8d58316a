"""`python -m generator.dataset stats`: the figures it prints are the dataset's, computed from the rows written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backends import Measurement
from featurize import featurize
from featurize.dataset import DatasetError, Sample, write_batch
from featurize.dataset_stats import dataset_stats
from generator.dataset import main
from ir.sampling import random_schedule

from .fuzz_pipelines import random_test_pipeline

ROOT = Path(__file__).resolve().parent.parent


def _samples(seed: int, runtimes: list[float | None], spreads: list[float]) -> list[Sample]:
    p = random_test_pipeline(seed)
    out = []
    for k, (rt, sp) in enumerate(zip(runtimes, spreads)):
        ln, _ = random_schedule(p, 1000 * seed + k)
        m = (Measurement("ok", rt, rt * 1.1, sp, 5, 40, 0.25) if rt is not None
             else Measurement("compile_error", error="boom", compile_s=0.5))
        out.append(Sample.build(p, ln, featurize(p, ln), m, sampler="dropout"))
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("ds")
    write_batch(root, "host", "0000", _samples(1, [1e-3, 2e-3, None, 4e-3], [0.005, 0.02, 0.0, 0.08]))
    write_batch(root, "host", "0001", _samples(2, [3e-3, 5e-3], [0.001, 0.009]))
    write_batch(root, "avx2-8core", "0000", _samples(3, [None, 7e-2], [0.0, 0.5]))
    return root


def test_stats_count_what_was_written(data):
    st = dataset_stats(data)
    parts = {p.target: p for p in st.partitions}
    assert sorted(parts) == ["avx2-8core", "host"]
    host = parts["host"]
    assert (host.files, host.rows, host.pipelines, host.ok) == (2, 6, 2, 5)
    assert dict(host.status_counts) == {"ok": 5, "compile_error": 1} and host.status_counts[0] == ("ok", 5)
    assert host.yield_ == pytest.approx(5 / 6)
    assert host.bytes == sum(f.stat().st_size for f in (data / "target=host").glob("*.parquet"))
    # runtimes of the ok rows only: 1, 2, 3, 4, 5 ms
    assert host.runtime_s.count == 5 and host.runtime_s.values[0] == 1e-3 and host.runtime_s.values[-1] == 5e-3
    assert host.runtime_s.values[2] == 3e-3
    spreads = np.array([0.005, 0.02, 0.08, 0.001, 0.009])  # the failed row's spread is not a label's
    assert host.spread.count == 5 and host.spread.values[2] == pytest.approx(np.median(spreads))
    assert host.within_1pct == pytest.approx(3 / 5) and host.within_5pct == pytest.approx(4 / 5)
    spp = host.samples_per_pipeline
    assert spp.count == 2 and (spp.values[0], spp.values[-1]) == (2.0, 4.0)
    other = parts["avx2-8core"]
    assert (other.rows, other.ok, other.pipelines) == (2, 1, 1) and other.yield_ == 0.5


def test_report_and_cli(data, capsys):
    assert main(["stats", f"data={data}"]) == 0
    out = capsys.readouterr().out
    assert "target=host: 2 pipelines, 6 samples (5 ok, yield 83.3 %) in 2 files" in out
    assert "by status: ok 5 (83.3 %), compile_error 1 (16.7 %)" in out
    assert "runtime (ok): min 1.00 ms" in out and "max 5.00 ms" in out
    assert "60.0 % of ok samples within 1 %" in out
    assert "target=avx2-8core: 1 pipelines, 2 samples (1 ok, yield 50.0 %)" in out


def test_rounds_judge_the_beam_search_sample(tmp_path):
    """Per round: how often the sampling model's own choice (the beam sample) was its pipeline's fastest."""
    def batch(seed, round_, model, runtimes):  # the first runtime is the beam sample's
        p = random_test_pipeline(seed)
        out = []
        for k, rt in enumerate(runtimes):
            ln, _ = random_schedule(p, 1000 * seed + k)
            m = Measurement("ok", rt, rt, 0.01, 5, 40, 0.25) if rt else Measurement("compile_error", error="x")
            out.append(Sample.build(p, ln, featurize(p, ln), m, round=round_, model_version=model,
                                    sampler="beam" if k == 0 else "dropout"))
        write_batch(tmp_path, "host", f"r{round_}-{seed}", out)

    batch(1, 0, "random:0", [2e-3, 1e-3, 4e-3])  # beam 2x the fastest
    batch(2, 0, "random:0", [1e-3, 3e-3])  # beam fastest
    batch(3, 0, "random:0", [None, 3e-3])  # beam failed: not judged
    batch(4, 1, "models:/m/1", [3e-3, 1e-3, 2e-3, 1.5e-3])  # beam 3x the fastest
    (host,) = dataset_stats(tmp_path).partitions
    r0, r1 = host.rounds
    assert (r0.round, r0.models, r0.pipelines, r0.beam_fastest) == (0, ("random:0",), 2, 0.5)
    assert r0.beam_over_fastest == pytest.approx(2 ** 0.5) and r0.median_over_fastest == pytest.approx(1.5)
    assert (r1.round, r1.models, r1.pipelines, r1.beam_fastest) == (1, ("models:/m/1",), 1, 0.0)
    assert r1.beam_over_fastest == pytest.approx(3.0)
    report = dataset_stats(tmp_path).report()
    assert "round 1 (sampled by models:/m/1): 1 pipelines; the beam-search sample ran fastest in 0 % of them, " \
           "3.00x the fastest" in report


def _write_sampled(root, name: str, seed: int, rows) -> None:
    """One batch file of random schedules of one pipeline, labelled by (sampler, runtime or None: a failure)."""
    p = random_test_pipeline(seed)
    out = []
    for k, (sampler, rt) in enumerate(rows):
        ln, _ = random_schedule(p, 1000 * seed + k)
        m = Measurement("ok", rt, rt, 0.01, 5, 40, 0.25) if rt else Measurement("compile_error", error="x")
        out.append(Sample.build(p, ln, featurize(p, ln), m, sampler=sampler))
    write_batch(root, "host", name, out)


def test_contrasts_are_judged_against_their_beam_sample(tmp_path):
    """Per decision: how much slower than the beam sample its one-decision contrasts ran."""
    def batch(seed, rows):
        _write_sampled(tmp_path, f"c{seed}", seed, rows)

    batch(1, [("beam", 1e-3), ("contrast-serial", 4e-3), ("contrast-scalar", 2e-3), ("dropout", 9e-3)])
    batch(2, [("beam", 2e-3), ("contrast-serial", 1e-3), ("contrast-rolled", 2e-3)])
    batch(3, [("beam", None), ("contrast-serial", 5e-3)])  # no ok beam sample: the contrast is not judged
    (host,) = dataset_stats(tmp_path).partitions
    by = {c.decision: c for c in host.contrasts}
    assert sorted(by) == ["rolled", "scalar", "serial"]
    assert (by["serial"].pairs, by["serial"].slower) == (2, 0.5)
    assert by["serial"].over_beam == pytest.approx((4 * 0.5) ** 0.5) and by["serial"].max_over_beam == 4.0
    assert (by["scalar"].pairs, by["scalar"].over_beam) == (1, pytest.approx(2.0))
    assert (by["rolled"].slower, by["rolled"].over_beam) == (0.0, pytest.approx(1.0))
    assert "contrast serial: 2 pairs, 50 % slower than their beam sample, 1.41x its runtime (geomean; up to " \
           "4.00x)" in dataset_stats(tmp_path).report()


def test_a_rivals_pick_is_judged_against_the_samplers_beam_pick(tmp_path):
    """Per rival: in how many pipelines the sampler's beam pick beat the rival model's, and by how much."""
    def batch(seed, rows):
        _write_sampled(tmp_path, f"r{seed}", seed, rows)

    batch(1, [("beam", 1e-3), ("beam-analytical", 4e-3), ("dropout", 9e-4)])
    batch(2, [("beam", 3e-3), ("beam-analytical", 1e-3), ("contrast-serial", 2e-3)])
    batch(3, [("beam", None), ("beam-analytical", 5e-3)])  # no ok beam sample: not judged
    batch(4, [("beam", 2e-3), ("dropout", 5e-3)])  # the same pick: no rival row
    (host,) = dataset_stats(tmp_path).partitions
    (r,) = host.rivals
    assert (r.rival, r.pipelines, r.sampler_faster, r.same_pick) == ("analytical", 2, 0.5, 1)
    assert r.over_all == pytest.approx(0.75 ** (1 / 3))  # pipeline 4 counts 1
    assert r.beam_over_rival == pytest.approx((0.25 * 3) ** 0.5) and (r.best, r.worst) == (0.25, pytest.approx(3.0))
    assert "rival analytical: 2 pipelines where its beam pick differs; the sampler's beam pick ran faster in 50 % " \
           "of them, 0.866x the rival's runtime (geomean; 0.25x-3.00x); the same pick in 1: 0.909x over all 3" in dataset_stats(tmp_path).report()
    batch(5, [("beam", 2e-3), ("beam-analytical|builtin", 1e-3)])  # both rivals picked one schedule: counts for both
    (two,) = dataset_stats(tmp_path).partitions
    assert [(x.rival, x.pipelines) for x in two.rivals] == [("analytical", 3), ("builtin", 1)]


def test_bad_input_is_one_line(tmp_path):
    with pytest.raises(DatasetError, match="holds no dataset"):
        dataset_stats(tmp_path)
    for argv, want in ((["stats", f"data={tmp_path}"], "holds no dataset"),
                       ([], "give a command first (stats, refeaturize)"), (["stat"], "got 'stat'"),
                       (["stats", "dat=x"], "unknown config key 'dat'")):
        r = subprocess.run([sys.executable, "-m", "generator.dataset", *argv], cwd=ROOT, capture_output=True,
                           text=True)
        assert r.returncode == 2 and want in r.stderr and len(r.stderr.strip().splitlines()) == 1, (argv, r.stderr)


def test_label_agreement_counts_pairs_by_hand():
    import polars as pl

    from featurize.dataset_stats import label_agreement

    first = pl.DataFrame({"pipeline_id": ["p"] * 4 + ["q"] * 2, "schedule_id": ["a", "b", "c", "d", "e", "f"],
                          "status": ["ok"] * 5 + ["timeout"], "runtime_s": [1.0, 2.0, 1.05, 4.0, 3.0, None],
                          "spread": [0.01, 0.01, 0.1, 0.01, 0.0, None]})
    second = pl.DataFrame({"pipeline_id": ["p"] * 4 + ["q"] * 2, "schedule_id": ["a", "b", "c", "d", "e", "f"],
                           "status": ["ok"] * 6, "runtime_s": [1.1, 2.0, 1.0, 3.0, 3.0, 1.0]})
    la = label_agreement(first, second)
    # pipeline p: pairs ab ac ad bc bd cd; the second run swaps a and c (first: a < c, 5 % apart, within c's
    # spread of 10 %); q has one ok-in-both schedule, so no pair
    assert (la.samples, la.pipelines, la.pairs) == (5, 2, 6)
    assert la.agree == pytest.approx(5 / 6)
    assert la.pairs_10pct == 5 and la.agree_10pct == 1.0  # every pair but a-c is >= 10 % apart
    assert la.near_ties == pytest.approx(1 / 6) and la.agree_outside_ties == 1.0
    # relative differences a 0.1, b 0, c 0.05, d 1/3, e 0 -> median 0.05
    assert la.median_rel_diff == pytest.approx(0.05)
    assert la.per_pipeline == (("p", pytest.approx(5 / 6)),)  # q has no pair: no agreement of its own
    assert not any(line.startswith("per pipeline") for line in la.lines())  # one pipeline has no spread to report


def test_label_agreement_reports_the_spread_over_pipelines():
    """Two pipelines that agree 1/3 and 1 of the time: the report gives each (lowest first) and the sampling error of
    their mean, 2 x stdev / sqrt(2)."""
    import polars as pl

    from featurize.dataset_stats import label_agreement

    ids = ["p"] * 3 + ["q"] * 3
    first = pl.DataFrame({"pipeline_id": ids, "schedule_id": list("abcdef"), "status": ["ok"] * 6,
                          "runtime_s": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0], "spread": [0.01] * 6})
    second = pl.DataFrame({"pipeline_id": ids, "schedule_id": list("abcdef"), "status": ["ok"] * 6,
                           "runtime_s": [3.0, 1.0, 2.0, 1.0, 2.0, 3.0]})  # p: ab and ac flip, bc holds
    la = label_agreement(first, second)
    assert la.per_pipeline == (("p", pytest.approx(1 / 3)), ("q", 1.0))
    line = la.lines()[-1]
    assert line.startswith("per pipeline (2): min 0.333, median 0.667, max 1.000; mean 0.667 +- 0.667 ")
    assert line.endswith("lowest: p 0.33, q 1.00")


def test_which_machine_measured_each_batch_is_recorded_and_reported(tmp_path, capsys):
    """`host` is whichever machine measured: the file records it, and stats count the files per machine (and warn
    when a partition mixes machines, whose labels do not rank schedules alike)."""
    from featurize.dataset import file_machine
    from ir.target import host_target, machine_description, target_of_machine

    here = machine_description()
    assert f"{host_target().cores} cores" in here and f"{host_target().vector_bytes}-byte vectors" in here
    recorded, t = target_of_machine(here), host_target()  # what refeaturize computes a file's features for
    assert (recorded.cores, recorded.vector_bytes, recorded.l2_bytes >> 10) == (
        t.cores, t.vector_bytes, t.l2_bytes >> 10)
    assert target_of_machine("") is None and target_of_machine("AMD EPYC; 2 cores") is None
    from backends import measuring_machine

    assert measuring_machine().startswith(here + "; malloc ") and target_of_machine(measuring_machine()) == recorded
    old = write_batch(tmp_path, "host", "0000", _samples(1, [1e-3], [0.01]))
    write_batch(tmp_path, "host", "0001", _samples(2, [2e-3], [0.01]), machine=here)
    write_batch(tmp_path, "host", "0002", _samples(3, [3e-3], [0.01]), machine=here)
    assert file_machine(old) == "" and file_machine(tmp_path / "target=host" / "batch-0001.parquet") == here
    (host,) = dataset_stats(tmp_path).partitions
    assert host.machines == ((here, 2), ("", 1))
    assert main(["stats", f"data={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert f"measured on: [{here}] 2 files; [not recorded" in out and "warning: labels from different machines" in out
    (tmp_path / "target=host" / "batch-0000.parquet").unlink()
    assert main(["stats", f"data={tmp_path}"]) == 0
    assert "warning" not in capsys.readouterr().out
