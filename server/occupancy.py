"""Occupancy: subscriber counts per subject across the cluster, and their events.

Every member counts its own subscribers per subject (the hub marks the subjects whose
subscriptions changed). Every ``Occupancy.Interval`` it sends the counts that changed to the
other members (``pg.occupancy``, signed like the membership messages, numbered by a per-member
``version``) and applies what it hears to its :class:`~server.core.occupancy.OccupancyTable`, so
every member knows every subject's cluster count. A receiver that sees a version gap (a lost
report) asks that member for its whole state (``pg.occupancy.ask``); a member that starts asks
everybody. A member whose heartbeats stop (membership, ``DOWN_AFTER``) is dropped from the
table: the subjects only it occupied are vacated at once.

One member, the *emitter* (the first by name of the members that are up), turns the table's
transitions into events: ``occupied`` / ``vacated`` on the meta-subject ``/pushgrid/occupancy``
and on the optional signed webhook (server/occupancy_webhook.py). When the emitter dies the next
member takes over with its own table, so a transition caused by the death itself (its
subscribers leaving) is still reported. docs/occupancy.md has the guarantees and the formats.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Protocol

import msgspec

from pushgrid.config.occupancy import OccupancySettings

from .core.entitlement import OCCUPANCY_SUBJECT
from .core.occupancy import OccupancyTable, Transition
from .core.presence import PresenceChange
from .engine.base import EngineUnavailable, MemberBus, Published, PublishRequest
from .occupancy_webhook import WebhookSender
from .presence import PRESENCE_SUBJECT, PresenceService

log = logging.getLogger(__name__)

REPORT_SUBJECT = "pg.occupancy"
ASK_SUBJECT = "pg.occupancy.ask"
EVENTS_SUBJECT = OCCUPANCY_SUBJECT
CHUNK = 2_000  # subjects per report: far below NATS's 1 MB payload limit
BEAT_EVERY = 10  # ticks between two version beats (a lost last report is noticed)


class Report(msgspec.Struct, frozen=True):
    """A member's counts: ``full`` replaces what it reported before, else only these change.

    ``presence``: the member's sessions per presence subject (each list replaces the one before;
    an empty list: nobody there), with the same full/delta meaning (server/presence.py)."""

    member: str
    version: int
    full: bool
    counts: dict[str, int]
    presence: dict[str, dict[str, str]] = {}


class Ask(msgspec.Struct, frozen=True):
    member: str  # whose whole state is wanted ("" everybody's)


class LocalCounts(Protocol):
    """The part of the hub occupancy reads (server/core/hub.py)."""

    def subscriber_count(self, subject: str) -> int: ...
    def take_touched(self) -> set[str]: ...
    def present(self, subject: str) -> dict[str, str]: ...


class EventPublisher(Protocol):
    async def publish(self, request: PublishRequest) -> Published: ...


class OccupancyService:
    def __init__(
        self,
        name: str,
        local: LocalCounts,
        bus: MemberBus | None,
        settings: OccupancySettings,
        publisher: EventPublisher,
        fold: Callable[[str], str] = str,
    ) -> None:
        self.name, self._local, self._bus, self._settings = name, local, bus, settings
        self._publisher = publisher
        self.table = OccupancyTable(fold)  # fold: a worker's name is its server's (ADR 060)
        self.presence = PresenceService(name, settings, self.table)
        self.presence.fold = fold
        self._version = 0
        self._heard: dict[str, int] = {}  # member -> last version applied
        self._ids = itertools.count(1)
        self.events = {"occupied": 0, "vacated": 0}  # emitted by this member
        self.webhook: WebhookSender | None = None
        if settings.occupancy_webhook and settings.occupancy_webhook_secret:
            self.webhook = WebhookSender(
                settings.occupancy_webhook,
                settings.occupancy_webhook_secret,
                queue=settings.occupancy_webhook_queue,
                retries=settings.occupancy_webhook_retries,
                timeout=settings.occupancy_webhook_timeout,
            )

    # -- running ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Report, listen and emit until cancelled."""
        tasks: list[asyncio.Task[None]] = []
        if self.webhook is not None:
            tasks.append(asyncio.create_task(self.webhook.run()))
        try:
            if self._bus is not None:
                await self._bus.subscribe_signed(REPORT_SUBJECT, self._on_report)
                await self._bus.subscribe_signed(ASK_SUBJECT, self._on_ask)
                await self._send(ASK_SUBJECT, Ask(""))
            for tick in itertools.count(1):
                await asyncio.sleep(self._settings.occupancy_interval)
                await self.tick(beat=tick % BEAT_EVERY == 0)
        finally:
            for task in tasks:
                task.cancel()

    async def tick(self, beat: bool = False) -> None:
        """Apply and report this member's changed counts; drop the members that left."""
        changes = {}
        touched = self._local.take_touched()
        for subject in touched:
            count = self._local.subscriber_count(subject)
            if count != self.table.count_on(self.name, subject):
                changes[subject] = count
        lists = self.presence.local_changes(touched, self._local)
        transitions = self.table.apply(self.name, changes)
        joins = self.presence.table.apply(self.name, lists)
        departed, left = self._departures()
        if changes or lists:
            await self._report(changes, lists, full=False)
        elif beat:
            await self._report({}, {}, full=False)
        await self._emit(transitions + departed, joins + left)

    def _departures(self) -> tuple[list[Transition], list[PresenceChange]]:
        if self._bus is None:
            return [], []
        up = set(self._bus.up_members())
        known = set(self.table.members()) | set(self.presence.table.members())
        transitions: list[Transition] = []
        left: list[PresenceChange] = []
        for member in sorted(m for m in known if m not in up and m != self.name):
            log.info("occupancy: member %s left; its subscribers are gone", member)
            transitions += self.table.drop(member)
            left += self.presence.table.drop(member)
            self._heard.pop(member, None)
        return transitions, left

    # -- between members --------------------------------------------------------------------

    async def _report(
        self, counts: dict[str, int], lists: dict[str, dict[str, str]], full: bool
    ) -> None:
        """Send ``counts`` and ``lists`` in chunks; the first of a full report replaces, the
        rest add. A chunk holds at most CHUNK subjects of each (a presence list holds at most
        Occupancy.PresenceMax sessions)."""
        if self._bus is None:
            return
        if not counts and not lists and not full:  # a beat repeats the current version
            await self._send(REPORT_SUBJECT, Report(self.name, self._version, False, {}))
            return
        items, present = list(counts.items()), list(lists.items())
        for start in range(0, max(len(items), len(present), 1), CHUNK):
            self._version += 1
            chunk = dict(items[start : start + CHUNK])
            listed = dict(present[start : start + CHUNK])
            report = Report(self.name, self._version, full and start == 0, chunk, listed)
            await self._send(REPORT_SUBJECT, report)

    async def _send(self, subject: str, value: Report | Ask) -> None:
        if self._bus is None:
            return
        try:
            await self._bus.publish_signed(subject, msgspec.json.encode(value))
        except Exception as exc:  # a reconnecting bus: the next beat notices the gap
            log.debug("occupancy: %s not sent: %s", subject, exc)

    async def _on_report(self, data: bytes) -> None:
        try:
            report = msgspec.json.decode(data, type=Report)
        except msgspec.DecodeError:
            log.warning("occupancy: ignored a malformed report")
            return
        if report.member == self.name:
            return
        last = self._heard.get(report.member)
        if report.full:
            transitions = self.table.replace(report.member, report.counts)
            changes = self.presence.table.replace(report.member, report.presence)
        elif last is not None and report.version == last and not report.counts:
            return  # a beat: nothing was lost
        elif last is not None and report.version == last + 1:
            transitions = self.table.apply(report.member, report.counts)
            changes = self.presence.table.apply(report.member, report.presence)
        else:  # a gap (or the first we hear of it): ask for its whole state
            await self._send(ASK_SUBJECT, Ask(report.member))
            return
        self._heard[report.member] = report.version
        await self._emit(transitions, changes)

    async def _on_ask(self, data: bytes) -> None:
        try:
            ask = msgspec.json.decode(data, type=Ask)
        except msgspec.DecodeError:
            return
        if ask.member in ("", self.name):
            await self._report(
                self.table.counts_of(self.name), self.presence.table.lists_of(self.name), full=True
            )

    # -- events -----------------------------------------------------------------------------

    def is_emitter(self) -> bool:
        """The first member by name of those up sends the events (a standalone node: itself)."""
        return self._bus is None or min(self._bus.up_members()) == self.name

    async def _emit(
        self, transitions: Iterable[Transition], changes: Iterable[PresenceChange] = ()
    ) -> None:
        if not self.is_emitter():
            return
        for transition in transitions:
            if transition.subject in (EVENTS_SUBJECT, PRESENCE_SUBJECT):
                continue
            event = self._event(transition)
            self.events[transition.event] += 1
            if self.webhook is not None:
                self.webhook.put(event)
            if self._settings.occupancy_events and self.table.subscribers(EVENTS_SUBJECT):
                await self._publish(EVENTS_SUBJECT, event)  # only while somebody follows them
        for change in changes:
            await self._emit_presence(change)

    async def _emit_presence(self, change: PresenceChange) -> None:
        ts = int(time.time() * 1000)
        event = self.presence.event(change, f"{self.name}-{next(self._ids)}", ts)
        if self.webhook is not None and self._settings.occupancy_presence_webhook:
            self.webhook.put(event)
        if self._settings.occupancy_presence_events and self.table.subscribers(PRESENCE_SUBJECT):
            await self._publish(PRESENCE_SUBJECT, event)

    def _event(self, transition: Transition) -> dict[str, str | int]:
        return {
            "id": f"{self.name}-{next(self._ids)}",
            "event": transition.event,
            "subject": transition.subject,
            "subscribers": transition.subscribers,
            "ts": int(time.time() * 1000),
            "member": self.table.fold(self.name),
        }

    async def _publish(self, subject: str, event: dict[str, str | int]) -> None:
        fields = {key: str(value) for key, value in event.items()}
        request = PublishRequest(
            subject, json.dumps(event), fields, retained=False, qos="guaranteed"
        )
        try:
            await self._publisher.publish(request)
        except EngineUnavailable as exc:
            log.warning("occupancy event not published (%s): %s", event["event"], exc)
