"""benchmarks/profile_search.py: py-spy's native stacks read by function, and a real profile of a search."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import profile_search
from benchmarks.profile_search import aggregate, frames, report

ROOT = Path(__file__).resolve().parent.parent

# three distinct stacks in py-spy's raw format, as a compiled search records them: Cython's wrapper and body of a
# function are two frames of one name, a compiled module-level function's wrapper is named <module>_<function>, C
# headers and libc sit between them, and the warm-up's stacks are outside a search pass
RAW = """\
0x7f (libc.so.6);<module> (run.py:3);autoschedule (scheduler/api.py:113);_pass (search.c:10);_pass (search.c:20);\
realize (space.c:5);Py_DECREF (object.h:1);realize (space.c:6);schedule_features (schedule.c:7);\
schedule_schedule_features (schedule.c:8);stage (schedule.c:9);stage (schedule.c:10) 6
<module> (run.py:3);autoschedule (scheduler/api.py:113);_pass (search.c:10);realize (space.c:5) 3
<module> (run.py:3);autoschedule (scheduler/api.py:113);_pass (search.c:10);timed_score (scheduler/cost/__init__.py:1);\
predict (scheduler/cost/analytical.py:40) 1
<module> (run.py:3);warm_up (benchmarks/search_speed.py:225);load_model (scheduler/cost/registry.py:9) 5

"""


def test_a_stack_is_module_functions_with_compiled_wrappers_and_c_headers_folded():
    stack = RAW.splitlines()[0].rpartition(" ")[0]
    assert frames(stack) == ["run.<module>", "api.autoschedule", "search._pass", "space.realize",
                             "schedule.schedule_features", "schedule.stage"]


def test_shares_are_of_the_samples_inside_a_search_pass():
    prof = aggregate(RAW.splitlines())
    assert prof.samples == 10  # the warm-up's 5 are not search time
    assert prof.inclusive["search._pass"] == 10 and prof.inclusive["space.realize"] == 9
    assert prof.inclusive["schedule.stage"] == 6 and prof.own["schedule.stage"] == 6
    assert prof.own["space.realize"] == 3 and prof.own["analytical.predict"] == 1
    assert "run.<module>" not in prof.inclusive and "registry.load_model" not in prof.inclusive
    assert prof.calls["search._pass"] == {"space.realize": 9, "__init__.timed_score": 1}
    assert prof.calls["space.realize"] == {"schedule.schedule_features": 6}
    text = report(prof, top=3, expand=["space.realize", "api.autoschedule"])
    assert "10 samples inside search._pass" in text
    assert "    90.0%   30.0%  space.realize" in text
    assert "space.realize: 90.0% inclusive, of which\n    60.0%  schedule.schedule_features" in text
    assert "api.autoschedule: 0.0% inclusive, of which\n  (no samples)" in text  # outside the pass: not counted


def test_bad_options_get_one_line_naming_what_to_give(capsys):
    with pytest.raises(SystemExit) as e:
        profile_search.main(["--algorithms", "sideways"])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        "error: unknown algorithm 'sideways'; choose from greedy, beam, hierarchical")
    with pytest.raises(SystemExit):
        profile_search.main(["--apps", "nosuchapp"])
    assert "--apps" in capsys.readouterr().err.splitlines()[-1]


def test_a_real_search_profile_sees_inside_the_compiled_modules(tmp_path):
    """py-spy records a beam search of harris (~1-2 s: a ~0.1 s greedy one gave no sample in a pass under a loaded
    CI run); its samples land in the search's own functions. Skipped where py-spy is missing or may not read the
    child's memory (a container without ptrace)."""
    if profile_search.py_spy() is None:
        pytest.skip("py-spy is not installed (the dev extra has it)")
    raw = tmp_path / "stacks.txt"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "profile_search.py"), "--apps", "harris",
                        "--random", "0", "--algorithms", "beam", "--beam-size", "8", "--passes", "2", "--rate", "100", "--top", "15", "--raw", str(raw),
                        "--expand", "search._children"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and ("ermission" in r.stderr or "ptrace" in r.stderr):
        pytest.skip(f"py-spy may not sample here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr
    assert "harris beam:" in r.stdout
    prof = aggregate(raw.read_text().splitlines())
    assert prof.samples > 0 and prof.inclusive["search._pass"] == prof.samples
    assert f"\n{prof.samples} samples inside search._pass\n" in r.stdout
    # every sample of a pass is in one of its steps' parts, which are the search's own functions
    assert prof.inclusive["search._children"] + prof.inclusive["__init__.timed_score"] > 0.8 * prof.samples
    assert prof.inclusive["space.realize"] > 0
    assert "search._children: " in r.stdout
