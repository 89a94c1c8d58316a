"""The shared command-line pieces: ir.config.run_cli (every config-driven command's main),
ir.errors.first_line (an error as one report line) and one-line warnings."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest

from ir.config import run_cli
from ir.errors import SchedlabError, SchedlabWarning, first_line


@dataclass
class ToyConfig:
    """A toy command's config: what a new command adds (one dataclass and a run function)."""

    size: int = 3
    name: str = "toy"


def toy_run(cfg: ToyConfig) -> int:
    if cfg.size < 0:
        raise SchedlabError(f"size must be >= 0, got {cfg.size}\n(a second line that must not be printed)")
    print(f"{cfg.name} x {cfg.size}")
    return 0 if cfg.size else 1


def test_run_cli_runs_the_typed_config_and_returns_its_status(tmp_path, capsys):
    conf = tmp_path / "toy.yaml"
    conf.write_text("size: 5\nname: from-file\n")
    assert run_cli(ToyConfig, toy_run, ["--config", str(conf), "name=over"], "python -m toy") == 0
    assert capsys.readouterr().out == "over x 5\n"
    assert run_cli(ToyConfig, toy_run, ["size=0"], "python -m toy") == 1


@pytest.mark.parametrize("argv, text", [
    (["sise=2"], "unknown config key 'sise'; ToyConfig accepts: size, name"),
    (["size=big"], "config key 'size' must be an integer"),
    (["--config", "/no/such.yaml"], "config file /no/such.yaml does not exist"),
    (["size"], "override 'size' is not key=value"),
    (["size=-1"], "size must be >= 0, got -1"),  # raised by the command itself
])
def test_run_cli_errors_are_one_line_and_exit_status_2(argv, text, capsys):
    assert run_cli(ToyConfig, toy_run, argv, "python -m toy") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m toy: error: ") and text in err, err


def test_run_cli_prints_schedlab_warnings_as_one_line_and_others_as_python_does(capsys):
    def warns(cfg: ToyConfig) -> int:
        warnings.warn("no champion in sqlite:///x.db; using the analytical model\n(detail)", SchedlabWarning)
        warnings.warn("a library's own warning", UserWarning)
        return 0

    shown = warnings.showwarning
    with pytest.warns(UserWarning) as passed_on:  # what Python's handler (here pytest's) got
        assert run_cli(ToyConfig, warns, [], "python -m toy") == 0
    assert capsys.readouterr().err == "python -m toy: warning: no champion in sqlite:///x.db; using the analytical model\n"
    assert [str(w.message) for w in passed_on] == ["a library's own warning"]
    assert warnings.showwarning is shown


def test_run_cli_help_names_the_default_config(capsys):
    with pytest.raises(SystemExit):
        run_cli(ToyConfig, toy_run, ["--help"], "python -m toy", "A toy.", default_config="conf/toy.yaml")
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    assert "A toy." in out and "the built-in defaults, as conf/toy.yaml" in out


def test_first_line():
    e = RuntimeError("\n  what went wrong  \ndetails\nValueError: the cause\n")
    assert first_line(e) == "what went wrong"
    assert first_line(e, last=True) == "ValueError: the cause"  # a remote (Ray) traceback's message
    assert first_line(KeyError()) == "KeyError"
    assert first_line("text\nmore") == "text" and first_line("") == ""
