"""The job's node check (generator/job/nodes.py): what each node reports, and the one-line problems the
driver derives from reports that differ from its own. The cluster-level behaviour (a node importing a stale
copy, refused; the submitted job running everywhere) is tests/test_multinode.py."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from generator.job.nodes import PACKAGES, code_digest, compiled_summary, local_report, problems, required
from ir.compiled import build
from ir.hot import HOT_MODULES

ROOT = Path(__file__).resolve().parent.parent


def test_this_process_reports_its_code_and_the_packages_a_numba_job_needs():
    r = local_report(required("numba"))
    assert Path(r.code_root) == ROOT and r.code_digest == code_digest(ROOT)
    names = [n for n, _ in r.versions]
    assert names[:3] == ["numpy", "torch", "ray"] and {"numba", "llvmlite"} <= set(names)
    assert all(v is not None for _, v in r.versions)  # this machine has all of them
    assert "halide" in [n for n, _ in local_report(required("halide")).versions]
    assert problems(r, [r, replace(r, node_id="other", ip="10.0.0.2")]) == []


def test_the_report_says_whether_the_node_plans_with_the_hot_modules_compiled(tmp_path, monkeypatch):
    n = len(HOT_MODULES)
    build(quiet=True)  # this checkout's builds, where make test keeps them
    assert compiled_summary() == f"hot modules compiled {n}/{n}"
    assert f"; hot modules compiled {n}/{n}" in local_report(required("numba")).describe()
    monkeypatch.setenv("SCHEDLAB_COMPILED_DIR", str(tmp_path))  # a node with no builds of this code
    assert compiled_summary() == f"hot modules compiled 0/{n} (the rest pure Python: python -m ir.compiled build)"
    monkeypatch.setenv("SCHEDLAB_COMPILED", "0")
    assert compiled_summary() == "hot modules pure Python (SCHEDLAB_COMPILED=0)"


def test_a_changed_file_changes_the_digest(tmp_path):
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_digest(tmp_path)
    assert before == code_digest(ROOT)
    (tmp_path / "ir" / "expr.py").write_text((tmp_path / "ir" / "expr.py").read_text() + "\n")
    assert code_digest(tmp_path) != before


def test_each_difference_is_one_line_naming_the_node_and_the_fix():
    driver = local_report(required("numba"))
    node = replace(driver, node_id="3f2a9c1e77", ip="10.0.0.7")
    py = driver.python.split(".")
    older = replace(node, python=f"{py[0]}.{int(py[1]) - 1}.4")
    (line,) = problems(driver, [older])
    assert line.startswith("node 10.0.0.7 (3f2a9c1e) runs python") and f"python {py[0]}.{py[1]}" in line
    lacking = replace(node, versions=tuple((n, None if n == "numba" else v) for n, v in node.versions))
    (line,) = problems(driver, [lacking])
    assert "cannot import numba" in line and "Running on a cluster" in line
    stale = replace(node, code_digest="0" * 64, code_root="/opt/old")
    (line,) = problems(driver, [stale])
    assert "/opt/old" in line and "--working-dir" in line
    assert len(problems(driver, [node, older, lacking, stale])) == 3
    assert problems(driver, [replace(node, python=f"{py[0]}.{py[1]}.99")]) == []  # micro versions may differ
