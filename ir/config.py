"""Typed configs: a dataclass filled from a YAML file and `key=value` overrides (DESIGN §4).

    cfg = load_config(TrainConfig, "conf/train.yaml", ["epochs=3", "model.kind=mlp"])

Every command of schedlab takes its settings this way, so a run is reproducible from one file plus
the overrides printed in its summary. An unknown key or a value of the wrong type raises ConfigError
naming the key and what it accepts; nothing is silently ignored. `run_cli` is every such command's main;
its --help lists every key (`config_keys`) with its default and the meaning written as the field's comment.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import io
import re
import textwrap
import tokenize
import types
import typing
from pathlib import Path

import yaml

from .errors import SchedlabError, first_line, one_line_warnings

_NONE = {"none", "null", "~"}


class _Loader(yaml.SafeLoader):
    """YAML 1.1 without its base-60 numbers, so that `seeds=1:3` is the text '1:3', not the integer 63."""


_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(_INT, re.compile(
    r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"), list("-+0123456789"))
_Loader.add_implicit_resolver(_FLOAT, re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))


def _yaml(text: str):
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader


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
        _set_dotted(values, key.strip(), _yaml(text) if text.strip() else "")
    return from_dict(cls, values)


def run_cli(config_cls, run, argv=None, prog: str = "", description: str = "",
            default_config: str | None = None) -> int:
    """A config-driven command's main: `--config FILE` and key=value overrides -> `config_cls` -> `run(cfg)`,
    which prints its result and returns the exit status, with MLflow's and Lightning's chatter off (ir.logs). A
    SchedlabError (a bad key, value, file, dataset, ...) is one line `<prog>: error: <what to fix>` on stderr and
    exit status 2. --help lists every key."""
    import argparse
    import sys

    default = "the built-in defaults" + (f", as {default_config}" if default_config else "")
    description = "\n\n".join(textwrap.fill(" ".join(par.split()), 100) for par in description.split("\n\n"))
    class Parser(argparse.ArgumentParser):
        def error(self, message):  # one line, not the usage dump; an old --flag gets its key=value spelling
            flags = [w for w in message.split() if w.startswith("--")]
            key = flags[0][2:].partition("=")[0].replace("-", "_") if flags else ""
            hint = f"; settings are key=value ({key}=...), see --help" if flags else ""
            print(f"{self.prog}: error: {message.splitlines()[0]}{hint}", file=sys.stderr)
            sys.exit(2)

    ap = Parser(prog=prog or None, description=description, epilog=keys_help(config_cls),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=None, help=f"YAML config (default: {default})")
    ap.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides (keys below)")
    a = ap.parse_args(argv)
    from .logs import quiet_third_party

    quiet_third_party()  # a command's output is its own lines: MLflow's and Lightning's chatter is off
    try:
        with one_line_warnings(prog or ap.prog):
            return run(load_config(config_cls, a.config, a.overrides))
    except SchedlabError as e:
        print(f"{prog or ap.prog}: error: {first_line(e)}", file=sys.stderr)
        return 2


def doc_body(doc: str) -> str:
    """A command module's docstring without its first (usage) line: the --help description, whole
    paragraphs rather than a line cut mid-sentence."""
    return doc.split("\n\n", 1)[-1].strip()


@dataclasses.dataclass(frozen=True)
class ConfigKey:
    """One key a user can set: dotted name (`train.epochs`), built-in default as written on the command
    line, and its meaning (the field's comment; "" when it has none, which tests/test_config.py forbids)."""

    key: str
    default: str
    meaning: str


def config_keys(cls, prefix: str = "") -> list[ConfigKey]:
    """Every key of the config dataclass `cls`, nested dataclasses flattened into dotted keys."""
    meanings = field_comments(cls)
    out: list[ConfigKey] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            value = dataclasses.MISSING
        if dataclasses.is_dataclass(value):
            out += config_keys(type(value), f"{prefix}{f.name}.")
        else:
            out.append(ConfigKey(prefix + f.name, format_value(value), meanings.get(f.name, "")))
    return out


def keys_help(cls, width: int = 100) -> str:
    """The --help epilog: each key with its default and meaning, the meaning wrapped under it."""
    keys = config_keys(cls)
    if not keys:
        return ""
    lines = ["config keys (key=default: meaning):"]
    for k in keys:
        head = f"  {k.key}={k.default}:"
        if len(head) < 40:
            lines.append(textwrap.fill(f"{head} {k.meaning or '-'}", width, subsequent_indent=" " * 6,
                                       break_on_hyphens=False))
        else:  # a long default (a tuple of names) gets its own line
            lines += [head, textwrap.fill(k.meaning or "-", width, initial_indent=" " * 6, subsequent_indent=" " * 6,
                                         break_on_hyphens=False)]
    return "\n".join(lines)


def format_value(value) -> str:
    """A value as it is written in key=value (none, true, a,b,c)."""
    if value is dataclasses.MISSING:
        return "(required)"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(map(format_value, value)) or "''"
    if value == "":
        return "''"
    return str(value)


@functools.cache
def field_comments(cls) -> dict[str, str]:
    """{field: meaning} from the comments in `cls`'s source, the one place a key's meaning is written: the
    comment ending a field's line, continued by comment lines under it indented past the '#' ('#   more'),
    or comment lines just above a field (for a meaning too long to trail it)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    comments: dict[int, tuple[str, bool]] = {}  # line -> (text, the line holds only the comment)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            only = not tok.line[:tok.start[1]].strip()
            comments[tok.start[0]] = (tok.string, only)
    body = ast.parse(source).body[0].body
    out: dict[str, str] = {}
    for node in body:
        if not (isinstance(node, ast.AnnAssign) and hasattr(node.target, "id")):
            continue
        parts = [comments[i][0] for i in range(node.lineno, node.end_lineno + 1)
                 if i in comments and not comments[i][1]]
        above, i = [], node.lineno - 1
        while i in comments and comments[i][1] and not comments[i][0].startswith("#  "):
            above.insert(0, comments[i][0])
            i -= 1
        i = node.end_lineno + 1
        while i in comments and comments[i][1] and comments[i][0].startswith("#  "):
            parts.append(comments[i][0])
            i += 1
        text = " ".join(c.lstrip("#").strip() for c in above + parts)
        out[node.target.id] = " ".join(text.split())
    return out


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
        data = _yaml(path.read_text())
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
        words = [w for opt in options if opt is not type(None) for w in _words(opt)]
        if words and None not in words:  # every option is a bool or a Literal: name all the values accepted
            words = [str(w) for w in words]
            raise ConfigError(f"config key {key!r} must be {', '.join(words[:-1])} or {words[-1]}; got {value!r}")
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
            value = [_yaml(v) for v in value.split(",") if v.strip()]
        elif isinstance(value, (int, float, bool)):  # key=0.5: a list of one (YAML read a number, not "0.5")
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key {key!r} must be a list, got {value!r}")
        args = typing.get_args(hint)
        item = args[0] if args else object
        items = [_convert(item, v, key) for v in value] if item is not object else list(value)
        return tuple(items) if origin is tuple else items
    return _scalar(hint, value, key)


def _words(hint) -> list:
    """The values a bool or Literal type accepts, as a user writes them; [None] for any other type."""
    if hint is bool:
        return ["true", "false"]
    if typing.get_origin(hint) is typing.Literal:
        return list(typing.get_args(hint))
    return [None]


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
