"""evaluate.merged and `search_quality.py merge`: rows of several runs as one table, compared against beam from
their speedups, logged as one MLflow run (real SQLite store) with its CSV and charts; one-line errors."""

from __future__ import annotations

import csv
import math

import pytest
from mlflow import MlflowClient

from benchmarks.search_quality import against_beam, main
from evaluate.config import EvaluateError
from evaluate.merged import MergeConfig, log_merged, merged_geomeans, read_rows, table

# two runs' rows: each app's speedups are over its own run's naive row
RUN_A = [("blur", "naive", "ok", 1.0), ("blur", "beam", "ok", 4.0), ("blur", "mcts", "ok", 8.0),
         ("blur", "expert", "ok", 2.0), ("harris", "naive", "ok", 1.0), ("harris", "beam", "ok", 9.0),
         ("harris", "mcts", "ok", 3.0), ("harris", "expert", "ok", 6.0)]
RUN_B = [("bgu", "naive", "ok", 1.0), ("bgu", "beam", "ok", 2.0), ("bgu", "mcts", "wrong_output", math.nan),
         ("bgu", "expert", "ok", 4.0)]


def write(path, rows, extra=()):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["app", "method", "status", "speedup", "runtime_s", *extra])
        w.writerows([(a, m, s, "" if math.isnan(x) else x, 0.5) for a, m, s, x in rows])
    return str(path)


def test_rows_of_two_runs_make_one_table_and_geomeans(tmp_path):
    rows = read_rows([write(tmp_path / "a.csv", RUN_A), write(tmp_path / "b.csv", RUN_B)])
    assert [r.app for r in rows] == [r[0] for r in RUN_A + RUN_B] and rows[-1].source.endswith("b.csv")
    g = {x.method: x for x in merged_geomeans(rows)}
    assert "naive" not in g and g["beam"].apps == 3 and g["beam"].speedup == pytest.approx((4 * 9 * 2) ** (1 / 3))
    assert g["mcts"].apps == 2 and g["mcts"].speedup == pytest.approx((8 * 3) ** 0.5)  # bgu's mcts failed
    lines = table(rows)
    assert lines[0].split() == ["app", "naive", "beam", "mcts", "expert"]
    assert lines[3].split() == ["bgu", "1.00", "2.00", "wrong_outp", "4.00"]
    assert lines[-2].split()[:3] == ["geomean", "1.00", f"{g['beam'].speedup:.2f}"]
    # against beam from speedups: runtime(beam)/runtime(mcts) = speedup(mcts)/speedup(beam)
    mcts = next(line for line in against_beam(rows) if line.startswith("mcts"))
    assert mcts.split()[1:4] == ["2.00", "0.33", "-"] and mcts.split()[-1] == "1/0/1"


def test_an_app_whose_naive_row_failed_counts_nowhere(tmp_path):
    """Its other rows have no speedup: the table says so (not 'nan') and the naive column counts it out."""
    failed = [("lens_blur", "naive", "timeout", math.nan), ("lens_blur", "beam", "ok", math.nan),
              ("lens_blur", "expert", "ok", math.nan)]
    rows = read_rows([write(tmp_path / "a.csv", RUN_A), write(tmp_path / "c.csv", failed)])
    lines = table(rows)
    assert lines[3].split() == ["lens_blur", "timeout", "no", "naive", "-", "no", "naive"]
    assert lines[-1].split() == ["apps", "2", "2", "2", "2"]
    assert "nan" not in "\n".join(lines)


def test_the_merged_run_is_logged_with_its_rows_and_charts(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    rows = read_rows([write(tmp_path / "a.csv", RUN_A), write(tmp_path / "b.csv", RUN_B)])
    run_id = log_merged(MergeConfig(files=["a.csv", "b.csv"], tracking_uri=uri), rows)
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    assert run.data.metrics["geomean_speedup/beam"] == pytest.approx((4 * 9 * 2) ** (1 / 3))
    assert run.data.params["apps_measured"] == "blur,harris,bgu"
    names = {a.path for a in client.list_artifacts(run_id)} | {
        a.path for a in client.list_artifacts(run_id, "plots")}
    assert "merged.csv" in names and {"plots/speedups.png", "plots/geomeans.png"} <= names
    (tmp_path / "dl").mkdir()
    merged = client.download_artifacts(run_id, "merged.csv", str(tmp_path / "dl"))
    assert len(read_rows([merged])) == len(rows)  # the merged file is itself mergeable


def test_the_command_prints_the_table_and_the_run(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    a, b = write(tmp_path / "a.csv", RUN_A), write(tmp_path / "b.csv", RUN_B)
    assert main(["merge", f"files={a},{b}", f"tracking_uri={uri}"]) == 0
    out = capsys.readouterr().out
    assert "runtime(beam) / runtime(strategy)" in out and "MLflow run " in out and "wrong_outp" in out


def test_bad_files_are_one_line_errors(tmp_path):
    a = write(tmp_path / "a.csv", RUN_A)
    cases = [([], "give files="), ([str(tmp_path / "none.csv")], "no file"),
             ([a, write(tmp_path / "again.csv", RUN_A[:2])], "app blur is in both")]
    (tmp_path / "cols.csv").write_text("app,method,status\nblur,naive,ok\n")
    cases.append(([str(tmp_path / "cols.csv")], "has no column speedup"))
    for files, match in cases:
        with pytest.raises(EvaluateError, match=match) as e:
            read_rows(files)
        assert "\n" not in str(e.value)
