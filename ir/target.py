"""Targets: the machine a schedule is for (DESIGN §3.5).

A CPU target gives cores, SIMD register width and cache sizes; the native vector width of a type is
the register width over the type's width. A CUDA target gives the limits a GPU LoopNest must respect.
`host` is detected at run time; named targets live in `conf/targets/*.yaml`.
"""

from __future__ import annotations

import functools
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .errors import SchedlabError
from .types import Type

CONF_DIR = Path(__file__).resolve().parent.parent / "conf" / "targets"


@dataclass(frozen=True)
class CpuTarget:
    name: str
    cores: int
    vector_bytes: int  # SIMD register width: 16 (SSE/NEON), 32 (AVX2), 64 (AVX-512)
    l1_bytes: int = 32 * 1024
    l2_bytes: int = 1024 * 1024
    l3_bytes: int = 32 * 1024 * 1024
    kind: str = "cpu"

    def natural_vector_size(self, t: Type) -> int:
        return max(1, self.vector_bytes // t.bytes)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CudaTarget:
    name: str
    sm_count: int
    max_threads_per_block: int = 1024
    warp_size: int = 32
    shared_memory_per_block: int = 48 * 1024
    shared_memory_per_sm: int = 228 * 1024
    registers_per_thread: int = 255
    registers_per_sm: int = 65536
    compute_capability: str = "9.0"
    kind: str = "cuda"

    def to_dict(self) -> dict:
        return asdict(self)


Target = CpuTarget | CudaTarget


def get_target(target: "str | Target | None" = None) -> Target:
    """A target from a name ('host', a file stem under conf/targets, or a YAML path) or as given."""
    if target is None or target == "host" or target == "cpu":
        return host_target()
    if isinstance(target, (CpuTarget, CudaTarget)):
        return target
    if not isinstance(target, str):
        raise SchedlabError(f"target must be a name, a YAML path or a Target, got {target!r}")
    path = Path(target)
    if path.suffix not in (".yaml", ".yml"):
        path = CONF_DIR / f"{target}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in CONF_DIR.glob("*.yaml"))
        raise SchedlabError(f"unknown target {target!r}; use 'host', one of {known}, or a YAML file")
    return load_target(path)


def load_target(path: Path) -> Target:
    import yaml

    data = yaml.safe_load(Path(path).read_text()) or {}
    kind = data.get("kind", "cpu")
    cls = {"cpu": CpuTarget, "cuda": CudaTarget}.get(kind)
    if cls is None:
        raise SchedlabError(f"{path}: kind must be cpu or cuda, got {kind!r}")
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise SchedlabError(f"{path}: unknown key {unknown[0]!r} for a {kind} target; known: {sorted(names)}")
    data.setdefault("name", path.stem)
    try:
        return cls(**data)
    except TypeError as e:
        raise SchedlabError(f"{path}: {e}") from None


@functools.cache
def host_target() -> CpuTarget:
    """This machine: usable cores and the widest SIMD the CPU reports."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    flags = _cpu_flags()
    if "avx512f" in flags:
        vector_bytes = 64
    elif "avx2" in flags or "avx" in flags:
        vector_bytes = 32
    else:
        vector_bytes = 16
    return CpuTarget(name="host", cores=cores, vector_bytes=vector_bytes, **_cache_sizes())


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:  # pragma: no cover
        pass
    return set()


def _cache_sizes() -> dict:
    out = {}
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for idx in base.glob("index*"):
            level = int((idx / "level").read_text())
            kind = (idx / "type").read_text().strip()
            size = (idx / "size").read_text().strip()
            mult = {"K": 1024, "M": 1024 * 1024}.get(size[-1], 1)
            nbytes = int(size.rstrip("KM")) * mult
            if level == 1 and kind == "Data":
                out["l1_bytes"] = nbytes
            elif level == 2:
                out["l2_bytes"] = nbytes
            elif level == 3:
                out["l3_bytes"] = nbytes
    except (OSError, ValueError):  # pragma: no cover
        pass
    return out
