"""The inflated bytes of compressed messages not yet whole, bounded per address and in all.

A compressed fragment of ~1 KB may inflate to ~1 MiB, and an unfinished message keeps what it
inflated until its last fragment comes (issue 34 item 2 row 2: 80 connections, 83 KiB sent,
+85 MB of server memory). Each connection's inflater charges what it inflates here and gives
it back when the message is whole (it then waits in the connection's inbox, bounded by
``MaxInboundBufferSize``) or when the connection ends. A charge that would pass
``DeflateMaxInflatingPerAddress`` for the client's address or ``DeflateMaxInflating`` for the
server is refused: the inflater closes the connection with 1008. Pure: no I/O.
"""

from __future__ import annotations


class InflatingBudget:
    """Bytes inflated for unfinished messages, in all and by client address."""

    __slots__ = ("_by_address", "max_per_address", "max_total", "refused_total", "total")

    def __init__(self, max_total: int, max_per_address: int) -> None:
        self.max_total = max_total
        self.max_per_address = max_per_address
        self.total = 0
        self.refused_total = 0  # charges refused since start (connections closed 1008)
        self._by_address: dict[str, int] = {}

    def charge(self, host: str, size: int) -> str | None:
        """Count ``size`` more bytes held for ``host``; the reason when that passes a bound
        (then nothing is counted)."""
        held = self._by_address.get(host, 0) + size
        if held > self.max_per_address:
            reason = f"DeflateMaxInflatingPerAddress ({self.max_per_address} bytes)"
        elif self.total + size > self.max_total:
            reason = f"DeflateMaxInflating ({self.max_total} bytes)"
        else:
            self._by_address[host] = held
            self.total += size
            return None
        self.refused_total += 1
        return f"unfinished compressed messages above {reason}"

    def release(self, host: str, size: int) -> None:
        """Give back ``size`` bytes charged for ``host`` (its message is whole, or ended)."""
        if size <= 0:
            return
        held = self._by_address.get(host, 0) - size
        if held > 0:
            self._by_address[host] = held
        else:
            self._by_address.pop(host, None)
        self.total = max(0, self.total - size)

    def held_by(self, host: str) -> int:
        return self._by_address.get(host, 0)
