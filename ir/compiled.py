"""Build the hot modules' Cython extensions (ir.hot) and say which ones this process runs compiled.

    python -m ir.compiled build     # compile every hot module whose current source has no build (make compiled)
    python -m ir.compiled status    # which modules import compiled, and why not for the others
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .hot import HOT_MODULES, ROOT, build_path, compiled_dir, current_build, enabled, module_source, source_path

KEEP_OTHER_BUILDS = 3  # per module, besides the current source's


@dataclass(frozen=True)
class ModuleStatus:
    module: str
    # "compiled" (imported from its build), "built" (a current build, not imported yet), "held" (a current build that
    # runs pure Python until the hot modules it cimports have theirs), "stale" (only builds of other versions of its
    # source), "none" (never built), "no source"
    state: str
    path: Path | None


def status() -> list[ModuleStatus]:
    """For each hot module: whether this process runs its compiled build, and if not why."""
    out = []
    for m in HOT_MODULES:
        try:
            built = build_path(m, module_source(m))
        except OSError:  # a tree without that package
            out.append(ModuleStatus(m, "no source", None))
            continue
        mod = sys.modules.get(m)
        if mod is not None and getattr(mod, "__file__", "") == str(built):
            out.append(ModuleStatus(m, "compiled", built))
        elif built.is_file():
            out.append(ModuleStatus(m, "built" if current_build(m) is not None else "held", built))
        elif any(compiled_dir().glob(f"{m}-*")):
            out.append(ModuleStatus(m, "stale", None))
        else:
            out.append(ModuleStatus(m, "none", None))
    return out


def build(modules=HOT_MODULES, *, force: bool = False, quiet: bool = False, jobs: int | None = None) -> list[str]:
    """Compile each module whose current source has no build, `jobs` at a time (default: one per CPU); returns the
    modules compiled. Needs Cython and a C compiler; raises with the compiler's message when one fails (the
    others stay built)."""
    import Cython  # noqa: F401 (a clear ImportError, before any worker starts, when Cython is missing)

    for m in modules:
        if m not in HOT_MODULES:
            raise ValueError(f"{m} is not a hot module; choose from {', '.join(HOT_MODULES)}")
    todo = [m for m in modules if force or not build_path(m, module_source(m)).is_file()]
    if len(todo) <= 1 or jobs == 1:
        return [m for m in todo if _build_one(m, quiet)]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(len(todo), jobs or os.cpu_count() or 1)) as pool:
        built = list(pool.map(_build_one, todo, [quiet] * len(todo)))
    return [m for m, ok in zip(todo, built) if ok]


def _build_one(m: str, quiet: bool) -> bool:
    """Compile one module into the cache; False when its source changed while compiling (nothing kept)."""
    import shutil
    import tempfile

    import numpy
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    src = source_path(m)
    source = module_source(m)
    target = build_path(m, source)
    out_dir = target.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"compiling {m} ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="schedlab-cython-") as tmp:
        # cythonize the source in place (its package path names the module) into a private build directory
        # -ffp-contract=off: no a * b + c fused into one rounding, so C double arithmetic gives the bits Python's does;
        # -O3 (1.1 % fewer instructions a search state than -O2) reorders no floating-point operation without
        # -ffast-math, so the bits stay (tests/test_analytical_rows.py, search_digest.py)
        # numpy's headers: a module whose .pxd cimports numpy reads and writes small arrays through its C API
        ext = cythonize([Extension(m, [str(src)], extra_compile_args=["-O3", "-ffp-contract=off"],
                                   include_dirs=[numpy.get_include()],
                                   define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])], build_dir=tmp,
                        language_level=3,
                        include_path=[str(ROOT)],
                        quiet=True, compiler_directives={
                            "annotation_typing": False, "binding": True,
                            # a typed local or field that is None raises AttributeError, as in Python, when a field
                            # of it is read (not a crash)
                            "nonecheck": True})
        cmd = build_ext(Distribution({"name": "schedlab-compiled", "ext_modules": ext}))
        cmd.build_lib = os.path.join(tmp, "lib")
        cmd.build_temp = os.path.join(tmp, "tmp")
        cmd.ensure_finalized()
        cmd.run()
        if module_source(m) != source:
            return False  # edited while compiling: the build would be of neither version
        part = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(cmd.get_ext_fullpath(m), part)
        os.replace(part, target)  # atomic: a concurrent import sees the whole file or none
    # builds of other versions of this module's source: the newest few stay (another checkout, a benchmark's
    # worktree of an earlier revision, may run them), the rest go
    others = sorted((p for p in out_dir.glob(f"{m}-*") if p != target and not p.name.endswith(".tmp")),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[KEEP_OTHER_BUILDS:]:
        old.unlink(missing_ok=True)
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ("build", "status"):
        print("usage: python -m ir.compiled {build|status}", file=sys.stderr)
        return 2
    if args[0] == "build":
        try:
            done = build()
        except ImportError as e:
            print(f"ir.compiled: cannot compile ({e}); install Cython (pip install cython) or run as pure Python",
                  file=sys.stderr)
            return 1
        print(f"compiled {len(done)} module(s); {len(HOT_MODULES) - len(done)} already current "
              f"under {compiled_dir()}")
        return 0
    for s in status():
        print(f"{s.module:22s} {s.state}{'' if s.path is None else '  ' + str(s.path)}")
    if not enabled():
        print("SCHEDLAB_COMPILED=0: every module imports as pure Python")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
