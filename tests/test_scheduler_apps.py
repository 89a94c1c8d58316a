"""The scheduler on the app suite: every app's beam schedule is correct, and the analytical model prefers
the expert schedule to the naive one and its beam schedule to both naive and random-weight greedy, by
predicted cost (deterministic; the measured comparison, on a noisy machine, is benchmarks/search_quality.py).

Separate from test_scheduler.py so that pytest-xdist runs the two on different workers. The four apps of
30-40 Funcs take 1-2.5 minutes each to compile from a cold cache: by default their schedules are validated
(the backends' own Plan checks) and compiled only with SLOW=1."""

from __future__ import annotations

import os

import pytest

from generator.apps import APPS, get_app
from scheduler import autoschedule

from .test_scheduler import FAST, assert_correct


@pytest.mark.parametrize("app", sorted(APPS))
def test_beam_schedules_of_every_app_are_correct(app):
    p = get_app(app).build("small")
    big = len(p.dag.nodes) > 16  # local_laplacian, lens_blur, camera_pipe, stencil_chain, interpolate
    s = autoschedule(p, model="analytical", algorithm="beam", **({"beam_size": 2, "passes": 2} if big else FAST))
    assert s.stats.states_evaluated > 0 and s.predicted_cost > 0
    if len(p.dag.nodes) > 30 and os.environ.get("SLOW") != "1":
        s.loopnest.validate(p)
        return
    assert_correct(p, s.loopnest)


# -- schedule quality (predicted; measured in benchmarks/search_quality.py) ----------------------------


QUALITY_APPS = ("unsharp", "harris", "blur", "iir_blur")


def predicted_cost(p, loopnest, model) -> float:
    """The model's cost of a complete LoopNest, from a fresh featurization (as the search scores states)."""
    from featurize import featurize

    f = featurize(p, loopnest, "host")
    return float(model.predict(f.pipeline, f.schedule[None]).total[0])


@pytest.mark.parametrize("app", QUALITY_APPS)
def test_the_analytical_model_prefers_expert_and_searched_schedules_to_naive(app):
    """At full size, per app: expert < naive, and beam (analytical) < naive and < greedy with random weights
    (adams2019's first-round sampler), all by the analytical model's predicted cost, no measuring."""
    from ir.builder import naive_schedule
    from ir.target import get_target
    from scheduler.cost import AnalyticalModel

    model = AnalyticalModel(get_target("host"))
    spec = get_app(app)
    p = spec.build("full")
    naive = predicted_cost(p, naive_schedule(p), model)
    beam = autoschedule(p, model="analytical", algorithm="beam", beam_size=8, passes=2)
    greedy = autoschedule(p, model="random:0", algorithm="greedy")
    assert predicted_cost(p, beam.loopnest, model) == pytest.approx(beam.predicted_cost, rel=1e-3)  # float32 features
    assert beam.predicted_cost < naive
    assert beam.predicted_cost < predicted_cost(p, greedy.loopnest, model)
    assert predicted_cost(p, spec.schedule(p, get_target("host")), model) < naive  # each has an expert one
