"""Where compiled artifacts live: $SCHEDLAB_CACHE_DIR, else ~/.cache/schedlab; and how the cache is kept bounded.

Each backend keeps one entry per kernel (Halide: `k<digest>.o` + its `.json` sidecar; numba: `k_<digest>.py` + the
`__pycache__/k_<digest>.*` files numba and Python write for it; llvm: `k_<digest>.o`; cuda: `k_<digest>.cu` + its
CPU-emulation builds `k_<digest>.<mode>.so`). A data-generation job compiles a new kernel for
nearly every sample, so without pruning the cache grows by ~100 KB per sample forever. `prune_kernels` removes
whole entries, least recently used first (a use touches the entry's main file), until the cache fits, and never
an entry used within `min_age_s` (another process may be about to run it); Halide's shared runtime object stays.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ir.hot import cache_root  # one rule for where compiled artifacts live (the hot modules' builds too)

KERNEL_KINDS = ("halide", "numba", "llvm", "cuda")  # cache_dir kinds that hold one entry per compiled kernel


def cache_dir(kind: str) -> Path:
    d = cache_root() / kind
    d.mkdir(parents=True, exist_ok=True)
    return d


def source_digest(root: Path, packages) -> str:
    """sha256 of every .py file of `packages` (directories under `root`), with its relative path (order-free): what
    a cache entry keyed by its inputs alone would miss when the code that turns them into a kernel changes."""
    h = hashlib.sha256()
    for pkg in packages:
        for f in sorted((root / pkg).rglob("*.py")):
            h.update(str(f.relative_to(root)).encode())
            h.update(b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()


@lru_cache(maxsize=None)
def translator_digest(*packages: str) -> str:
    """source_digest of schedlab's own `packages` as this process imports them, computed once per process."""
    return source_digest(Path(__file__).resolve().parent.parent, packages)


def touch(path: Path) -> None:
    """Mark a cache entry used now (its main file's mtime), so pruning keeps what is in use."""
    try:
        os.utime(path)
    except OSError:
        pass


@dataclass(frozen=True)
class _Entry:
    kind: str
    key: str
    files: tuple[Path, ...]  # the main file first
    size: int
    last_used: float


@dataclass(frozen=True)
class PruneReport:
    """A node's kernel cache before and after pruning."""

    entries: int  # kernels in the cache before
    size: int  # their bytes before
    removed: int  # kernels removed
    removed_size: int  # their bytes

    def describe(self) -> str:
        left = f"{self.entries - self.removed} kernels, {_gb(self.size - self.removed_size)}"
        return left + (f" (pruned {self.removed}, {_gb(self.removed_size)})" if self.removed else "")


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def _entries(root: Path) -> list[_Entry]:
    out = []
    for kind, prefix, main_suffix in (("halide", "k", ".o"), ("numba", "k_", ".py"), ("llvm", "k_", ".o"),
                                      ("cuda", "k_", ".cu")):
        d = root / kind
        if not d.is_dir():
            continue
        groups: dict[str, list[Path]] = {}
        for f in [*d.iterdir(), *((d / "__pycache__").iterdir() if (d / "__pycache__").is_dir() else ())]:
            name = f.name
            if f.is_file() and name.startswith(prefix) and not name.startswith("runtime-"):
                groups.setdefault(name.split(".", 1)[0], []).append(f)
        for key, files in groups.items():
            files.sort(key=lambda p: (p.name != key + main_suffix, p.name))  # the main file first
            stats = [(p, p.stat()) for p in files if p.exists()]
            if stats:
                out.append(_Entry(kind, key, tuple(p for p, _ in stats), sum(s.st_size for _, s in stats),
                                  max(s.st_mtime for _, s in stats)))
    return out


def prune_kernels(max_bytes: int, min_age_s: float = 3600.0, root: Path | None = None) -> PruneReport:
    """Remove the least recently used kernel entries until the cache holds at most `max_bytes`, sparing every
    entry used in the last `min_age_s` seconds (so the cache may stay above the bound while it is all in use)."""
    entries = _entries(root or cache_root())
    total = sum(e.size for e in entries)
    removed = removed_size = 0
    now = time.time()
    for e in sorted(entries, key=lambda e: e.last_used):
        if total - removed_size <= max_bytes or now - e.last_used < min_age_s:
            break
        for f in e.files:  # the main file first: a reader that misses it recompiles instead of half-loading
            try:
                f.unlink()
            except FileNotFoundError:
                pass
        removed += 1
        removed_size += e.size
    return PruneReport(len(entries), total, removed, removed_size)
