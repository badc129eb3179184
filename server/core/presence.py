"""Presence: which sessions, with which client ids, follow a subject, cluster-wide. Pure.

Presence is kept only for the subjects that match ``Occupancy.PresencePatterns`` (the server's
pattern syntax, pushgrid/protocol/subjects.py). Every member reports, per such subject, the
sessions subscribed to it there: ``{session id: client id}`` (``""`` when the client declared
none), at most ``Occupancy.PresenceMax`` of them per subject on each member. The table keeps
the last list each member reported; every change returns the :class:`PresenceChange` values
(``join`` when a session appears, ``leave`` when it goes), so the join/leave events follow from
the lists and never disagree with them.

A member's report for one subject replaces what it reported for that subject before (an empty
list: nobody there); a *full* report (:meth:`PresenceTable.replace`) replaces its whole state;
a member that left is :meth:`PresenceTable.drop`-ped: its sessions leave.

Memory: one dict entry per (member, subject) and per listed session: about
:data:`BYTES_PER_ENTRY` bytes per session (a session id, a client id up to 64 characters and
the dict slot; measured in tests/unit/test_presence_table.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

PresenceEvent = Literal["join", "leave"]
BYTES_PER_ENTRY = 300  # an upper bound per listed session (docs/occupancy.md, "Presence")


@dataclass(frozen=True, slots=True)
class Present:
    """One session following a subject."""

    session: str
    client_id: str  # "" when the client declared none
    member: str


@dataclass(frozen=True, slots=True)
class PresenceChange:
    """A session joined or left a subject."""

    subject: str
    event: PresenceEvent
    present: Present


class PresenceTable:
    def __init__(self) -> None:
        # member -> subject -> session -> client id
        self._by_member: dict[str, dict[str, dict[str, str]]] = {}

    # -- changes ----------------------------------------------------------------------------

    def apply(self, member: str, lists: Mapping[str, Mapping[str, str]]) -> list[PresenceChange]:
        """``member``'s sessions on these subjects are now these (an empty mapping: none)."""
        held = self._by_member.setdefault(member, {})
        changes: list[PresenceChange] = []
        for subject, sessions in lists.items():
            before = held.pop(subject, {})
            if sessions:
                held[subject] = dict(sessions)
            changes += _diff(member, subject, before, sessions)
        if not held:
            del self._by_member[member]
        return changes

    def replace(self, member: str, lists: Mapping[str, Mapping[str, str]]) -> list[PresenceChange]:
        """``member``'s whole state: the subjects it does not list have nobody there."""
        held = self._by_member.get(member, {})
        gone: dict[str, Mapping[str, str]] = {s: {} for s in held if s not in lists}
        return self.apply(member, {**gone, **lists})

    def drop(self, member: str) -> list[PresenceChange]:
        """``member`` left the cluster: its sessions leave every subject."""
        empty: dict[str, str] = {}
        return self.apply(member, {subject: empty for subject in self._by_member.get(member, {})})

    # -- reads ------------------------------------------------------------------------------

    def present(self, subject: str, limit: int | None = None) -> list[Present]:
        """The sessions following ``subject`` on every member, by member then session id."""
        found: list[Present] = []
        for member in sorted(self._by_member):
            sessions = self._by_member[member].get(subject, {})
            found += (Present(s, sessions[s], member) for s in sorted(sessions))
            if limit is not None and len(found) >= limit:
                return found[:limit]
        return found

    def lists_of(self, member: str) -> dict[str, dict[str, str]]:
        """A copy of ``member``'s lists (its full report)."""
        return {s: dict(v) for s, v in self._by_member.get(member, {}).items()}

    def list_on(self, member: str, subject: str) -> dict[str, str]:
        return self._by_member.get(member, {}).get(subject, {})

    def members(self) -> Iterable[str]:
        return self._by_member.keys()

    def entries(self) -> int:
        """How many (subject, session) entries the table holds (its memory follows this)."""
        return sum(len(v) for held in self._by_member.values() for v in held.values())


def _diff(
    member: str, subject: str, before: Mapping[str, str], after: Mapping[str, str]
) -> list[PresenceChange]:
    changes = [
        PresenceChange(subject, "leave", Present(s, client, member))
        for s, client in before.items()
        if after.get(s) != client
    ]
    changes += (
        PresenceChange(subject, "join", Present(s, client, member))
        for s, client in after.items()
        if before.get(s) != client
    )
    return changes
