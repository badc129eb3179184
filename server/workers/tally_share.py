"""Hot and watched subjects (and the delivery accounting) of every worker in worker 0's views
(ADR 060).

The hub counts per-subject deltas on its hot path (``Hub.tally``: messages in where a message
entered, messages and bytes out where it was delivered, then the accounting columns); once a
second worker 0's sampler folds them into the hot-subject sketches, the watched patterns and
the accounting. Every other worker hands its deltas to worker 0 instead of folding them
itself: once a second, just before its report, and whenever its tally reaches its bound
(``Hub.tally_limit``, as a one-process hub folds early), in one ``MeshTally``. Worker 0 adds
them to its own hub's tally (``Hub.add_tally``), so what it folds is the server's traffic,
each message counted once. Deltas that find worker 0's link down are lost (as a report is).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from .wire import MeshTally


class TallyHub(Protocol):
    def take_tally(self) -> dict[str, list[int]]: ...

    def subscriber_counts(self) -> Iterable[tuple[str, int]]: ...


class TallyShipper:
    """A worker's side (index > 0): its hub's deltas go to worker 0."""

    def __init__(self, hub: TallyHub, send: Callable[[MeshTally], bool]) -> None:
        self.hub = hub
        self._send = send
        self.shipped = 0  # MeshTally messages sent (ADR 060 counts the mesh's extra load)

    def ship(self) -> None:
        """Now: the deltas counted since the last call (none: nothing is sent)."""
        rows = self.hub.take_tally()
        if rows:
            self._send(MeshTally(rows))
            self.shipped += 1


class ShippedAway:
    """What this worker's own sampler reads instead of the hub (its deltas are worker 0's to
    fold): no deltas, its subscriber counts as they are."""

    def __init__(self, hub: TallyHub) -> None:
        self.hub = hub

    def take_tally(self) -> dict[str, list[int]]:
        return {}

    def subscriber_counts(self) -> Iterable[tuple[str, int]]:
        return self.hub.subscriber_counts()
