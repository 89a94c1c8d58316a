"""benchmarks/search_on_random.py: every model's beam pick of each held-out random pipeline, measured side by side
by the data job (real Ray, real llvm compilation and measurement, small pipelines)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["max_stages=4", "output_size=[64,48,3]", "naive_runtime=null", "num_cpus=2"]


def _benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_each_models_pick_is_measured_next_to_the_references(tmp_path, capsys):
    bench = _benchmark("search_on_random")
    out = tmp_path / "picks"
    models = ["analytical:1", "analytical"]
    assert bench.main(["--models", ",".join(models), "--seeds", "0:3", "--backend", "llvm", "--beam-size", "2",
                       "--passes", "1", "--out", str(out), *SMALL]) == 0
    rows = pl.read_parquet(str(out / "target=host" / "*.parquet"))
    assert set(rows.get_column("status")) == {"ok"} and rows.get_column("pipeline_id").n_unique() == 3
    assert set(rows.get_column("model_version")) == {"analytical"}  # the reference samples
    per = rows.group_by("pipeline_id").agg(pl.col("sampler"))
    differs = sum("beam-analytical:1" in s for s in per.get_column("sampler"))
    assert all(s[0] == "beam" for s in per.get_column("sampler"))
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("analytical:1 "))
    assert int(line.split()[1]) == differs, text
    assert "3 random pipelines, every pick measured by llvm; reference analytical (the sampler)" in text
    # the same --out resumes: every batch is on disk, none is written again, and the table is the same
    written = {f: f.stat().st_mtime_ns for f in (out / "target=host").glob("*.parquet")}
    assert bench.main(["--models", ",".join(models), "--seeds", "0:3", "--backend", "llvm", "--beam-size", "2",
                       "--passes", "1", "--out", str(out), *SMALL]) == 0
    assert {f: f.stat().st_mtime_ns for f in (out / "target=host").glob("*.parquet")} == written
    assert line in capsys.readouterr().out


def test_bad_arguments_are_one_line(capsys):
    bench = _benchmark("search_on_random")
    for argv, want in ((["--models", "analytical"], "at least two models"),
                       (["--models", "a,b", "--seeds", "9"], "--seeds must be A:B"),
                       (["--models", "a,b", "--seeds", "5:5"], "selects no seed")):
        try:
            bench.main(argv)
        except SystemExit as e:
            assert e.code == 2
        assert want in capsys.readouterr().err
