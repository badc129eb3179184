"""The seven indicators of spec 5.2 and how each is derived from the hot-path counters."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Indicator:
    """One monitored quantity.

    ``counter`` is the :class:`~metrics.counters.Counters` attribute it is read from; a ``rate``
    indicator is the per-second difference of that cumulative counter, a gauge is its value.
    """

    name: str  # stable machine name (archive column, /stats, Prometheus label)
    mbean: str  # MBean ``name=`` key
    counter: str
    rate: bool
    unit: str
    description: str


INDICATORS: tuple[Indicator, ...] = (
    Indicator(
        "connected_users",
        "ConnectedUsers",
        "sessions",
        False,
        "sessions",
        "Number of connected users (WebSocket sessions)",
    ),
    Indicator(
        "connections_per_second",
        "ConnectionsPerSecond",
        "connections_total",
        True,
        "connections/s",
        "Connections per second established with the server",
    ),
    Indicator(
        "disconnections_per_second",
        "DisconnectionsPerSecond",
        "disconnections_total",
        True,
        "disconnections/s",
        "Disconnections per second from the server",
    ),
    Indicator(
        "incoming_messages_per_second",
        "IncomingMessagesPerSecond",
        "messages_in_total",
        True,
        "messages/s",
        "Incoming messages per second received from publishers",
    ),
    Indicator(
        "outgoing_messages_per_second",
        "OutgoingMessagesPerSecond",
        "messages_out_total",
        True,
        "messages/s",
        "Outgoing messages per second sent to subscribers",
    ),
    Indicator(
        "incoming_bytes_per_second",
        "IncomingBytesPerSecond",
        "bytes_in_total",
        True,
        "bytes/s",
        "Incoming bytes per second received from clients (WebSocket and HTTP)",
    ),
    Indicator(
        "outgoing_bytes_per_second",
        "OutgoingBytesPerSecond",
        "bytes_out_total",
        True,
        "bytes/s",
        "Outgoing bytes per second sent to clients (bytes on the wire)",
    ),
)

INDICATOR_NAMES: tuple[str, ...] = tuple(i.name for i in INDICATORS)


class PerSecond:
    """Counter readings taken at irregular moments -> one value per whole UTC second.

    Each reading closes a period whose length is measured on the monotonic clock; the period's
    counter differences are spread over the UTC seconds it overlaps in proportion to the overlap
    (the events of a period are taken as evenly spread over it). A second is emitted once a
    reading is past its end, so each emitted value is the events counted *in that second*: a
    reading that comes 0.9 s late, or after an event loop blocked for 3 s, changes nothing for a
    steady load (the blocked seconds are emitted too, at the period's average rate), and the
    next reading, 0.1 s later, does not make a low second either (issue 21: rates are rates).

    Values are integers, the archive's contract: each is rounded and the rounding remainder is
    carried to the next second, so the emitted values of a rate add up to its counter's
    difference (exactly, once the load stops; the share of the second still open waits for the
    next reading). A gauge is read as it is when its second is emitted.
    """

    def __init__(self, indicators: Sequence[Indicator] = INDICATORS) -> None:
        # the quantities read (the seven indicators; a watched pattern's own, metrics/watched.py)
        self._indicators = tuple(indicators)
        self._previous: Mapping[str, int] | None = None
        self._previous_tick = 0.0
        self._emitted_through: int | None = None  # the last second emitted
        self._pending: dict[int, dict[str, float]] = {}  # open seconds -> shares so far
        self._carry: dict[str, float] = {}
        self.last_period = 0.0  # monotonic seconds between the last two readings

    def add(
        self, wall: float, tick: float, current: Mapping[str, int]
    ) -> list[tuple[int, dict[str, float]]]:
        """A reading at Unix time ``wall`` and monotonic ``tick``; the seconds it completes."""
        if self._previous is None:
            self._previous, self._previous_tick = dict(current), tick
            self._emitted_through = math.floor(wall) - 1
            return []
        length = tick - self._previous_tick
        if length <= 0:
            return []
        assert self._emitted_through is not None
        first_open = self._emitted_through + 1
        end = max(wall, float(first_open))  # a wall clock stepped back: the open second
        start = min(max(end - length, float(first_open)), end)
        span = end - start
        seconds = range(math.floor(start), math.floor(end) + 1)
        weights = [
            (second, (min(end, second + 1) - max(start, second)) / span if span > 0 else 1.0)
            for second in seconds
        ]
        weights = [(second, w) for second, w in weights if w > 0] or [(math.floor(end), 1.0)]
        for indicator in self._indicators:
            if not indicator.rate:
                continue
            delta = current[indicator.counter] - self._previous[indicator.counter]
            for second, weight in weights:
                shares = self._pending.setdefault(second, {})
                shares[indicator.name] = shares.get(indicator.name, 0.0) + delta * weight
        self._previous, self._previous_tick, self.last_period = dict(current), tick, length
        done = sorted(second for second in self._pending if second + 1 <= wall)
        emitted: list[tuple[int, dict[str, float]]] = []
        for second in done:
            shares = self._pending.pop(second)
            values: dict[str, float] = {}
            for indicator in self._indicators:
                if not indicator.rate:
                    values[indicator.name] = float(current[indicator.counter])
                    continue
                exact = shares.get(indicator.name, 0.0) + self._carry.get(indicator.name, 0.0)
                value = float(max(0, round(exact)))
                self._carry[indicator.name] = exact - value
                values[indicator.name] = value
            emitted.append((second, values))
            self._emitted_through = second
        return emitted
