"""The portfolio strategy: beam under the model and under guide models, the model judging every search's ends."""

from __future__ import annotations

import pytest

from generator.apps import get_app
from ir.target import get_target
from scheduler import SearchError, autoschedule
from scheduler.cost import load_model
from scheduler.search import BeamSearch, SearchConfig

HOST = get_target("host")


def test_the_model_keeps_the_cheapest_end_of_its_own_search_and_the_guides():
    """Random weights steer one beam, the analytical model another; on unsharp the random network predicts one of
    the analytical search's ends cheaper than anything its own beam found, and the portfolio returns it."""
    p = get_app("unsharp").build("small")
    model, guide = load_model("random:9", HOST), load_model("analytical", HOST)
    config = SearchConfig(beam_size=4, passes=2)
    own, led = BeamSearch(p, HOST, model, config).run(), BeamSearch(p, HOST, guide, config).run()
    judged = model.score(p.dag, [s.state for s in led.finals])
    s = autoschedule(p, model=model, algorithm="portfolio", beam_size=4, passes=2, guide_margin=1.0)
    assert s.predicted_cost == min(own.best.cost, *judged) < own.best.cost
    best = min(zip(judged, led.finals), key=lambda t: t[0])[1]
    assert s.loopnest.fingerprint == best.tree.fingerprint
    assert s.predicted_cost == pytest.approx(float(model.score(p.dag, [best.state])[0]), rel=1e-6)
    assert s.stats.algorithm == "portfolio" and s.stats.model == model.name
    assert s.stats.states_evaluated == own.stats.states_evaluated + led.stats.states_evaluated


def test_a_guide_end_wins_only_when_predicted_guide_margin_times_cheaper():
    p = get_app("unsharp").build("small")
    model, guide = load_model("random:9", HOST), load_model("analytical", HOST)
    config = SearchConfig(beam_size=4, passes=2)
    own, led = BeamSearch(p, HOST, model, config).run(), BeamSearch(p, HOST, guide, config).run()
    cheapest = float(min(model.score(p.dag, [s.state for s in led.finals])))
    ratio = own.best.cost / cheapest  # how many times cheaper the model predicts the guide's best end
    assert ratio > 1.0
    for margin, wins in ((1.0, True), (ratio * 0.999, True), (ratio * 1.001, False), (1e9, False)):
        s = autoschedule(p, model=model, algorithm="portfolio", beam_size=4, passes=2, guide_margin=margin)
        expected = cheapest if wins else own.best.cost
        assert s.predicted_cost == pytest.approx(expected, rel=1e-9), margin
        if not wins:
            assert s.loopnest.fingerprint == own.best.tree.fingerprint
    default = autoschedule(p, model=model, algorithm="portfolio", beam_size=4, passes=2)
    assert default.predicted_cost == pytest.approx(cheapest if ratio > 1.05 else own.best.cost, rel=1e-9)
    for bad in (0.99, float("nan")):
        with pytest.raises(SearchError, match=r"guide_margin .* must be >= 1.0 .*got"):
            autoschedule(p, model=model, algorithm="portfolio", beam_size=4, passes=2, guide_margin=bad)


def test_a_guide_that_is_the_model_adds_nothing_and_no_guide_is_an_error():
    p = get_app("harris").build("small")
    beam = autoschedule(p, model="analytical", algorithm="beam", beam_size=2, passes=2)
    same = autoschedule(p, model="analytical", algorithm="portfolio", beam_size=2, passes=2)
    assert same.loopnest.fingerprint == beam.loopnest.fingerprint
    assert same.stats.states_evaluated == beam.stats.states_evaluated
    with pytest.raises(SearchError, match=r"portfolio needs at least one guide cost model \(guides=\['analytical'\]\)"):
        autoschedule(p, model="analytical", algorithm="portfolio", guides=())


def test_portfolio_greedy_keeps_the_cheaper_of_the_two_greedy_schedules():
    p = get_app("unsharp").build("small")
    model = load_model("random:3", HOST)
    own = BeamSearch(p, HOST, model, SearchConfig(beam_size=1, passes=1)).run()
    led = BeamSearch(p, HOST, load_model("analytical", HOST), SearchConfig(beam_size=1, passes=1)).run()
    s = autoschedule(p, model=model, algorithm="portfolio-greedy", guide_margin=1.0)
    assert s.predicted_cost == min(own.best.cost, *model.score(p.dag, [x.state for x in led.finals]))
    assert s.stats.algorithm == "portfolio-greedy"
    assert s.stats.states_evaluated == own.stats.states_evaluated + led.stats.states_evaluated
