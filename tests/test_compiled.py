"""The hot modules' Cython builds (ir/hot.py, ir/compiled.py): used only for the source they were built from, and a
search under them does exactly what it does under pure Python."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ir.compiled import build
from ir.hot import HOT_MODULES, build_path, declarations_path, module_source

ROOT = Path(__file__).resolve().parent.parent


def _python(code: str, path: Path, **env: str) -> str:
    r = subprocess.run([sys.executable, "-c", code], cwd=path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(path), "SCHEDLAB_COMPILED": "1", **env})
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


def test_a_build_is_used_only_for_the_source_it_was_built_from(tmp_path):
    src, builds = tmp_path / "src", tmp_path / "compiled"
    env = {"SCHEDLAB_COMPILED_DIR": str(builds)}
    shutil.copytree(ROOT / "ir", src / "ir", ignore=shutil.ignore_patterns("__pycache__"))
    where = "import ir.relation, ir.hot; print(ir.relation.__file__); print(ir.hot.compiled_modules())"
    assert _python(where, src, **env).splitlines() == [str(src / "ir" / "relation.py"), "()"]  # nothing built yet

    assert _python("from ir.compiled import build; print(build(['ir.relation'], quiet=True))", src, **env) == \
        "['ir.relation']"
    built = list(builds.glob("ir.relation-*"))
    assert len(built) == 1
    file, compiled = _python(where, src, **env).splitlines()
    assert file == str(built[0]) and compiled == "('ir.relation',)"
    assert _python(where, src, SCHEDLAB_COMPILED="0", **env).splitlines()[0] == str(src / "ir" / "relation.py")

    # an edit not rebuilt: the source itself runs, never the build of the version before it
    rel = src / "ir" / "relation.py"
    rel.write_text(rel.read_text() + "\nEDITED = True\n")
    file, compiled = _python(where + "; print(ir.relation.EDITED)", src, **env).splitlines()[:2]
    assert file == str(rel) and compiled == "()"
    status = _python("from ir.compiled import status; print([s.state for s in status() if s.module == "
                     "'ir.relation'][0])", src, **env)
    assert status == "stale"


def test_a_build_that_cimports_another_runs_only_beside_that_ones_build(tmp_path):
    """ir.plan's declarations cimport ir.dag's and ir.loopnest's extension types and ir.symbolic's C functions: its
    build reads FunctionDAGs and LoopNests as C structs and calls static_extent in C, so it is imported only while
    those run their own current builds too; after an edit of ir/loopnest.py both run as Python (and import) while
    ir.dag and ir.symbolic keep theirs, and an edit of any .pxd makes every build stale."""
    src, builds = tmp_path / "src", tmp_path / "compiled"
    env = {"SCHEDLAB_COMPILED_DIR": str(builds)}
    shutil.copytree(ROOT / "ir", src / "ir", ignore=shutil.ignore_patterns("__pycache__"))
    assert _python("import ir.hot; print(ir.hot.typed_imports('ir.plan'))", src, **env) == \
        "('ir.dag', 'ir.loopnest', 'ir.symbolic')"
    # with every hot module's declarations beside them the copy's sources are this tree's, so this tree's builds are
    # theirs (a build is named by its source's digest): seeded from them, not compiled again (compiling into an empty
    # directory is the test above's)
    for m in HOT_MODULES:
        pxd = declarations_path(m)
        if pxd.is_file() and not m.startswith("ir."):
            (src / pxd.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(pxd, src / pxd.relative_to(ROOT))
    four = ["ir.dag", "ir.loopnest", "ir.symbolic", "ir.plan"]
    build(four, quiet=True)  # what make test does first; nothing when they are current
    builds.mkdir()
    for m in four:
        shutil.copy2(build_path(m, module_source(m)), builds)
    assert _python(f"from ir.compiled import build; print(build({four}, quiet=True))", src, **env) == "[]"
    where = ("import ir.plan, ir.hot; from ir.compiled import status; print(sorted(ir.hot.compiled_modules())); "
             "print({s.module: s.state for s in status()}['ir.plan'])")
    assert _python(where, src, **env).splitlines() == ["['ir.dag', 'ir.loopnest', 'ir.plan', 'ir.symbolic']",
                                                       "compiled"]

    loopnest = src / "ir" / "loopnest.py"
    loopnest.write_text(loopnest.read_text() + "\nEDITED = True\n")
    assert _python(where, src, **env).splitlines() == ["['ir.dag', 'ir.symbolic']", "held"]  # waits for ir.loopnest

    pxd = src / "ir" / "plan.pxd"
    pxd.write_text(pxd.read_text() + "\n# edited\n")
    assert _python(where, src, **env).splitlines() == ["[]", "stale"]


def test_a_module_that_is_not_hot_is_refused_by_name():
    with pytest.raises(ValueError, match="ir.interpret is not a hot module; choose from ir.symbolic"):
        build(["ir.interpret"])


def test_bad_commands_get_one_line_naming_what_to_give(capsys):
    from benchmarks import search_speed
    from ir.compiled import main

    assert main(["rebuild"]) == 2
    assert capsys.readouterr().err == "usage: python -m ir.compiled {build|status}\n"
    with pytest.raises(SystemExit) as e:
        search_speed.main(["--before", "HEAD", "--compiled-ab"])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        "error: --before and --compiled-ab each compare two codes; give one of them")


_SEARCH = """
import json
from generator.apps import get_app
from generator.random_pipeline import generate
from ir.hot import compiled_modules, pure_modules
from scheduler import autoschedule, load_model
m = load_model("analytical", "host")
out = {}
for name in ("harris", "camera_pipe", "random0"):
    p = generate(0, max_stages=20).pipeline if name == "random0" else get_app(name).build("small")
    for alg in ("greedy", "beam"):
        s = autoschedule(p, model=m, algorithm=alg, beam_size=8, passes=2)
        out[name + " " + alg] = [s.loopnest.fingerprint, s.stats.states_evaluated, s.predicted_cost]
out["modules"] = [sorted(compiled_modules()), sorted(pure_modules())]
print(json.dumps(out))
"""


def test_searches_under_the_builds_do_what_pure_python_does(tmp_path):
    """Every hot module compiled against none: the same schedules, the same number of states, the same costs to the
    last bit (the builds keep Python's semantics: no annotation is read as a C type). The two processes get a cache
    of their own, as the data job's do: the builds still come from where this process found them."""
    build(quiet=True)  # what make test does first; only modules whose source changed since their last build
    cold = str(tmp_path / "kernels")
    pure = json.loads(_python(_SEARCH, ROOT, SCHEDLAB_COMPILED="0", SCHEDLAB_CACHE_DIR=cold))
    compiled = json.loads(_python(_SEARCH, ROOT, SCHEDLAB_CACHE_DIR=cold))
    (none, ran_pure), (ran_compiled, rest) = pure.pop("modules"), compiled.pop("modules")
    assert none == [] and rest == [] and ran_compiled == ran_pure  # each side ran every hot module it used its way
    assert {"ir.plan", "featurize.schedule", "scheduler.space", "scheduler.search"} <= set(ran_compiled)
    assert compiled == pure
