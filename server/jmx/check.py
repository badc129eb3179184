"""Nagios-style checks of JMX values: threshold ranges, status codes and the one-line report.

Ranges follow the Nagios plugin guidelines: ``10`` alerts outside 0..10, ``10:`` below 10,
``~:10`` above 10, ``10:20`` outside 10..20, ``@10:20`` inside 10..20. Exit codes: 0 OK,
1 WARNING, 2 CRITICAL, 3 UNKNOWN (nothing matched, not a number, endpoint unreachable).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from pushgrid.kernel.jmxquery import Reading


class CheckStatus(IntEnum):
    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3


@dataclass(frozen=True, slots=True)
class Range:
    """A Nagios threshold range; :meth:`alerts` says whether a value raises the alert."""

    low: float
    high: float
    inside: bool = False
    text: str = ""

    @classmethod
    def parse(cls, text: str) -> Range:
        spec = text.strip()
        if not spec:
            raise ValueError("an empty Nagios range")
        inside = spec.startswith("@")
        body = spec[1:] if inside else spec
        low_text, colon, high_text = body.partition(":")
        if not colon:
            low_text, high_text = "0", body
        try:
            low = -math.inf if low_text.strip() == "~" else float(low_text or 0)
            high = math.inf if not high_text.strip() else float(high_text)
        except ValueError:
            message = f"{text!r} is not a Nagios range (10, 10:, ~:10, 10:20, @10:20)"
            raise ValueError(message) from None
        if low > high:
            raise ValueError(f"{text!r}: the start of the range is above its end")
        return cls(low, high, inside, spec)

    def alerts(self, value: float) -> bool:
        within = self.low <= value <= self.high
        return within if self.inside else not within


@dataclass(frozen=True, slots=True)
class Outcome:
    status: CheckStatus
    line: str


def _label(reading: Reading) -> str:
    name = f"{reading.mbean} {reading.attribute}"
    return f"{name}/{reading.key}" if reading.key else name


def _perf(reading: Reading, value: float, warn: Range | None, crit: Range | None) -> str:
    label = reading.attribute + (f".{reading.key}" if reading.key else "")
    name = reading.mbean.partition("name=")[2].split(",")[0] or reading.mbean
    return f"'{name}.{label}'={value:g};{warn.text if warn else ''};{crit.text if crit else ''}"


def evaluate(readings: Sequence[Reading], warn: Range | None, crit: Range | None) -> Outcome:
    """The worst status over the numeric readings, with a Nagios output line."""
    if not readings:
        return Outcome(CheckStatus.UNKNOWN, "JMX UNKNOWN - no attribute matched")
    worst = CheckStatus.OK
    parts: list[str] = []
    perf: list[str] = []
    for reading in readings:
        value = reading.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            line = f"JMX UNKNOWN - {_label(reading)} = {value!r} (not a number)"
            return Outcome(CheckStatus.UNKNOWN, line)
        status = CheckStatus.OK
        if crit is not None and crit.alerts(value):
            status = CheckStatus.CRITICAL
        elif warn is not None and warn.alerts(value):
            status = CheckStatus.WARNING
        worst = max(worst, status)
        parts.append(f"{_label(reading)} = {value:g}")
        perf.append(_perf(reading, float(value), warn, crit))
    return Outcome(worst, f"JMX {worst.name} - {', '.join(parts)} | {' '.join(perf)}")
