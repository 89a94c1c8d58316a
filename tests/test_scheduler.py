"""The scheduler: tilings, the search space, cost models, every algorithm and mode, the API and CLI.

The central property: every schedule any algorithm returns is valid and compiles (numba) to the
interpreter's output, over the app suite and random pipelines."""

from __future__ import annotations

import itertools
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import backends
import ir
from backends import Protocol
from generator.apps import get_app
from generator.random_pipeline import generate
from ir.builder import FuncDecision, StageSpec
from ir.errors import SchedlabError
from ir.target import get_target
from scheduler import SearchError, autoschedule, tilings
from scheduler.cost import AnalyticalModel, LearnedModel, RandomModel, load_model
from scheduler.search import BeamSearch, SearchConfig

ROOT = Path(__file__).resolve().parent.parent
CHECK_ONLY = Protocol(warmup=0, min_samples=1, max_samples=1, min_seconds=0, max_seconds=0, sample_seconds=0,
                      timeout=120)
FAST = {"beam_size": 4, "passes": 2}


def assert_correct(pipeline, loopnest):  # also used by test_scheduler_apps
    """Valid, compiles, and equals the interpreter (bit-exact for integers)."""
    loopnest.validate(pipeline)
    inputs = pipeline.random_inputs(1)
    with np.errstate(all="ignore"):
        expected = ir.interpret(pipeline, inputs)
    m = backends.measure(backends.compile(pipeline, loopnest), inputs, CHECK_ONLY, expected=expected)
    assert m.status == "ok", f"{pipeline.name}: {m.status} {m.error}\n{loopnest.to_str(pipeline)}"


# -- tilings ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("extents,vd,w", [([64, 48], 0, 16), ([7, 300, 3], 1, 8), ([1000], -1, 1), ([5, 5], -1, 1)])
def test_inner_tilings(extents, vd, w):
    ts = tilings.inner_tilings(extents, vd, w)
    assert ts and len(ts) <= tilings.MAX_TILINGS and len(set(ts)) == len(ts)
    for t in ts:
        assert list(t) != extents and any(s > 1 for s in t)
        assert all(1 <= s <= e for s, e in zip(t, extents))
        if vd >= 0:
            assert t[vd] % w == 0 or t[vd] == extents[vd]


@pytest.mark.parametrize("extents,multiple,stride", [((64, 48), 16, 1), ((1, 1), 1, 1), ((1, 7, 300), 1, 2),
                                                     ((1536, 2560, 3), 8, 4), ((3,), 8, 1), ((2, 1, 5, 9), 1, 8),
                                                     ((), 1, 1)])
def test_tilings_are_counted_as_listing_them_would(extents, multiple, stride):
    """_inner_tilings picks its spacing by counting combinations (_tiling_count) rather than listing them."""
    per_dim = [tilings._sizes(e, multiple if d == 0 else 1, stride) for d, e in enumerate(extents)]
    listed = [t for t in itertools.product(*per_dim) if t != extents and any(s > 1 for s in t)]
    assert tilings._tiling_count(extents, per_dim) == len(listed)


@pytest.mark.parametrize("cores", [2, 8, 16])
def test_parallel_tilings_respect_task_counts(cores):
    ts = tilings.parallel_tilings([1536, 2560, 3], cores, 0, 16)
    assert ts
    for t in ts:
        assert cores <= t.tasks <= 16 * cores and t.idle_core_wastage <= tilings.MAX_IDLE_WASTAGE
        assert t.tasks == math.prod(-(-e // s) for e, s in zip([1536, 2560, 3], t.outer))
        assert t.outer[0] % 16 == 0 or t.outer[0] == 1536
    assert [t.idle_core_wastage for t in ts] == sorted(t.idle_core_wastage for t in ts)
    assert tilings.parallel_tilings([3, 2], 16) == []  # too small to keep 16 cores busy


def test_unroll_heuristic():
    assert tilings.unroll_extents((16, 3, 2), 0) == {1: 3, 2: 2}
    assert tilings.unroll_extents((16, 4, 4), 0) == {}  # 16 > 12
    assert tilings.unroll_extents((16, 1), 0) == {}


@pytest.mark.parametrize("extents,vd,w", [([1536, 2560, 3], 0, 16), ([64, 48], 0, 8), ([7, 5, 3], -1, 1),
                                          ([256, 256, 32], 1, 8), ([3], 0, 8)])
def test_remembered_tilings_are_fresh_lists_of_what_a_fresh_computation_gives(extents, vd, w):
    """parallel_tilings and register_tilings answer from their memos what the computation gives anew (their wrapped
    functions, uncached), as a new list each call: a caller that changes its list changes no later answer."""
    for cores in (2, 8):
        got = tilings.parallel_tilings(extents, cores, vd, w)
        assert got == list(tilings._parallel_tilings.__wrapped__(tuple(extents), cores, vd, w, tilings.MAX_PARALLEL))
        got.append(None)
        assert None not in tilings.parallel_tilings(extents, cores, vd, w)
    for dims, vectors in ((1, 1), (2, 4)):
        got = tilings.register_tilings(extents, vd, w, dims, vectors)
        fresh = tilings._register_tilings.__wrapped__(tuple(extents), vd, w, dims, vectors)
        assert got == list(fresh) and [type(t) for t in got] == [type(t) for t in fresh]
        got.clear()
        assert tilings.register_tilings(extents, vd, w, dims, vectors) == list(fresh)


# -- correctness over apps and random pipelines ------------------------------------------------


RANDOM_SEEDS = (11, 12, 13, 14, 15)


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_every_algorithm_on_random_pipelines_is_correct(seed):
    p = generate(seed, max_stages=8, output_size=(40, 24, 3)).pipeline
    seen = set()
    for algorithm, model in (("greedy", "random:1"), ("beam", "analytical"), ("hierarchical", "random:2"),
                             ("dropout", "random:3")):
        s = autoschedule(p, model=model, algorithm=algorithm, seed=seed, dropout=20, **FAST)
        if s.loopnest.fingerprint not in seen:
            seen.add(s.loopnest.fingerprint)
            assert_correct(p, s.loopnest)


@pytest.mark.parametrize("app", ["harris", "unsharp", "hist_eq", "bilateral_grid"])
@pytest.mark.parametrize("model", ["analytical", "random:3"])
def test_incremental_features_equal_a_fresh_featurization(app, model):
    """What the search scored is what featurize computes from scratch for every final LoopNest. (unsharp
    caught two misses: a serial root tiling leaves the loops as they were but ends the optimistic parallel
    assumption; a Func computed inside a consumer's loops but stored at root changes that consumer's loads.)"""
    from featurize import featurize

    p = get_app(app).build("small")
    tgt = get_target("host")
    for config in (SearchConfig(beam_size=4, passes=2), SearchConfig(beam_size=1, passes=1)):
        res = BeamSearch(p, tgt, load_model(model, tgt), config).run()
        for s in (x.state for x in res.finals):
            f = featurize(p, s.tree, "host")
            assert sorted(f.stages) == sorted(s.features)
            for k, row in zip(f.stages, f.schedule):
                np.testing.assert_allclose(s.features[k], row, rtol=1e-5, err_msg=str(k))


# -- determinism and errors --------------------------------------------------------------------


def test_same_seed_same_schedule():
    p = generate(21, max_stages=8, output_size=(40, 24, 3)).pipeline
    for alg in ("beam", "hierarchical", "dropout"):
        a = autoschedule(p, model="random:5", algorithm=alg, seed=4, dropout=10, **FAST)
        b = autoschedule(p, model="random:5", algorithm=alg, seed=4, dropout=10, **FAST)
        assert a.loopnest.fingerprint == b.loopnest.fingerprint, alg
    walks = {autoschedule(p, model="random:5", algorithm="dropout", seed=k, dropout=1).loopnest.fingerprint
             for k in range(4)}
    assert len(walks) > 1  # dropout does sample


@pytest.mark.parametrize("name", ["unsharp", "iir_blur", "random:3"])
def test_remembered_states_change_no_search(name, monkeypatch):
    """Beam's later passes take the states they meet again from the space's memory (scheduler.space._Replays):
    every pass's scores, the finals and the counts equal those of a search that remembers nothing."""
    import scheduler.space as space

    p = generate(3, max_stages=10).pipeline if name.startswith("random") else get_app(name).build("small")
    tgt = get_target("host")

    def search(**kw):
        res = BeamSearch(p, tgt, AnalyticalModel(tgt), SearchConfig(beam_size=8, passes=3, **kw)).run()
        return res, [(x.tree.fingerprint, x.cost) for x in res.finals]

    for kw in ({}, {"hierarchical": True}):
        remembered, finals = search(**kw)
        monkeypatch.setattr(space, "REPLAY_LIMIT", 0)
        fresh, fresh_finals = search(**kw)
        monkeypatch.undo()
        assert finals == fresh_finals and remembered.stats.states_evaluated == fresh.stats.states_evaluated
        assert remembered.stats.replayed > 0 and fresh.stats.replayed == 0


@pytest.mark.parametrize("name", ["random", "harris"])
def test_dropout_walks_over_one_space_give_the_schedules_of_separate_walks(name):
    """generator.batch's dropout samples: walks sharing one space (which replays what earlier walks realized)
    return, seed for seed, the schedule, predicted cost and state count of a walk over a space of its own."""
    from scheduler.api import dropout_schedules

    p = generate(5, max_stages=12).pipeline if name == "random" else get_app(name).build("small")
    model = load_model("random:3", get_target("host"))
    seeds = list(range(1, 9))
    separate = [autoschedule(p, model=model, algorithm="dropout", dropout=1.0, seed=s) for s in seeds]
    shared = list(dropout_schedules(p, "host", model, seeds, 1.0))
    assert [(s.loopnest.fingerprint, s.predicted_cost, s.stats.states_evaluated) for s in shared] == \
        [(s.loopnest.fingerprint, s.predicted_cost, s.stats.states_evaluated) for s in separate]
    assert len({s.loopnest.fingerprint for s in shared}) > 1  # the walks did diverge
    assert sum(s.stats.replayed for s in shared[1:]) > 0 and all(s.stats.replayed == 0 for s in separate)
    assert shared[0].stats.replayed == 0  # the first walk has nothing to replay: replays are counted per walk


def test_no_legal_schedule_is_a_clear_error():
    p = get_app("unsharp").build("small")
    # a partial schedule nothing can complete: gray at a level of a Func that is computed nowhere
    bad = {"gray": FuncDecision("at", "blur_y", 0, 5)}
    with pytest.raises(SearchError, match="no legal schedule exists for pipeline 'unsharp'"):
        autoschedule(p, model="analytical", algorithm="greedy", partial=bad)


@pytest.mark.parametrize("kw,match", [
    ({"algorithm": "annealing"}, "unknown algorithm 'annealing'"),
    ({"mode": "best"}, "unknown mode 'best'"),
    ({"beam_size": 0}, "beam_size must be at least 1"),
    ({"model": "random:abc"}, "write random:<integer seed>"),
    ({"model": 3}, "model must be"),
    ({"target": "h200"}, "no search space for cuda targets \\(h200\\); kinds with one: cpu"),
    ({"target": "tpu9"}, "unknown target .tpu9."),
])
def test_bad_arguments(kw, match):
    p = get_app("blur").build("small")
    with pytest.raises(SchedlabError, match=match):
        autoschedule(p, **{"model": "analytical", **kw})


def test_a_search_space_is_registered_per_target_kind():
    """What the scheduler can search is decided by the space registered for a target's kind: one class and one
    registration line give a kind its space, and every strategy then searches it."""
    from scheduler import space as spaces

    @spaces.register_space("cuda")
    class CudaAsCpu(spaces.SearchSpace):  # a toy: the CPU space's decisions under a CUDA target's name
        target_kind = "cuda"

    try:
        p = get_app("blur").build("small")
        assert isinstance(spaces.make_space(p, "h200"), CudaAsCpu)
        with pytest.raises(SearchError, match="the cpu search space got h200, a cuda target"):
            spaces.SearchSpace(p, "h200")
    finally:
        del spaces._SPACES["cuda"]
    with pytest.raises(SearchError, match="no search space for cuda targets"):
        spaces.make_space(p, "h200")


def test_unregistered_model_uri_is_one_line(tmp_path, monkeypatch):
    from scheduler.cost.registry import ChampionFallbackWarning

    monkeypatch.setenv("SCHEDLAB_BUILTIN_MODELS", str(tmp_path / "no-builtin"))  # the last fallback (test_builtin: the first)

    p = get_app("blur").build("small")
    db = tmp_path / "store" / "m.db"
    with pytest.raises(SearchError, match="no MLflow store.*tracking_uri="):
        autoschedule(p, model="models:/schedlab-host@champion", tracking=f"sqlite:///{db}")
    # "champion" is the documented fallback while no model is registered: said, with the store it looked in
    said = f"no models:/schedlab-host@champion in sqlite:///{db}.*analytical"
    with pytest.warns(ChampionFallbackWarning, match=said):
        s = autoschedule(p, model="champion", tracking=f"sqlite:///{db}", algorithm="greedy")
    assert s.stats.model == "analytical"
    assert list(tmp_path.iterdir()) == []  # the lookups created no store


def test_the_scheduler_command_reads_mlflow_tracking_uri_and_warns_in_one_line(tmp_path):
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/none/mlflow.db",
           "SCHEDLAB_BUILTIN_MODELS": f"{tmp_path}/no-builtin"}  # no built-in model: the analytical fallback
    r = subprocess.run([sys.executable, "-m", "scheduler", "app=blur", "size=small", "algorithm=greedy"], env=env,
                       capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    (warning,) = [line for line in r.stderr.splitlines() if "warning" in line]  # one line, naming the store
    assert warning.startswith(f"python -m scheduler: warning: model=champion: no models:/schedlab-host@champion in "
                              f"sqlite:///{tmp_path}/none/mlflow.db ("), warning
    assert "tracking_uri=" in warning and warning.endswith("using the analytical model instead"), warning
    assert "analytical" in r.stdout and list(tmp_path.iterdir()) == []


# -- cost models -------------------------------------------------------------------------------


def test_learned_model_from_a_checkpoint_scores_like_the_network(tmp_path):
    import torch

    from featurize import featurize
    from train.model import ModelConfig, build_model, save_checkpoint_dict

    net = build_model(ModelConfig(kind="hybrid"), seed=7)
    path = tmp_path / "model.pt"
    torch.save(save_checkpoint_dict(net), path)
    model = load_model(str(path), get_target("host"))
    assert isinstance(model, LearnedModel)
    p = get_app("unsharp").build("small")
    s = autoschedule(p, model=model, algorithm="greedy")
    f = featurize(p, s.loopnest, "host")
    assert s.predicted_cost == pytest.approx(float(net.predict(f.pipeline, f.schedule)[0]), rel=1e-5)


@pytest.mark.parametrize("kind", ["hybrid", "residual", "calibrated", "mlp"])
def test_learned_model_scores_with_numpy_terms_the_bits_of_the_torch_network(kind):
    """Search scores a learned model with its hand-designed terms computed in numpy (train.array_ops): the stage costs
    are the bits the network computes all in torch, on a search's real features and on rows of extremes."""
    import torch

    from featurize import featurize
    from ir.sampling import random_loopnest
    from train.model import ModelConfig, build_model

    net = build_model(ModelConfig(kind=kind, num_cores=6), seed=11)
    model = LearnedModel(net)
    p = get_app("harris").build("small")
    feats = [featurize(p, random_loopnest(p, seed, "host"), "host") for seed in range(6)]
    pf = feats[0].pipeline
    sf = np.stack([f.schedule for f in feats]).astype(np.float32)
    extremes = np.where(np.random.default_rng(0).random(sf.shape) < 0.5, sf * 1e6, 0).astype(np.float32)
    terms = net.terms(pf, sf)
    assert terms is None if kind == "mlp" else isinstance(terms, np.ndarray) and terms.dtype == np.float32
    for schedules in (sf, extremes):
        got = model.predict(pf, schedules)
        with torch.no_grad():
            stages = net.stage_costs(torch.from_numpy(pf), torch.from_numpy(schedules))
        assert np.array_equal(got.stages, stages.double().numpy()), kind


def test_random_models_differ_by_seed_and_analytical_needs_no_training():
    p = get_app("harris").build("small")
    tgt = get_target("host")
    res = BeamSearch(p, tgt, AnalyticalModel(tgt), SearchConfig(beam_size=2, passes=1)).run()
    states = [f.state for f in res.finals]
    a = RandomModel(1).score(p.dag, states)
    b = RandomModel(2).score(p.dag, states)
    assert np.all(a > 0) and not np.allclose(a, b)
    c = AnalyticalModel(tgt).score(p.dag, states)
    assert np.all(c > 0) and c[0] == pytest.approx(res.finals[0].cost)


def test_beam_keeps_a_matmul_accumulator_tile_in_registers_and_it_computes_the_product():
    """With register tiles (scheduler.tilings.register_tilings) the analytical model's beam search gives matmul's
    sum an innermost tile of one to four vectors by several unrolled columns, predicted cheaper than the best schedule
    of the space without them (one vector, the k loop around it); the LoopNest compiles and equals the interpreter."""
    from ir import Func, Input, Pipeline, RDom, Var, f32
    from ir.loopnest import LoopKind
    from ir.target import CpuTarget

    i, j = Var("i"), Var("j")
    a, b = Input("A", f32, 2), Input("B", f32, 2)
    k = RDom((0, 64), name="k")
    prod, c = Func("prod"), Func("C")
    prod[i, j] = 0.0
    prod[i, j] += a[i, k] * b[k, j]
    c[i, j] = prod[i, j]
    p = Pipeline([c], {c: (64, 64)}, name="matmul64")
    target = CpuTarget(name="avx2-2core", cores=2, vector_bytes=32)  # 8 f32 lanes; what the tiles depend on
    found = {on: autoschedule(p, target, model="analytical", register_tiles=on, **FAST) for on in (False, True)}
    inner = found[True].loopnest.find_chain("prod", 1)[-1]
    assert inner.kind == LoopKind.UNROLLED and inner.vectorized_loop == 0
    # one to four 8-lane vectors of i (one SIMD loop) by unrolled columns j, the RVar k outside
    assert inner.size[0] in (8, 16, 32) and inner.size[1] > 1
    assert found[False].loopnest.find_chain("prod", 1)[-1].size[1] == 1
    assert found[True].predicted_cost < found[False].predicted_cost
    assert_correct(p, found[True].loopnest)


def test_analytical_predict_on_fresh_features_equals_the_search_score():
    """predict() on features featurize computes from scratch == what score() gave the search's states."""
    from featurize import featurize

    p = get_app("unsharp").build("small")
    tgt = get_target("host")
    model = AnalyticalModel(tgt)
    res = BeamSearch(p, tgt, model, SearchConfig(beam_size=2, passes=1)).run()
    for x in res.finals:
        f = featurize(p, x.tree, "host")
        pred = model.predict(f.pipeline, f.schedule[None])
        assert pred.total.shape == (1,) and pred.stages.shape == (1, len(f.stages))
        assert pred.total[0] == pytest.approx(x.cost, rel=1e-5)
        assert pred.stages.sum() == pytest.approx(x.cost, rel=1e-5)
        assert sum(x.stage_costs.values()) == pytest.approx(x.cost, rel=1e-9)
    totals, stages = model.score_stages(p.dag, [x.state for x in res.finals])
    np.testing.assert_allclose(totals, [x.cost for x in res.finals])


def test_states_are_immutable_and_the_search_keeps_its_bookkeeping():
    import dataclasses

    p = get_app("blur").build("small")
    tgt = get_target("host")
    res = BeamSearch(p, tgt, AnalyticalModel(tgt), SearchConfig(beam_size=2, passes=2)).run()
    state = res.best.state
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.num_decisions = 0
    assert not hasattr(state, "cost") and not hasattr(state, "penalized")
    assert res.best.cost == min(x.cost for x in res.finals) > 0


def test_cost_model_registry_toy_model_and_unknown_name(monkeypatch):
    from scheduler.cost import COST_MODELS, CostModel, PredictedCosts, register_cost_model

    monkeypatch.setattr("scheduler.cost.registry.COST_MODELS", dict(COST_MODELS))

    @register_cost_model("toy")  # the one registration line
    class Toy(CostModel):  # the one new class: cost = points computed, so it prefers the least recompute
        def predict(self, pipeline_features, schedule_features):
            stages = np.asarray(schedule_features, dtype=np.float64)[..., 0]
            return PredictedCosts(stages.sum(-1), stages)

    p = get_app("blur").build("small")
    s = autoschedule(p, model="toy", algorithm="greedy")
    assert s.stats.model == "toy" and s.predicted_cost > 0
    assert_correct(p, s.loopnest)
    with pytest.raises(SearchError, match="unknown cost model 'annealed'; registered: analytical, builtin, ensemble, learned, random, toy"):
        autoschedule(p, model="annealed")
    with pytest.raises(SearchError, match="takes no argument"):
        load_model("toy:3", get_target("host"))


def test_analytical_priors_by_name():
    """`analytical` is the current prior, `analytical:1` to `analytical:4` earlier ones (side by side in benchmarks);
    an unknown prior is a one-line error."""
    from train.analytical import PRIOR

    target = get_target("host")
    current, first, second = (load_model(m, target) for m in ("analytical", "analytical:1", "analytical:2"))
    assert (current.prior, first.prior, second.prior) == (PRIOR, 1, 2) and first.name == "analytical:1"
    assert current.name == "analytical" and second.name == "analytical:2"
    earlier = [load_model(f"analytical:{k}", target) for k in (3, 4)]  # the previous default, a candidate not kept
    assert [m.prior for m in earlier] == [3, 4] and earlier[0].name == "analytical:3"
    assert load_model(f"analytical:{PRIOR}", target).name == "analytical"  # the current prior by number is itself
    p = get_app("blur").build("small")
    s = autoschedule(p, model="analytical:1", algorithm="greedy")
    assert s.stats.model == "analytical:1"
    assert_correct(p, s.loopnest)
    previous = load_model("analytical:6", target)  # the default before prior 7, side by side with it
    assert previous.prior == 6 and previous.name == "analytical:6"
    with pytest.raises(SearchError, match=rf"no analytical prior '11'; write analytical \(prior {PRIOR}\) or analytical:<prior>"):
        load_model("analytical:11", target)


def test_strategy_registry_toy_strategy_and_unknown_name(monkeypatch):
    from scheduler.search import BeamSearch, SearchConfig
    from scheduler.strategy import STRATEGIES, SearchStrategy, register_strategy

    monkeypatch.setattr("scheduler.strategy.STRATEGIES", dict(STRATEGIES))

    @register_strategy("widest")  # the one registration line
    class Widest(SearchStrategy):  # the one new class: one pass of a beam of 64
        def finish(self):
            s = self.space
            return BeamSearch(s.pipeline, s.target, self.model, SearchConfig(beam_size=64, passes=1),
                              fixed=s.options.frozen).run()

    p = get_app("blur").build("small")
    s = autoschedule(p, model="analytical", algorithm="widest")
    assert s.stats.algorithm == "widest"
    assert s.predicted_cost <= autoschedule(p, model="analytical", algorithm="greedy").predicted_cost
    with pytest.raises(SearchError, match="unknown algorithm 'annealing'; choose one of autotune, beam, dropout, "
                                          "greedy, hierarchical, mcts, mcts-real, polymage-dp, portfolio, "
                                          "portfolio-greedy, top-k, widest"):
        autoschedule(p, model="analytical", algorithm="annealing")


def test_a_model_for_another_target_or_backend_is_refused_unless_allowed(tmp_path):
    from train.model import ModelConfig, build_model

    tgt = get_target("host")
    p = get_app("blur").build("small")
    for target, backend, wrong in (("other-cpu", "numba", "target other-cpu"), ("host", "halide", "backend halide")):
        path = tmp_path / f"{target}-{backend}.pt"
        LearnedModel(build_model(ModelConfig(kind="hybrid"), seed=1), target=target, backend=backend).save(path)
        with pytest.raises(SearchError, match=f"learned the runtimes of {wrong} .*allow_mismatch=True"):
            load_model(str(path), tgt, backend="numba")
        with pytest.raises(SearchError, match="allow_mismatch=True"):
            autoschedule(p, model=str(path), algorithm="greedy", backend="numba")
        m = load_model(str(path), tgt, backend="numba", allow_mismatch=True)
        assert (m.target, m.backend) == (target, backend)
        s = autoschedule(p, model=str(path), algorithm="greedy", backend="numba", allow_mismatch=True)
        assert s.predicted_cost > 0 and s.backend == "numba"
    ok = tmp_path / "host-halide.pt"  # the search compiles with halide: that model is the right one
    assert load_model(str(ok), tgt, backend="halide").backend == "halide"
    # given no backend, a search follows the model: it compiles with the backend whose runtimes it learned
    assert load_model(str(ok), tgt).backend == "halide"
    assert autoschedule(p, model=str(ok), algorithm="greedy").backend == "halide"
    assert autoschedule(p, model="analytical", algorithm="greedy").backend == "numba"  # learned none: numba
    with pytest.raises(SearchError, match="target other-cpu"):  # the target is still checked
        load_model(str(tmp_path / "other-cpu-numba.pt"), tgt)


def test_update_fine_tunes_a_learned_model_and_leaves_the_analytical_one():
    import torch

    from featurize import featurize
    from train.loss import relative_throughput_loss
    from train.model import ModelConfig, build_model

    p = get_app("unsharp").build("small")
    # a named target, not the host: the schedules (and so the loss before and after) are the same on every machine
    # (on an AVX-512 host the host's six schedules started at a loss of 0.98, near what its 50 Adam steps reach)
    tgt = get_target("i9-7960x")
    res = BeamSearch(p, tgt, AnalyticalModel(tgt), SearchConfig(beam_size=8, passes=1)).run()
    feats = [featurize(p, x.tree, tgt) for x in res.finals[:6]]
    assert len(feats) >= 3
    pf, sf = feats[0].pipeline, np.stack([f.schedule for f in feats])
    runtimes = np.geomspace(1e-2, 1e-3, len(feats))  # "measured": the schedules' order reversed
    learned = LearnedModel(build_model(ModelConfig(kind="hybrid"), seed=3))
    before = learned.predict(pf, sf).total
    learned.update(pf, sf, runtimes)
    after = learned.predict(pf, sf).total
    assert not np.allclose(before, after)

    def loss(pred):  # what update() minimizes: the relative-throughput loss against the measurements
        return float(relative_throughput_loss(torch.as_tensor(pred), torch.as_tensor(runtimes)))

    assert loss(after) < 0.5 * loss(before)
    analytical = AnalyticalModel(tgt)
    a0 = analytical.predict(pf, sf).total
    analytical.update(pf, sf, runtimes)
    np.testing.assert_array_equal(a0, analytical.predict(pf, sf).total)


def test_top_k_and_autotune_are_strategies():
    p = get_app("blur").build("small")
    s = autoschedule(p, model="random:3", algorithm="top-k", k=2, **FAST)
    assert s.stats.algorithm == "top-k" and len(s.stats.measured) == 2
    assert s.measured_runtime == min(s.stats.measured.values())
    t = autoschedule(p, model="random:3", algorithm="autotune", rounds=1, samples=2, **FAST)
    assert t.stats.algorithm == "autotune" and t.measured_runtime == min(t.stats.measured.values())


def test_top_k_and_autotune_return_the_fastest_measured():
    p = get_app("unsharp").build("small")
    s = autoschedule(p, model="random:3", algorithm="beam", mode="top-k", k=3, **FAST)
    assert len(s.stats.measured) == 3 and s.measured_runtime == min(s.stats.measured.values())
    assert s.stats.measured[s.loopnest.fingerprint] == s.measured_runtime
    t = autoschedule(p, model="random:3", algorithm="beam", mode="autotune", rounds=1, samples=3, **FAST)
    beam = autoschedule(p, model="random:3", algorithm="beam", **FAST)
    assert beam.loopnest.fingerprint in t.stats.measured  # the beam result was benchmarked too
    assert t.measured_runtime == min(t.stats.measured.values()) <= t.stats.measured[beam.loopnest.fingerprint]
    assert_correct(p, t.loopnest)


def test_autotune_follows_the_partial_schedule_and_reports_progress_like_the_search():
    p = get_app("unsharp").build("small")
    calls = []
    partial = {"gray": FuncDecision("root", specs={0: StageSpec()})}
    t = autoschedule(p, model="random:3", algorithm="beam", mode="autotune", rounds=1, samples=4, partial=partial,
                     progress=lambda *a: calls.append(a), **FAST)
    assert calls and all(len(c) == 4 for c in calls)  # (pass, decisions, total, states evaluated)
    assert len(t.stats.measured) > 1
    gray = [c for c in t.loopnest.children if c.func == "gray"]
    assert gray and not gray[0].parallel  # computed at root, serial, as the partial schedule says


# -- API and CLI -------------------------------------------------------------------------------


def test_importing_scheduler_is_light():
    code = ("import sys, scheduler; from scheduler import autoschedule; "
            "print(sorted(m for m in ('ray', 'lightning', 'mlflow', 'pytorch_lightning') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_schedule_object():
    p = get_app("blur").build("small")
    s = autoschedule(p, model="analytical", algorithm="greedy")
    assert "compute blur_y" in s.text and str(s) == s.text
    assert s.stats.seconds > 0 and s.stats.us_per_state > 0 and "states in" in str(s.stats)
    k = s.compile()
    inputs = p.random_inputs(2)
    out = k(inputs)
    ref = ir.interpret(p, inputs)
    for name in ref:
        np.testing.assert_array_equal(out[name], ref[name])


def test_cli_prints_schedule_score_halide_directives_and_measurements():
    """python -m scheduler with key=value: the schedule, its score, its Halide directives, and measured next
    to the naive and the expert schedule (blur at size small keeps it quick)."""
    out = subprocess.run([sys.executable, "-m", "scheduler", "app=blur", "size=small", "algorithm=greedy",
                          "model=analytical", "measure=true", "halide_schedule=true"], capture_output=True, text=True,
                         cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "compute blur_y" in text and "predicted cost score: " in text and "(relative, lower is better" in text
    directives = text.split("Halide schedule:\n", 1)[1].split("\nmeasured", 1)[0].splitlines()
    assert directives and all(re.fullmatch(r"\w+\.\w+\(.*\);", d) for d in directives), directives
    assert any(d.startswith("blur_y.compute_root()") for d in directives), directives
    time = r"[0-9.]+ (s|ms|µs)"  # ir.units.format_seconds
    assert re.search(rf"^measured \(greedy, numba\): {time}$", text, re.M), text
    assert re.search(rf"^naive schedule: +{time} +speedup of greedy over naive: [0-9.e-]+x$", text, re.M), text
    assert re.search(rf"^expert schedule: +{time} +speedup of greedy over expert: [0-9.e-]+x$", text, re.M), text


def test_cli_random_pipeline_has_no_expert(capsys):
    from generator.schedule import main

    assert main(["random=3", "max_stages=4", "algorithm=greedy", "model=analytical"]) == 0
    out = capsys.readouterr().out
    assert "predicted cost score: " in out and "Halide schedule" not in out and "expert" not in out


@pytest.mark.parametrize("argv, text", [
    (["app=blur", "model=random:x"], "random:<integer seed>"),
    ([], "give exactly one of app=NAME (an app of the suite) or random=SEED"),
    (["app=blur", "random=3"], "give exactly one of app=NAME"),
    (["app=blurr"], "unknown app 'blurr'; choose one of bgu, bilateral_grid, blur, camera_pipe"),
    (["app=blur", "algorithm=annealing"], "unknown algorithm 'annealing'; choose one of"),
    (["app=blur", "beam_size=0"], "beam_size must be >= 1, got 0"),
    (["app=blur", "size=small", "model=analytical", "algorithm=portfolio", "guide_margin=0.5"],
     "guide_margin is how much cheaper"),
    (["app=blur", "size=huge"], "config key 'size' must be one of small, full"),
    (["--app", "blur"], "unrecognized arguments: --app; settings are key=value (app=...)"),  # the old flags
    (["app=blur", "--beam-size", "4"], "settings are key=value (beam_size=...)"),
])
def test_cli_errors_are_one_line(argv, text, capsys):
    from generator.schedule import main

    try:
        status = main(argv)
    except SystemExit as e:  # argparse exits, rather than returns, on arguments it cannot parse
        status = e.code
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("python -m scheduler: error: ") and err.count("\n") == 1, err
    assert text in err, err


def test_cli_defaults_are_conf_scheduler_yaml_and_evaluate_apps_size():
    from evaluate.config import AppsConfig
    from generator.schedule import SchedulerConfig
    from ir.config import load_config

    assert load_config(SchedulerConfig, ROOT / "conf" / "scheduler.yaml") == SchedulerConfig()
    assert SchedulerConfig().size == AppsConfig().size == "full"  # one default for both commands


def test_searches_collect_garbage_less_often_and_restore_the_thresholds():
    import gc

    from ir.collector import FEWER_GC_THRESHOLD as SEARCH_GC_THRESHOLD
    from ir.collector import fewer_collections

    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == max(SEARCH_GC_THRESHOLD, before[0])
        assert gc.get_threshold()[1:] == before[1:]
        with fewer_collections():  # a strategy that runs another search inside
            assert gc.get_threshold()[0] == max(SEARCH_GC_THRESHOLD, before[0])
        assert gc.get_threshold()[0] == max(SEARCH_GC_THRESHOLD, before[0])  # the outer search still runs
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError):
        with fewer_collections():
            raise RuntimeError("a search that fails")
    assert gc.get_threshold() == before


def test_searches_score_with_one_torch_thread_and_restore_torch_setting(monkeypatch):
    import torch

    import scheduler.cost.threads as threads

    seen: list[int] = []

    class Probe(AnalyticalModel):
        def predict(self, pipeline_features, schedule_features):
            seen.append(torch.get_num_threads())
            return super().predict(pipeline_features, schedule_features)

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        p = get_app("blur").build("small")
        target = get_target("host")
        one = autoschedule(p, target=target, model=Probe(target), algorithm="greedy")
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
        seen.clear()
        monkeypatch.setattr(threads, "SINGLE_THREAD_ROWS", 0)  # every batch counts as large: torch's own threads
        many = autoschedule(p, target=target, model=Probe(target), algorithm="greedy")
        assert seen and set(seen) == {2}
        assert many.loopnest.fingerprint == one.loopnest.fingerprint and many.predicted_cost == one.predicted_cost
        monkeypatch.setattr(threads, "SINGLE_THREAD_ROWS", 1 << 20)
        with pytest.raises(RuntimeError):
            with threads.scoring_threads(10):
                assert torch.get_num_threads() == 1
                raise RuntimeError("a model that fails")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
