"""Every open connection, and the whole second at which the ticker next looks at each (ADR 063).

The ticker used to run :func:`~server.transport.timers.check` on every connection every second:
1.5 µs each, so 15 ms of CPU per second for 10,000 idle connections and 150 ms for 100,000,
though an idle connection needs something only once per keepalive interval. Now each connection
sits in the slot of the second of its :func:`~server.transport.timers.next_check`; the ticker
takes the slots whose second has come (:meth:`ConnectionSet.due`), checks those connections and
plans each again. What can make a connection due sooner than planned (a deadline set, a state
changed) calls :meth:`ConnectionSet.wake`, which only ever brings its slot forward.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableSet
from typing import Protocol, TypeVar


class _Planned(Protocol):
    last_in: float  # the connection's first check is due at its start (its first timestamp)


C = TypeVar("C", bound=_Planned)


class ConnectionSet(MutableSet[C]):
    """A set of connections that also plans when each is next looked at."""

    __slots__ = ("_members", "_slot_of", "_slots")

    def __init__(self) -> None:
        self._members: set[C] = set()
        self._slot_of: dict[C, int] = {}  # connection -> whole second of its next look
        self._slots: dict[int, set[C]] = {}  # whole second -> the connections due then

    def __contains__(self, item: object) -> bool:
        return item in self._members

    def __iter__(self) -> Iterator[C]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def add(self, value: C) -> None:
        self._members.add(value)
        self.wake(value, value.last_in)

    def discard(self, value: C) -> None:
        self._members.discard(value)
        self._unplan(value)

    def wake(self, conn: C, when: float) -> None:
        """Look at ``conn`` at ``when`` at the latest (a later plan is brought forward, an
        earlier one kept); nothing for a connection not in the set."""
        if conn not in self._members:
            return
        second = int(when)
        planned = self._slot_of.get(conn)
        if planned is not None:
            if planned <= second:
                return
            self._unplan(conn)
        self._slot_of[conn] = second
        slot = self._slots.get(second)
        if slot is None:
            self._slots[second] = {conn}
        else:
            slot.add(conn)

    def due(self, now: float) -> list[C]:
        """The connections whose second has come by ``now``, taken out of the plan: the caller
        looks at each and plans it again with :meth:`wake`."""
        second = int(now)
        out: list[C] = []
        for key in [key for key in self._slots if key <= second]:
            for conn in self._slots.pop(key):
                del self._slot_of[conn]
                out.append(conn)
        return out

    @property
    def planned(self) -> int:
        """Connections with a next look planned (every member, between two ticks)."""
        return len(self._slot_of)

    def _unplan(self, conn: C) -> None:
        second = self._slot_of.pop(conn, None)
        if second is None:
            return
        slot = self._slots[second]
        slot.discard(conn)
        if not slot:
            del self._slots[second]
