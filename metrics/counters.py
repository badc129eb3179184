"""Hot-path counters: plain integer attributes, incremented in place, read by the sampler.

Nothing here allocates or locks; the server is single-threaded per process.
"""

from __future__ import annotations


class Counters:
    """Cumulative totals since start, plus the current number of connected users."""

    __slots__ = (
        "bytes_in_total",
        "bytes_out_total",
        "connections_total",
        "disconnections_total",
        "keepalive_timeouts_total",
        "messages_in_total",
        "messages_out_total",
        "publish_rejected_total",
        "recovery_failures_total",
        "recovery_successes_total",
        "sessions",
        "slow_consumer_disconnects_total",
        "subscribe_failures_total",
        "subscribes_total",
        "subscriptions",
    )

    def __init__(self) -> None:
        self.sessions = 0
        self.subscriptions = 0
        self.connections_total = 0
        self.disconnections_total = 0
        self.keepalive_timeouts_total = 0
        self.messages_in_total = 0
        self.messages_out_total = 0
        self.bytes_in_total = 0
        self.bytes_out_total = 0
        self.slow_consumer_disconnects_total = 0
        self.recovery_successes_total = 0
        self.recovery_failures_total = 0
        self.publish_rejected_total = 0
        # subscriptions opened / failed by the member (no quorum, engine error): the
        # subscribe-success objective's events (ADR 055); denials are not failures
        self.subscribes_total = 0
        self.subscribe_failures_total = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}
