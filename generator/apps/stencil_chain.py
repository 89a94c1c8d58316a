"""A chain of non-separable stencils on one channel (seeds/adams2019 §6.1: 32 stages of 5x5), 1536 x 2560 f32."""

from __future__ import annotations

from ir import Func, Input, Pipeline, Var, f32
from ir.builder import ScheduleBuilder

DESCRIPTION = "chain of 32 non-separable 5x5 stencils, f32"
SIZES = {"full": (1536, 2560), "small": (40, 24)}


def weights(radius: int) -> list[list[int]]:
    """Binomial weights (1 2 1 / 1 4 6 4 1 ...), outer product, for a (2r+1) x (2r+1) stencil."""
    row = [1]
    for _ in range(2 * radius):
        row = [a + b for a, b in zip([0] + row, row + [0])]
    return [[a * b for a in row] for b in row]


def build(size: str = "full", stages: int = 32, radius: int = 2) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", f32, 2)
    w = weights(radius)
    scale = 1.0 / sum(map(sum, w))
    prev = Func("stage0")
    prev[x, y] = inp[x, y]
    for k in range(1, stages + 1):
        f = Func(f"stage{k}")
        terms = [w[dy + radius][dx + radius] * prev[x + dx, y + dy]
                 for dy in range(-radius, radius + 1) for dx in range(-radius, radius + 1)]
        acc = terms[0]
        for t in terms[1:]:
            acc = acc + t
        f[x, y] = acc * scale
        prev = f
    return Pipeline([prev], {prev: SIZES[size]}, name=f"stencil_chain{stages}")


def schedule(p: Pipeline, target=None):
    """Tiles of the output in parallel; the stages in groups of four, each group's stages computed per
    tile of the group's last stage (so redundant recompute stays bounded), all vectorized."""
    out = p.output_names[0]
    stages = int(out.removeprefix("stage"))
    w, h = p.output_sizes[out]
    s = ScheduleBuilder(p, target)
    tiles = [{"x": min(512, w), "y": min(64, h)}]
    group = 4
    anchor = out
    s.root(out, tiles=tiles, vectorize="x", parallel=True)
    for k in range(stages - 1, 0, -1):
        if (stages - k) % group == 0:
            anchor = f"stage{k}"
            s.root(anchor, tiles=tiles, vectorize="x", parallel=True)
        else:
            s.compute_at(f"stage{k}", anchor, level=0, vectorize="x")
    s.inline("stage0")
    return s.build()


def gpu_schedule(p: Pipeline, target="h100"):
    """32x8-point blocks; stages in groups of four as on the CPU: each group's last stage at root, the
    others computed per block of it into shared memory (bounded redundant recompute at the tile edges)."""
    from ir.gpu_schedule import GpuScheduleBuilder

    out = p.output_names[0]
    stages = int(out.removeprefix("stage"))
    w, h = p.output_sizes[out]
    s = GpuScheduleBuilder(p, target)
    block = {"x": min(32, w), "y": min(8, h)}
    anchor = out
    s.gpu_tile(out, block)
    for k in range(stages - 1, 0, -1):
        if (stages - k) % 4 == 0:
            anchor = f"stage{k}"
            s.gpu_tile(anchor, block)
        else:
            s.compute_at_block(f"stage{k}", anchor)
    s.inline("stage0")
    return s.build()
