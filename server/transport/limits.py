"""Connection-level limits the transport applies, and their counters (exported on /metrics).

A *pending* connection is one on the client port that is not (yet) a WebSocket or an event
stream: it is reading a request, or idle between keep-alive requests. Slowloris-style clients
stay pending, so bounding pending connections per server (MaxPendingConnections) and per
client address (MaxPendingConnectionsPerAddress) bounds what they can hold, apart from
MaxConnections, which counts sessions.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class SecurityCounters:
    """Totals since start of what the limits refused (pushgrid_*_total on /metrics)."""

    pending_refused_total: int = 0  # connections answered 503: too many pending
    protocol_errors_total: int = 0  # WebSocket connections closed 1002/1007
    http_refused_total: int = 0  # requests answered 431 / 505 / 405-upgrade / 408


class PendingConnections:
    def __init__(self, max_total: int, max_per_address: int) -> None:
        self.max_total = max_total
        self.max_per_address = max_per_address
        self.total = 0
        self._by_address: dict[str, int] = {}

    def admit(self, host: str) -> bool:
        """Count a new pending connection from ``host``; False (not counted) when over."""
        count = self._by_address.get(host, 0)
        if self.total >= self.max_total or count >= self.max_per_address:
            return False
        self._by_address[host] = count + 1
        self.total += 1
        return True

    def release(self, host: str) -> None:
        count = self._by_address.get(host, 0)
        if count <= 1:
            self._by_address.pop(host, None)
        else:
            self._by_address[host] = count - 1
        self.total = max(0, self.total - 1)

    def by_address(self, host: str) -> int:
        return self._by_address.get(host, 0)
