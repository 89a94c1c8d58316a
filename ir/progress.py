"""Progress of a long command: a tqdm bar on a terminal, one complete line per event anywhere else.

A bar redrawn into a file, a CI log or `ray job logs` is one long line of '\\r' frames with log lines
glued to it, so every command's `progress` setting defaults to `auto`: a bar when the stream is a
terminal, otherwise a flushed line per event such as

    [12/40] seed 3 beam: ok (ok 11, failed 1) elapsed 00:31

`bar` and `lines` force either, `false` shows none (notes written with `write` still print).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Iterable, Iterator, Literal

from .config import ConfigError

ProgressSetting = bool | Literal["auto", "bar", "lines"]  # the `progress` key of every command's config
Mode = Literal["bar", "lines", "off"]


def progress_mode(setting: ProgressSetting, stream=None) -> Mode:
    """What `setting` shows on `stream` (default stderr): auto (or true) is a bar on a terminal, lines elsewhere."""
    stream = sys.stderr if stream is None else stream
    if setting is False:
        return "off"
    if setting is True or setting == "auto":
        isatty = getattr(stream, "isatty", None)
        return "bar" if isatty is not None and isatty() else "lines"
    if setting in ("bar", "lines"):
        return setting
    raise ConfigError(f"progress must be auto, bar, lines or false; got {setting!r}")


def elapsed(seconds: float) -> str:
    """00:31, 12:05, 1:02:03."""
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    """Counts events towards `total` (None: unknown) and shows them as `setting` says; `write` prints a
    note that neither breaks a bar nor glues to one. In line mode a line is printed per `update` (at most
    one per `min_interval` seconds, the last always), so the caller's update is the event."""

    def __init__(self, total: int | None, unit: str, setting: ProgressSetting = "auto", *, desc: str = "",
                 stream=None, min_interval: float = 0.0, leave: bool = True):
        self.stream = sys.stderr if stream is None else stream
        self.mode = progress_mode(setting, self.stream)
        self.total, self.unit, self.desc, self.n = total, unit, desc, 0
        self.min_interval = min_interval
        self.t0 = time.monotonic()
        self._last_line = -float("inf")
        self._bar = None
        if self.mode == "bar":
            from tqdm import tqdm

            # a terminal that reports no size (a pseudo-terminal nobody sized) would get an invisible bar
            sized = _columns(self.stream) > 0
            self._bar = tqdm(total=total, unit=unit, desc=desc or None, file=self.stream, dynamic_ncols=sized,
                             ncols=None if sized else 100, nrows=None if sized else 24, leave=leave)

    def update(self, n: int = 1, note: str = "") -> None:
        """`n` more events done; `note` says what the last one was."""
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
            if note:
                self._bar.set_postfix_str(note[:80], refresh=False)
        elif self.mode == "lines":
            now = time.monotonic()
            if now - self._last_line >= self.min_interval or self.n == self.total:
                self._last_line = now
                self._print(self.line(note))

    def set(self, done: int, note: str = "") -> None:
        """The count is `done` now (a caller that knows positions rather than increments)."""
        self.update(done - self.n, note)

    def add_total(self, delta: int) -> None:
        """Fewer (or more) events than planned: a pipeline that could not be generated, a batch written before."""
        if self.total is None or not delta:
            return
        self.total += delta
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def line(self, note: str = "") -> str:
        """The line-mode text of the current count: `desc [n/total] note elapsed mm:ss`."""
        count = f"[{self.n}/{self.total}]" if self.total is not None else f"[{self.n} {self.unit}]"
        parts = [self.desc, count, note[:200], f"elapsed {elapsed(time.monotonic() - self.t0)}"]  # a bounded line
        return " ".join(p for p in parts if p)

    def write(self, text: str, stream=None) -> None:
        """A note (a batch written, a round started) on `stream` (default the progress's): its own line above
        a bar, or a line in the log."""
        stream = self.stream if stream is None else stream
        for ln in text.splitlines() or [""]:
            if self._bar is not None:
                self._bar.write(ln, file=stream)
            else:
                print(ln, file=stream, flush=True)

    def iterate(self, items: Iterable) -> Iterator:
        """Each item of `items`, one event after each; closes when they run out."""
        try:
            for item in items:
                yield item
                self.update(1)
        finally:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


def _columns(stream) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def echo(text: str, stream=None) -> None:
    """Print a result line (default stdout) without breaking a bar that is showing on the terminal."""
    stream = sys.stdout if stream is None else stream
    tqdm = sys.modules.get("tqdm")
    if tqdm is not None and getattr(tqdm.tqdm, "_instances", None):
        tqdm.tqdm.write(text, file=stream)
        stream.flush()
    else:
        print(text, file=stream, flush=True)
