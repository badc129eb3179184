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
    current: Mapping[str, int],
    previous: Mapping[str, int] | None,
    seconds: float,
    carry: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Indicator values for one sampling period from two counter readings ``seconds`` apart.

    A rate is the counter difference divided by the real elapsed time (a monotonic clock): a
    period that lasted 2.5 s because the event loop was blocked, or 0.4 s because the previous
    sample was late, still reads the events per second of that period, so a steady load reads
    steady. Samples are integers (the archive's contract, exact sums in the pipeline): each rate
    is rounded to the nearest integer and the rounding remainder is carried to the next sample
    (``carry`` in, the new carry out), so over many samples nothing is lost to rounding and a
    load of 0.5 events/s reads 0, 1, 0, 1 ... rather than always 0. A gauge is its value.
    Without a previous reading (or a period that is not positive) rates are 0.
    """
    values: dict[str, float] = {}
    remainders: dict[str, float] = {}
    for indicator in INDICATORS:
        now = current[indicator.counter]
        if not indicator.rate:
            values[indicator.name] = float(now)
            continue
        if previous is None or seconds <= 0:
            values[indicator.name] = 0.0
            remainders[indicator.name] = (carry or {}).get(indicator.name, 0.0)
            continue
        exact = (now - previous[indicator.counter]) / seconds
        exact += (carry or {}).get(indicator.name, 0.0)
        value = float(max(0, round(exact)))
        values[indicator.name] = value
        remainders[indicator.name] = exact - value
    return values, remainders
