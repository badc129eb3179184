"""Presence: the sessions (with their client ids) that follow the presence subjects.

The occupancy service (server/occupancy.py) carries presence: every ``Occupancy.Interval`` it
asks :meth:`Presence.local_changes` which presence subjects' local lists changed among the
subjects the hub marked, sends them in the same signed, versioned report as the counts (so a
gap, a start or a dead member is handled exactly as for the counts), and applies what other
members report to :attr:`Presence.table`. The emitter turns the table's changes into ``join`` /
``leave`` events on ``/pushgrid/presence`` (only while someone in the cluster follows it) and,
with ``Occupancy.PresenceWebhook``, on the occupancy webhook. docs/occupancy.md, ADR 031.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from pushgrid.config.occupancy import OccupancySettings
from pushgrid.protocol.frames import PresenceAnswer, PresentClientFrame
from pushgrid.protocol.subjects import pattern_matches

from .core.entitlement import PRESENCE_SUBJECT
from .core.presence import PresenceChange, PresenceTable
from .engine.base import META_PREFIX  # meta-subjects keep no presence (operators follow them)

__all__ = ["PRESENCE_SUBJECT", "PresenceService"]


class LocalSessions(Protocol):
    """The part of the hub presence reads (server/core/hub.py)."""

    def present(self, subject: str) -> dict[str, str]: ...


class ClusterCounts(Protocol):
    def subscribers(self, subject: str) -> int: ...


class PresenceService:
    def __init__(self, name: str, settings: OccupancySettings, counts: ClusterCounts) -> None:
        self.name = name
        self.patterns = tuple(settings.occupancy_presence_patterns)
        self.limit = settings.occupancy_presence_max
        self.table = PresenceTable()
        self._counts = counts
        self.events = {"join": 0, "leave": 0}  # emitted by this member
        #: the name an operator sees for a member (a worker's is its server's: ADR 060)
        self.fold: Callable[[str], str] = str

    def enabled(self, subject: str) -> bool:
        """Does ``subject`` keep presence (it matches ``Occupancy.PresencePatterns``)?"""
        if not self.patterns or subject.startswith(META_PREFIX):
            return False
        return any(pattern_matches(pattern, subject) for pattern in self.patterns)

    def local_changes(
        self, touched: Iterable[str], local: LocalSessions
    ) -> dict[str, dict[str, str]]:
        """The new local lists of the touched presence subjects that changed."""
        changes: dict[str, dict[str, str]] = {}
        for subject in touched:
            if not self.enabled(subject):
                continue
            listed = self._bounded(self.table.list_on(self.name, subject), local.present(subject))
            if listed != self.table.list_on(self.name, subject):
                changes[subject] = listed
        return changes

    def _bounded(self, before: dict[str, str], now: dict[str, str]) -> dict[str, str]:
        """At most ``limit`` sessions: those listed before stay listed while subscribed (a list
        does not churn when it is full), newcomers fill the free places in arrival order."""
        if len(now) <= self.limit:
            return now
        kept = {s: now[s] for s in before if s in now}
        for session, client in now.items():
            if len(kept) >= self.limit:
                break
            kept.setdefault(session, client)
        return kept

    def answer(self, subject: str, request_id: int | None) -> PresenceAnswer:
        """The ``presence`` frame for ``subject``: the cluster count and the listed sessions."""
        present = self.table.present(subject)
        subscribers = max(self._counts.subscribers(subject), len(present))
        return PresenceAnswer(
            subject=subject,
            subscribers=subscribers,
            clients=[
                PresentClientFrame(p.session, p.client_id, self.fold(p.member)) for p in present
            ],
            truncated=len(present) < subscribers,
            id=request_id,
        )

    def event(self, change: PresenceChange, event_id: str, ts: int) -> dict[str, str | int]:
        """One join/leave event (the meta-subject message's content and fields, the webhook's)."""
        self.events[change.event] += 1
        return {
            "id": event_id,
            "event": change.event,
            "subject": change.subject,
            "session": change.present.session,
            "client_id": change.present.client_id,
            "on": self.fold(change.present.member),
            "subscribers": self._counts.subscribers(change.subject),
            "ts": ts,
            "member": self.fold(self.name),
        }
