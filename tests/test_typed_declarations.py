"""The hot modules' augmenting .pxd files (ir.hot) declare exactly the fields their .py classes have.

Compiled, a class a .pxd declares is an extension type with only the declared fields: a field the .py sets but the
.pxd forgot fails at run time, and only under the builds. Pure Python never notices. This reads both files and
names the field to add or remove."""

from __future__ import annotations

import ast
import re

import pytest

from ir.hot import HOT_MODULES, declarations_path, source_path, typed_imports

TYPED = [m for m in HOT_MODULES if declarations_path(m).is_file()]
# modules whose .pxd declares extension types (train/analytical_rows.pxd types only functions)
WITH_CLASSES = [m for m in TYPED if re.search(r"^cdef class ", declarations_path(m).read_text(), re.M)]
_CDEF_FIELDS = re.compile(r"\s+cdef\s+(?:public\s+|readonly\s+)?([\w.]+)\s+(\w+(?:\s*,\s*\w+)*)\s*$")


def declared_classes(module: str) -> dict[str, set[str]]:
    """class name -> fields declared in the module's .pxd (`__weakref__` included when declared)."""
    out: dict[str, set[str]] = {}
    current = None
    for line in declarations_path(module).read_text().splitlines():
        m = re.match(r"cdef class (\w+)", line)
        if m:
            current = out.setdefault(m.group(1), set())
            continue
        m = _CDEF_FIELDS.match(line)
        if m and current is not None:
            current.update(n.strip() for n in m.group(2).split(","))
        elif line and not line.startswith((" ", "#")):
            current = None
    return out


def source_fields(module: str, cls: str) -> set[str]:
    """The fields the .py gives `cls`: its __slots__ (a tuple, or a module-level tuple's name), else every
    `self.<name> = ...` in its methods."""
    tree = ast.parse(source_path(module).read_text())
    consts = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)}
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    def names(value) -> tuple:  # a tuple literal, a module-level tuple's name, or a sum of those
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            return names(value.left) + names(value.right)
        return names(consts[value.id]) if isinstance(value, ast.Name) else tuple(ast.literal_eval(value))

    for node in body.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
            return set(names(node.value))
    found = set()
    for node in ast.walk(body):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
                    found.add(e.attr)
    return found


def _class_names(module: str, cls: str) -> set[str]:
    tree = ast.parse(source_path(module).read_text())
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return {t.id for node in body.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}


def test_the_typed_modules_are_the_search_core():
    assert {"ir.symbolic", "ir.dag", "ir.loopnest", "ir.plan", "featurize.schedule", "scheduler.space"} <= set(TYPED)
    assert typed_imports("featurize.schedule") == ("ir.dag", "ir.loopnest", "ir.plan", "ir.symbolic")


@pytest.mark.parametrize("module", WITH_CLASSES)
def test_every_declared_class_has_the_fields_of_its_source(module):
    classes = declared_classes(module)
    assert classes, f"{declarations_path(module)} declares no cdef class"
    for cls, declared in classes.items():
        fields = source_fields(module, cls)
        if "__slots__" not in _class_names(module, cls):  # every such class is weakly referable: a choice, not a field
            declared = declared - {"__weakref__"}
        missing, extra = sorted(fields - declared), sorted(declared - fields)
        assert not missing and not extra, (
            f"{declarations_path(module).name}: cdef class {cls} must declare {missing} and drop {extra} "
            f"(the fields of {cls} in {source_path(module).name})")


def test_a_forgotten_field_is_named(tmp_path, monkeypatch):
    """The check above reads what it says it reads: a field added to the .py only is reported by name."""
    import ir.hot as hot

    root = tmp_path
    (root / "ir").mkdir()
    (root / "ir" / "plan.py").write_text(source_path("ir.plan").read_text().replace(
        '__slots__ = ("dim", "loop", "level")', '__slots__ = ("dim", "loop", "level", "rows")'))
    (root / "ir" / "plan.pxd").write_text(declarations_path("ir.plan").read_text())
    monkeypatch.setattr(hot, "ROOT", root)
    with pytest.raises(AssertionError, match=r"cdef class Sliding must declare \['rows'\] and drop \[\]"):
        test_every_declared_class_has_the_fields_of_its_source("ir.plan")
