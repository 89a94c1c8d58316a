"""Targets: the machine a schedule is for (DESIGN §3.5).

A CPU target gives cores, SIMD register width and cache sizes; the native vector width of a type is
the register width over the type's width. A CUDA target gives the limits a GPU LoopNest must respect.
`host` is detected at run time; named targets live in `conf/targets/*.yaml`.

Each kind of target is a registered `TargetKind`: its target class, the loop kinds a LoopNest may use on it
and the limits `Plan` checks. Whatever else differs per kind (backends, feature extractors, search spaces)
is registered per kind in its own package, so no code asks `kind != "cpu"`.
"""

from __future__ import annotations

import functools
import os
import platform
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .errors import SchedlabError
from .types import Type

CONF_DIR = Path(__file__).resolve().parent.parent / "conf" / "targets"


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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
    memory_bandwidth_gbs: float = 0.0  # DRAM bandwidth, GB/s (0: not given)
    l2_bytes: int = 0  # L2 cache size (0: not given)
    kind: str = "cuda"

    def to_dict(self) -> dict:
        return asdict(self)


Target = CpuTarget | CudaTarget


@dataclass(frozen=True)
class TargetKind:
    """One kind of target: its class, the loop kinds (ir.loopnest.LoopKind values) a LoopNest may use on it,
    and the limits a Plan must respect (`check_limits(plan)` returns the reason a plan breaks one, or None)."""

    name: str
    target_class: type
    loop_kinds: frozenset[str]
    check_limits: Callable[[object], str | None] | None = None


_KINDS: dict[str, TargetKind] = {}


def register_target_kind(kind: TargetKind) -> TargetKind:
    _KINDS[kind.name] = kind
    return kind


def target_kind(target: "Target | str") -> TargetKind:
    """The registered kind of a target (or of a kind name); an unknown kind is a one-line error."""
    name = target if isinstance(target, str) else target.kind
    tk = _KINDS.get(name)
    if tk is None:
        raise SchedlabError(f"unknown target kind {name!r}; registered: {', '.join(sorted(_KINDS))}")
    return tk


def _cuda_rules(plan) -> str | None:
    from .gpu import cuda_rules  # GPU LoopNest structure lives with the loop kinds' other queries

    return cuda_rules(plan)


CPU = register_target_kind(TargetKind("cpu", CpuTarget, frozenset({"serial", "parallel", "vectorized", "unrolled"})))
CUDA = register_target_kind(TargetKind("cuda", CudaTarget, frozenset({"serial", "block", "thread", "simd", "unrolled"}),
                                       _cuda_rules))


def get_target(target: "str | Target | None" = None) -> Target:
    """A target from a name ('host', a file stem under conf/targets, or a YAML path) or as given."""
    if target is None or target == "host" or target == "cpu":
        return host_target()
    if isinstance(target, tuple(k.target_class for k in _KINDS.values())):
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
    if kind not in _KINDS:
        raise SchedlabError(f"{path}: kind must be one of {', '.join(sorted(_KINDS))}, got {kind!r}")
    cls = _KINDS[kind].target_class
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


@functools.cache
def machine_description() -> str:
    """The machine this process runs on, in one line: CPU model, usable cores, the widest SIMD its kernel enables,
    L2 and L3. Why: `host` names whatever machine measures, and labels measured on an AVX-512 machine do not
    describe an AVX2 one (docs/generator.md, "Which machine measured"); every batch file records this line."""
    t = host_target()
    flags = _cpu_flags()
    simd = next((name for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
                                          ("sse4_1", "SSE4.1"), ("asimd", "NEON")) if flag in flags), "no SIMD flags")
    model = _cpu_model() or platform.machine() or "unknown CPU"
    return (f"{model}; {t.cores} cores; {simd} ({t.vector_bytes}-byte vectors); "
            f"L2 {t.l2_bytes >> 10} KiB, L3 {t.l3_bytes >> 20} MiB")


_MACHINE_LINE = re.compile(r"(\d+) cores; .*\((\d+)-byte vectors\); L2 (\d+) KiB, L3 (\d+) MiB")


def target_of_machine(description: str) -> CpuTarget | None:
    """The CpuTarget a machine_description() line describes (cores, SIMD width, L2, L3), or None for a line that is
    not one (files written before machines were recorded have none)."""
    m = _MACHINE_LINE.search(description)
    if m is None:
        return None
    cores, vector_bytes, l2_kib, l3_mib = map(int, m.groups())
    return CpuTarget(name="host", cores=cores, vector_bytes=vector_bytes, l2_bytes=l2_kib << 10,
                     l3_bytes=l3_mib << 20)


def _cpu_model() -> str:
    return " ".join(_cpuinfo_field(("model name", "Model")))


@functools.cache
def _cpu_flags() -> frozenset[str]:
    """The SIMD and other flags the kernel reports (read once: backends.halide asks for them per kernel digest)."""
    return frozenset(_cpuinfo_field(("flags",)))


def _cpuinfo_field(prefixes: tuple[str, ...]) -> list[str]:
    """The words of the first /proc/cpuinfo line starting with one of `prefixes` ([] when there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(prefixes):
                return line.split(":", 1)[1].split()
    except OSError:  # pragma: no cover
        pass
    return []


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
