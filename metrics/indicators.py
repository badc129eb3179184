"""The seven indicators of spec 5.2 and how each is derived from the hot-path counters."""

from __future__ import annotations

from collections.abc import Mapping
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


def sample_values(
    current: Mapping[str, int], previous: Mapping[str, int] | None, seconds: float
) -> dict[str, float]:
    """Indicator values for one sampling period from two counter readings.

    A rate is the counter difference over the period: an integer count of events. The sampler
    runs once a second, so this is the per-second rate; when the event loop was blocked and a
    period spanned several seconds, the whole difference goes to the one sample (a spike, but the
    per-second values still add up exactly to the counter totals, and integer samples let the
    statistics pipeline use exact integer sums). Without a previous reading rates are 0.
    ``seconds`` is the period length, kept for callers that want to flag long periods.
    """
    values: dict[str, float] = {}
    for indicator in INDICATORS:
        now = current[indicator.counter]
        if not indicator.rate:
            values[indicator.name] = float(now)
        elif previous is None:
            values[indicator.name] = 0.0
        else:
            values[indicator.name] = float(now - previous[indicator.counter])
    return values
