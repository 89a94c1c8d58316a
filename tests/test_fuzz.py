"""The fuzzer's minimizer: given a failing pair, it strips every decision that is not needed to fail."""

from ir.builder import FuncDecision, StageSpec
from ir.plan import Plan
from ir.sampling import random_schedule

from . import fuzz
from .fuzz_pipelines import random_test_pipeline


def vectorized_funcs(p, ln):
    plan = Plan(p.dag, ln)
    return {f for f, fp in plan.funcs.items() if not fp.inlined and fp.chains[0].levels[-1].node.vectorized_loop >= 0}


def test_minimizer_keeps_only_what_fails(monkeypatch):
    # stand-in for a backend bug that bites any schedule vectorizing some Func
    def buggy_run_pair(p, ln, seed, backend="numba"):
        return fuzz.Outcome("wrong_output" if vectorized_funcs(p, ln) else "ok", "injected")

    monkeypatch.setattr(fuzz, "run_pair", buggy_run_pair)
    for seed in range(200):
        p = random_test_pipeline(seed)
        ln, decisions = random_schedule(p, seed)
        if len(vectorized_funcs(p, ln)) >= 2 and len(decisions) >= 4:
            break
    else:  # pragma: no cover
        raise AssertionError("no suitable pair in 200 seeds")
    small, ln, best = fuzz.minimize(seed, decisions, "wrong_output")
    assert len(vectorized_funcs(small, ln)) == 1
    plain = FuncDecision("root", specs={0: StageSpec()})
    others = [d for d in best.values() if d.specs.get(0) is None or not d.specs[0].vectorize]
    assert all(d == plain or d.kind == "inline" for d in others)
    big = max(max(s) for s in random_test_pipeline(seed).output_sizes.values())
    assert max(max(s) for s in small.output_sizes.values()) < big  # sizes shrunk too
    text = fuzz.report(seed, seed, fuzz.Outcome("wrong_output", "injected"), decisions)
    assert "minimized pipeline" in text and "reproduce: python -m tests.fuzz" in text
