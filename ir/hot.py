"""The search's hot modules compiled by Cython, used only when built from the source file as it is now.

Search spends its time in Python bookkeeping spread over a few modules (docs/scheduler.md, "Where the next
factor must come from"); Cython compiles those modules as they are (pure-Python mode: annotations are not read as C
types) and removes the interpreter's dispatch around them. Where a module has an augmenting `.pxd` (ir/plan.pxd,
...), its classes compile to extension types and the `@cython.locals` of its hot functions type their locals, so
fields are read as C struct members (docs/scheduler.md, "Typed extension classes"); the .py stays plain Python with
the same semantics. A compiled module that shadowed its source would make an edit that was not rebuilt silently do
nothing, so the extensions never sit beside the sources: each lives in `$SCHEDLAB_COMPILED_DIR` (by default
`<cache>/compiled`) as `<module>-<digest><EXT_SUFFIX>`, the digest being the sha256 of the exact source it was
compiled from (its .py and every hot module's .pxd), and the import hook below serves it only when the sources on
disk have that digest and the hot modules it cimports run their own builds. Any other case (no build, a stale build,
Cython absent, `SCHEDLAB_COMPILED=0`) imports the .py itself, so schedlab behaves the same either way, only slower.

Building and inspecting them: `ir.compiled` (`python -m ir.compiled build|status`).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from pathlib import Path

# The modules a search's time is spent in (profiles of beam search on the apps and random pipelines): planning,
# placement, featurization, the symbolic algebra under them, the search loop, and the analytical cost terms it scores
# children with.
HOT_MODULES = (
    "ir.symbolic", "ir.relation", "ir.dag", "ir.loopnest", "ir.plan", "ir.builder",
    "featurize.schedule", "scheduler.space", "scheduler.search", "train.analytical_rows",
)
# Part of every digest: a change to how modules are compiled makes every earlier build stale.
RECIPE = "cython-pure-python-mode/annotation_typing=False/binding=True/nonecheck=True/O3/fp-contract=off/numpy-capi/v3"
ROOT = Path(__file__).resolve().parent.parent  # the directory holding schedlab's packages


def cache_root() -> Path:
    """$SCHEDLAB_CACHE_DIR, else ~/.cache/schedlab: where compiled artifacts of every kind live."""
    return Path(os.environ.get("SCHEDLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "schedlab"))


def enabled() -> bool:
    return os.environ.get("SCHEDLAB_COMPILED", "1") != "0"


def source_path(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def declarations_path(module: str) -> Path:
    """The module's augmenting .pxd: Cython reads its extension types and typed locals when it compiles the .py."""
    return source_path(module).with_suffix(".pxd")


def module_source(module: str) -> bytes:
    """What a build of `module` is compiled from: its .py, and the .pxd declarations of every hot module (a module
    may cimport another's extension types, so a change to any declarations makes every build stale). OSError when
    the .py is missing."""
    parts = [source_path(module).read_bytes()]
    for m in HOT_MODULES:
        pxd = declarations_path(m)
        if pxd.is_file():
            parts.append(f"\0{m}.pxd\0".encode() + pxd.read_bytes())
    return b"".join(parts)


def digest(source: bytes) -> str:
    h = hashlib.sha256(RECIPE.encode())
    h.update(sys.implementation.cache_tag.encode())
    h.update(source)
    return h.hexdigest()[:20]


def compiled_dir() -> Path:
    """$SCHEDLAB_COMPILED_DIR, else <cache root>/compiled. install() fixes it in the environment, so processes this
    one starts run the same builds even where they point SCHEDLAB_CACHE_DIR elsewhere (benchmarks and jobs give
    each run a cold kernel cache that way)."""
    return Path(os.environ.get("SCHEDLAB_COMPILED_DIR") or cache_root() / "compiled")


def build_path(module: str, source: bytes) -> Path:
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return compiled_dir() / f"{module}-{digest(source)}{suffix}"


def typed_imports(module: str) -> tuple[str, ...]:
    """The hot modules whose extension types `module`'s .pxd cimports (`from ir.plan cimport ...`): its build
    reads their objects as C structs, so it runs only where theirs do."""
    pxd = declarations_path(module)
    if not pxd.is_file():
        return ()
    found = []
    for line in pxd.read_text().splitlines():
        m = re.match(r"\s*(?:from\s+([\w.]+)\s+cimport\b|cimport\s+([\w.]+))", line)
        name = m and (m.group(1) or m.group(2))
        if name in HOT_MODULES and name not in found:
            found.append(name)
    return tuple(found)


def current_build(module: str, _seen: frozenset = frozenset()) -> Path | None:
    """The build this process may import for `module`: the one of its source as it is, and only when every hot
    module it cimports runs its own current build too (a build that cimported a module running as pure Python would
    fail to import). None: import the .py."""
    try:
        built = build_path(module, module_source(module))
    except OSError:
        return None
    if not built.is_file():
        return None
    for dep in typed_imports(module):
        loaded = sys.modules.get(dep)
        if dep in _seen or (loaded is not None and not _from_build(dep)) or \
                current_build(dep, _seen | {module}) is None:
            return None
    return built


class _Finder:
    """A meta path finder for HOT_MODULES: the build of the source as it is, or nothing (the .py is imported)."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname not in HOT_MODULES or not enabled():
            return None
        built = current_build(fullname)
        if built is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(built))
        return importlib.util.spec_from_file_location(fullname, str(built), loader=loader)


_FINDER = _Finder()


def install() -> None:
    """Put the finder first on sys.meta_path (once); ir's package import does this before any hot module loads."""
    os.environ.setdefault("SCHEDLAB_COMPILED_DIR", str(compiled_dir()))
    if not any(f is _FINDER for f in sys.meta_path):
        sys.meta_path.insert(0, _FINDER)


def compiled_modules() -> tuple[str, ...]:
    """The hot modules this process imported from a Cython build: what a benchmark's figures were measured with."""
    return tuple(m for m in HOT_MODULES if _from_build(m))


def pure_modules() -> tuple[str, ...]:
    """The hot modules this process imported as pure Python (no current build, or SCHEDLAB_COMPILED=0)."""
    return tuple(m for m in HOT_MODULES if m in sys.modules and not _from_build(m))


def _from_build(m: str) -> bool:
    return isinstance(getattr(sys.modules.get(m), "__loader__", None), importlib.machinery.ExtensionFileLoader)
