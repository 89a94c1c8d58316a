"""What every node of the cluster needs, checked before the job sends it work.

A worker node plans (search, with the round's cost model: torch), compiles (numba/llvmlite, or Halide) and
measures. It needs the driver's Python minor version (Ray pickles between them), the packages the job's
backend and model use, and the *same* schedlab code as the driver: a node importing an older checkout would
label schedules with another compiler or feature schema, and nothing downstream could tell. `ray job submit
--working-dir . --runtime-env conf/runtime_env.yaml` ships the driver's code to every node (Ray puts the
working directory first on the workers' path); the packages must be installed on the nodes (README, "Running
on a cluster"). `check_nodes` runs one tiny task pinned to each alive node and turns what is missing into one
line naming the node and what to install, before any batch is planned.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

from ir.errors import SchedlabError

PACKAGES = ("ir", "backends", "featurize", "generator", "scheduler", "train", "evaluate")  # schedlab's code
# what a node imports for the job's work, by backend (the planner loads the round's model through torch)
COMMON = ("numpy", "torch", "ray")  # the driver alone writes Parquet and talks to MLflow
BY_BACKEND = {"numba": ("numba", "llvmlite"), "halide": ("halide",)}


class NodeError(SchedlabError):
    """A node of the cluster cannot run the job as it is set up; the message names the node and the fix."""


@dataclass(frozen=True)
class NodeReport:
    node_id: str
    ip: str
    python: str  # major.minor.micro
    code_digest: str  # sha256 over schedlab's .py files as this node imports them
    code_root: str  # the directory this node imports schedlab from
    versions: tuple[tuple[str, str | None], ...]  # (distribution, version or None when it does not import)
    kernel_cache: str = ""  # backends.cache.PruneReport.describe() of the node's cache, once pruned
    machine: str = ""  # backends.measuring_machine(): CPU model, cores, SIMD, caches, workers' malloc
    compiled: str = ""  # how many hot modules (ir.hot) have a build of this code here: its planning runs them

    def describe(self) -> str:
        have = ", ".join(f"{n} {v}" for n, v in self.versions if v is not None)
        cache = f"; kernel cache {self.kernel_cache}" if self.kernel_cache else ""
        machine = f"{self.machine}; " if self.machine else ""
        compiled = f"; {self.compiled}" if self.compiled else ""
        return (f"{self.ip} ({self.node_id[:8]}): {machine}python {self.python}, {have}; "
                f"code {self.code_digest[:12]}{compiled}{cache}")


def code_digest(root: Path) -> str:
    """sha256 of every .py file of schedlab's packages under `root`, with its relative path (order-free)."""
    from backends.cache import source_digest

    return source_digest(root, PACKAGES)


def _version(name: str) -> str | None:
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - missing, or broken: either way the node cannot use it
        return None
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def local_report(packages: tuple[str, ...], node_id: str = "driver", ip: str = "") -> NodeReport:
    """This process's report: what it imports schedlab from, and which of `packages` import."""
    import ir
    from backends import measuring_machine

    root = Path(ir.__file__).resolve().parent.parent
    return NodeReport(node_id=node_id, ip=ip or platform.node(), python=platform.python_version(),
                      code_digest=code_digest(root), code_root=str(root),
                      versions=tuple((p, _version(p)) for p in packages), machine=measuring_machine(),
                      compiled=compiled_summary())


def compiled_summary() -> str:
    """'hot modules compiled 9/9', or how many lack a build of this code here (those plan as pure Python)."""
    from ir.compiled import status
    from ir.hot import enabled

    states = [s.state for s in status()]
    have = sum(st in ("compiled", "built") for st in states)
    if not enabled():
        return "hot modules pure Python (SCHEDLAB_COMPILED=0)"
    if have == len(states):
        return f"hot modules compiled {have}/{len(states)}"
    return f"hot modules compiled {have}/{len(states)} (the rest pure Python: python -m ir.compiled build)"


def required(backend: str) -> tuple[str, ...]:
    return COMMON + BY_BACKEND.get(backend, ())


def problems(driver: NodeReport, nodes: list[NodeReport]) -> list[str]:
    """One line per node that cannot run the job, naming what to fix (empty: every node can)."""
    out = []
    minor = driver.python.rsplit(".", 1)[0]
    for n in nodes:
        missing = [p for p, v in n.versions if v is None]
        where = f"node {n.ip} ({n.node_id[:8]})"
        if n.python.rsplit(".", 1)[0] != minor:
            out.append(f"{where} runs python {n.python}, the driver {driver.python}: every node needs python {minor}")
        if missing:
            out.append(f"{where} cannot import {', '.join(missing)}: install schedlab's dependencies on every "
                       "node (README, 'Running on a cluster')")
        if n.code_digest != driver.code_digest:
            out.append(f"{where} imports other schedlab code ({n.code_root}) than the driver ({driver.code_root}): "
                       "submit with ray job submit --working-dir . --runtime-env conf/runtime_env.yaml")
    return out


def check_nodes(backend: str, timeout: float = 300.0, prune_bytes: int | None = None) -> list[NodeReport]:
    """Every alive node's report (one task pinned to each); NodeError naming the first node that cannot run
    the job, with every problem found. prune_bytes: each node first prunes its kernel cache to that size
    (backends.cache.prune_kernels; before any work, so nothing the job compiles is removed)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    packages = required(backend)
    remote = ray.remote(num_cpus=0, max_retries=0)(_node_report)
    alive = [n for n in ray.nodes() if n.get("Alive")]
    refs = [remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
            .remote(packages, n["NodeID"], n.get("NodeManagerAddress", ""), prune_bytes) for n in alive]
    reports = ray.get(refs, timeout=timeout)
    bad = problems(local_report(packages), reports)
    if bad:
        more = f" (and {len(bad) - 1} more: {'; '.join(bad[1:])})" if len(bad) > 1 else ""
        raise NodeError(bad[0] + more)
    return reports


def _node_report(packages: tuple[str, ...], node_id: str, ip: str, prune_bytes: int | None = None) -> NodeReport:
    from dataclasses import replace

    sys.dont_write_bytecode = True  # a check leaves nothing behind in the node's code directory
    report = local_report(packages, node_id, ip)
    if prune_bytes is None:
        return report
    from backends.cache import prune_kernels

    return replace(report, kernel_cache=prune_kernels(prune_bytes).describe())
