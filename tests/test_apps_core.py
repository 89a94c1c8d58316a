"""The app registry and the four core apps (blur, unsharp, stencil chain, matmul).

Every registered app follows the module convention and its expert schedule is valid at the full size;
the core apps' interpreter outputs equal independent numpy implementations written here, and the numba
backend equals the interpreter under the naive and the expert schedules (the other apps are checked the
same way in test_apps_camera / test_apps_imaging / test_apps_learning).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import backends
import ir
from generator.apps import APPS, get_app
from generator.apps import stencil_chain as stencil_chain_app
from generator.apps import unsharp as unsharp_app
from ir.builder import naive_schedule

from .fuzz import CHECK_ONLY

F = np.float32
ROOT = Path(__file__).resolve().parent.parent
CORE = ("blur", "unsharp", "stencil_chain", "matmul")


# -- the registry ---------------------------------------------------------------------------------


def test_the_suite_has_the_papers_apps():
    papers = {"bilateral_grid", "local_laplacian", "nl_means", "lens_blur", "camera_pipe", "stencil_chain",
              "harris", "hist_eq", "max_filter", "unsharp", "interpolate", "conv_layer", "matmul", "iir_blur",
              "depthwise_separable_conv", "bgu"}
    assert papers <= set(APPS)
    assert sum(app.schedule is not None for app in APPS.values()) >= 6


def test_unknown_app_names_the_choices():
    with pytest.raises(KeyError, match="unknown app 'sobel'; apps: bilateral_grid"):
        get_app("sobel")


def test_a_command_lines_apps_are_names_in_order_or_all():
    from generator.apps import app_list

    assert app_list("unsharp, blur,") == ["unsharp", "blur"]
    assert app_list("all") == list(APPS)
    with pytest.raises(ValueError, match=r"^unknown app 'sobel'; apps: bilateral_grid, .* \(or all\)$"):
        app_list("blur,sobel")
    with pytest.raises(ValueError, match="^no app given"):
        app_list(",")


@pytest.mark.parametrize("name", list(APPS))
def test_app_module_convention(name):
    app = APPS[name]
    assert app.description and "\n" not in app.description
    assert set(app.sizes) == {"full", "small"}
    for size in ("small", "full"):
        p = app.build(size)
        assert p.name.startswith(name)
        assert all(e > 0 for sizes in p.output_sizes.values() for e in sizes)
    small, full = app.build("small"), app.build("full")
    assert np.prod(small.output_sizes[small.output_names[0]]) < np.prod(full.output_sizes[full.output_names[0]])
    assert small.fingerprint != full.fingerprint
    app.schedule(full).validate(full)  # the expert schedule holds at full size (raises ScheduleError if not)


def test_cli_lists_every_app_with_stage_counts_and_sizes():
    r = subprocess.run([sys.executable, "-m", "generator.apps"], capture_output=True, text=True, cwd=ROOT,
                       timeout=300, check=True)
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["app", "Funcs", "stages", "inputs"]
    for name, app in APPS.items():
        row = next(line for line in lines if line.split()[:1] == [name])
        p = app.build("full")
        assert row.split()[1:3] == [str(len(p.funcs)), str(sum(len(n.stages) for n in p.dag.nodes))]
        assert " x ".join(map(str, p.output_sizes[p.output_names[0]])) in row
    assert f"{len(APPS)} apps, {len(APPS)} with an expert schedule" in r.stdout


# -- numpy twins of the core apps -----------------------------------------------------------------


def _window(inputs, p, name, lo, shape):
    """inputs[name] over absolute coordinates [lo, lo + shape) (the array starts at the region min)."""
    a = inputs[name]
    mins = [m for m, _ in p.input_regions[name]]
    idx = tuple(slice(l - m, l - m + s) for l, m, s in zip(lo, mins, shape))
    return a[idx]


def blur_numpy(p, inputs):
    W, H = p.output_sizes["blur_y"]
    a = _window(inputs, p, "input", (-1, -1), (W + 2, H + 2))
    bx = (a[:-2] + a[1:-1] + a[2:]) / F(3)
    return (bx[:, :-2] + bx[:, 1:-1] + bx[:, 2:]) / F(3)


def unsharp_numpy(p, inputs):
    W, H, _ = p.output_sizes["output"]
    a = _window(inputs, p, "input", (-2, -2, 0), (W + 4, H + 4, 3))
    g = F(0.299) * a[..., 0] + F(0.587) * a[..., 1] + F(0.114) * a[..., 2]
    w = [F(v) for v in unsharp_app.GAUSS]
    by = w[0] * g[:, 0:H]
    for k in range(1, 5):
        by = by + w[k] * g[:, k:k + H]
    bx = w[0] * by[0:W]
    for k in range(1, 5):
        bx = bx + w[k] * by[k:k + W]
    gc = g[2:2 + W, 2:2 + H]
    ratio = (F(2) * gc - bx) / (gc + F(0.001))
    return ratio[..., None] * a[2:2 + W, 2:2 + H, :]


def stencil_chain_numpy(p, inputs, stages=32, radius=2):
    W, H = p.output_sizes[p.output_names[0]]
    r = stages * radius
    cur = _window(inputs, p, "input", (-r, -r), (W + 2 * r, H + 2 * r))
    w = stencil_chain_app.weights(radius)
    scale = F(1.0 / sum(map(sum, w)))
    for _ in range(stages):
        w_out, h_out = cur.shape[0] - 2 * radius, cur.shape[1] - 2 * radius
        acc = None
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                t = F(w[dy + radius][dx + radius]) * cur[radius + dx:radius + dx + w_out,
                                                         radius + dy:radius + dy + h_out]
                acc = t if acc is None else acc + t
        cur = acc * scale
    return cur


def matmul_numpy(p, inputs):
    A, B = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
    return A @ B


TWINS = {"blur": (blur_numpy, "blur_y", 1e-6), "unsharp": (unsharp_numpy, "output", 1e-5),
         "stencil_chain": (stencil_chain_numpy, "stage32", 1e-5), "matmul": (matmul_numpy, "C", 1e-5)}


@pytest.mark.parametrize("name", CORE)
def test_core_app_interpreter_matches_numpy(name):
    twin, out, rtol = TWINS[name]
    p = APPS[name].build("small")
    inputs = p.random_inputs(seed=3)
    got = ir.interpret(p, inputs)[out]
    want = twin(p, inputs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def test_a_wrong_twin_would_be_caught():
    """The comparison is sharp enough to see a one-tap change of the blur."""
    p = APPS["blur"].build("small")
    inputs = p.random_inputs(seed=3)
    got = ir.interpret(p, inputs)["blur_y"]
    W, H = p.output_sizes["blur_y"]
    a = _window(inputs, p, "input", (-1, -1), (W + 2, H + 2))
    off_by_one = (a[1:-1] + a[1:-1] + a[2:]) / F(3)
    wrong = (off_by_one[:, :-2] + off_by_one[:, 1:-1] + off_by_one[:, 2:]) / F(3)
    assert not np.allclose(got, wrong, rtol=1e-5)


@pytest.mark.parametrize("which", ["naive", "expert"])
@pytest.mark.parametrize("name", CORE)
def test_core_app_compiles_and_matches_interpreter(name, which):
    app = APPS[name]
    p = app.build("small")
    inputs = p.random_inputs(seed=1)
    expected = ir.interpret(p, inputs)
    ln = naive_schedule(p) if which == "naive" else app.schedule(p)
    m = backends.measure(backends.compile(p, ln), inputs, CHECK_ONLY, expected=expected)
    assert m.status == "ok", m.error
