"""Typed configs from YAML + key=value overrides (ir/config.py): values convert to the field types,
and every bad key, value or file is one line naming it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from ir.config import ConfigError, flat_items, load_config


@dataclass(frozen=True)
class Inner:
    width: int = 8
    scale: float = 1.0


@dataclass(frozen=True)
class Outer:
    name: str = "run"
    kind: Literal["a", "b"] = "a"
    steps: int = 3
    enabled: bool = False
    uri: str | None = None
    sizes: tuple[int, ...] = (1, 2)
    inner: Inner = field(default_factory=Inner)

    def __post_init__(self):
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")


def test_yaml_then_overrides(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("name: from-file\nsteps: 5\ninner:\n  width: 16\n")
    c = load_config(Outer, f, ["steps=7", "inner.scale=2", "enabled=true", "sizes=4,8,16", "kind=b"])
    assert c == Outer(name="from-file", kind="b", steps=7, enabled=True, sizes=(4, 8, 16), inner=Inner(16, 2.0))
    assert load_config(Outer, f, ["uri=sqlite:////tmp/m.db"]).uri == "sqlite:////tmp/m.db"
    assert load_config(Outer, f, ["uri=null"]).uri is None
    assert load_config(Outer, f, ["inner.scale=1e-3"]).inner.scale == 0.001  # YAML 1.1 reads this as a string
    assert flat_items(c)["inner.width"] == 16 and flat_items(c)["kind"] == "b"


def test_defaults_without_a_file():
    assert load_config(Outer) == Outer()


@pytest.mark.parametrize("overrides, message", [
    (["step=3"], "unknown config key 'step'; Outer accepts: name, kind"),
    (["inner.depth=3"], "unknown config key 'inner.depth'; Inner accepts: inner.width, inner.scale"),
    (["steps=three"], "config key 'steps' must be an integer, got 'three'"),
    (["steps=2.5"], "config key 'steps' must be an integer, got 2.5"),
    (["kind=c"], "config key 'kind' must be one of a, b; got 'c'"),
    (["enabled=yes please"], "config key 'enabled' must be true or false"),
    (["inner.scale=fast"], "config key 'inner.scale' must be a number"),
    (["steps=-1"], "Outer: steps must be >= 0, got -1"),
    (["steps"], "override 'steps' is not key=value"),
    (["inner=3"], "inner must be a mapping"),
])
def test_bad_overrides_are_one_line_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as info:
        load_config(Outer, None, overrides)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(Outer, tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_config(Outer, bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(Outer, listy)


def test_a_to_b_is_text_not_a_base_60_number(tmp_path):
    """YAML 1.1 reads 1:30 as the integer 90; a config reads it as written (seeds=1:30 is a range)."""
    assert load_config(Outer, None, ["name=1:30"]).name == "1:30"
    f = tmp_path / "c.yaml"
    f.write_text("name: 1:30\nsteps: 1_000\ninner:\n  scale: 1.5e-3\n")
    c = load_config(Outer, f)
    assert (c.name, c.steps, c.inner.scale) == ("1:30", 1000, 0.0015)
    with pytest.raises(ConfigError, match="'steps' must be an integer, got '1:30'"):
        load_config(Outer, None, ["steps=1:30"])
