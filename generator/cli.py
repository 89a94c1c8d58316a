"""Argument types and the parser shared by the generator's command lines: bad arguments are one line."""

from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr and exit status 2 (no usage dump)."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message.splitlines()[0]}\n")
        sys.exit(2)


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive int, got {text!r}")
    return v


def max_stages(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 2, got {text!r}") from None
    if v < 2:
        raise argparse.ArgumentTypeError(f"max stages counts the input and output stages; expected >= 2, got {v}")
    return v


def output_size(text: str) -> tuple[int, int, int]:
    """'W,H,C' or 'WxHxC'."""
    try:
        parts = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        parts = ()
    if len(parts) != 3 or min(parts) <= 0:
        raise argparse.ArgumentTypeError(f"size must be W,H,C (three positive ints), got {text!r}")
    return parts


def seconds_range(text: str) -> tuple[float, float]:
    """'LO,HI' seconds with 0 < LO <= HI."""
    from .sizing import check_naive_runtime

    try:
        return check_naive_runtime(text.split(","), "the range")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
