"""A search-space change, measured: the same search in the space without it and with it, side by side in one run.

For each app: beam search under one cost model in the space without the option `--against` names, then in the
full space; both LoopNests compiled by one backend (default Halide) and measured in one batch per app under the
full protocol, each output checked against the interpreter. Prints the predicted costs, the measured runtimes,
the ratio (> 1: the full space's schedule ran faster), the search's states and seconds, and the geomeans.
Single runs on a shared machine: read ratios.

`--against`:
  * none (register tiles): a reduction's update (matmul's sum over k, a convolution's taps, a histogram, a scan)
    carries its accumulators across its RVar loop; scheduler.tilings.register_tilings offers it innermost tiles
    of one vector by a few unrolled points of another dimension, so that those accumulators stay in registers and
    the loads invariant along the unrolled dimension are shared. Default apps: the 10 of the 17 with a reduction.
  * one-dim: one-dimensional register tiles only (one vector by k points of one other dimension) against the full
    space (also 2 x 4 and 4 x 2 points of two).
  * one-vector: register tiles one native vector wide only against the full space (also two and four wide).
  * enclosing: no placements at the levels of other Funcs' loops that enclose all of a Func's readers (adams2019's
    compute_in_tiles; SpaceOptions.enclosing_levels). Default apps: all 17.

    python benchmarks/space_ab.py --apps matmul,conv_layer                  # register tiles, ~2 minutes here
    python benchmarks/space_ab.py                                           # the 10 apps (~20 minutes)
    python benchmarks/space_ab.py --against one-dim                         # 1-D against 1-D and 2-D tiles
    python benchmarks/space_ab.py --against one-vector                      # 1 vector against 1, 2 and 4
    python benchmarks/space_ab.py --against enclosing --apps depthwise_separable_conv,conv_layer
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# --against: what the "without" search is, and the autoschedule options that give it
AGAINST = {"none": ("no register tiles", {"register_tiles": False}),
           "one-dim": ("one-dimensional register tiles only", {"register_tile_dims": 1}),
           "one-vector": ("register tiles one vector wide only", {"register_tile_vectors": 1}),
           "enclosing": ("no placements at enclosing Funcs' levels", {"enclosing_levels": False})}
REDUCTION_APPS = ("matmul,conv_layer,depthwise_separable_conv,iir_blur,hist_eq,max_filter,bilateral_grid,bgu,"
                  "nl_means,lens_blur")


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default=None, help="comma-separated apps, or all (default: the 10 with a reduction; "
                                                 "all with --against enclosing)")
    ap.add_argument("--size", default="full", choices=("small", "full"))
    ap.add_argument("--model", default="analytical", help="the cost model both searches use")
    ap.add_argument("--backend", default="halide", help="what every LoopNest is compiled with")
    ap.add_argument("--beam-size", type=int, default=8)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--against", default="none", choices=tuple(AGAINST),
                    help="the space compared with the full one: no register tiles, one-dimensional ones only, "
                         "ones one vector wide only, or no placements at enclosing Funcs' levels")
    a = ap.parse_args(argv)

    from evaluate.apps import geomean
    from generator.apps import app_list, get_app
    from ir.target import get_target
    from ir.units import format_seconds
    from scheduler import autoschedule
    from scheduler.cost import load_model
    from scheduler.modes import best_runtimes, measure_loopnest_results, reference

    try:
        apps = app_list(a.apps or ("all" if a.against == "enclosing" else REDUCTION_APPS))
    except ValueError as e:
        ap.error(f"--apps: {e}")

    target = get_target("host")
    model = load_model(a.model, target, backend=a.backend, allow_mismatch=True)
    against, without = AGAINST[a.against]
    print(f"beam {a.beam_size} x {a.passes} under {model.name}, 'without': {against}, 'with': the full space; every "
          f"LoopNest compiled by {a.backend}, apps at size {a.size}, target {target.name}")
    print(f"{'app':26s} {'predicted without':>18s} {'with':>10s} {'measured without':>17s} {'with':>10s} "
          f"{'ratio':>7s} {'states without/with':>20s} {'search s without/with':>22s}")
    ratios, predicted, states, seconds = [], [], [0, 0], [0.0, 0.0]
    t0 = time.time()
    for name in apps:
        p = get_app(name).build(a.size)
        found = []
        for on in (False, True):
            s = autoschedule(p, target, model=model, algorithm="beam", beam_size=a.beam_size, passes=a.passes,
                             backend=a.backend, allow_mismatch=True, **({} if on else without))
            found.append(s)
            states[on] += s.stats.states_evaluated
            seconds[on] += s.stats.seconds
        same = found[0].loopnest == found[1].loopnest
        inputs, expected = reference(p)
        lns = [found[0].loopnest] if same else [s.loopnest for s in found]
        results = measure_loopnest_results(p, lns, target, inputs, expected, backend=a.backend)
        runtimes = best_runtimes(results) * (2 if same else 1)
        ok = all(math.isfinite(t) for t in runtimes)
        if ok:
            ratios.append(runtimes[0] / runtimes[1])
        predicted.append(found[0].predicted_cost / found[1].predicted_cost)
        cells = [format_seconds(t) if math.isfinite(t) else "failed" for t in runtimes]
        ratio = "same" if same else (f"{runtimes[0] / runtimes[1]:.3f}x" if ok else "-")
        print(f"{name:26s} {format_seconds(found[0].predicted_cost):>18s} "
              f"{format_seconds(found[1].predicted_cost):>10s} {cells[0]:>17s} {cells[1]:>10s} {ratio:>7s} "
              f"{f'{found[0].stats.states_evaluated}/{found[1].stats.states_evaluated}':>20s} "
              f"{f'{found[0].stats.seconds:.1f}/{found[1].stats.seconds:.1f}':>22s}", flush=True)
        for s, m in zip(("without", "with"), results):
            if not m.ok:
                print(f"  {name} {s}: {m.status}" + (f" ({m.error.splitlines()[0][:160]})" if m.error else ""),
                      flush=True)
    print(f"{'geomean':26s} predicted without/with {geomean(predicted):.3f}x, "
          f"measured without/with {geomean(ratios):.3f}x over {len(ratios)} apps; states {states[0]} / {states[1]}, "
          f"search {seconds[0]:.0f} s / {seconds[1]:.0f} s; {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
