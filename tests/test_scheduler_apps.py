"""The scheduler on the app suite: every app's beam schedule is correct, and beam search with the
analytical model beats the naive schedule and random-weight greedy, measured (geometric mean).

Separate from test_scheduler.py so that pytest-xdist runs the two on different workers. The four apps of
30-40 Funcs take 1-2.5 minutes each to compile from a cold cache: by default their schedules are validated
(the backends' own Plan checks) and compiled only with SLOW=1."""

from __future__ import annotations

import math
import os

import numpy as np
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


# -- schedule quality (measured) -------------------------------------------------------------------


QUALITY_APPS = ("unsharp", "harris", "blur", "iir_blur")


def test_beam_with_the_analytical_model_beats_naive_and_random_greedy():
    """Geometric mean over apps at full size, measured: analytical beam vs the naive schedule and vs greedy
    with random weights (adams2019's first-round sampler)."""
    from ir.builder import naive_schedule
    from scheduler.modes import measure_loopnest, reference

    vs_naive, vs_random = [], []
    for app in QUALITY_APPS:
        p = get_app(app).build("full")
        inputs, expected = reference(p)
        beam = autoschedule(p, model="analytical", algorithm="beam", beam_size=8, passes=2)
        greedy = autoschedule(p, model="random:0", algorithm="greedy")
        t_beam, t_greedy, t_naive = (measure_loopnest(p, ln, "host", inputs, expected)
                                     for ln in (beam.loopnest, greedy.loopnest, naive_schedule(p)))
        print(f"{app}: beam {t_beam * 1e3:.3f} ms, random greedy {t_greedy * 1e3:.3f} ms, naive {t_naive * 1e3:.3f} ms")
        assert math.isfinite(t_beam)
        vs_naive.append(t_naive / t_beam)
        vs_random.append(t_greedy / t_beam)
    g_naive = float(np.exp(np.mean(np.log(vs_naive))))
    g_random = float(np.exp(np.mean(np.log(vs_random))))
    print(f"geomean speedup: vs naive {g_naive:.2f}x, vs random greedy {g_random:.2f}x")
    assert g_naive > 1.0 and g_random > 1.0


