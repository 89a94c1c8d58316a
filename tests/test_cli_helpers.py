"""The shared command-line pieces: ir.config.run_cli (every config-driven command's main, whose --help
lists every key with its default and meaning), ir.errors.first_line (an error as one report line) and one-line
warnings."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import pytest

from ir.config import config_keys, field_comments, run_cli
from ir.errors import SchedlabError, SchedlabWarning, first_line


@dataclass
class Nested:
    depth: int = 2  # how deep
    tags: tuple[str, ...] = ()  # labels, comma-separated


@dataclass
class ToyConfig:
    """A toy command's config: what a new command adds (one dataclass and a run function)."""

    size: int = 3  # how many
    name: str = "toy"  # what to print; a meaning
    #   continued on an indented comment line
    # a meaning too long to trail its field
    # may sit just above it
    uri: str | None = None
    nested: Nested = field(default_factory=Nested)
    bare: bool = False


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
    (["sise=2"], "unknown config key 'sise'; ToyConfig accepts: size, name, uri, nested, bare"),
    (["size=big"], "config key 'size' must be an integer"),
    (["--config", "/no/such.yaml"], "config file /no/such.yaml does not exist"),
    (["size"], "override 'size' is not key=value"),
    (["size=-1"], "size must be >= 0, got -1"),  # raised by the command itself
])
def test_run_cli_errors_are_one_line_and_exit_status_2(argv, text, capsys):
    assert run_cli(ToyConfig, toy_run, argv, "python -m toy") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m toy: error: ") and text in err, err


def test_run_cli_bad_arguments_are_one_line_and_an_old_flag_gets_its_key(capsys):
    with pytest.raises(SystemExit) as e:
        run_cli(ToyConfig, toy_run, ["--nested-depth=3"], "python -m toy")
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("python -m toy: error: unrecognized arguments: --nested-depth=3") and "(nested_depth=...)" in err


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


def test_field_comments_are_the_keys_meanings():
    assert field_comments(ToyConfig) == {
        "size": "how many", "name": "what to print; a meaning continued on an indented comment line",
        "uri": "a meaning too long to trail its field may sit just above it", "nested": "", "bare": ""}
    assert [(k.key, k.default, k.meaning) for k in config_keys(ToyConfig)] == [
        ("size", "3", "how many"), ("name", "toy", "what to print; a meaning continued on an indented comment line"),
        ("uri", "none", "a meaning too long to trail its field may sit just above it"),
        ("nested.depth", "2", "how deep"), ("nested.tags", "''", "labels, comma-separated"), ("bare", "false", "")]


def test_run_cli_help_lists_every_key_with_its_default_and_meaning(capsys):
    with pytest.raises(SystemExit):
        run_cli(ToyConfig, toy_run, ["--help"], "python -m toy", "A toy.")
    out = " ".join(capsys.readouterr().out.split())
    for text in ("size=3: how many", "name=toy: what to print; a meaning continued on an indented comment line",
                 "uri=none: a meaning too long", "nested.depth=2: how deep", "nested.tags='': labels", "bare=false: -"):
        assert text in out, text


def _cli_mains():
    """(prog, main(argv), argv prefix, config class) of every config-driven command."""
    import evaluate.__main__ as evaluate_main
    import generator.datagen as datagen
    import generator.dataset as dataset
    import generator.job.__main__ as job_main
    import generator.schedule as schedule
    import train.__main__ as train_main
    from evaluate import apps
    from evaluate import compare
    from train import builtin
    from evaluate.config import AppsConfig, EvalConfig
    from generator.job.config import JobConfig
    from train.config import TrainConfig

    return [("python -m train", train_main.main, [], TrainConfig),
            ("python -m evaluate", evaluate_main.main, [], EvalConfig),
            ("python -m evaluate.apps", apps.main, [], AppsConfig),
            ("python -m generator.job", job_main.main, [], JobConfig),
            ("python -m generator.dataset stats", dataset.main, ["stats"], dataset.StatsConfig),
            ("python -m scheduler", schedule.main, [], schedule.SchedulerConfig),
            ("python -m generator.datagen", datagen.main, [], datagen.DatagenConfig),
            ("python -m train.builtin", builtin.main, [], builtin.ExportConfig),
            ("python -m evaluate.compare", compare.main, [], compare.CompareConfig)]


@pytest.mark.parametrize("index", range(9), ids=["train", "evaluate", "evaluate.apps", "generator.job", "dataset",
                                                  "scheduler", "generator.datagen", "train.builtin",
                                                  "evaluate.compare"])
def test_every_cli_help_lists_every_key_with_default_and_meaning(index, capsys):
    prog, main, prefix, cls = _cli_mains()[index]
    with pytest.raises(SystemExit) as e:
        main([*prefix, "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith(f"usage: {prog} ")
    keys = config_keys(cls)
    assert len(keys) >= 1
    for k in keys:
        assert k.meaning, f"{prog}: config key {k.key} has no meaning (write it as the field's comment)"
        assert f"{k.key}={k.default}: {k.meaning}" in out, k.key
    description = out.split(" positional arguments:")[0]
    assert description.rstrip().endswith((".", ")")), description  # whole sentences, not a line cut short


def test_first_line():
    e = RuntimeError("\n  what went wrong  \ndetails\nValueError: the cause\n")
    assert first_line(e) == "what went wrong"
    assert first_line(e, last=True) == "ValueError: the cause"  # a remote (Ray) traceback's message
    assert first_line(KeyError()) == "KeyError"
    assert first_line("text\nmore") == "text" and first_line("") == ""
