"""Kernel runners that misbehave, imported by the worker process in tests: a real crash, a real hang."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class CrashingSpec:
    def runner(self):
        def run(inputs, outputs):
            os.abort()

        return run


@dataclass(frozen=True)
class HangingSpec:
    def runner(self):
        def run(inputs, outputs):
            time.sleep(3600)

        return run


@dataclass(frozen=True)
class RaisingSpec:
    def runner(self):
        def run(inputs, outputs):
            raise FloatingPointError("injected failure")

        return run


def abort_now():
    os.abort()


def sleep_forever():
    time.sleep(3600)


def add(a, b):
    return a + b


@dataclass(frozen=True)
class WrongOutputSpec:
    """A real kernel whose first output gets one value changed after each run."""

    inner: object

    def runner(self):
        run_inner = self.inner.runner()

        def run(inputs, outputs):
            run_inner(inputs, outputs)
            next(iter(outputs.values()))[0] += 1

        return run
