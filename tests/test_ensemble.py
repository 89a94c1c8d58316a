"""The ensemble cost model (scheduler.cost.ensemble): the geometric mean of its members' totals, stages that add up to
it, member specs loaded by name, one search through it, and one-line errors for what cannot be combined."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from featurize.schema import SCHEDULE_FEATURES
from ir.target import get_target
from scheduler.cost import CostModelError, EnsembleModel, LearnedModel, load_model
from train.model import ModelConfig, build_model

HOST = get_target("host")


def features(seed: int, stages: int = 3, schedules: int = 8) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 20, (stages, 40, 7)).astype(np.float32),
            np.exp(rng.uniform(0, 12, (schedules, stages, len(SCHEDULE_FEATURES)))).astype(np.float32))


def learned(seed: int, backend: str | None = "halide") -> LearnedModel:
    return LearnedModel(build_model(ModelConfig(kind="residual", prior=7), seed=seed), f"net{seed}", "host", backend)


def test_the_total_is_the_members_geometric_mean_and_the_stages_add_up_to_it():
    members = [learned(1), learned(2), learned(3)]
    ens = EnsembleModel(members)
    pf, sf = features(0)
    got = ens.predict(pf, sf)
    each = [m.predict(pf, sf) for m in members]
    want = np.exp(np.mean([np.log(c.total) for c in each], axis=0))
    np.testing.assert_allclose(got.total, want, rtol=1e-12)
    np.testing.assert_allclose(got.stages.sum(-1), got.total, rtol=1e-12)
    assert (got.stages >= 0).all()
    # a member twice changes nothing; the mean lies between the members
    np.testing.assert_allclose(EnsembleModel([members[0], members[0]]).predict(pf, sf).total, each[0].total,
                               rtol=1e-12)
    lo, hi = np.min([c.total for c in each], axis=0), np.max([c.total for c in each], axis=0)
    assert ((lo <= got.total * (1 + 1e-12)) & (got.total <= hi * (1 + 1e-12))).all()
    assert ens.target == "host" and ens.backend == "halide" and ens.name == "ensemble:net1+net2+net3"


def test_members_load_by_spec_and_a_search_runs_through_them():
    from generator.apps import get_app
    from scheduler import autoschedule

    ens = load_model("ensemble:builtin+analytical", HOST)
    assert [m.name.split(" ")[0] for m in ens.members] == ["builtin:host-halide", "analytical"]
    assert ens.backend == "halide"  # the analytical model learned no backend: the built-in model's
    p = get_app("blur").build("small")
    s = autoschedule(p, model=ens, algorithm="beam", beam_size=2, passes=1)
    assert s.stats.model == ens.name and s.loopnest is not None


def test_what_cannot_be_combined_is_a_one_line_error():
    for spec in ("ensemble:analytical", "ensemble:", "ensemble:+analytical"):
        with pytest.raises(CostModelError, match=r"^write ensemble:<model>\+<model>"):
            load_model(spec, HOST)
    with pytest.raises(CostModelError, match="unknown cost model 'nosuch'"):
        load_model("ensemble:analytical+nosuch", HOST)
    with pytest.raises(CostModelError, match=r"^the ensemble's members learned different backends \(halide, numba\)"):
        EnsembleModel([learned(1), learned(2, backend="numba")])
    with pytest.raises(CostModelError, match="needs two or more"):
        EnsembleModel([learned(1)])
