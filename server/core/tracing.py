"""Traces by client id or by subject, recorded inside the member (issue 35 item 2, ADR 050).

A trace is not a subscriber: it is a tap on the hub. A *subject* trace records every message
the member fans out on that subject (once per message, whoever subscribes, nobody included:
every member receives every message of the cluster's subjects); a *client* trace records the
frames the member sends to the sessions whose client id matches (messages on any subject,
answers) and the text frames those sessions send. Events carry millisecond times and are kept
in a bounded ring per trace (the oldest dropped and counted) until the trace is closed; the
admin API reads them after an index and closes traces it no longer polls; a trace nobody read
for :data:`IDLE_SECONDS` is closed by the next open.

Costs when no trace is open: one dict truthiness check per fanned-out message and per frame a
session sends or receives outside the fan-out loop.
"""

from __future__ import annotations

import dataclasses
import itertools
import secrets
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pushgrid.protocol.exceptions import MonitoringError

if TYPE_CHECKING:
    from ..framing.outframe import OutFrame
    from .session import Session

MAX_TRACES = 16  # per member
RING_SIZE = 10_000  # events per trace
IDLE_SECONDS = 600.0
TEXT_LIMIT = 2048  # bytes of a frame's text kept
KINDS = ("client", "subject")


class TraceRefused(MonitoringError, ValueError):
    """An open the member refuses (bad kind or value, too many traces)."""

    code = "trace_refused"


@dataclass(frozen=True, slots=True)
class TraceEvent:
    index: int
    at: int  # ms since the Unix epoch
    direction: str  # "out" (to a client / fanned out) or "in" (from a client)
    session: str  # "" for a subject trace's fan-out (one event for every subscriber)
    client_id: str
    subject: str
    size: int  # bytes of the frame's payload
    text: str  # the payload, cut at TEXT_LIMIT bytes


class Tap:
    """One open trace: what it follows and its ring of events."""

    def __init__(self, kind: str, value: str, size: int = RING_SIZE) -> None:
        self.id = secrets.token_hex(8)
        self.kind = kind
        self.value = value
        self.created = int(time.time() * 1000)
        self.events: deque[TraceEvent] = deque(maxlen=size)
        self.next_index = 0
        self.last_read = time.monotonic()
        self.taken = -1  # the last index another worker's pull took (a multi-process server)

    @property
    def dropped(self) -> int:
        return self.next_index - len(self.events)

    def record(
        self, direction: str, session: str, client_id: str, subject: str, payload: bytes
    ) -> None:
        text = payload[:TEXT_LIMIT].decode("utf-8", "replace")
        self.events.append(
            TraceEvent(
                self.next_index,
                int(time.time() * 1000),
                direction,
                session,
                client_id,
                subject,
                len(payload),
                text,
            )
        )
        self.next_index += 1

    def after(self, index: int, limit: int) -> list[TraceEvent]:
        self.last_read = time.monotonic()
        return list(itertools.islice((e for e in self.events if e.index > index), limit))

    def take(self) -> list[TraceEvent]:
        """The events since the last take (worker 0 pulls a worker's share of a trace)."""
        events = self.after(self.taken, len(self.events))
        self.taken = self.next_index - 1
        return events

    def merge(self, events: Iterable[TraceEvent]) -> None:
        """Another worker's events, in time order, numbered after this tap's own."""
        for event in sorted(events, key=lambda e: e.at):
            self.events.append(dataclasses.replace(event, index=self.next_index))
            self.next_index += 1


class Tracer:
    """The member's open traces, indexed the way the hub and the sessions look them up."""

    def __init__(self) -> None:
        self.taps: dict[str, Tap] = {}
        self.by_subject: dict[str, list[Tap]] = {}
        self.by_client: dict[str, list[Tap]] = {}

    def open(self, kind: str, value: str, tap_id: str = "", record: bool = True) -> Tap:
        """A new trace (``tap_id``: worker 0's id for the same trace on another worker);
        ``record`` false: it only holds what other workers recorded (a subject another
        worker owns: only the owner records it, once per message)."""
        self._reap()
        if kind not in KINDS:
            raise TraceRefused(f"a trace follows a client or a subject, not {kind!r}")
        if not value or len(value) > 1024:
            raise TraceRefused("the client id or subject to trace must hold 1 to 1024 characters")
        if len(self.taps) >= MAX_TRACES:
            raise TraceRefused(f"{MAX_TRACES} traces are open on this member: close one first")
        tap = Tap(kind, value)
        tap.id = tap_id or tap.id
        self.taps[tap.id] = tap
        if record:
            index = self.by_client if kind == "client" else self.by_subject
            index.setdefault(value, []).append(tap)
        return tap

    def close(self, tap_id: str) -> bool:
        tap = self.taps.pop(tap_id, None)
        if tap is None:
            return False
        index = self.by_client if tap.kind == "client" else self.by_subject
        remaining = [t for t in index.get(tap.value, ()) if t is not tap]
        if remaining:
            index[tap.value] = remaining
        else:
            index.pop(tap.value, None)
        return True

    def _reap(self) -> None:
        idle = time.monotonic() - IDLE_SECONDS
        for tap_id in [t.id for t in self.taps.values() if t.last_read < idle]:
            self.close(tap_id)

    # -- recording (callers check ``by_client`` / ``by_subject`` first: the cheap test) ------

    def delivered(self, subject: str, frame: OutFrame) -> None:
        for tap in self.by_subject.get(subject, ()):
            tap.record("out", "", "", subject, frame.payload)

    def sent(self, session: Session, frames: Iterable[OutFrame]) -> None:
        taps = self.by_client.get(session.client_id)
        if not taps:
            return
        for frame in frames:
            for tap in taps:
                tap.record("out", session.id, session.client_id, frame.subject, frame.payload)

    def received(self, session: Session, data: bytes | str) -> None:
        if not self.by_client:
            return
        taps = self.by_client.get(session.client_id)
        if not taps:
            return
        payload = data.encode() if isinstance(data, str) else data
        for tap in taps:
            tap.record("in", session.id, session.client_id, "", payload)
