"""The named measurement protocols, defined once: `quick` (the data generator's), `full` (evaluation's,
RunGen-style until the best runs agree) and `check` (one run, outputs checked, nothing timed worth keeping).
Configs name a protocol; `get_protocol` turns the name into a `Protocol`."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from ir.errors import SchedlabError

from .kernel import Protocol

# quick: few samples and a short cap: ranking schedules of one pipeline needs their relative speed, which a
# ~5 % error on a min over >= 3 samples preserves for all but near-ties; full (Protocol()) spends up to 2 s per
# schedule. `timeout` bounds one measurement in the worker.
QUICK = Protocol(warmup=1, min_samples=3, max_samples=20, accuracy=0.03, min_seconds=0.0, max_seconds=0.25,
                 sample_seconds=1e-3, timeout=60.0)
FULL = Protocol()
# check: one run, its outputs compared with the interpreter's (property tests, `generator.random --check`)
CHECK = Protocol(warmup=0, min_samples=1, max_samples=1, min_seconds=0, max_seconds=0, sample_seconds=0, timeout=120)

# full-retire: full, but under interleaved measurement a kernel leaves the rounds once its own samples have settled
# (Protocol.retire_settled); measured one at a time it is the full protocol
FULL_RETIRE = replace(FULL, retire_settled=True)
# full-ordered: full, but under interleaved measurement a kernel leaves the rounds once its order with every other
# kernel of the block is settled (Protocol.retire_ordered), after 5 rounds at least (3 samples' spread is too rough
# a guide); measured one at a time it is the full protocol with 5 samples at least
FULL_ORDERED = replace(FULL, retire_ordered=True, min_samples=5)

PROTOCOLS: dict[str, Protocol] = {"quick": QUICK, "full": FULL, "check": CHECK, "full-retire": FULL_RETIRE,
                                  "full-ordered": FULL_ORDERED}
DEPRECATED = {"default": "full"}  # old config names still accepted
# what a config may name: the keys of PROTOCOLS and DEPRECATED, written once for every config (a test checks they agree)
ProtocolName = Literal["quick", "full", "full-retire", "full-ordered", "check", "default"]


class ProtocolError(SchedlabError, ValueError):
    """An unknown protocol name."""


def get_protocol(name: str | Protocol, timeout: float | None = None) -> Protocol:
    """The Protocol named `name` (a Protocol is returned as is), with its whole-measurement `timeout` replaced
    when one is given (the data generators bound each measurement by their benchmark_timeout)."""
    if isinstance(name, Protocol):
        protocol = name
    else:
        name = DEPRECATED.get(name, name)
        if name not in PROTOCOLS:
            raise ProtocolError(f"unknown protocol {name!r}; use one of {', '.join(PROTOCOLS)}")
        protocol = PROTOCOLS[name]
    return protocol if timeout is None else replace(protocol, timeout=timeout)
