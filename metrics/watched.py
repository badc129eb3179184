"""Watched subjects: the statistics of one subject pattern (issue 25, ADR 029).

A watched pattern (``/Stocks/NYSE/*``) has six indicators of its own, the pattern-level cousins
of the seven of spec 5.2: four rates read from cumulative counters (messages and bytes in and
out) and two gauges (local subscriptions to its subjects, and its active subjects). They go
through the same :class:`~metrics.indicators.PerSecond` (one integer value per UTC second, the
rounding carried so the rates add up to the counters) and the same twelve rolling windows as the
server's indicators.

Who feeds it: the hub counts per-subject deltas on its hot path (an existing dict of integer
lists, server/core/hub.py); once a second the server's watchlist (server/core/watch.py) adds
each subject's deltas to the patterns that match it (:meth:`PatternStats.add`) and takes a
reading (:meth:`PatternStats.read`). Nothing here runs per message.

Window statistics cost: ``IndicatorSet.snapshot`` is O(900) per indicator (the raw seconds of
the 15-minute window, about 0.7 ms), too much for 100 patterns every second. Samples are added
every second (O(1)), and the windows are *read* round-robin within a time budget a second
(:meth:`PatternStats.refresh_windows`); each pattern's document says the second its windows
were read for (``windows_ts``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from .indicators import INDICATORS, Indicator, PerSecond
from .readmodel import WindowReading
from .rolling_windows import IndicatorSet

#: the four rates are the server indicators' own (names, MBean keys, counters, units),
#: described for a pattern; the two gauges are the pattern's.
_RATES: Final = (
    (
        "incoming_messages_per_second",
        "Messages published on the pattern's subjects, counted on the member that accepted them",
    ),
    (
        "outgoing_messages_per_second",
        "Messages of the pattern's subjects sent to this member's subscribers",
    ),
    (
        "incoming_bytes_per_second",
        "Size of the published messages (UTF-8 content, field names and values)",
    ),
    ("outgoing_bytes_per_second", "WebSocket frame bytes of the messages sent to subscribers"),
)
_BY_NAME: Final = {i.name: i for i in INDICATORS}
WATCH_INDICATORS: Final[tuple[Indicator, ...]] = (
    *(replace(_BY_NAME[name], description=text) for name, text in _RATES),
    Indicator(
        "subscribers",
        "Subscribers",
        "subscribers",
        False,
        "subscriptions",
        "Local subscriptions to subjects of the pattern",
    ),
    Indicator(
        "subjects",
        "Subjects",
        "subjects",
        False,
        "subjects",
        "Subjects of the pattern with a local subscriber or a message in the last reading",
    ),
)
WATCH_NAMES: Final = tuple(indicator.name for indicator in WATCH_INDICATORS)
#: the cumulative counters, in the order of the hub's per-subject tally
TOTALS: Final = ("messages_in_total", "messages_out_total", "bytes_out_total", "bytes_in_total")


class PatternStats:
    """Counters, per-second values and rolling windows of one watched pattern."""

    def __init__(self, pattern: str, source: str, added_at: float) -> None:
        self.pattern = pattern
        self.source = source  # "config" (WatchedSubjects.Patterns) or "runtime" (admin API)
        self.added_at = added_at
        self.counters: dict[str, int] = {i.counter: 0 for i in WATCH_INDICATORS}
        self.per_second = PerSecond(WATCH_INDICATORS)
        self.windows = IndicatorSet(WATCH_NAMES)
        self.current: dict[str, float] = dict.fromkeys(WATCH_NAMES, 0.0)
        self.ts = 0  # the last second emitted
        self.windows_ts = 0  # the second the window readings below were taken for
        self.window_readings: dict[str, dict[str, dict[str, float | int | None]]] = {}

    def add(self, counts: list[int]) -> None:
        """One subject's tally deltas: [messages in, messages out, bytes out, bytes in]."""
        counters = self.counters
        counters["messages_in_total"] += counts[0]
        counters["messages_out_total"] += counts[1]
        counters["bytes_out_total"] += counts[2]
        counters["bytes_in_total"] += counts[3]

    def read(
        self, wall: float, tick: float, subscribers: int, subjects: int
    ) -> list[tuple[int, dict[str, float]]]:
        """A reading at Unix time ``wall`` / monotonic ``tick`` (the sampler's own); returns
        the seconds it completed (what the archive records, ADR 030)."""
        self.counters["subscribers"] = subscribers
        self.counters["subjects"] = subjects
        emitted: list[tuple[int, dict[str, float]]] = []
        for ts, values in self.per_second.add(wall, tick, self.counters):
            if ts > self.ts:  # a wall clock stepped back re-emits no second
                self.windows.add_sample(ts, values)
                self.current, self.ts = values, ts
                emitted.append((ts, values))
        return emitted

    def refresh_windows(self) -> None:
        """Read the twelve windows of every indicator as of the last second (O(900) each)."""
        if self.ts == 0:
            return
        snapshot = self.windows.snapshot(self.ts)
        self.window_readings = {
            name: {w: WindowReading.of(m).as_dict() for w, m in windows.items()}
            for name, windows in snapshot.items()
        }
        self.windows_ts = self.ts

    def document(self) -> dict[str, Any]:
        """Everything the views show about this pattern (a new dict: the read model keeps it)."""
        counters = self.counters
        return {
            "pattern": self.pattern,
            "source": self.source,
            "added_at": self.added_at,
            "ts": self.ts,
            "windows_ts": self.windows_ts,
            "totals": {name: counters[name] for name in TOTALS},
            "subscribers": counters["subscribers"],
            "subjects": counters["subjects"],
            "indicators": {
                i.name: {
                    "current": self.current[i.name],
                    "unit": i.unit,
                    "windows": self.window_readings.get(i.name, {}),
                }
                for i in WATCH_INDICATORS
            },
        }
