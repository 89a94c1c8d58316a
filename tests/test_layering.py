"""DESIGN §1's layering: `ir` <- `backends`, `featurize` <- `scheduler` (+ `train`) <- `generator` <- `evaluate`.

Each package is imported, with every module in it, in a fresh interpreter, and none of the packages above
it may then be in sys.modules; and no module imports one above it anywhere in its text (a function-level
import runs later than an import check can see). `__main__` entry points are not imported (they run)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# what each package may import (besides itself and the standard library / third-party packages)
ALLOWED = {
    "ir": set(),
    "backends": {"ir"},
    "featurize": {"ir"},
    "train": {"ir", "featurize"},
    "scheduler": {"ir", "backends", "featurize", "train"},
    "generator": {"ir", "backends", "featurize", "train", "scheduler"},
    "evaluate": {"ir", "backends", "featurize", "train", "scheduler", "generator"},
}
PACKAGES = tuple(ALLOWED)

_IMPORT_ALL = """
import importlib, json, pkgutil, sys
pkg = importlib.import_module({pkg!r})
for m in pkgutil.walk_packages(pkg.__path__, {pkg!r} + "."):
    if m.name.rsplit(".", 1)[-1] != "__main__":
        importlib.import_module(m.name)
print(json.dumps(sorted({{name.split(".")[0] for name in sys.modules}})))
"""


@pytest.mark.parametrize("pkg", PACKAGES)
def test_importing_a_package_loads_no_layer_above_it(pkg):
    out = subprocess.run([sys.executable, "-c", _IMPORT_ALL.format(pkg=pkg)], capture_output=True, text=True,
                         cwd=ROOT, check=True, timeout=600)
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1])) & set(PACKAGES)
    assert loaded - {pkg} <= ALLOWED[pkg], f"{pkg} loads {sorted(loaded - {pkg} - ALLOWED[pkg])}"


def imported_packages(path: Path) -> set[str]:
    """Top-level schedlab packages named by any import statement in the file (function-level ones too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out & set(PACKAGES)


@pytest.mark.parametrize("pkg", PACKAGES)
def test_no_module_imports_a_layer_above_its_own(pkg):
    bad = {str(f.relative_to(ROOT)): sorted(imported_packages(f) - ALLOWED[pkg] - {pkg})
           for f in sorted((ROOT / pkg).rglob("*.py"))}
    assert not {f: b for f, b in bad.items() if b}


def test_the_check_sees_a_function_level_import(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def main():\n    from generator.apps import get_app\n    import evaluate.plots\n")
    assert imported_packages(f) == {"generator", "evaluate"}
