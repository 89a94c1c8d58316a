"""The random pipeline generator (generator/random_pipeline.py) and its CLI (generator/random.py).

Determinism, structure, validity (each pipeline interprets, and numba under `simple_schedule` computes
the same outputs), the stage statistics, the Markov option and the command line. The validity check
runs a fixed subset of 40 seeds chosen for coverage and compile time (numba's parfor path costs about a
second per parallel loop nest, and simple_schedule makes every Func one), compiled on up to four
worker processes at once; SLOW=1 adds a 300-seed run, and `python -m generator.random --check N`
runs any number.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
import os
import random
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import backends
import ir
from backends.worker import Worker
from generator.random_pipeline import (
    AUX_ROLES,
    KINDS,
    MARKOV,
    MIX_WEIGHTS,
    MOTIF_KINDS,
    MOTIFS,
    DEFAULT_MOTIF_KINDS,
    generate,
    random_pipeline,
    stage_kind,
    transition_probabilities,
)
from ir.builder import simple_schedule

from .fuzz import CHECK_ONLY

ROOT = Path(__file__).resolve().parent.parent
SMALL = (16, 12, 3)
STAGES = 8
N_CI = 40
JOBS = max(1, min(4, os.cpu_count() or 1))


# -- determinism ------------------------------------------------------------------------------------


@pytest.mark.parametrize("markov", [False, True])
def test_same_seed_same_pipeline(markov):
    for seed in (0, 1, 17, 123):
        a = random_pipeline(seed, STAGES, SMALL, markov)
        b = random_pipeline(seed, STAGES, SMALL, markov)
        assert a is not b
        assert a.fingerprint == b.fingerprint
        assert str(a) == str(b)


def test_same_fingerprint_in_another_process():
    seeds = list(range(6))
    code = ("from generator.random_pipeline import random_pipeline\n"
            f"for s in {seeds}:\n"
            "    print(random_pipeline(s, 20).fingerprint, random_pipeline(s, 8, (16, 12, 3), True).fingerprint)\n")
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    here = [f"{random_pipeline(s, 20).fingerprint} {random_pipeline(s, 8, SMALL, True).fingerprint}" for s in seeds]
    assert out.stdout.split("\n")[:-1] == here


def test_different_seeds_differ():
    prints = {random_pipeline(s, STAGES, SMALL).fingerprint for s in range(60)}
    assert len(prints) == 60
    p = random_pipeline(5, STAGES, SMALL)
    assert random_pipeline(5, STAGES, SMALL, markov=True).fingerprint != p.fingerprint
    assert random_pipeline(5, STAGES + 1, SMALL).fingerprint != p.fingerprint
    assert random_pipeline(5, STAGES, (16, 12, 4)).fingerprint != p.fingerprint


def test_no_global_random_state():
    state = random.getstate()
    a = random_pipeline(9, STAGES, SMALL).fingerprint
    assert random.getstate() == state  # nothing drawn from the global generator
    random.seed(1)
    np.random.seed(1)
    random.random()
    assert random_pipeline(9, STAGES, SMALL).fingerprint == a


def test_bad_arguments_raise():
    for kwargs in ({"max_stages": 1}, {"output_size": (16, 12)}, {"output_size": (16, 0, 3)},
                   {"output_size": (16.5, 12, 3)}, {"output_size": "big"}):
        with pytest.raises(ValueError):
            random_pipeline(1, **kwargs)
    with pytest.raises(TypeError):
        random_pipeline("1")
    with pytest.raises(TypeError):
        random_pipeline(1, max_stages=8.0)


# -- structure --------------------------------------------------------------------------------------


def test_structure():
    for seed in range(40):
        g = generate(seed, 12)
        p = g.pipeline
        assert p.output_sizes == {p.outputs[0].name: (2000, 2000, 3)}
        assert p.outputs[0].type == ir.f32 and stage_kind(p.outputs[0].name) == "output"
        for f in p.funcs:
            assert f.args == ("x", "y", "c"), f.name
            assert stage_kind(f.name) in KINDS + AUX_ROLES
        assert "input" in {i.name for i in p.inputs}
        for i in p.inputs:  # the image, and one typed 4-D weight buffer per 2-D convolution
            if i.name == "input":
                assert (i.type, i.dimensions) == (ir.f32, 3)
            else:
                assert i.dimensions == 4 and f"s{i.name[1:]}_conv2d" in {f.name for f in p.funcs}, i.name
        for s in g.stages:  # sizes bounded at the default size
            assert 100 <= math.prod(s.shape) <= 10**8, s
        assert [stage_kind(s.name) for s in g.stages[:1]] == ["input"]
        assert len(g.sequence) == 10
        # the structure does not depend on the output size: only extents (padding, scans) scale
        small = generate(seed, 12, SMALL)
        assert [(s.name, s.kind, s.shape, s.type) for s in small.stages] == \
               [(s.name, s.kind, s.shape, s.type) for s in g.stages]


CHANNEL_MIXES = ("all_to_all", "rs_mix")


def test_buffer_weights_change_only_the_weights():
    """mix_weights="buffer" draws the same structure as the default for every seed; each channel mix reads a 2-D
    weight input of its own type, named after it, in place of the weight computed from the channel indices."""
    mixes = 0
    for seed in range(40):
        a, b = generate(seed, 12, SMALL), generate(seed, 12, SMALL, mix_weights="buffer")
        assert a.stages == b.stages and a.sequence == b.sequence
        mixed = {s.name: s for s in b.live if s.kind in CHANNEL_MIXES}
        mixes += len(mixed)
        weights = {i.name: i for i in b.pipeline.inputs if i.dimensions == 2}
        assert set(weights) == {f"w{name[1:].split('_')[0]}" for name in mixed}, seed
        for name, s in mixed.items():
            w = weights[f"w{name[1:].split('_')[0]}"]
            assert w.type == s.type, (seed, name)
        assert {i.name for i in a.pipeline.inputs if i.dimensions == 2} == set(), "indices: no weight inputs"
        assert (a.pipeline.fingerprint == b.pipeline.fingerprint) == (not mixed), seed
        text = str(b.pipeline)
        assert "% 5 - 2" not in text and all(f"{w}[" in text for w in weights), seed
        assert str(a.pipeline).count("% 5 - 2") >= len(mixed), seed
    assert mixes >= 20, "the seeds hold channel mixes to check"


def test_bad_mix_weights_is_one_line():
    with pytest.raises(ValueError, match=r"^mix_weights must be one of indices, buffer .*got 'random'$"):
        random_pipeline(1, STAGES, SMALL, mix_weights="random")
    assert MIX_WEIGHTS == ("indices", "buffer")


@pytest.mark.parametrize("backend", ["numba", "llvm"])
def test_buffer_weights_compile_and_match_interpreter(backend):
    """Channel mixes with weight inputs (unrolled, RDom and hidden-sum variants, and a resampling mix) compute what
    the interpreter computes, under the backend the job uses (llvm) and numba."""
    cases = []
    seen: set[str] = set()
    for seed in range(60):
        g = generate(seed, STAGES, SMALL, mix_weights="buffer")
        tags = {f"{s.kind}:{s.variant.split()[0]}" for s in g.live if s.kind in CHANNEL_MIXES}
        if tags - seen:
            cases.append(seed)
            seen |= tags
    assert {"all_to_all:unrolled", "all_to_all:rdom", "all_to_all:sum", "rs_mix:rdom"} <= seen, seen
    _assert_matches_interpreter(cases, backend, STAGES, "--mix-weights buffer", mix_weights="buffer")


def _assert_matches_interpreter(seeds, backend: str, max_stages: int, flags: str, **options) -> None:
    """Each seed's pipeline (generated with `options`) under simple_schedule, compiled by `backend`, computes what
    the interpreter computes; a failure names the command that shows the pipeline."""
    w = Worker()
    try:
        for seed in seeds:
            p = random_pipeline(seed, max_stages, SMALL, **options)
            inputs = p.random_inputs(seed)
            with np.errstate(all="ignore"):
                expected = ir.interpret(p, inputs)
            m = backends.measure(backends.compile(p, simple_schedule(p), backend=backend, worker=w), inputs,
                                 CHECK_ONLY, expected=expected, worker=w)
            assert m.status == "ok", (f"seed {seed}: {m.status}: {m.error}\nreproduce: python -m generator.random "
                                      f"--show {seed} --max-stages {max_stages} --size 16,12,3 {flags}")
    finally:
        w.close()


# -- app-like motifs ---------------------------------------------------------------------------------


def _motif_pipelines(n: int, motifs: float = 0.5, max_stages: int = 20):
    return [generate(seed, max_stages, SMALL, motifs=motifs) for seed in range(n)]


def test_no_motifs_by_default():
    """motifs=0 (the default) makes Halide's generator's pipelines: no motif Func, one random stage per slot, and
    the same stages as asking for motifs=0 explicitly."""
    for seed in range(60):
        g = generate(seed, 12, SMALL)
        assert not {s.kind for s in g.stages} & set(MOTIF_KINDS), seed
        assert len(g.sequence) == 10 and set(g.sequence) <= set(KINDS), seed
        assert generate(seed, 12, SMALL, motifs=0.0).stages == g.stages


def test_motif_structure():
    """Pyramids: each level down halves one side of the stage before it, each level up doubles one, and every
    combination joins a level with the upsampled result of the same shape (as a Laplacian pyramid collapses);
    stencil chains keep their operand's shape and read only it. Motifs count against max_stages like stages."""
    levels = collections.Counter()
    chains = 0
    for seed, g in enumerate(_motif_pipelines(60)):
        assert len(g.sequence) == 18, seed  # 20 - input - output: every slot, a motif's Funcs included
        info = {s.name: s for s in g.stages}
        depth = 0
        for s in g.stages:
            ops = [info[o] for o in s.operands]
            if s.kind == "pyr_down":
                (o,) = ops
                assert sorted(a / b for a, b in zip(o.shape[:2], s.shape[:2])) == [1, 2] and o.shape[2] == s.shape[2]
                depth += 1
            elif s.kind == "pyr_up":
                (o,) = ops
                assert sorted(b / a for a, b in zip(o.shape[:2], s.shape[:2])) == [1, 2] and o.shape[2] == s.shape[2]
            elif s.kind == "pyr_mix":
                a, b = ops
                assert a.shape == b.shape == s.shape and b.kind == "pyr_up", (seed, s.name)
                if depth:
                    levels[depth // 2] += 1
                    depth = 0
            elif s.kind == "stencil2d":
                (o,) = ops
                assert o.shape == s.shape and o.type == s.type
                chains += o.kind != "stencil2d"
        assert g.pipeline.fingerprint == generate(seed, 20, SMALL, motifs=0.5).pipeline.fingerprint
    assert set(DEFAULT_MOTIF_KINDS) == {"pyramid", "stencil_chain"}
    assert chains >= 20 and sum(levels.values()) >= 20 and len(levels) >= 3, (chains, levels)


def _conv_layer_pipelines(n: int, max_stages: int = 20, size=SMALL):
    return [generate(seed, max_stages, size, motifs=0.5, motif_kinds=("conv_layer",)) for seed in range(n)]


def test_conv_layer_motif_structure():
    """A conv_layer motif is CNN layers as the conv_layer app's: an f32 convolution over all its operand's channels
    into 8-64 output channels (the channel reduction innermost, weights and bias read from inputs), then a ReLU of
    the same shape; a 1x1 or 3x3 kernel; a stride of 1, 2 or 4 (a chain's first layer) divides both sides.
    Asking for conv layers only makes no pyramid or stencil chain, and the default kinds make no conv layer."""
    variants = collections.Counter()
    for seed, g in enumerate(_conv_layer_pipelines(60)):
        assert len(g.sequence) == 18, seed
        assert not {s.kind for s in g.stages} & {"pyr_down", "pyr_up", "pyr_mix", "stencil2d"}, seed
        info = {s.name: s for s in g.stages}
        funcs = {f.name: f for f in g.pipeline.funcs}
        for s in g.stages:
            if s.kind == "conv_layer":
                (o,) = [info[n] for n in s.operands]
                k, stride, chans = s.variant.split()
                variants[k, stride] += 1
                step = int(stride[1:])
                assert chans == f"{o.shape[2]}->{s.shape[2]}" and 8 <= s.shape[2] <= 64 and s.type == ir.f32
                assert all(abs(a / step - b) <= 0.5 for a, b in zip(o.shape[:2], s.shape[:2])), (seed, s)  # rounded
                assert step in (1, 2, 4)
                if s.name in funcs:
                    (update,) = funcs[s.name].updates  # the reduction over (ci, kx, ky), ci innermost
                    assert [(r.min, r.extent) for r in update.rdom] == [(0, o.shape[2])] + [(0, 3)] * (k == "3x3") * 2
            elif s.kind == "conv_relu":
                (o,) = [info[n] for n in s.operands]
                assert o.kind == "conv_layer" and o.shape == s.shape
    assert {("3x3", "s1"), ("1x1", "s1"), ("3x3", "s2"), ("3x3", "s4")} <= set(variants), variants
    assert not any({s.kind for s in generate(seed, 20, SMALL, motifs=0.5).stages} & {"conv_layer", "conv_relu"}
                   for seed in range(30))


@pytest.mark.parametrize("backend", ["numba", "llvm"])
def test_conv_layer_motif_pipelines_compile_and_match_interpreter(backend):
    """Conv layers of every kernel and stride compute what the interpreter computes."""
    cases = []
    seen: set[str] = set()
    for seed, g in enumerate(_conv_layer_pipelines(40, 14)):
        tags = {" ".join(s.variant.split()[:2]) for s in g.live if s.kind == "conv_layer"}
        if tags - seen:
            cases.append(seed)
            seen |= tags
    assert {"3x3 s1", "1x1 s1", "3x3 s2", "1x1 s2", "3x3 s4"} <= seen, seen
    _assert_matches_interpreter(cases[:5], backend, 14, "--motifs 0.5 --motif-kinds conv_layer", motifs=0.5,
                                motif_kinds=("conv_layer",))


def test_depthwise_separable_and_max_filter_motif_structure():
    """A depthwise_separable motif is a MobileNet block as the depthwise_separable_conv app's: (a 1x1 expansion
    layer when its operand has few channels,) a 3x3 convolution of each channel on its own as an RDom update over
    the window, then a 1x1 pointwise layer. A max_filter motif is the max_filter app's scans: a 4-D vert_log whose
    update runs over rows then slices, a vertical max of 2R+1 rows, a horizontal max over 2R+1 columns as an RDom
    update; the 4-D Func is no other stage's operand."""
    blocks = expansions = filters = 0
    for seed in range(40):
        g = generate(seed, 20, SMALL, motifs=0.5, motif_kinds=("depthwise_separable",))
        info, funcs = {s.name: s for s in g.stages}, {f.name: f for f in g.pipeline.funcs}
        for s in g.stages:
            if s.kind == "dw_conv":
                (o,) = [info[n] for n in s.operands]
                assert o.shape == s.shape and s.shape[2] >= 8 and s.type == ir.f32, (seed, s)
                expansions += o.kind == "conv_relu"
                if s.name in funcs:
                    (update,) = funcs[s.name].updates
                    assert [(r.min, r.extent) for r in update.rdom] == [(0, 3), (0, 3)]
            elif s.kind == "conv_layer":
                (o,) = [info[n] for n in s.operands]
                blocks += o.kind == "dw_conv" and s.variant.startswith("1x1 s1")
        g = generate(seed, 20, SMALL, motifs=0.5, motif_kinds=("max_filter",))
        info, funcs = {s.name: s for s in g.stages}, {f.name: f for f in g.pipeline.funcs}
        for s in g.stages:
            if s.kind == "vert_log" and s.name in funcs:
                (update,) = funcs[s.name].updates
                assert len(funcs[s.name].args) == 4
                rows, slices = update.rdom  # rows inner, slices 1..top outer
                (vert,) = [v for v in g.stages if v.operands == (s.name,)]
                radius = int(vert.variant[1:])
                assert rows.min == -radius and rows.extent > 2 * radius and slices.min == 1
                assert int(s.variant.split()[1]) == slices.extent + 1 == math.floor(math.log2(2 * radius + 1)) + 1
            elif s.kind == "vert_max":
                (o,) = [info[n] for n in s.operands]
                assert o.kind == "vert_log" and o.shape == s.shape
            elif s.kind == "horiz_max":
                (o,) = [info[n] for n in s.operands]
                radius = int(s.variant[1:])
                assert o.kind == "vert_max" and o.variant == s.variant and 2 <= radius <= 12
                if s.name in funcs:
                    (update,) = funcs[s.name].updates
                    assert [(r.min, r.extent) for r in update.rdom] == [(-radius, 2 * radius + 1)]
                filters += 1
            assert not any(info[n].kind == "vert_log" for n in s.operands) or s.kind == "vert_max", (seed, s)
    assert blocks >= 15 and expansions >= 10 and filters >= 15, (blocks, expansions, filters)


@pytest.mark.parametrize("backend", ["numba", "llvm"])
@pytest.mark.parametrize("motif", ["depthwise_separable", "max_filter"])
def test_depthwise_and_max_filter_motif_pipelines_match_interpreter(backend, motif):
    """Both motifs, on integer and float operands, compute what the interpreter computes."""
    kinds = {"depthwise_separable": "dw_conv", "max_filter": "horiz_max"}
    cases = []
    seen: set[bool] = set()
    for seed in range(40):
        g = generate(seed, 12, SMALL, motifs=0.5, motif_kinds=(motif,))
        floats = {s.type.is_float for s in g.live if s.kind == kinds[motif]}
        if floats - seen or (floats and len(cases) < 2):
            cases.append(seed)
            seen |= floats
    assert seen == ({True} if motif == "depthwise_separable" else {True, False}), seen
    _assert_matches_interpreter(cases[:3], backend, 12, f"--motifs 0.5 --motif-kinds {motif}", motifs=0.5,
                                motif_kinds=(motif,))


def test_bad_motifs_is_one_line():
    for bad in (-0.1, 1.5, "0.2", True, None):
        with pytest.raises(ValueError, match=r"^motifs must be a number in \[0, 1\] .*got .*$"):
            random_pipeline(1, STAGES, SMALL, motifs=bad)
    from generator.batch import BatchSpec
    from generator.job.config import JobConfig

    with pytest.raises(ValueError, match=r"^motifs must be a number in \[0, 1\]"):
        JobConfig(motifs=2.0)
    with pytest.raises(ValueError, match=r"^motifs must be a number in \[0, 1\]"):
        BatchSpec(seeds=(1,), motifs=-1.0)
    for bad in ((), ("conv",), ("pyramid", "pyramid"), None):
        with pytest.raises(ValueError, match=r"^motif_kinds must be distinct names among pyramid, stencil_chain, "
                                             r"conv_layer, depthwise_separable, max_filter .*got .*$"):
            random_pipeline(1, STAGES, SMALL, motifs=0.5, motif_kinds=bad)
    with pytest.raises(ValueError, match=r"^motif_kinds must be distinct names"):
        JobConfig(motif_kinds=["conv-layer"])
    with pytest.raises(ValueError, match=r"^motif_kinds must be distinct names"):
        BatchSpec(seeds=(1,), motif_kinds=("pyramids",))


@pytest.mark.parametrize("backend", ["numba", "llvm"])
def test_motif_pipelines_compile_and_match_interpreter(backend):
    """Pyramids of several levels (strided and box downsampling, nearest and linear upsampling) and stencil chains
    of float and integer types compute what the interpreter computes."""
    cases = []
    seen: set[str] = set()
    for seed in range(40):
        g = generate(seed, 14, SMALL, motifs=0.5)
        tags = {f"{s.kind}:{(s.variant.split() or ['-'])[0]}:{s.type.is_float}" for s in g.live if s.kind in MOTIF_KINDS}
        if tags - seen:
            cases.append(seed)
            seen |= tags
    assert {"pyr_down:box:True", "pyr_down:strided:False", "pyr_up:linear:False", "pyr_up:nearest:True",
            "stencil2d:3x3:True", "stencil2d:5x5:False"} <= seen, seen
    _assert_matches_interpreter(cases[:6], backend, 14, "--motifs 0.5", motifs=0.5)


def test_stage_kind_parses_names():
    assert stage_kind("s3_conv2d") == "conv2d"
    assert stage_kind("s12_conv1d_rdom") == "conv1d_rdom"
    assert stage_kind("s4_rs_mix") == "rs_mix"
    assert stage_kind("s9_pyr_down") == "pyr_down" and stage_kind("s2_stencil2d") == "stencil2d"
    for bad in ("conv2d", "s_conv2d", "s3_frobnicate", "x3_pad"):
        with pytest.raises(ValueError):
            stage_kind(bad)


# -- validity: interpreter == numba under the default schedule -------------------------------------


def _tags(g, markov: bool) -> set[str]:
    """What a pipeline exercises: its stage kinds and their main variants."""
    out = {"markov"} if markov else set()
    for s in g.live:
        out.add(s.kind)
        v = s.variant.split()
        if s.kind in ("stencil", "conv1d_rdom", "conv1d_sum"):
            out.add(f"{s.kind}:{s.variant[0]}")
        elif s.kind in ("conv2d", "all_to_all", "upsample", "downsample", "unary", "activation", "scan", "rs_up",
                        "rs_down"):
            out.add(f"{s.kind}:{v[0]}")
        elif s.kind == "pool":
            out.add(f"pool:{v[0]}:{v[1]}")
        elif s.kind == "histogram":
            out.add(f"histogram:{v[-1]}")
    return out


@functools.cache
def ci_cases(n: int = N_CI) -> tuple[tuple[int, bool], ...]:
    """A fixed subset of (seed, markov) pairs: a greedy cover of every kind and variant seen among the
    candidates, cheapest first, then the cheapest remaining seeds up to n (cost: the stages numba compiles)."""
    cands = {}
    for markov in (False, True):
        for seed in range(200 if not markov else 100):
            g = generate(seed, STAGES, SMALL, markov)
            cost = 3 + sum(len(f.definitions) for f in g.pipeline.funcs)
            cands[(seed, markov)] = (cost, _tags(g, markov))
    want = set().union(*(t for _, t in cands.values()))
    chosen: list[tuple[int, bool]] = []
    covered: set[str] = set()
    while covered != want:
        best = max((k for k in cands if k not in chosen),
                   key=lambda k: (len(cands[k][1] - covered) / cands[k][0], -k[0], k[1]))
        chosen.append(best)
        covered |= cands[best][1]
    rest = sorted((k for k in cands if k not in chosen), key=lambda k: (cands[k][0], k[1], k[0]))
    chosen += rest[:max(0, n - len(chosen))]
    return tuple(chosen)


class Checker:
    """Runs the validity check of (seed, markov) pairs on `jobs` threads, each with its own compile worker
    process: generate, interpret, compile under simple_schedule, run and compare."""

    def __init__(self, jobs: int = JOBS):
        self.pool = ThreadPoolExecutor(max_workers=jobs)
        self.local = threading.local()
        self.workers: list[Worker] = []

    def submit(self, seed: int, markov: bool) -> Future:
        return self.pool.submit(self.check, seed, markov)

    def check(self, seed: int, markov: bool) -> tuple[str, str]:
        w = getattr(self.local, "w", None)
        if w is None:
            w = self.local.w = Worker()
            self.workers.append(w)
        try:
            p = random_pipeline(seed, STAGES, SMALL, markov)
            inputs = p.random_inputs(seed)
            with np.errstate(all="ignore"):  # NaN and inf are legitimate values of random programs
                expected = ir.interpret(p, inputs)
        except Exception as e:  # noqa: BLE001 - reported with the seed
            return "generator_error", f"{type(e).__name__}: {e}"
        try:
            m = backends.measure(backends.compile(p, simple_schedule(p), worker=w), inputs, CHECK_ONLY,
                                 expected=expected, worker=w)
        except Exception as e:  # noqa: BLE001 - ScheduleError / CompileError: reported with the seed
            return type(e).__name__, str(e)
        return m.status, m.error

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        for w in self.workers:
            w.close()


def check_all(cases) -> dict:
    checker = Checker()
    try:
        futures = {case: checker.submit(*case) for case in cases}
        return {case: fut.result() for case, fut in futures.items()}
    finally:
        checker.close()


@pytest.fixture(scope="module")
def ci_futures():
    """Every CI case submitted at once; each test then waits for its own result only."""
    checker = Checker()
    yield {case: checker.submit(*case) for case in ci_cases()}
    checker.close()


def test_ci_subset_covers_every_kind():
    cases = ci_cases()
    assert len(cases) == N_CI and len(set(cases)) == N_CI
    tags = set().union(*(_tags(generate(s, STAGES, SMALL, m), m) for s, m in cases))
    assert set(KINDS) <= tags, set(KINDS) - tags
    for t in ("conv2d:unrolled", "conv2d:rdom", "conv2d:sum", "pool:avg:unrolled", "pool:max:rdom", "pool:avg:sum",
              "all_to_all:unrolled", "all_to_all:rdom", "all_to_all:sum", "upsample:linear", "upsample:nearest",
              "downsample:box", "downsample:strided", "scan:x", "scan:y", "scan:c", "activation:tanh",
              "histogram:i32", "histogram:f32", "markov"):
        assert t in tags, t


@pytest.mark.parametrize("k", range(N_CI))
def test_ci_seed_compiles_and_matches_interpreter(k, ci_futures):
    seed, markov = ci_cases()[k]
    status, error = ci_futures[(seed, markov)].result()
    assert status == "ok", (f"seed {seed}{' markov' if markov else ''}: {status}: {error}\n"
                            f"reproduce: python -m generator.random --show {seed} --max-stages {STAGES} "
                            f"--size 16,12,3{' --markov' if markov else ''}")


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("SLOW") != "1", reason="set SLOW=1 to run the 300-seed check")
def test_300_seeds_compile_and_match_interpreter():
    cases = [(s, False) for s in range(250)] + [(s, True) for s in range(50)]
    results = check_all(cases)
    bad = {k: v for k, v in results.items() if v[0] != "ok"}
    assert not bad, "\n".join(f"seed {s}{' markov' if m else ''}: {st}: {err}" for (s, m), (st, err) in bad.items())


# -- statistics -------------------------------------------------------------------------------------


def test_every_kind_occurs_in_300_seeds():
    kinds = collections.Counter()
    for seed in range(300):
        kinds.update(s.kind for s in generate(seed, 20, SMALL).live)
    missing = [k for k in KINDS + AUX_ROLES if kinds[k] == 0]
    assert not missing, missing
    # no kind is marginal: the uniform draw gives each at least ~2% of the stages
    total = sum(kinds[k] for k in KINDS)
    assert min(kinds[k] for k in KINDS) > 0.02 * total, kinds


def test_transition_probabilities():
    for prev in (None, *KINDS):
        for markov in (False, True):
            probs = transition_probabilities(prev, markov)
            assert set(probs) == set(KINDS)
            assert abs(sum(probs.values()) - 1) < 1e-12
    assert transition_probabilities("conv2d", True)["activation"] == 0.8
    assert transition_probabilities("pool", True)["conv2d"] == 0.8
    assert transition_probabilities("stencil", True) == transition_probabilities("stencil", False)


def _successors(markov: bool, n: int) -> dict[str, collections.Counter]:
    succ: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for seed in range(n):
        seq = generate(seed, 20, SMALL, markov).sequence
        for a, b in itertools.pairwise(seq):
            succ[a][b] += 1
    return succ


def test_markov_follows_the_matrix():
    succ = _successors(True, 150)
    for row, want in MARKOV.items():
        tot = sum(succ[row].values())
        assert tot >= 150, (row, tot)
        for kind, p in want.items():
            got = succ[row][kind] / tot
            # pool can be infeasible on small stages (then a binary op is made instead): allow a shortfall
            lo = p - (0.12 if kind == "pool" else 0.07)
            assert lo <= got <= p + 0.07, (row, kind, got, p)
    uniform = _successors(False, 150)
    act_after_conv = uniform["conv2d"]["activation"] / sum(uniform["conv2d"].values())
    assert act_after_conv < 0.2
    conv = lambda s: sum(v["conv2d"] for v in s.values()) / sum(sum(v.values()) for v in s.values())
    assert conv(succ) > 2 * conv(uniform)


# -- the command line -------------------------------------------------------------------------------


def _cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "generator.random", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300, check=False)


def test_cli_show_prints_the_pipeline():
    r = _cli("--show", "3", "--max-stages", "8", "--size", "16,12,3")
    assert r.returncode == 0, r.stderr
    p = random_pipeline(3, 8, SMALL)
    assert str(p) in r.stdout
    assert "s0_input[x, y, c] = input[x, y, c]" in r.stdout
    assert p.fingerprint in r.stdout
    kinds = [line for line in r.stdout.splitlines() if line.startswith("# kinds: ")]
    assert kinds == ["# kinds: " + ", ".join(s.kind for s in generate(3, 8, SMALL).live)]


@pytest.mark.parametrize("args", [[], ["--stats", "0"], ["--stats", "ten"], ["--show"], ["--frobnicate"],
                                  ["--show", "1", "--max-stages", "1"], ["--show", "1", "--size", "16,12"],
                                  ["--stats", "5", "--show", "1"], ["--stats", "5", "--jobs", "2"],
                                  ["--check", "-3"], ["--show", "1", "--schedule", "naive"],
                                  ["--check", "2", "--schedule", "fast"], ["--show", "1", "--mix-weights", "random"],
                                  ["--show", "1", "--motifs", "1.5"], ["--stats", "3", "--motifs", "x"],
                                  ["--show", "1", "--motifs", "0.2", "--motif-kinds", "conv"]])
def test_cli_bad_arguments_exit_2_with_one_line(args, capsys):
    from generator.random import main

    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert len(out.err.strip().splitlines()) == 1, out.err
    assert out.err.startswith("python -m generator.random: error: ")


def test_cli_bad_argument_exit_status_from_the_shell():
    r = _cli("--show", "seven")
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "error" in r.stderr


def test_cli_stats(capsys):
    from generator.random import main

    main(["--stats", "30", "--max-stages", "8", "--size", "16,12,3", "--markov"])
    out = capsys.readouterr()
    for part in ("stage kinds", "pipeline lengths (Funcs per pipeline)", "value types", "sizes:", "Markov rows",
                 "Summary: 30 pipelines"):
        assert part in out.out, part
    assert "[30/30]" in out.err


def test_cli_show_with_buffer_weights():
    r = _cli("--show", "0", "--max-stages", "8", "--size", "16,12,3", "--mix-weights", "buffer")
    assert r.returncode == 0, r.stderr
    p = random_pipeline(0, 8, SMALL, mix_weights="buffer")
    assert str(p) in r.stdout and p.fingerprint in r.stdout and "weights from buffers" in r.stdout


def test_cli_check(capsys):
    from generator.random import main

    assert main(["--check", "1", "--seed", "4", "--max-stages", "2", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "under simple_schedule" in out and "[1/1]" in out and "check: 1 pipelines, 0 failing" in out
    assert main(["--check", "2", "--seed", "5", "--max-stages", "3", "--jobs", "1", "--schedule", "naive"]) == 0
    out = capsys.readouterr().out
    assert "under naive_schedule" in out and "[2/2]" in out and "check: 2 pipelines, 0 failing" in out
