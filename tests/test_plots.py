"""The figures of training and evaluation, read back from their matplotlib Figure objects (not pixels): every
axis states its unit, the top-k curve has the random-order reference and integer ticks, speedup axes are
labelled above and below 1x with the naive and expert levels drawn, predicted-vs-measured has one colour per
pipeline, and no title runs off its figure. Each figure is drawn by Agg, as log_figures saves it."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_hex

from evaluate.plots import speedup_bars, speedup_label
from train import plots
from train.metrics import random_topk_scores, topk_scores


def drawn(fig):
    FigureCanvasAgg(fig).draw()
    return fig


def pipelines_data(n_pipelines: int, per: int, scale: float, seed: int = 0):
    """Runtimes around `scale` seconds, predictions off by noise, `per` schedules for each pipeline."""
    rng = np.random.default_rng(seed)
    ids = np.repeat([f"pipeline-{i:02d}-{'x' * 20}" for i in range(n_pipelines)], per)
    measured = scale * rng.uniform(0.5, 20, ids.size)
    pred = measured * rng.lognormal(0, 0.3, ids.size)
    return pred, measured, ids


def inside(fig, artist) -> bool:
    box, fig_box = artist.get_window_extent(), fig.bbox
    return box.x0 >= fig_box.x0 - 1 and box.x1 <= fig_box.x1 + 1 and box.y0 >= fig_box.y0 - 1 and \
        box.y1 <= fig_box.y1 + 1


@pytest.mark.parametrize("scale, unit, factor", [(1e-3, "ms", 1e3), (2e-6, "µs", 1e6), (3.0, "s", 1.0)])
def test_runtime_axes_state_the_unit_chosen_by_magnitude(scale, unit, factor):
    pred, measured, ids = pipelines_data(3, 8, scale)
    ax = drawn(plots.predicted_vs_measured(pred, measured, "val", pipelines=ids)).axes[0]
    assert ax.get_xlabel() == f"measured runtime ({unit})" and ax.get_ylabel() == f"predicted runtime ({unit})"
    xs = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections])
    assert list(np.sort(xs)) == pytest.approx(list(np.sort(measured * factor)))


def test_relative_axes_say_over_the_pipelines_fastest():
    pred, measured, ids = pipelines_data(3, 8, 1e-3)
    ax = plots.predicted_vs_measured(pred, measured, "val", pipelines=ids, relative=True).axes[0]
    assert "×" in ax.get_xlabel() and "fastest" in ax.get_xlabel()
    xs = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections])
    assert xs.min() == 1.0 and np.count_nonzero(xs == 1.0) == 3  # one fastest per pipeline
    with pytest.raises(ValueError, match="pipeline"):
        plots.predicted_vs_measured(pred, measured, "val", relative=True)


@pytest.mark.parametrize("n_pipelines", [4, 15])
def test_one_colour_per_pipeline_and_a_legend_only_for_few(n_pipelines):
    pred, measured, ids = pipelines_data(n_pipelines, 6, 1e-3)
    ax = drawn(plots.predicted_vs_measured(pred, measured, "val", pipelines=ids)).axes[0]
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(scatters) == n_pipelines and all(len(c.get_offsets()) == 6 for c in scatters)
    colours = [{to_hex(c) for c in s.get_facecolors()} for s in scatters]
    assert all(len(c) == 1 for c in colours)  # each pipeline one colour ...
    assert len(set.union(*colours)) == n_pipelines  # ... and no two pipelines the same
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-1] == "y = x"
    assert len(labels) == (n_pipelines + 1 if n_pipelines <= plots.LEGEND_MAX else 1)
    assert inside(ax.figure, ax.title)


def test_topk_curve_has_the_random_order_reference_and_integer_ticks():
    rng = np.random.default_rng(1)
    groups = [(rng.uniform(1, 2, n), rng.uniform(1, 9, n)) for n in (12, 9, 12)]
    ks = range(1, 13)
    model, random = topk_scores(groups, ks), random_topk_scores(groups, ks)
    fig = drawn(plots.topk_curve(model, "hybrid: top-k score on validation", random=random))
    ax = fig.axes[0]
    lines = {line.get_label().split(" (")[0]: line for line in ax.get_lines()}
    assert list(lines["random order"].get_ydata()) == pytest.approx([random[k] for k in ks])
    assert list(lines["model"].get_ydata()) == pytest.approx([model[k] for k in ks])
    assert f"top-1 {random[1]:.3f}" in lines["random order"].get_label()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks == list(ks)
    many = plots.topk_curve(topk_scores(groups, range(1, 33)), "top-k").axes[0]
    ticks = [t for t in many.get_xticks() if many.get_xlim()[0] <= t <= many.get_xlim()[1]]
    assert all(float(t).is_integer() and 1 <= t <= 32 for t in ticks) and 4 <= len(ticks) <= 16, ticks
    assert not ax.texts  # no value labels to overlap: the legend carries top-1 and top-5
    assert "fastest" in ax.get_ylabel() and ax.get_xlabel().startswith("k")
    assert inside(fig, ax.title)


def speedup_chart(values, geomeans, reference=None, title="small apps on host, searched with analytical"):
    apps = ["blur", "unsharp", "harris"]
    return drawn(speedup_bars(apps, ["greedy", "beam"], np.array(values, dtype=float), geomeans, title,
                              reference=reference))


def tick_labels(ax) -> list[str]:
    lo, hi = ax.get_ylim()
    return [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks()) if lo <= v <= hi]


def test_speedup_axis_is_labelled_above_and_below_1x():
    fig = speedup_chart([[3.0, 6.5], [0.7, 1.4], [12.0, np.nan]], [2.5, 2.9], reference=[4.0, 2.0, 9.0, 4.2])
    ax = fig.axes[0]
    labels = tick_labels(ax)
    assert {"0.5×", "1×", "2×", "4×", "8×"} <= set(labels), labels
    assert ax.get_yscale() == "log" and "× over naive" in ax.get_ylabel()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["naive (1×)", "expert", "greedy", "beam"]
    expert = next(c for c in ax.collections if isinstance(c, LineCollection))
    assert [seg[0][1] for seg in expert.get_segments()] == [4.0, 2.0, 9.0, 4.2]
    assert inside(fig, ax.title)


def test_a_chart_of_slowdowns_only_still_has_ticks_both_sides_of_1x():
    ax = speedup_chart([[0.8, 0.9], [0.6, 0.95], [0.7, 0.85]], [0.7, 0.9]).axes[0]
    assert {"0.5×", "1×", "2×"} <= set(tick_labels(ax))
    wide = speedup_chart([[0.01, 300.0], [1.0, 2.0], [1.0, 2.0]], [1.0, 2.0]).axes[0]
    labels = tick_labels(wide)
    assert "1×" in labels and len(labels) <= 12 and any(x.startswith("1/") for x in labels), labels


def test_a_long_title_is_wrapped_not_clipped():
    title = ("compiled by Halide: full apps on host, searched with models:/schedlab-host@champion "
             "against Adams2019 and Mullapudi2016")
    fig = speedup_chart([[3.0, 6.5], [0.7, 1.4], [12.0, 2.0]], [2.5, 2.9], title=title)
    ax = fig.axes[0]
    assert inside(fig, ax.title) and ax.get_title().count("\n") >= 2
    assert "".join(ax.get_title().split()).startswith("".join(title.split()))


def test_speedup_labels_read_as_multiples():
    assert [speedup_label(x) for x in (0.125, 0.5, 1, 2, 1024, 0.3, 1 / 64)] == [
        "0.125×", "0.5×", "1×", "2×", "1024×", "0.3×", "1/64×"]
