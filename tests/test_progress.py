"""ir.progress: a bar on a terminal (a real pseudo-terminal here), one complete line per event elsewhere,
nothing when off; the `progress` key of every command accepts auto, bar, lines, true and false."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import termios

import pytest

from evaluate.config import AppsConfig, EvalConfig
from generator.job import JobConfig
from ir.config import ConfigError, load_config
from ir.progress import Progress, progress_mode
from train.config import TrainConfig


@pytest.fixture(params=["sized", "unsized"])
def terminal(request):
    """The writing end of a pseudo-terminal, and a function that reads what reached it; sized as a terminal
    window is (100 columns), or not at all (`script` without a terminal, some containers' `exec -t`)."""
    master, slave = pty.openpty()
    if request.param == "sized":
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    stream = os.fdopen(slave, "w", buffering=1)

    def read() -> str:
        stream.flush()
        out = b""
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                return out.decode(errors="replace")
            out += os.read(master, 65536)

    yield stream, read
    stream.close()
    os.close(master)


def test_auto_is_a_bar_on_a_terminal_and_lines_elsewhere(terminal):
    stream, _ = terminal
    assert progress_mode("auto", stream) == progress_mode(True, stream) == "bar"
    assert progress_mode("auto", io.StringIO()) == progress_mode(True, io.StringIO()) == "lines"
    assert progress_mode("lines", stream) == "lines" and progress_mode("bar", io.StringIO()) == "bar"
    assert progress_mode(False, stream) == "off"
    with pytest.raises(ConfigError, match="progress must be auto, bar, lines or false; got 'fancy'"):
        progress_mode("fancy")


def test_lines_are_one_complete_line_per_event_with_notes_between():
    out = io.StringIO()
    p = Progress(3, "schedule", "auto", stream=out)
    p.update(1, "seed 0 beam: ok")
    p.write("batch r0-p0: 1 pipelines, 3 schedules")
    p.update(2, "seed 0 dropout: crash")
    p.close()
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) == 3
    assert re.fullmatch(r"\[1/3\] seed 0 beam: ok elapsed 00:0\d", lines[0]), lines[0]
    assert lines[1] == "batch r0-p0: 1 pipelines, 3 schedules"
    assert re.fullmatch(r"\[3/3\] seed 0 dropout: crash elapsed 00:0\d", lines[2]), lines[2]


def test_a_throttled_log_keeps_the_first_and_the_last_event_and_a_shrunk_total():
    out = io.StringIO()
    p = Progress(10, "batch", "lines", desc="scoring", stream=out, min_interval=3600)
    p.add_total(-2)  # two were never planned
    for _ in p.iterate(range(8)):
        pass
    assert [ln.split(" elapsed")[0] for ln in out.getvalue().splitlines()] == ["scoring [1/8]", "scoring [8/8]"]


def test_off_shows_no_progress_but_still_writes_notes():
    out = io.StringIO()
    p = Progress(2, "sample", False, stream=out)
    p.update(2, "seed 1 beam: ok")
    p.write("round 0: sampling with random:0")
    assert out.getvalue() == "round 0: sampling with random:0\n"


def test_a_bar_redraws_on_a_terminal(terminal):
    stream, read = terminal
    p = Progress(4, "schedule", "auto", stream=stream)
    for i in range(4):
        p.update(1, f"seed {i}: ok")
    p.write("a note")
    p.close()
    text = read()
    redraws = re.findall(r"\r(?!\n)", text)  # the terminal itself turns each \n into \r\n
    assert redraws and "4/4" in text and "a note" in text, repr(text)


@pytest.mark.parametrize("cls", [JobConfig, EvalConfig, AppsConfig, TrainConfig])
def test_every_command_takes_the_setting_under_its_existing_key(cls):
    assert cls().progress == "auto"
    for text, value in (("auto", "auto"), ("bar", "bar"), ("lines", "lines"), ("true", True), ("false", False),
                        ("off", False)):
        assert load_config(cls, overrides=[f"progress={text}"]).progress == value
    with pytest.raises(ConfigError, match="^config key 'progress' must be true, false, auto, bar or lines; "
                                          "got 'fancy'$"):
        load_config(cls, overrides=["progress=fancy"])
