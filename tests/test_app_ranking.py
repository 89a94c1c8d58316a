"""benchmarks/learned_vs_analytical.py --save and benchmarks/app_ranking.py: measured app schedules kept, then
scored by cost models without compiling again. Real compilation (llvm) and measurement at small size."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_columns_of_one_long_model_path_keep_apart():
    label = _benchmark("learned_vs_analytical")._label
    assert label("learned:/tmp/candidates/normd") == "learned:normd"
    assert label("portfolio=learned:/tmp/candidates/normd") == "portfolio=learned:normd"
    assert label("models:/schedlab-host/4") == "models:/schedlab-host/4"  # a registry URI stays whole
    assert label("builtin:host-halide") == "builtin:host-halide"


def test_saved_schedules_are_scored_by_each_model(tmp_path, capsys):
    saved = tmp_path / "measured.jsonl"
    lva = _benchmark("learned_vs_analytical")
    assert lva.main(["--apps", "blur,unsharp", "--size", "small", "--models", "analytical:1,greedy=analytical:1,"
                     "analytical", "--backend", "llvm", "--beam-size", "8", "--passes", "2", "--save", str(saved)]) == 0
    rows = [json.loads(line) for line in saved.read_text().splitlines()]
    assert [r["app"] for r in rows] == ["blur", "unsharp"]
    from generator.apps import get_app
    from scheduler import autoschedule

    for r in rows:
        columns = [c for s in r["schedules"] for c in s["columns"]]
        assert sorted(columns) == sorted(["naive", "expert", "analytical:1", "greedy=analytical:1", "analytical"])
        assert all(s["status"] == "ok" and s["runtime_s"] > 0 for s in r["schedules"])
        # an ALGORITHM=MODEL column is that strategy's schedule under that model
        (greedy,) = [s["loopnest"] for s in r["schedules"] if "greedy=analytical:1" in s["columns"]]
        p = get_app(r["app"]).build("small")
        assert greedy == autoschedule(p, "host", model="analytical:1", algorithm="greedy", backend="llvm",
                                      allow_mismatch=True).loopnest.dumps()
    out = capsys.readouterr().out.splitlines()
    header = next(line for line in out if line.startswith("app "))
    assert header.split()[1:6] == ["naive", "expert", "analytical:1", "greedy=analytical:1", "analytical"]
    search = next(line for line in out if line.startswith("search: ")).removeprefix("search: ").split("; ")
    assert [c.split()[0] for c in search] == ["analytical:1", "greedy=analytical:1", "analytical"]
    states = {c.split()[0]: int(c.split(", ")[1].split()[0]) for c in search}
    assert 0 < states["greedy=analytical:1"] < states["analytical:1"]  # greedy scores fewer states than beam 8 x 2

    ranking = _benchmark("app_ranking")
    apps = ranking.load_measured(saved)
    assert [a.app for a in apps] == ["blur", "unsharp"] and apps[0].backend == "llvm"
    zipped = tmp_path / "measured.jsonl.gz"
    zipped.write_bytes(gzip.compress(saved.read_bytes()))
    assert ranking.load_measured(zipped) == apps
    assert ranking.main([str(saved), "--models", "analytical:1,analytical"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("pick/fastest"):].splitlines()[1:]
    assert [line.split()[0] for line in table] == ["analytical:1", "analytical"]
    for line in table:
        pairwise, regret = float(line.split()[1]), float(line.split()[-1].rstrip("x"))
        assert 0 <= pairwise <= 1 and regret >= 1

    # the kept schedules measured again, twice: per app a median ratio with its range, and the geomeans
    remeasure = _benchmark("remeasure_apps")
    again = tmp_path / "remeasured.jsonl"
    assert remeasure.main([str(saved), "--repeats", "2", "--save", str(again)]) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(line for line in out if line.startswith("app "))
    assert header.split()[1:] == ["analytical:1", "greedy=analytical:1"]  # over the last column, analytical
    for r in rows:
        line = next(x for x in out if x.startswith(r["app"] + " "))
        shared = next(s for s in r["schedules"] if "analytical" in s["columns"])["columns"]
        cell = line[len(r["app"]):].strip()
        assert cell.startswith("same schedule") == ("analytical:1" in shared), line
    assert [x.split("  ")[0] for x in out if x.startswith("geomean")] == [
        "geomean of medians", "geomean, repeat 1", "geomean, repeat 2"]
    kept = [json.loads(line) for line in again.read_text().splitlines()]
    assert [k["app"] for k in kept] == ["blur", "unsharp"] and all(k["repeats"] == 2 for k in kept)
    for k, r in zip(kept, rows):
        # the model columns' schedules only: naive and expert are not measured again
        assert [s["columns"] for s in k["schedules"]] == [
            s["columns"] for s in r["schedules"] if set(s["columns"]) - {"naive", "expert"}]
        for s in k["schedules"]:
            assert len(s["runtimes_s"]) == 2 and all(t > 0 for t in s["runtimes_s"])
            assert s["runtime_s"] == pytest.approx(sum(s["runtimes_s"]) / 2)  # the median of two
    assert [a.app for a in ranking.load_measured(again)] == ["blur", "unsharp"]  # app_ranking reads it too
    for argv, message in (([str(saved), "--columns", "analytical:1,nope"], "nope is not one"),
                          ([str(saved), "--apps", "blur,harris"], "harris not in"),
                          ([str(saved), "--repeats", "0"], "--repeats must be at least 1")):
        with pytest.raises(SystemExit):
            remeasure.main(argv)
        assert message in capsys.readouterr().err, argv


def test_a_file_it_cannot_read_is_one_line_naming_it(tmp_path, capsys):
    with pytest.raises(SystemExit):  # learned_vs_analytical refuses a --save it cannot write before measuring
        _benchmark("learned_vs_analytical").main(["--apps", "blur", "--save", str(tmp_path / "no" / "such.jsonl")])
    assert "--save: cannot write" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # and an ALGORITHM=MODEL entry with no such strategy, naming the ones there are
        _benchmark("learned_vs_analytical").main(["--apps", "blur", "--models", "portfolo=builtin,analytical"])
    assert "--models: 'portfolo=builtin': write ALGORITHM=MODEL with ALGORITHM one of " in capsys.readouterr().err
    ranking = _benchmark("app_ranking")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"app": "blur"}\n')
    with pytest.raises(SystemExit, match=r"bad.jsonl:1 is not a line learned_vs_analytical.py --save writes"):
        ranking.load_measured(bad)
    with pytest.raises(SystemExit, match="cannot read .*missing.jsonl.*--save"):
        ranking.load_measured(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(SystemExit, match="holds no apps"):
        ranking.load_measured(empty)
