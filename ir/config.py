"""Typed configs: a dataclass filled from a YAML file and `key=value` overrides (DESIGN §4).

    cfg = load_config(TrainConfig, "conf/train.yaml", ["epochs=3", "model.kind=mlp"])

Every command of schedlab takes its settings this way, so a run is reproducible from one file plus
the overrides printed in its summary. An unknown key or a value of the wrong type raises ConfigError
naming the key and what it accepts; nothing is silently ignored. `run_cli` is every such command's main.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path

import yaml

from .errors import SchedlabError, first_line, one_line_warnings

_NONE = {"none", "null", "~"}


class ConfigError(SchedlabError):
    """A config file or a key=value override that does not fit the config's fields."""


def load_config(cls, path: str | Path | None = None, overrides: list[str] = ()):
    """An instance of the dataclass `cls` from the YAML mapping at `path` (optional), then `overrides`."""
    values: dict = {}
    if path is not None:
        values = _read_yaml(Path(path))
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not key=value")
        _set_dotted(values, key.strip(), yaml.safe_load(text) if text.strip() else "")
    return from_dict(cls, values)


def run_cli(config_cls, run, argv=None, prog: str = "", description: str = "",
            default_config: str | None = None) -> int:
    """A config-driven command's main: `--config FILE` and key=value overrides -> `config_cls` -> `run(cfg)`,
    which prints its result and returns the exit status. A SchedlabError (a bad key, value, file, dataset,
    ...) is one line `<prog>: error: <what to fix>` on stderr and exit status 2."""
    import argparse
    import sys

    default = "the built-in defaults" + (f", as {default_config}" if default_config else "")
    ap = argparse.ArgumentParser(prog=prog or None, description=description)
    ap.add_argument("--config", default=None, help=f"YAML config (default: {default})")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    a = ap.parse_args(argv)
    try:
        with one_line_warnings(prog or ap.prog):
            return run(load_config(config_cls, a.config, a.overrides))
    except SchedlabError as e:
        print(f"{prog or ap.prog}: error: {first_line(e)}", file=sys.stderr)
        return 2


def from_dict(cls, values: dict, where: str = ""):
    """Build `cls` from a (nested) mapping, checking every key and converting each value to its field type."""
    if not isinstance(values, dict):
        raise ConfigError(f"{where.rstrip('.') or 'config'} must be a mapping, got {values!r}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"unknown config key {where + unknown[0]!r}; {cls.__name__} accepts: "
                          f"{', '.join(where + k for k in fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {name: _convert(hints[name], v, where + name) for name, v in values.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where.rstrip('.') or cls.__name__}: {e}") from None


def to_dict(cfg) -> dict:
    """The config as plain data (what the run logs as parameters)."""
    return dataclasses.asdict(cfg)


def flat_items(cfg, prefix: str = "") -> dict[str, object]:
    """`{"model.kind": "hybrid", ...}`: the dotted keys a user would override, with their values."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        if dataclasses.is_dataclass(v):
            out.update(flat_items(v, f"{prefix}{f.name}."))
        else:
            out[prefix + f.name] = v
    return out


def _read_yaml(path: Path) -> dict:
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {str(e).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of config keys, got {type(data).__name__}")
    return data


def _set_dotted(values: dict, key: str, value) -> None:
    *parents, leaf = key.split(".")
    node = values
    for p in parents:
        child = node.setdefault(p, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {key!r}: {p!r} is not a section")
        node = child
    node[leaf] = value


def _convert(hint, value, key: str):
    """`value` as type `hint`, or ConfigError naming `key`."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None or (isinstance(value, str) and value.lower() in _NONE):
            if type(None) in options:
                return None
        errors = []
        for opt in options:
            if opt is type(None):
                continue
            try:
                return _convert(opt, value, key)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if errors else f"config key {key!r} cannot be {value!r}")
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value if value is not None else {}, key + ".")
    if origin is typing.Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(f"config key {key!r} must be one of {', '.join(map(str, choices))}; got {value!r}")
        return value
    if origin in (tuple, list):
        if isinstance(value, str):
            value = [yaml.safe_load(v) for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key {key!r} must be a list, got {value!r}")
        args = typing.get_args(hint)
        item = args[0] if args else object
        items = [_convert(item, v, key) for v in value] if item is not object else list(value)
        return tuple(items) if origin is tuple else items
    return _scalar(hint, value, key)


def _scalar(hint, value, key: str):
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"config key {key!r} must be true or false, got {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"config key {key!r} must be an integer, got {value!r}")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 1e-3 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"config key {key!r} must be a number, got {value!r}")
    if hint is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"config key {key!r} must be a string, got {value!r}")
    return value
