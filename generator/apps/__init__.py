"""The application suite: real pipelines written in the DSL (seeds/adams2019 §6.1, anderson2021 §8).

Each app is a module here with `DESCRIPTION`, `SIZES` ({"full": the size the papers use, "small": a
test size}), `build(size) -> Pipeline` and, for most, `schedule(pipeline, target) -> LoopNest`: an
expert hand-written schedule (tiled, fused, parallel, vectorized), the baseline schedlab's scheduler
is judged against; six (blur, unsharp, harris, conv_layer, matmul, stencil_chain) also have
`gpu_schedule(pipeline, target)`, an expert GPU schedule for a CUDA target (ir.gpu_schedule).

    from generator.apps import get_app
    app = get_app("blur")
    p = app.build("full")
    loopnest = app.schedule(p, target)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from ir import LoopNest, Pipeline

# modules of the suite, in the order the papers list them (blur last: the DSL's running example)
_MODULES = ("bilateral_grid", "local_laplacian", "nl_means", "lens_blur", "camera_pipe", "stencil_chain",
            "harris", "hist_eq", "max_filter", "unsharp", "interpolate", "conv_layer", "matmul", "iir_blur",
            "depthwise_separable_conv", "bgu", "blur")


@dataclass(frozen=True)
class App:
    name: str
    description: str
    build: Callable[[str], Pipeline]  # "full" | "small"
    schedule: Callable[..., LoopNest] | None  # (pipeline, target) -> expert hand-written LoopNest
    sizes: dict
    gpu_schedule: Callable[..., LoopNest] | None = None  # (pipeline, CUDA target) -> expert GPU LoopNest


def _load(name: str) -> App:
    m = importlib.import_module(f"{__name__}.{name}")
    return App(name, m.DESCRIPTION, m.build, getattr(m, "schedule", None), m.SIZES, getattr(m, "gpu_schedule", None))


APPS: dict[str, App] = {name: _load(name) for name in _MODULES}
SIZES = ("full", "small")


def app_list(text: str) -> list[str]:
    """The apps a command line names: comma-separated names in order, or `all`; a ValueError names the first
    unknown one (the benchmarks' --apps)."""
    names = list(APPS) if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in APPS]
    if unknown:
        raise ValueError(f"unknown app {unknown[0]!r}; apps: {', '.join(APPS)} (or all)")
    if not names:
        raise ValueError(f"no app given; apps: {', '.join(APPS)} (or all)")
    return names


def get_app(name: str) -> App:
    try:
        return APPS[name]
    except KeyError:
        raise KeyError(f"unknown app {name!r}; apps: {', '.join(APPS)}") from None
