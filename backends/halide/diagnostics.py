"""Halide's compiler prints its warnings from C++ (to stdout through the Python bindings); this passes them on, except those
that describe a choice schedlab's plan makes on purpose.

The one such warning today: "Not folding Func f along dimension x because there is vectorized access to that
Func in that dimension and storage folding was not explicitly requested". It comes with a sliding window
(`store_at` above `compute_at`) whose consumer is vectorized along the window's moving dimension. schedlab's
plan allocates the whole store-level region for such a Func (as its own numba backend does, and as the feature
extractor counts the bytes); since Halide 16 Halide also does, unless told to fold. So the schedule Halide
compiles is the one schedlab planned, and the warning is not passed on. Every other line is.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import re
import sys
import tempfile

PLANNED = (re.compile(r"^Warning: Not folding Func \S+ along dimension \S+ because there is vectorized access"),)


@contextlib.contextmanager
def planned_warnings_filtered():
    """While Halide compiles, collect what is printed (its Python bindings print warnings through sys.stdout;
    C++ writes go to fds 1 and 2); afterwards write it, less the PLANNED warnings, to the same stream."""
    with _filtered(1, "stdout"), _filtered(2, "stderr"):
        yield


@contextlib.contextmanager
def _filtered(fd: int, name: str):
    stream = getattr(sys, name)
    stream.flush()
    saved = os.dup(fd)
    python_level = io.StringIO()
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), fd)
        setattr(sys, name, python_level)
        try:
            yield
        finally:
            setattr(sys, name, stream)
            _flush_c_streams()  # C++ output sits in stdio's buffer (a file is block-buffered)
            os.dup2(saved, fd)
            os.close(saved)
            captured.seek(0)
            text = python_level.getvalue() + captured.read().decode(errors="replace")
            kept = [line for line in text.splitlines(keepends=True) if not any(p.match(line) for p in PLANNED)]
            if kept:
                stream.write("".join(kept))
                stream.flush()


def _flush_c_streams() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
