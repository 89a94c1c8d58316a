"""benchmarks/halide_compile_tail.py: the slowest Halide compiles of a dataset, and the same schedules without their
innermost unrolling (a legal LoopNest that computes the same outputs), compiled for real."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tail():
    spec = importlib.util.spec_from_file_location("halide_compile_tail", ROOT / "benchmarks" / "halide_compile_tail.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["halide_compile_tail"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_unrolling_off_keeps_the_simd_loops_and_the_outputs():
    import backends
    import ir
    from generator.apps import get_app
    from ir.loopnest import LoopNest
    from ir.plan import Plan
    from ir.target import get_target

    tail = _tail()
    app = get_app("conv_layer")
    p = app.build("small")
    expert = app.schedule(p, get_target("host")).dumps()
    assert tail.unrolled_stages(expert), "conv_layer's expert schedule unrolls its register tiles"
    off = tail.unrolling_off(expert)
    assert tail.unrolled_stages(off) == []

    def simd(js):
        out, stack = [], [json.loads(js)["root"]]
        while stack:
            n = stack.pop()
            if n.get("innermost"):
                out.append((n["func"], n["stage"], n["size"], n.get("vectorized_loop")))
            stack.extend(n.get("children", []))
        return sorted(out, key=str)

    assert simd(off) == simd(expert)  # the same innermost sizes and SIMD loops, only the unrolled copies gone
    ln = LoopNest.loads(off)
    Plan(p.dag, ln, get_target("host"))  # legal
    inputs = p.random_inputs(0)
    expected = ir.interpret(p, inputs)
    got = backends.compile(p, ln, backend="llvm")(inputs)
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-5)


def test_the_slowest_schedules_come_one_per_pipeline_slowest_first():
    tail = _tail()
    picks = tail.slowest(str(ROOT / "datasets" / "random-host-halide-conv"), 3)
    assert len(picks) == 3
    assert [s.recorded_compile_s for s in picks] == sorted((s.recorded_compile_s for s in picks), reverse=True)
    assert len({s.sample_id.split("-")[0] for s in picks}) == 3
    assert all(s.dataset == "random-host-halide-conv" for s in picks)


def test_a_directory_without_a_dataset_is_one_line_naming_it(tmp_path):
    with pytest.raises(SystemExit, match=rf"{tmp_path} holds no dataset"):
        _tail().slowest(str(tmp_path), 3)


def test_the_narrower_variant_turns_off_only_levels_that_inline():
    tail = _tail()
    recorded = json.dumps({"format": 2, "root": {"store_at": ["out"], "children": [
        {"func": "a", "stage": 0, "innermost": True, "kind": "unrolled", "size": [16, 4], "vectorized_loop": 0,
         "inlined": [["b", 3]]},
        {"func": "out", "stage": 0, "innermost": True, "kind": "unrolled", "size": [16, 2], "vectorized_loop": 0}]}})
    assert tail.unrolled_stages(recorded) == ["a.0 [16, 4] (inlining b x3)", "out.0 [16, 2]"]
    assert tail.unrolled_stages(tail.VARIANTS["halide-no-unroll-inlining"].schedule(recorded)) == ["out.0 [16, 2]"]
    assert tail.unrolled_stages(tail.VARIANTS["halide-no-unroll"].schedule(recorded)) == []
    assert tail.VARIANTS["halide"].schedule(recorded) == recorded


def test_an_unknown_variant_is_one_line_naming_the_variants(capsys):
    with pytest.raises(SystemExit):
        _tail().main(["--variants", "halide,fast"])
    err = capsys.readouterr().err
    assert "unknown variant 'fast'; variants: halide, halide-no-unroll, halide-no-unroll-inlining, llvm" in err
