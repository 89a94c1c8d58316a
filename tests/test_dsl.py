"""The DSL surface: building pipelines, interpreting them, and the errors bad programs raise."""

import json

import numpy as np
import pytest

import ir
from ir import Func, Input, Pipeline, PipelineError, RDom, Var, cast, clamp, f32, i32, select, u8

x, y = Var("x"), Var("y")


def F(a):
    return np.asfortranarray(a)


def assert_error(build, *names):
    """`build()` raises a PipelineError whose message is one line and names every Func in `names`."""
    with pytest.raises(PipelineError) as info:
        build()
    msg = str(info.value)
    assert "\n" not in msg
    for n in names:
        assert n in msg, (n, msg)
    return msg


# -- the example ----------------------------------------------------------------------------------


def blur_pipeline():
    inp = Input("inp", f32, 2)
    blur_x, blur_y = Func("blur_x"), Func("blur_y")
    blur_x[x, y] = (inp[x - 1, y] + inp[x, y] + inp[x + 1, y]) / 3
    blur_y[x, y] = (blur_x[x, y - 1] + blur_x[x, y] + blur_x[x, y + 1]) / 3
    return Pipeline([blur_y], output_sizes={blur_y: (64, 48)})


def test_blur_input_regions():
    p = blur_pipeline()
    assert p.input_regions == {"inp": ((-1, 66), (-1, 50))}
    assert p.output_names == ("blur_y",)
    assert blur_pipeline().fingerprint == p.fingerprint


def test_blur_random_inputs_deterministic():
    p = blur_pipeline()
    a = p.random_inputs(seed=0)
    assert list(a) == ["inp"]
    arr = a["inp"]
    assert arr.dtype == np.float32 and arr.shape == (66, 50)
    assert arr.flags.f_contiguous and not arr.flags.c_contiguous
    assert 0.0 <= arr.min() and arr.max() < 1.0
    assert np.array_equal(arr, p.random_inputs(seed=0)["inp"])
    assert not np.array_equal(arr, p.random_inputs(seed=1)["inp"])


def test_blur_interpret_matches_numpy():
    p = blur_pipeline()
    a = p.random_inputs(seed=3)["inp"]
    bx = ((a[:-2, :] + a[1:-1, :]) + a[2:, :]) / np.float32(3)  # x in [0, 63], y in [-1, 48]
    by = ((bx[:, :-2] + bx[:, 1:-1]) + bx[:, 2:]) / np.float32(3)
    out = ir.interpret(p, {"inp": a})["blur_y"]
    assert out.shape == (64, 48) and out.dtype == np.float32 and out.flags.f_contiguous
    np.testing.assert_array_equal(out, by)


# -- updates and reductions -----------------------------------------------------------------------


def _interpret_gathering(p, inputs, monkeypatch):
    """The interpreter with every read a numpy gather (its strided-view shortcut off)."""
    import importlib

    mod = importlib.import_module("ir.interpret")
    with monkeypatch.context() as m:
        m.setattr(mod, "_strided_view", lambda arr, idx: None)
        return ir.interpret(p, inputs)


def test_reads_as_strided_views_equal_numpy_gathers(monkeypatch):
    """Shifted, strided, transposed, constant and data-dependent reads: the interpreter reads the first four as
    views of the producer; each output equals, byte for byte, the one computed with gathers only."""
    x, y, c = Var("x"), Var("y"), Var("c")
    inp = Input("inp", f32, 3)
    idx = Input("idx", u8, 1)
    f = Func("f")
    f[x, y, c] = inp[x, y, c] * 2.0
    g = Func("g")
    g[x, y, c] = (f[x + 1, y, c] + f[2 * x, y + 2, c] + f[y, x, c] + f[3, y, 0]
                  + f[clamp(cast(i32, idx[x]), 0, 9), y, c] + f[x, y / 2, 2 - c])
    p = Pipeline([g], {g: (8, 9, 3)})
    inputs = p.random_inputs(0)
    import importlib

    mod = importlib.import_module("ir.interpret")
    views, real = [], mod._strided_view
    monkeypatch.setattr(mod, "_strided_view", lambda arr, idx: views.append(real(arr, idx)) or views[-1])
    got = ir.interpret(p, inputs)["g"]
    monkeypatch.undo()
    # views: inp, f(x + 1), f(2x), f(y, x), f(3, y, 0), idx(x); gathers: f at the data-dependent x, f(x, y / 2, 2 - c)
    assert sum(v is not None for v in views) == 6 and sum(v is None for v in views) == 2
    assert got.tobytes() == _interpret_gathering(p, inputs, monkeypatch)["g"].tobytes()


@pytest.mark.parametrize("seed", [3, 11])
def test_random_pipelines_interpret_the_same_with_views_and_gathers(seed, monkeypatch):
    from generator.random_pipeline import generate

    p = generate(seed, max_stages=12).pipeline
    inputs = p.random_inputs(seed)
    with np.errstate(all="ignore"):
        got = ir.interpret(p, inputs)
        want = _interpret_gathering(p, inputs, monkeypatch)
    assert all(got[k].tobytes() == want[k].tobytes() for k in want)


def test_sum_reduction_1d():
    a = Input("a", i32, 1)
    s = Func("s")
    r = RDom((0, 4))
    s[x] = 0
    s[x] += a[x + r]
    p = Pipeline([s], {s: (5,)})
    assert p.input_regions == {"a": ((0, 8),)}
    data = np.array([1, 2, 3, 4, 5, 6, 7, 8], dtype=np.int32)
    out = ir.interpret(p, {"a": data})["s"]
    assert out.dtype == np.int32
    assert out.tolist() == [10, 14, 18, 22, 26]


def test_conv2d_with_weights_input():
    img, w = Input("img", f32, 2), Input("w", f32, 2)
    conv = Func("conv")
    r = RDom((0, 3), (0, 3))
    conv[x, y] = 0.0
    conv[x, y] += img[x + r.x - 1, y + r.y - 1] * w[r.x, r.y]
    p = Pipeline([conv], {conv: (6, 5)})
    assert p.input_regions == {"img": ((-1, 8), (-1, 7)), "w": ((0, 3), (0, 3))}
    rng = np.random.default_rng(1)
    im = F(rng.integers(-4, 5, (8, 7)).astype(np.float32))  # small integers: float sums are exact
    wt = F(rng.integers(-2, 3, (3, 3)).astype(np.float32))
    expected = np.zeros((6, 5), np.float32)
    for i in range(3):
        for j in range(3):
            expected += im[i:i + 6, j:j + 5] * wt[i, j]
    out = ir.interpret(p, {"img": im, "w": wt})["conv"]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)


def test_scan_is_cumsum():
    inp = Input("inp", i32, 2)
    f = Func("scan")
    r = RDom((1, 5))
    f[x, y] = inp[x, y]
    f[r, y] = f[r - 1, y] + f[r, y]
    p = Pipeline([f], {f: (6, 3)})
    assert p.input_regions == {"inp": ((0, 6), (0, 3))}
    data = F(np.arange(18, dtype=np.int32).reshape(6, 3) - 5)
    out = ir.interpret(p, {"inp": data})["scan"]
    np.testing.assert_array_equal(out, np.cumsum(data, axis=0))


def test_histogram_u8_matches_bincount():
    img = Input("img", u8, 2)
    h = Func("hist")
    r = RDom((0, 7), (0, 5))
    h[x] = 0
    h[clamp(cast(i32, img[r.x, r.y]), 0, 255)] += 1
    p = Pipeline([h], {h: (256,)})
    assert p.input_regions == {"img": ((0, 7), (0, 5))}
    data = F(np.random.default_rng(2).integers(0, 256, (7, 5)).astype(np.uint8))
    data[0, 0] = data[1, 1] = data[2, 2] = 17
    out = ir.interpret(p, {"img": data})["hist"]
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.bincount(data.ravel(), minlength=256))
    assert out.sum() == 35 and out[17] >= 3


def test_histogram_i32_clamps_out_of_range_values():
    img = Input("img", i32, 1)
    h = Func("hist")
    r = RDom((0, 6))
    h[x] = 0
    h[clamp(img[r], 0, 255)] += 1
    p = Pipeline([h], {h: (256,)})
    data = np.array([-10, 0, 3, 300, 255, 3], dtype=np.int32)
    out = ir.interpret(p, {"img": data})["hist"]
    expected = np.zeros(256, np.int32)
    expected[0], expected[3], expected[255] = 2, 2, 2
    np.testing.assert_array_equal(out, expected)


def test_multiple_outputs_share_a_producer():
    a = Input("a", i32, 1)
    sq, plus, times = Func("sq"), Func("plus"), Func("times")
    sq[x] = a[x] * a[x]
    plus[x] = sq[x] + sq[x + 1]
    times[x] = sq[x] * 2
    p = Pipeline([plus, times], {plus: (4,), times: (3,)})
    assert p.output_names == ("plus", "times")
    assert p.input_regions == {"a": ((0, 5),)}
    out = ir.interpret(p, {"a": np.array([1, 2, 3, 4, 5], np.int32)})
    assert sorted(out) == ["plus", "times"]
    assert out["plus"].tolist() == [5, 13, 25, 41]
    assert out["times"].tolist() == [2, 8, 18]


def test_several_inputs():
    a, b = Input("a", u8, 2), Input("b", f32, 2)
    f = Func("f")
    f[x, y] = cast(f32, a[x, y]) * b[y, x] + 0.5
    p = Pipeline([f], {f: (3, 2)})
    assert p.input_regions == {"a": ((0, 3), (0, 2)), "b": ((0, 2), (0, 3))}
    av = F(np.array([[1, 2], [3, 4], [250, 6]], np.uint8))
    bv = F(np.array([[1.0, 2.0, 0.5], [-1.0, 0.25, 2.0]], np.float32))
    out = ir.interpret(p, {"a": av, "b": bv})["f"]
    np.testing.assert_array_equal(out, np.array([[1.5, -1.5], [6.5, 1.5], [125.5, 12.5]], np.float32))


def test_compound_assignment_casts_to_func_type():
    a, b = Input("a", u8, 1), Input("b", f32, 1)
    f = Func("acc")
    f[x] = a[x]
    f[x] += b[x]
    assert f.type == u8
    p = Pipeline([f], {f: (5,)})
    av = np.array([10, 200, 5, 0, 7], np.uint8)
    bv = np.array([3.7, 100.9, -2.5, 1000.0, np.nan], np.float32)
    out = ir.interpret(p, {"a": av, "b": bv})["acc"]
    assert out.dtype == np.uint8
    # b is cast to u8 first (truncate, saturate, NaN -> 0: 3, 100, 0, 255, 0), then added with wrap-around
    assert out.tolist() == [13, 44, 5, 255, 7]


def test_compound_multiply_and_subtract():
    a = Input("a", i32, 1)
    f = Func("f")
    f[x] = a[x]
    f[x] *= 3
    f[x] -= 1.9  # cast to i32 first: 1
    p = Pipeline([f], {f: (3,)})
    out = ir.interpret(p, {"a": np.array([1, -2, 5], np.int32)})["f"]
    assert out.tolist() == [2, -7, 14]


# -- JSON ---------------------------------------------------------------------------------------


def rich_pipeline():
    img, w = Input("img", u8, 2), Input("w", f32, 1)
    g, hist, out = Func("g"), Func("hist"), Func("out")
    g[x, y] = select(img[x, y] > 100, cast(f32, img[x, y]) * 0.5, -1.0)
    r = RDom((0, 3), name="k")
    g[x, y] += g[x, y] * w[r]
    q = RDom((0, 8), (0, 6), name="q")
    hist[x] = cast(u8, 0)
    hist[clamp(cast(i32, img[q.x, q.y]) / 16, 0, 15)] += 1
    out[x, y] = g[x, y] + cast(f32, hist[x % 16])
    return Pipeline([out], {out: (8, 6)}, name="rich")


def test_json_round_trip():
    p = rich_pipeline()
    q = Pipeline.from_json(json.loads(json.dumps(p.to_json())))
    assert q.name == "rich"
    assert q.fingerprint == p.fingerprint
    assert q.input_regions == p.input_regions == {"img": ((0, 8), (0, 6)), "w": ((0, 3),)}
    assert [n.name for n in q.dag.nodes] == [n.name for n in p.dag.nodes]
    inputs = p.random_inputs(seed=5)
    a, b = ir.interpret(p, inputs)["out"], ir.interpret(q, inputs)["out"]
    assert a.dtype == b.dtype == np.float32
    np.testing.assert_array_equal(a, b)


def test_fingerprint_ignores_name_but_not_sizes():
    a = Input("a", i32, 1)
    f = Func("f")
    f[x] = a[x] + 1
    p1, p2, p3 = Pipeline([f], {f: (4,)}, name="one"), Pipeline([f], {f: (4,)}, name="two"), Pipeline([f], {f: (5,)})
    assert p1.fingerprint == p2.fingerprint != p3.fingerprint


# -- errors -------------------------------------------------------------------------------------


def test_error_unbound_var():
    inp = Input("inp", f32, 2)
    f = Func("unbound_f")

    def build():
        f[x] = inp[x, y]
    msg = assert_error(build, "unbound_f")
    assert "y" in msg


def test_error_call_with_too_many_args():
    f, g = Func("one_d"), Func("caller")
    f[x] = x

    def build():
        g[x] = f[x, x]
    assert_error(build, "caller", "one_d")


def test_error_input_call_with_too_many_args():
    inp = Input("inp", f32, 2)
    g = Func("caller")

    def build():
        g[x, y] = inp[x, y, x]
    assert_error(build, "caller")


def test_error_update_wrong_number_of_coordinates():
    f = Func("two_d")
    f[x, y] = 0

    def build():
        f[x] = f[x, 0] + 1
    assert_error(build, "two_d")


def test_error_select_branch_types():
    a, b = Input("a", f32, 1), Input("b", i32, 1)
    f = Func("sel")

    def build():
        f[x] = select(x > 0, a[x], b[x])
    assert_error(build, "sel")


def test_error_select_condition_not_bool():
    f = Func("selc")

    def build():
        f[x] = select(x, 1, 2)
    assert_error(build, "selc")


def test_error_logical_and_on_non_bools():
    f = Func("logic")

    def build():
        f[x] = select(x & (x > 0), 1, 2)
    assert_error(build, "logic")


def test_error_clamp_bound_not_lossless():
    a = Input("a", u8, 1)
    f = Func("clampf")

    def build():
        f[x] = clamp(a[x], 0, x)  # an i32 bound does not convert losslessly to u8
    assert_error(build, "clampf")


def test_clamp_bound_that_converts_losslessly_is_accepted():
    a, b = Input("a", i32, 1), Input("b", u8, 1)
    f = Func("clampok")
    f[x] = clamp(a[x], b[x], 100)
    p = Pipeline([f], {f: (3,)})
    out = ir.interpret(p, {"a": np.array([-5, 50, 500], np.int32), "b": np.array([3, 60, 0], np.uint8)})["clampok"]
    assert f.type == i32 and out.tolist() == [3, 60, 100]


def test_error_update_value_of_other_type():
    a = Input("a", f32, 1)
    f = Func("intf")
    f[x] = 0

    def build():
        f[x] = f[x] + a[x]  # i32 + f32 is f32; only compound assignment casts
    assert_error(build, "intf")


def test_error_literal_not_representable():
    a = Input("a", u8, 1)
    f = Func("lit")

    def build():
        f[x] = a[x] + 300
    msg = assert_error(build, "lit")
    assert "300" in msg


def test_error_arithmetic_on_two_bools():
    f = Func("bools")

    def build():
        f[x] = (x > 0) + (x < 5)
    assert_error(build, "bools")


def test_error_cycle_at_pipeline_build():
    f, g = Func("cyc_f"), Func("cyc_g")
    f[x] = g[x] + 1  # g not defined yet: checked when the pipeline is built
    g[x] = f[x] * 2
    assert_error(lambda: Pipeline([g], {g: (4,)}), "cyc_f", "cyc_g")


def test_error_missing_output_size():
    f, g = Func("out_a"), Func("out_b")
    f[x] = x
    g[x] = x + 1
    assert_error(lambda: Pipeline([f, g], {f: (4,)}), "out_b")


def test_error_output_sizes_names_non_output():
    f, g = Func("producer"), Func("consumer")
    f[x] = x
    g[x] = f[x] + 1
    assert_error(lambda: Pipeline([g], {g: (4,), f: (4,)}), "producer")


@pytest.mark.parametrize("t", [f32, i32])
def test_error_unbounded_data_dependent_access(t):
    inp = Input("inp", t, 2)
    f, g, out = Func("dd_f"), Func("dd_g"), Func("dd_out")
    f[x, y] = inp[x, y]
    g[x, y] = x + y
    out[x, y] = g[cast(i32, f[x, y]), y]
    assert_error(lambda: Pipeline([out], {out: (4, 4)}), "dd_out", "dd_g")


def test_error_pure_definition_uses_rvar():
    a = Input("a", f32, 1)
    r = RDom((0, 3))
    f = Func("purer")

    def build():
        f[x] = a[x + r]
    assert_error(build, "purer")


def test_error_pure_definition_non_var_argument():
    f = Func("purearg")

    def build():
        f[x + 1] = 0
    assert_error(build, "purearg")


def test_error_pure_var_in_wrong_position_of_update():
    f = Func("swapped")
    f[x, y] = 0

    def build():
        f[y, x] = f[y, x] + 1
    assert_error(build, "swapped")


def test_error_update_reads_itself_at_other_pure_coordinate():
    f = Func("shifted")
    f[x] = x

    def build():
        f[x] = f[x + 1] + 1
    assert_error(build, "shifted")


def test_error_two_funcs_with_same_name():
    a, b, out = Func("dup"), Func("dup"), Func("user")
    a[x] = x
    b[x] = x * 2
    out[x] = a[x] + b[x]
    assert_error(lambda: Pipeline([out], {out: (4,)}), "dup")


def test_error_update_uses_a_var_nothing_iterates():
    x = Var("x")
    inp = Input("inp", f32, 1)
    f = Func("f")
    f[x] = inp[x]
    with pytest.raises(PipelineError, match="f: Var x is used in an update but is not stored at its own position"):
        f[x + 1] = f[x + 1] * 2.0


def test_reductions_into_every_point_apply_in_rdom_order_bit_for_bit():
    """f32 sums whose value depends on the order of addition, and wrapping i32 products: the interpreter
    applies the RDom points in order (r.x innermost), as a sequential loop does."""
    img = Input("img", f32, 2)
    acc, prod = Func("acc"), Func("prod")
    r = RDom((0, 4), (0, 3))
    acc[x, y] = 0.0
    acc[x, y] += img[x + r.x, y + r.y] * 1e7
    prod[x, y] = cast(i32, 1)
    prod[x, y] *= cast(i32, img[x + r.x, y + r.y]) * 40_000 + 7
    p = Pipeline([acc, prod], {acc: (5, 4), prod: (5, 4)})
    rng = np.random.default_rng(3)
    im = F((rng.standard_normal((8, 6)) * 1e3).astype(np.float32))
    want_acc = np.zeros((5, 4), np.float32)
    want_prod = np.ones((5, 4), np.int32)
    with np.errstate(over="ignore"):
        for ry in range(3):
            for rx in range(4):
                want_acc = want_acc + im[rx:rx + 5, ry:ry + 4] * np.float32(1e7)
                want_prod = want_prod * (im[rx:rx + 5, ry:ry + 4].astype(np.int32) * np.int32(40_000) + np.int32(7))
        out = ir.interpret(p, {"img": im})
    assert out["acc"].tobytes() == want_acc.tobytes()
    assert out["prod"].tobytes() == want_prod.tobytes()
