"""polymage-dp (jangda2020): its schedules are valid and equal the interpreter, it is deterministic, its DP finds
the hand-derived (and the exhaustively enumerated) cheapest grouping of small chains and DAGs, and its tile
sizes are the paper's formula worked by hand."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import backends
import ir

from generator.apps import get_app
from generator.random_pipeline import generate
from ir import Func, Input, Pipeline, Var, f32
from ir.builder import FuncDecision, StageSpec
from ir.target import CpuTarget
from scheduler import autoschedule
from scheduler.strategy import strategy_names
from scheduler.strategies.polymage_dp import polymage_schedule
from scheduler.strategies.polymage_model import (CostWeights, GroupModel, compute_tile_sizes, dp_grouping, effective_consumers,
                                                 inline_set, innermost_tile)
from tests.test_scheduler import CHECK_ONLY, assert_correct

ROOT = Path(__file__).resolve().parent.parent
# a stated machine: 4 cores, AVX2 (8 f32 lanes), 32 KiB L1, 1 MiB L2
MACHINE = CpuTarget(name="test-avx2", cores=4, vector_bytes=32, l1_bytes=32 * 1024, l2_bytes=1024 * 1024)
x, y = Var("x"), Var("y")


# -- schedules: valid, compiled, equal to the interpreter -------------------------------------------


@pytest.mark.parametrize("app", ["blur", "unsharp", "harris", "bilateral_grid", "camera_pipe", "hist_eq"])
def test_apps_compile_and_equal_the_interpreter(app):
    p = get_app(app).build("small")
    s = autoschedule(p, algorithm="polymage-dp", model="analytical")
    assert s.stats.algorithm == "polymage-dp" and s.stats.states_evaluated > 0
    assert_correct(p, s.loopnest)


@pytest.mark.parametrize("app", ["blur", "harris", "camera_pipe"])
def test_the_halide_backend_compiles_it_too(app):
    p = get_app(app).build("small")
    s = autoschedule(p, algorithm="polymage-dp", model="analytical")
    inputs = p.random_inputs(1)
    with np.errstate(all="ignore"):
        expected = ir.interpret(p, inputs)
    m = backends.measure(backends.compile(p, s.loopnest, backend="halide"), inputs, CHECK_ONLY, expected=expected)
    assert m.status == "ok", m.error


@pytest.mark.parametrize("seed", [3, 11])
def test_random_pipelines_compile_and_equal_the_interpreter(seed):
    p = generate(seed, max_stages=8, output_size=(40, 24, 3)).pipeline
    s = autoschedule(p, algorithm="polymage-dp", model="analytical")
    assert_correct(p, s.loopnest)


def test_registered_and_the_model_is_ignored():
    assert "polymage-dp" in strategy_names()
    p = get_app("harris").build("small")
    a = autoschedule(p, algorithm="polymage-dp", model="analytical")
    b = autoschedule(p, algorithm="polymage-dp", model="random:7")
    assert a.loopnest.fingerprint == b.loopnest.fingerprint and a.predicted_cost == b.predicted_cost


def test_partial_decisions_are_followed():
    p = get_app("blur").build("small")
    s = autoschedule(p, algorithm="polymage-dp", model="analytical", partial={"blur_x": FuncDecision("root", specs={0: StageSpec()})})
    assert [c.func for c in s.loopnest.children][0] == "blur_x"  # at root, not inside blur_y's tiles
    assert_correct(p, s.loopnest)


def test_schedule_is_the_grouping_tiled_parallel_and_vectorized():
    """blur at full size on MACHINE: one group, blur_y at root in 128 x 32 tiles, the outer tiles parallel,
    x vectorized, blur_x computed inside each tile (level 0)."""
    p = get_app("blur").build("full")
    tree, g = polymage_schedule(p, MACHINE)
    assert g.as_sets() == [{"blur_x", "blur_y"}]
    assert [c.func for c in tree.children] == ["blur_x", "blur_y"] or [c.func for c in tree.children] == ["blur_y"]
    out = tree.find_chain("blur_y", 0)
    assert out[0].kind.value == "parallel" and out[0].size == (12, 80)  # 1536 / 128, 2560 / 32
    assert out[-1].kind.value in ("vectorized", "serial") and out[-1].vectorized_loop == 0
    bx = tree.find_chain("blur_x", 0)
    assert tree.path_to(bx[0])[-2] is out[0]  # computed at level 0 of blur_y


# -- determinism ------------------------------------------------------------------------------------


_SNIPPET = ("from generator.apps import get_app; from scheduler.strategies.polymage_dp import polymage_schedule;"
            "from ir.target import CpuTarget;"
            "t = CpuTarget('t', 4, 32);"
            "p = get_app('camera_pipe').build('small'); print(polymage_schedule(p, t)[0].fingerprint)")


def test_deterministic_within_and_across_processes():
    p = get_app("camera_pipe").build("small")
    a, b = polymage_schedule(p, MACHINE)[0], polymage_schedule(p, MACHINE)[0]
    assert a.fingerprint == b.fingerprint
    prints = set()
    for hashseed in ("1", "2"):  # set iteration order differs between these
        env = {**os.environ, "PYTHONHASHSEED": hashseed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", _SNIPPET], env=env, capture_output=True, text=True,
                             timeout=300, check=True)
        prints.add(out.stdout.strip())
    assert len(prints) == 1


# -- the DP's grouping --------------------------------------------------------------------------------


def _stencil_chain(radii: list[int], size=(1024, 1024)) -> Pipeline:
    """f1 reads the input at x +- r1, f2 reads f1 at y +- r2, f3 reads f2 at x +- r3 (a separable chain)."""
    inp = Input("input", f32, 2)
    prev, funcs = inp, []
    for k, r in enumerate(radii):
        f = Func(f"f{k + 1}")
        if k % 2 == 0:
            f[x, y] = (prev[x - r, y] + prev[x, y] + prev[x + r, y]) / 3
        else:
            f[x, y] = (prev[x, y - r] + prev[x, y] + prev[x, y + r]) / 3
        prev = f
        funcs.append(f)
    return Pipeline([prev], {prev: size}, name="chain")


def _diamond(size=(1024, 1024)) -> Pipeline:
    """a (3-point stencil of the input) read by b and c (3-point stencils along y and x), d = b + c shifted."""
    inp = Input("input", f32, 2)
    a, b, c, d = Func("a"), Func("b"), Func("c"), Func("d")
    a[x, y] = inp[x - 1, y] + inp[x + 1, y]
    b[x, y] = a[x, y - 1] + a[x, y + 1]
    c[x, y] = a[x - 1, y] * a[x + 1, y]
    d[x, y] = b[x, y - 1] + c[x + 1, y]
    return Pipeline([d], {d: size}, name="diamond")


def _all_groupings(dag, inlined):
    """Every valid grouping by brute force: a partition of the computed Funcs where every non-output member's
    consumers all lie in its group, each group has one output and no Func with updates shares a group."""
    funcs = [n.name for n in dag.nodes if n.name not in inlined]
    cons = {f: effective_consumers(dag, f, frozenset(inlined)) for f in funcs}

    def partitions(items):
        if not items:
            yield []
            return
        first, rest = items[0], items[1:]
        for p in partitions(rest):
            for i in range(len(p)):
                yield p[:i] + [p[i] | {first}] + p[i + 1:]
            yield p + [{first}]

    for part in partitions(funcs):
        ok = True
        for g in part:
            outs = [m for m in g if not (cons[m] & g)]
            if len(outs) != 1 or any(m != outs[0] and not cons[m] <= g for m in g):
                ok = False
        if ok:
            yield [frozenset(g) for g in part]


def _brute_force_best(p, target, weights=None):
    dag = p.dag
    inlined = inline_set(dag)
    model = GroupModel(dag, target, inlined, weights)
    return min((sum(model.cost(g).cost for g in part), sorted(map(sorted, part)))
               for part in _all_groupings(dag, inlined))


def test_small_stencil_chain_fuses_into_one_group():
    """Three 3-point stencils: fused, one tile of f3 (128 x 32 on MACHINE's L1) recomputes 2 columns of f2 and
    2 rows of f1 beyond 1/n_tiles of them, a relative overlap near 0.01 (w3 x 0.01 ~ 0.1), while each split
    group reads and writes about 2 points per point computed (w1 x 2 ~ 94 each) against about 2/3 fused."""
    p = _stencil_chain([1, 1, 1])
    g = dp_grouping(p.dag, MACHINE)
    assert g.as_sets() == [{"f1", "f2", "f3"}]
    assert g.groups[0].cache == "L1" and g.groups[0].overlap < g.groups[0].comp_vol // 20
    cost, best = _brute_force_best(p, MACHINE)
    assert [sorted(s) for s in sorted(g.as_sets(), key=sorted)] == best and g.cost == pytest.approx(cost)


def test_chain_with_a_large_footprint_stencil_moves_to_l2_tiles_or_splits():
    """f2 reads f1 300 rows up and down. Fused with L1 tiles (128 x 21), a tile recomputes ~600 rows of f1: more
    than its useful work, so Algorithm 2 line 5 tiles the group for L2 (128 x 682). With Table 3's weights the
    group still fuses: splitting f2 off makes it read a 1282-row live-in box per tile (w1 x ~35 > w3 x the
    relative overlap of 85517 x 4 B / 1 MiB = 0.33). With the overlap weighted as the paper tunes it for
    pipelines with high redundant computation (w3 = 3000: 3000 x 0.33 ~ 980), the chain splits, and the small
    chain (relative overlap 355 x 4 / 32 KiB = 0.04) still fuses."""
    p = _stencil_chain([1, 300, 1])
    g = dp_grouping(p.dag, MACHINE)
    assert g.as_sets() == [{"f1", "f2", "f3"}] and g.groups[0].cache == "L2" and g.groups[0].tiles == {"x": 128, "y": 682}
    heavy = CostWeights(w3=3000.0)
    g = dp_grouping(p.dag, MACHINE, weights=heavy)
    assert len(g.groups) == 2 and g.as_sets() == [{"f3"}, {"f1", "f2"}]
    cost, best = _brute_force_best(p, MACHINE, heavy)
    assert sorted(map(sorted, g.as_sets())) == best and g.cost == pytest.approx(cost)
    small = _stencil_chain([1, 1, 1])
    assert dp_grouping(small.dag, MACHINE, weights=heavy).as_sets() == [{"f1", "f2", "f3"}]


def test_diamond_dag_fuses_when_overlap_is_small():
    """a's consumers b and c must share a group for a to join it; with 3-point stencils the whole diamond is
    one group, and the DP agrees with enumerating the 5 valid groupings."""
    p = _diamond()
    g = dp_grouping(p.dag, MACHINE)
    assert g.as_sets() == [{"a", "b", "c", "d"}]
    assert len(list(_all_groupings(p.dag, inline_set(p.dag)))) == 5
    cost, best = _brute_force_best(p, MACHINE)
    assert sorted(map(sorted, g.as_sets())) == best and g.cost == pytest.approx(cost)


@pytest.mark.parametrize("app", ["unsharp", "harris", "bilateral_grid"])
def test_dp_equals_exhaustive_enumeration_on_apps(app):
    p = get_app(app).build("full")
    g = dp_grouping(p.dag, MACHINE)
    cost, best = _brute_force_best(p, MACHINE)
    assert g.cost == pytest.approx(cost) and sorted(map(sorted, g.as_sets())) == best


def test_pointwise_funcs_are_inlined_and_stencils_are_not():
    p = get_app("unsharp").build("small")
    inl = inline_set(p.dag)
    assert {"sharpen", "ratio"} <= inl and not {"blur_x", "blur_y"} & inl


# -- the tile-size model ----------------------------------------------------------------------------


def test_tile_sizes_by_hand():
    """Algorithm 2 lines 25-38. 2-D: 32 KiB over 2 f32 buffers = 4096 points; x = min(1024, 128) = 128;
    y = 4096 / 128 = 32. 3-D with reuse (x, 5, 1): tau = 32 / 1 / 0.2 = 160, sqrt -> 12.65; y = 12, c =
    min(3, int(12.65 * 0.2)) = 2."""
    assert compute_tile_sizes(32 * 1024, 2, 4, [1024, 1024], [1, 3], 128) == [128, 32]
    assert compute_tile_sizes(32 * 1024, 2, 4, [1024, 512, 3], [9, 5, 1], 128) == [128, 12, 2]
    assert compute_tile_sizes(32 * 1024, 2, 4, [100, 20], [1, 3], 128) == [100, 20]  # clipped to the sizes
    assert innermost_tile(MACHINE, 4) == 128 and innermost_tile(CpuTarget("avx512", 4, 64), 4) == 256


def test_group_cost_of_blur_by_hand():
    """blur (1536 x 2560 f32) fused on MACHINE: total 2 x 1536 x 2560 x 4 B = 31.5 MB, / 4 cores >> L1, so
    tileFootprint = 32 KiB -> 128 x 32 tiles, 12 x 80 = 960 of them; blur_x needs 128 x 34 = 4352 points per
    tile, of its 1536 x 2562 / 960 = 4099 a share: overlap 253 < comp_vol, so the L1 tiles stay."""
    p = get_app("blur").build("full")
    gc = GroupModel(p.dag, MACHINE, frozenset()).cost(frozenset({"blur_x", "blur_y"}))
    assert gc.tiles == {"x": 128, "y": 32} and gc.cache == "L1"
    assert gc.n_tiles == 960 and gc.overlap == 4352 - 1536 * 2562 // 960 == 253
    assert gc.comp_vol == 128 * 32 + 4352
    assert gc.livein_bytes == 130 * 34 * 4 and gc.liveout_bytes == 128 * 32 * 4
    spread = (0.0 + 1 / 2561) / 2  # x: 1536 both; y: 2562 and 2560, std 1 over mean 2561
    assert gc.dim_diff == pytest.approx(spread)
    assert gc.cost == pytest.approx(47.04 * (130 * 34 + 128 * 32) * 4 / (128 * 32 + 4352)
                                    - 1.0 * ((960 + 3) % 4) / 4 + 13.18 * 253 * 4 / 32768 + 33.57 * spread)


def test_updates_are_a_group_of_their_own():
    p = get_app("hist_eq").build("small")
    g = dp_grouping(p.dag, MACHINE)
    for gc in g.groups:
        if any(len(p.dag.node(m).stages) > 1 for m in gc.members):
            assert len(gc.members) == 1, gc.members


def test_every_valid_grouping_of_a_chain_is_counted():
    """A linear chain of n computed stages has 2^(n-1) valid groupings (jangda2020 §2.4)."""
    p = _stencil_chain([1, 1, 1, 1])
    assert len(list(_all_groupings(p.dag, frozenset()))) == 2 ** 3
    assert list(itertools.islice(_all_groupings(p.dag, frozenset()), 1))
