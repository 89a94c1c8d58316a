"""benchmarks/ab.py run_cold_child: the fresh process with an empty kernel cache that compile_speed.py and
halide_compile_tail.py compile in, its result, its time limit and its failures."""

from __future__ import annotations

import textwrap

from benchmarks.ab import run_cold_child

CHILD = textwrap.dedent("""
    import json, os, sys, time
    assert sys.argv[1] == "--child"
    what = sys.argv[2]
    cache = os.environ["SCHEDLAB_CACHE_DIR"]
    if what == "sleep":
        time.sleep(30)
    if what == "fail":
        print("a line before", file=sys.stderr)
        print("boom: no such schedule", file=sys.stderr)
        sys.exit(3)
    print("compiling ...")
    print(json.dumps({"first": True}))
    print(json.dumps({"what": what, "cache": cache, "numba": os.environ["NUMBA_CACHE_DIR"],
                      "empty": os.listdir(cache) == []}))
""")


def test_the_child_runs_with_an_empty_cache_of_its_own_and_its_last_json_line_is_the_result(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    a, b = run_cold_child(script, ["x"], timeout=60), run_cold_child(script, ["y"], timeout=60)
    assert a.status == b.status == "ok" and a.error == "" and a.seconds > 0
    assert a.result["what"] == "x" and b.result["what"] == "y"  # the last JSON line, not the first
    assert a.result["empty"] and a.result["cache"] == a.result["numba"]
    assert a.result["cache"] != b.result["cache"]  # each child its own directory, removed afterwards
    assert not any((tmp_path / p).exists() for p in (a.result["cache"], b.result["cache"]))


def test_a_child_past_its_time_is_a_timeout_and_a_failing_one_an_error_with_its_last_line(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    slow = run_cold_child(script, ["sleep"], timeout=1)
    assert slow.status == "timeout" and slow.result is None and 1 <= slow.seconds < 20
    failed = run_cold_child(script, ["fail"], timeout=60)
    assert failed.status == "error" and failed.result is None
    assert failed.error == "exit 3: boom: no such schedule"
