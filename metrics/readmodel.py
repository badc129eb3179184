"""The monitoring read model: one frozen value per sampled second, shared by every view.

The sampler builds a :class:`ReadModel` once a second, right after the sample, the window update
and the hot-subject fold, and swaps it in with one attribute assignment. Every view (Jolokia
MBeans, /stats, /metrics, meta-subjects) reads that reference and only formats it: none of them
computes a statistic, so they cannot disagree, and a reader on another thread needs no lock (the
value is never mutated after it is published; a new second is a new object).

An empty window (``count == 0``) has ``max``, ``avg`` and ``stddev`` ``None``: views show it as
``null`` (JSON), ``U`` (/stats text), an absent field (meta-subjects) or no series (Prometheus).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .indicators import INDICATOR_NAMES
from .stats import Moments

__all__ = [
    "ArchiveReading",
    "IndicatorReading",
    "ReadModel",
    "WindowReading",
    "build_read_model",
]


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class WindowReading:
    """Max / average / population stddev / count of one indicator over one window."""

    count: int
    max: float | None
    avg: float | None
    stddev: float | None

    @staticmethod
    def of(moments: Moments) -> WindowReading:
        if moments.count == 0:
            return WindowReading(0, None, None, None)
        return WindowReading(
            moments.count, _finite(moments.max), _finite(moments.mean), _finite(moments.stddev)
        )

    def as_dict(self) -> dict[str, float | int | None]:
        """The ``{"max", "avg", "stddev", "count"}`` map every JSON view shows."""
        return {"max": self.max, "avg": self.avg, "stddev": self.stddev, "count": self.count}


@dataclass(frozen=True, slots=True)
class IndicatorReading:
    """One indicator at the sampled second: its value and its windows (in WINDOW_NAMES order)."""

    current: float
    windows: Mapping[str, WindowReading]


@dataclass(frozen=True, slots=True)
class ArchiveReading:
    """Whether the per-second archive is written (the "archive not written" alert)."""

    enabled: bool
    last_write: float  # Unix time of the last line written; 0.0: none yet
    write_errors: int
    last_error: float = 0.0  # Unix time of the last failed write; 0.0: none


@dataclass(frozen=True, slots=True)
class ReadModel:
    """Everything the sampler knows as of second ``ts`` (0 before the first sample)."""

    ts: int
    indicators: Mapping[str, IndicatorReading]
    archive: ArchiveReading
    # metrics.hotsubjects.HotSubjects.document() right after the fold of ``ts``
    hot: Mapping[str, Any] = field(default_factory=dict)
    # the real (monotonic) seconds the rates of ``ts`` were measured over; 0.0: no rate yet
    interval: float = 0.0
    # server.core.watch.Watchlist.document() after the reading of ``ts`` (watched subjects)
    watched: Mapping[str, Any] = field(default_factory=dict)
    # the last RECENT_SECONDS samples, oldest first, ``ts`` last: a reader polling less often
    # than once a second (the admin API's history) still gets every second (ADR 026)
    recent: tuple[tuple[int, Mapping[str, float]], ...] = ()

    def current(self, indicator: str) -> float:
        return self.indicators[indicator].current

    def window(self, indicator: str, window: str) -> WindowReading:
        return self.indicators[indicator].windows[window]

    def recent_values(self, indicator: str) -> dict[str, float]:
        """``{"<UTC second>": value}`` of ``indicator`` over the recent seconds (JSON keys)."""
        return {str(ts): float(values[indicator]) for ts, values in self.recent}


def build_read_model(
    ts: int,
    values: Mapping[str, float],
    windows: Mapping[str, Mapping[str, Moments]],
    archive: ArchiveReading,
    hot: Mapping[str, Any] | None = None,
    interval: float = 0.0,
    watched: Mapping[str, Any] | None = None,
    recent: tuple[tuple[int, Mapping[str, float]], ...] = (),
) -> ReadModel:
    """Freeze one second: ``windows`` is ``metrics.rolling_windows.IndicatorSet.snapshot()``."""
    indicators = {
        name: IndicatorReading(
            float(values[name]),
            MappingProxyType({w: WindowReading.of(m) for w, m in windows.get(name, {}).items()}),
        )
        for name in INDICATOR_NAMES
    }
    return ReadModel(
        ts,
        MappingProxyType(indicators),
        archive,
        dict(hot or {}),
        interval,
        dict(watched or {}),
        recent,
    )
