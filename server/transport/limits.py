"""Connection-level limits the transport applies, and their counters (exported on /metrics).

A *pending* connection is one on the client port that is not (yet) a WebSocket or an event
stream: it is reading a request, or idle between keep-alive requests. Slowloris-style clients
stay pending, so bounding pending connections per server (MaxPendingConnections) and per
client address (MaxPendingConnectionsPerAddress) bounds what they can hold, apart from
MaxConnections, which counts sessions.

Refusals are counted (``pushgrid_pending_refused_total``) and logged, rate-limited: the first
WARNING ``REFUSAL_GATHER`` seconds after the first refusal (a storm is reported as one count),
then at most one per ``REFUSAL_LOG_INTERVAL``, each with the counts since the previous one and
the addresses refused most (clients behind one NAT or proxy share an address).
"""

from __future__ import annotations

from dataclasses import dataclass

REFUSAL_LOG_INTERVAL = 10.0  # seconds between two WARNINGs about pending refusals, at least
REFUSAL_GATHER = 1.0  # seconds of refusals a WARNING gathers after the first one it reports
_ADDRESSES_SHOWN = 5  # addresses named in one WARNING, the most refused first


@dataclass(slots=True)
class SecurityCounters:
    """Totals since start of what the limits refused (pushgrid_*_total on /metrics)."""

    pending_refused_total: int = 0  # connections answered 503: too many pending
    protocol_errors_total: int = 0  # WebSocket connections closed 1002/1007
    http_refused_total: int = 0  # requests answered 431 / 505 / 405-upgrade / 408


class PendingConnections:
    def __init__(
        self, max_total: int, max_per_address: int, log_interval: float = REFUSAL_LOG_INTERVAL
    ) -> None:
        self.max_total = max_total
        self.max_per_address = max_per_address
        self.total = 0
        self._by_address: dict[str, int] = {}
        self.log_interval = log_interval
        self._refused: dict[str, int] = {}  # refusals not reported yet, by address
        self._refused_full = 0  # of which MaxPendingConnections (all addresses) was reached
        self._reported_at = float("-inf")
        self._report_due: float | None = None  # a report of held-back refusals is due then

    def admit(self, host: str) -> bool:
        """Count a new pending connection from ``host``; False (not counted) when over."""
        count = self._by_address.get(host, 0)
        if self.total >= self.max_total or count >= self.max_per_address:
            self._refused[host] = self._refused.get(host, 0) + 1
            self._refused_full += self.total >= self.max_total
            return False
        self._by_address[host] = count + 1
        self.total += 1
        return True

    def report_due(self, now: float) -> float | None:
        """When to call :meth:`report` for the refusals not reported yet: given once per
        report (None: nothing to report, or the time was given already)."""
        if not self._refused or self._report_due is not None:
            return None
        self._report_due = max(now + REFUSAL_GATHER, self._reported_at + self.log_interval)
        return self._report_due

    def report(self, now: float) -> str | None:
        """The WARNING about the refusals not reported yet, at the time :meth:`report_due`
        gave (None when nothing is to report)."""
        if not self._refused or self._report_due is None:
            return None
        refused, full = self._refused, self._refused_full
        self._refused, self._refused_full = {}, 0
        self._reported_at, self._report_due = now, None
        count = sum(refused.values())
        ranked = sorted(refused.items(), key=lambda item: (-item[1], item[0]))
        shown = ", ".join(f"{host} {n}" for host, n in ranked[:_ADDRESSES_SHOWN])
        more = len(ranked) - _ADDRESSES_SHOWN
        return (
            f"refused {count} client connection{'s' * (count != 1)} with 503 since the previous "
            f"warning: too many not yet a WebSocket or an event stream, "
            f"{count - full} above MaxPendingConnectionsPerAddress = {self.max_per_address}, "
            f"{full} above MaxPendingConnections = {self.max_total}; by address: {shown}"
            + (f" and {more} more" if more > 0 else "")
        )

    def release(self, host: str) -> None:
        count = self._by_address.get(host, 0)
        if count <= 1:
            self._by_address.pop(host, None)
        else:
            self._by_address[host] = count - 1
        self.total = max(0, self.total - 1)

    def by_address(self, host: str) -> int:
        return self._by_address.get(host, 0)
