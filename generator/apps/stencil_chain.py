"""A chain of 3x3 weighted stencils (Halide's stencil_chain app), 1536 x 2560 f32."""

from __future__ import annotations

from ir import Func, Input, Pipeline, Var, f32
from ir.builder import ScheduleBuilder

SIZES = {"full": (1536, 2560), "small": (40, 24)}
WEIGHTS = ((1, 2, 1), (2, 4, 2), (1, 2, 1))


def build(size: str = "full", stages: int = 8) -> Pipeline:
    x, y = Var("x"), Var("y")
    inp = Input("input", f32, 2)
    prev = Func("stage0")
    prev[x, y] = inp[x, y]
    for k in range(1, stages + 1):
        f = Func(f"stage{k}")
        terms = [WEIGHTS[dy + 1][dx + 1] * prev[x + dx, y + dy] for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
        acc = terms[0]
        for t in terms[1:]:
            acc = acc + t
        f[x, y] = acc * (1.0 / 16)
        prev = f
    return Pipeline([prev], {prev: SIZES[size]}, name=f"stencil_chain{stages}")


def schedule(p: Pipeline, target=None):
    """Tiles of the output in parallel, every stage computed per tile and vectorized (the input copy inlined)."""
    out = p.output_names[0]
    stages = int(out.removeprefix("stage"))
    w, h = p.output_sizes[out]
    s = ScheduleBuilder(p, target)
    s.root(out, tiles=[{"x": min(512, w), "y": min(64, h)}], vectorize="x", parallel=True)
    for k in range(stages - 1, 0, -1):
        s.compute_at(f"stage{k}", out, level=0, vectorize="x")
    s.inline("stage0")
    return s.build()
