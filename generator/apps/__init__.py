"""The application suite: real pipelines written in the DSL (seeds/adams2019 §6.1, anderson2021 §8).

Each app builds its pipeline at the size the papers use ("full") or at a small test size ("small"),
and most carry an expert hand-written schedule (tiled, fused, parallel, vectorized): the baseline
schedlab's scheduler is judged against.

    from generator.apps import APPS, get_app
    app = get_app("blur")
    p = app.build("full")
    loopnest = app.schedule(p, target)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ir import LoopNest, Pipeline

from . import blur, matmul, stencil_chain, unsharp


@dataclass(frozen=True)
class App:
    name: str
    description: str
    build: Callable[[str], Pipeline]  # "full" | "small"
    schedule: Callable[..., LoopNest] | None  # (pipeline, target) -> expert hand-written LoopNest


APPS: dict[str, App] = {
    "blur": App("blur", "3x3 separable box blur, f32", blur.build, blur.schedule),
    "unsharp": App("unsharp", "unsharp mask: luma, 5-tap Gaussian, sharpen, ratio, f32 RGB", unsharp.build,
                   unsharp.schedule),
    "stencil_chain": App("stencil_chain", "chain of 3x3 stencils (8 stages), f32", stencil_chain.build,
                         stencil_chain.schedule),
    "matmul": App("matmul", "SGEMM C = A B, 512 x 512, f32", matmul.build, matmul.schedule),
}

SIZES = ("full", "small")


def get_app(name: str) -> App:
    try:
        return APPS[name]
    except KeyError:
        raise KeyError(f"unknown app {name!r}; apps: {', '.join(APPS)}") from None
