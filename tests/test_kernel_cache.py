"""backends.cache.prune_kernels on a real cache: entries of both backends written by real compiles, pruned
least recently used first as whole entries (object + sidecar; module + numba's index and data), never the
Halide runtime nor anything used within min_age_s; a use marks an entry without invalidating numba's cache."""

from __future__ import annotations

import os
import time
from pathlib import Path


from backends.cache import prune_kernels


def _fake(root: Path, kind: str, names: list[str], size: int, age_s: float) -> None:
    for n in names:
        p = root / kind / n
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * size)
        t = time.time() - age_s
        os.utime(p, (t, t))


def test_least_recently_used_entries_go_first_and_whole(tmp_path):
    _fake(tmp_path, "halide", ["kaaa.o", "kaaa.json"], 1000, 5 * 3600)  # oldest
    _fake(tmp_path, "numba", ["k_bbb.py", "__pycache__/k_bbb.run-3.py311.nbi", "__pycache__/k_bbb.run-3.py311.1.nbc"],
          1000, 4 * 3600)
    _fake(tmp_path, "halide", ["kccc.o", "kccc.json"], 1000, 3 * 3600)
    _fake(tmp_path, "halide", ["kddd.o", "kddd.json"], 1000, 60)  # used a minute ago
    _fake(tmp_path, "halide", ["runtime-123.o"], 50_000, 9 * 3600)  # Halide's shared runtime: never pruned
    r = prune_kernels(4500, min_age_s=3600, root=tmp_path)
    assert (r.entries, r.size, r.removed, r.removed_size) == (4, 9000, 2, 5000)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["halide/kccc.json", "halide/kccc.o", "halide/kddd.json", "halide/kddd.o", "halide/runtime-123.o"]
    assert r.describe() == "2 kernels, 0.0 MB (pruned 2, 0.0 MB)"
    # everything left is either needed to fit or too recent; a bound of 0 spares the entry in use
    r = prune_kernels(0, min_age_s=3600, root=tmp_path)
    assert (r.removed, sorted(p.name for p in (tmp_path / "halide").iterdir())) == (
        1, ["kddd.json", "kddd.o", "runtime-123.o"])
    assert prune_kernels(0, min_age_s=3600, root=tmp_path / "missing").entries == 0


def test_a_use_marks_the_entry_and_numba_still_loads_its_cache(tmp_path, monkeypatch):
    """Compiling the same kernel twice touches its index (not the .py: numba's index records the source's
    mtime, and a touched source would be recompiled); the second load finds numba's cached code."""
    monkeypatch.setenv("SCHEDLAB_CACHE_DIR", str(tmp_path))
    from backends import get_backend
    from generator.random_pipeline import random_pipeline
    from ir.sampling import random_schedule
    from ir.target import get_target

    p = random_pipeline(2, max_stages=4, output_size=(32, 24, 3))
    ln, _ = random_schedule(p, 5)
    numba = get_backend("numba")
    kernel = numba.build(p, ln, get_target("host"), isolate=False)
    path = Path(kernel.path)
    indexes = list((path.parent / "__pycache__").glob(path.stem + ".*.nbi"))
    assert indexes, "numba wrote no cache index"
    source_mtime = path.stat().st_mtime
    old = time.time() - 7200
    for f in indexes:
        os.utime(f, (old, old))
    numba.build(p, ln, get_target("host"), isolate=False)  # the same schedule again: the entry is used
    assert path.stat().st_mtime == source_mtime
    assert all(f.stat().st_mtime > old + 3600 for f in indexes)
    assert prune_kernels(0, min_age_s=3600, root=tmp_path).removed == 0  # just used: spared


def test_a_halide_kernel_compiled_by_other_translation_code_is_another_entry(tmp_path, monkeypatch):
    """The Halide cache keys on the pipeline and LoopNest; the code that translates them for Halide is part of the key
    too, or a fixed translation would keep loading the kernels the code before compiled (it did: a division by a
    constant zero kept failing from the cache after the fix)."""
    import shutil

    import pytest

    pytest.importorskip("halide")
    from backends.cache import source_digest, translator_digest
    from backends.halide import aot

    root = Path(__file__).resolve().parent.parent
    for pkg in aot.TRANSLATOR_PACKAGES:
        shutil.copytree(root / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_digest(tmp_path, aot.TRANSLATOR_PACKAGES)
    assert before == translator_digest(*aot.TRANSLATOR_PACKAGES)  # this checkout's code, as imported
    with open(tmp_path / "backends/halide/translate.py", "a") as f:
        f.write("\n# another translation\n")
    after = source_digest(tmp_path, aot.TRANSLATOR_PACKAGES)
    assert after != before
    keys = []
    for digest in (before, after):
        monkeypatch.setattr(aot, "translator_digest", lambda *packages, d=digest: d)
        keys.append(aot._digest(["pipeline", "loopnest"]))
    assert keys[0] != keys[1]
