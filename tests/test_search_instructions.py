"""benchmarks/search_instructions.py: its workers, its reading of valgrind's count, its error without valgrind, and
(SLOW=1, with valgrind) a real count."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from benchmarks import search_instructions as si

STDERR = """==4242== Cachegrind, a cache and branch-prediction profiler
==4242== Collected : 11412611684
==4242==
==4242== I   refs:      11,412,611,684
"""


def test_the_count_is_read_from_cachegrinds_summary():
    assert si.instructions_executed(STDERR) == 11_412_611_684
    assert si.instructions_executed("==1== valgrind: cannot start\n") is None


def _result(capsys) -> dict:
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("RESULT ")]
    assert len(lines) == 1
    return json.loads(lines[0][7:])


def test_the_search_worker_reports_its_states_and_the_setup_worker_none(capsys):
    args = ["--apps", "blur", "--random", "0", "--algorithm", "greedy"]
    assert si.main(["--worker", "setup", *args]) == 0
    assert _result(capsys)["states"] == {}
    assert si.main(["--worker", "search", *args]) == 0
    states = _result(capsys)["states"]
    assert list(states) == ["greedy"] and states["greedy"] > 0


def test_without_valgrind_it_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(si.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit) as e:
        si.main(["--apps", "blur"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "valgrind not found" in err and "apt install valgrind" in err


@pytest.mark.skipif(not os.environ.get("SLOW") or shutil.which("valgrind") is None,
                    reason="set SLOW=1 (and have valgrind) to count a real search, ~1 minute")
def test_a_real_count_is_the_searchs_own_and_per_state(capsys):
    # harris, not blur: the setup's warm-up searches blur, which would leave its search next to nothing to do
    assert si.main(["--apps", "harris", "--random", "0", "--algorithms", "greedy"]) == 0
    out = capsys.readouterr().out
    row = next(x for x in out.splitlines() if x.startswith("greedy") and "this tree" in x).split()
    states, instructions = int(row[3]), int(row[4].replace(",", ""))
    # a search's own work (~1-2 M instructions a state), not the imports' (~9 G in all)
    assert states > 50 and 100_000 < instructions / states < 20_000_000
