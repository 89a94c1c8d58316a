"""The app suite on a CUDA target: schedlab's expert GPU schedules (backends.cuda) next to Halide's GPU
autoschedulers (Anderson2021, Mullapudi2016, Li2018), each compiled, checked against the interpreter and timed
on the GPU. `python -m evaluate.apps target=h100` lands here.

Where no GPU is visible (every development and CI machine of this project), it measures nothing: it is a
one-line error that says so and lists the rows it would measure. The GPU branch below (standard CuPy through
backends.cuda.runner, Halide JIT through backends.halide.gpu.measure_anchor) ran once on an H100, through
benchmarks/gpu_measure.py (docs/results/gpu-h100-2026-11-27.txt); CI cannot run it.
"""

from __future__ import annotations

import math
import time
from typing import Callable

EXPERT_GPU = "expert-gpu"
HALIDE_GPU = ("Anderson2021", "Mullapudi2016", "Li2018")


def planned_rows(names: list[str]) -> list[tuple[str, str]]:
    """(app, method) of every row a CUDA evaluation measures: the expert GPU schedule where one exists, and
    Halide's three GPU autoschedulers."""
    from generator.apps import get_app

    out = []
    for name in names:
        if get_app(name).gpu_schedule is not None:
            out.append((name, EXPERT_GPU))
        out += [(name, f"{s}@halide-cuda") for s in HALIDE_GPU]
    return out


def evaluate_gpu_apps(cfg, names: list[str], target, echo: Callable[[str], None] | None = None):
    from backends.cuda.runner import gpu_missing

    from .apps import HEADER, TABLE_CSV, AppRow, AppsResult, format_row, geomeans, table_csv
    from .config import EvaluateError
    from .plots import tracked_run

    plan = planned_rows(names)
    why = gpu_missing()
    if why is not None:
        listed = "; ".join(f"{a}: {', '.join(m for b, m in plan if b == a)}" for a in dict.fromkeys(a for a, _ in plan))
        raise EvaluateError(f"target={target.name}: no GPU present here ({why.split(';')[0]}); on a machine with one "
                            f"this measures {len(plan)} rows: {listed}")
    echo = echo or (lambda line: None)
    t0 = time.time()
    rows: list[AppRow] = []
    about = f"The app suite ({', '.join(names)}, {cfg.size} sizes) on {target.name}: expert GPU schedules and Halide's."
    with tracked_run(cfg.tracking_uri, cfg.experiment, cfg.run_name or f"apps-gpu-{target.name}-{cfg.size}", cfg,
                     {"apps_measured": names, "gpu_rows": len(plan)}, description=about) as run:
        echo(HEADER)
        for name in names:
            app_rows = _measure_app(name, cfg, target)
            rows += app_rows
            for r in app_rows:
                echo(format_row(r))
            run.client.log_text(run.run_id, table_csv(rows), TABLE_CSV)
        result = AppsResult(run.run_id, run.experiment_id, run.tracking_uri, "", rows, geomeans(rows), 0.0)
    result.seconds = time.time() - t0
    return result


def _measure_app(name: str, cfg, target):
    """One app's rows; speedup is over Halide's Li2018 (the simplest GPU schedule: every Func at root, 64-wide
    thread blocks), the GPU suite's stand-in for a naive schedule."""
    import backends
    from backends.halide.gpu import autoschedule_gpu, measure_anchor
    from generator.apps import get_app
    from ir import interpret

    from .apps import AppRow

    app = get_app(name)
    p = app.build(cfg.size)
    inputs = p.random_inputs(cfg.seed)
    expected = interpret(p, inputs)
    protocol = backends.get_protocol(cfg.protocol if cfg.protocol != "default" else "full")
    measured = []  # (method, backend, Measurement, search seconds)
    if app.gpu_schedule is not None:
        built = backends.build(p, app.gpu_schedule(p, target), target, backend="cuda")
        measured.append((EXPERT_GPU, "cuda", backends.run(built, inputs, protocol, expected=expected), 0.0))
    for s in HALIDE_GPU:
        anchor = autoschedule_gpu(p, s, target)
        measured.append((f"{s}@halide-cuda", "halide", measure_anchor(anchor, inputs, protocol, expected),
                         anchor.search_seconds))
    base = next((m.min_s for meth, _, m, _ in measured if meth == "Li2018@halide-cuda" and m.ok), math.nan)
    return [AppRow(name, meth, bk, "", m.status, m.min_s if m.ok else math.nan,
                   base / m.min_s if m.ok else math.nan, base / m.min_s if m.ok else math.nan, math.nan, s_s,
                   m.error.splitlines()[0] if m.error else "")
            for meth, bk, m, s_s in measured]
