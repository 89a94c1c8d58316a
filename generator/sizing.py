"""Output sizes that put a random pipeline's naive runtime where schedules matter.

At one fixed output size, random pipelines of up to 20 stages run naively (everything at root, serial) from
0.4 ms to 3 s: four decades, most of it either microsecond kernels dominated by call overhead or seconds
that throttle data generation. adams2019 §5 draws pipelines "with naive runtimes in a useful range"; here a
pipeline's output is scaled, aspect kept, so that its *estimated* naive runtime lands on a log-uniform draw
from `naive_runtime` = (lo, hi) seconds.

The estimate is the work of the naive schedule: over every stage, the points it computes (the featurizer's
`points_computed_total` under `naive_schedule`) times one plus the operations of its definition (the
pipeline features' operation histogram), times `NAIVE_SECONDS_PER_OP_POINT`. That constant was fitted on the
2-core development machine: 48 (pipeline, size) pairs, seeds 0-23 at 256x192 and 768x576, naive schedules
compiled by Halide and timed under the quick protocol; the measured/estimated ratio had median 0.045 ns and
spanned 0.028-0.145 ns (a factor of two either side for all but one pipeline). Other machines differ by a
constant factor; `python -m generator.random --stats N --naive-runtime LO,HI --measure K` measures it.

Because the generator's choices depend on the output size, the size is found by a few fixed-point steps
(generate, estimate, rescale); the result is a pure function of its arguments, so a seed names the same
pipeline on every node and in every later run.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from .random_pipeline import DEFAULT_MOTIF_KINDS, random_pipeline

__all__ = ["NAIVE_SECONDS_PER_OP_POINT", "MIN_SIDE", "estimate_naive_seconds", "naive_work", "sized_output",
           "target_naive_seconds", "check_naive_runtime"]

NAIVE_SECONDS_PER_OP_POINT = 4.5e-11  # seconds per (point computed x operation) under the naive schedule
MIN_SIDE = 16  # the smallest output width or height a sized pipeline gets
_STEPS = 4  # fixed-point steps: the estimate is within 10 % of the target after two for most seeds
_CLOSE = 0.1  # stop when the estimate is within this relative distance of the target


def naive_work(pipeline) -> float:
    """Operation-points of the naive schedule: sum over stages of points computed x (1 + operations)."""
    from featurize import featurize
    from featurize.schema import SCHEDULE_INDEX
    from ir.builder import naive_schedule
    from ir.dag import OP_TYPES

    f = featurize(pipeline, naive_schedule(pipeline))
    ops = f.pipeline[:, :len(OP_TYPES), :].sum(axis=(1, 2), dtype=np.float64)
    points = f.schedule[:, SCHEDULE_INDEX["points_computed_total"]].astype(np.float64)
    return float((points * (ops + 1.0)).sum())


def estimate_naive_seconds(pipeline) -> float:
    """The naive schedule's runtime on the development machine, estimated from its work (see the module)."""
    return naive_work(pipeline) * NAIVE_SECONDS_PER_OP_POINT


def check_naive_runtime(naive_runtime, what: str = "naive_runtime") -> tuple[float, float] | None:
    """(lo, hi) seconds with 0 < lo <= hi, or None; a one-line ValueError naming `what` otherwise."""
    if naive_runtime is None or (isinstance(naive_runtime, (tuple, list)) and len(naive_runtime) == 0):
        return None
    try:
        lo, hi = (float(v) for v in naive_runtime)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be two seconds LO,HI (e.g. [0.002, 0.5]), got {naive_runtime!r}") from None
    if not (0 < lo <= hi) or not math.isfinite(hi):
        raise ValueError(f"{what} must be two seconds with 0 < LO <= HI, got [{lo:g}, {hi:g}]")
    return lo, hi


def target_naive_seconds(seed: int, naive_runtime: tuple[float, float]) -> float:
    """The log-uniform draw from [lo, hi] of pipeline `seed`, the same in every process."""
    lo, hi = naive_runtime
    u = int.from_bytes(hashlib.sha256(f"naive-runtime:{seed}".encode()).digest()[:8], "little") / 2.0 ** 64
    return math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))


def _scaled(largest: tuple[int, int, int], factor: float) -> tuple[int, int, int]:
    w, h, c = largest
    f = min(1.0, max(factor, MIN_SIDE / min(w, h)))
    return max(MIN_SIDE, round(w * f)), max(MIN_SIDE, round(h * f)), c


def sized_output(seed: int, max_stages: int, largest: tuple[int, int, int], naive_runtime: tuple[float, float],
                 markov: bool = False, mix_weights: str = "indices", motifs: float = 0.0,
                 motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS) -> tuple[int, int, int]:
    """The output size of pipeline `seed`: `largest` scaled (aspect and channels kept, sides >= MIN_SIDE) so
    that its estimated naive runtime is nearest its target draw from `naive_runtime`."""
    largest = tuple(int(v) for v in largest)
    target = target_naive_seconds(seed, naive_runtime)
    factor, size = 1.0, largest
    best: tuple[float, tuple[int, int, int]] | None = None
    tried: set[tuple[int, int, int]] = set()
    for _ in range(_STEPS):
        size = _scaled(largest, factor)
        if size in tried:
            break
        tried.add(size)
        est = estimate_naive_seconds(random_pipeline(seed, max_stages, size, markov, mix_weights, motifs,
                                                     motif_kinds))
        miss = abs(math.log(max(est, 1e-12) / target))
        if best is None or miss < best[0]:
            best = (miss, size)
        if miss < math.log1p(_CLOSE) or est <= 0:
            break
        # the work grows with the output's area: scale both sides by the square root of the ratio (a size
        # clamped at the largest or smallest end repeats, which ends the search there)
        factor = math.sqrt(size[0] * size[1] / (largest[0] * largest[1])) * math.sqrt(target / est)
    return best[1]
