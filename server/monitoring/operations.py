"""The MBean operations (sessions, subjects, alerts): :class:`ServerOperations` over the hub and
the engine, the :class:`~server.monitoring.ports.Operations` port the Sessions and Subjects
MBeans call. Every method runs on the event loop (the MBeans reach it through the LoopBridge).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final, Protocol

from pushgrid.ops.sessions import RecordedFrame, SessionDetailDocument, SessionDocument, to_builtins
from pushgrid.protocol.errors import CloseCode, InvalidSubject
from pushgrid.protocol.frames import Unsubscribed
from pushgrid.protocol.subjects import pattern_error, pattern_matches, validate_subject

from ..core.hub import Hub
from ..core.occupancy import OccupancyTable
from ..core.session import PresenceLookup, Session
from ..core.slow_consumers import transport_of
from ..core.tracing import TraceEvent, TraceRefused
from ..core.watch import WatchError, Watchlist
from ..engine.base import ALERTS_SUBJECT, Published, PublishRequest, Snapshot, SubjectEntry
from ..framing.wsframe import frame_payload


class MessageStore(Protocol):
    """The engine calls the operations need."""

    async def snapshot(self, subject: str) -> Snapshot | None: ...

    async def publish(self, request: PublishRequest) -> Published: ...

    async def history(self, subject: str, limit: int) -> list[Published]: ...

    async def remove_snapshot(self, subject: str) -> bool: ...

    async def position(self, subject: str) -> tuple[str, int]: ...

    def catalog(self) -> Iterator[SubjectEntry]: ...


#: the most subjects one member lists for one search (the admin API sorts and pages the
#: members' lists; past it the answer says ``truncated``) and the most cached messages shown
MAX_LISTED: Final = 10_000
MAX_HISTORY: Final = 100


def _outbound_bytes(peer: object) -> int:
    """Bytes waiting for the client (``Connection.queued_bytes``; 0 for a peer without it)."""
    return int(getattr(peer, "queued_bytes", 0))


def frame_info(at: float, frame: bytes) -> RecordedFrame:
    """One recorded WebSocket frame: time (ms), payload size, payload text (cut at 2 KiB)."""
    payload = frame_payload(frame)
    return RecordedFrame(
        at=int(at * 1000), size=len(payload), text=payload[:2048].decode("utf-8", "replace")
    )


def session_info(session: Session) -> SessionDocument:
    """What the Clients list shows of a session (pushgrid/ops/sessions.py)."""
    peer = session.peer
    frames_out = int(getattr(peer, "frames_out", 0))
    return SessionDocument(
        id=session.id,
        remote=session.remote,
        connected_since=int(session.connected_at * 1000),
        subjects=list(session.subjects),
        messages_in=session.messages_in,
        bytes_in=getattr(peer, "bytes_in", 0),
        bytes_out=getattr(peer, "bytes_out", 0),
        client_id=session.client_id,
        transport="sse" if transport_of(session) == "sse" else "websocket",
        compression=bool(getattr(peer, "compressed", False)),
        messages_out=max(0, frames_out - session.replies_out),
        outbound_buffer_bytes=_outbound_bytes(peer),
        internal=session.internal,
        delivery_latency_ms=_reported_latency_ms(session),
        lost_messages=session.delivery.totals.lost if session.delivery.reports else None,
    )


def _reported_latency_ms(session: Session) -> float | None:
    """The median delivery latency the session's client reported since it connected (ms, the
    upper bound of its bucket; core/delivery.py); None while it reported none."""
    median = session.delivery.totals.latency.quantile(0.5)
    return None if median is None else round(median * 1000, 3)


class ServerOperations:
    """:class:`~server.monitoring.ports.Operations` over a hub and an engine."""

    def __init__(
        self,
        hub: Hub,
        engine: MessageStore,
        occupancy: OccupancyTable | None = None,
        watchlist: Watchlist | None = None,
        presence: PresenceLookup | None = None,
    ) -> None:
        self.hub = hub
        self.presence = presence
        self.engine = engine
        self.occupancy = occupancy or OccupancyTable()
        self.watchlist = watchlist if watchlist is not None else Watchlist()
        #: worker 0 of several: the other workers' results of a session operation (ADR 060)
        self.others: Callable[[str, list[Any]], Awaitable[list[Any]]] | None = None
        #: a worker of several: does it own (number, trace) this subject?
        self.owns: Callable[[str], bool] | None = None

    # -- sessions: this process's, and (worker 0 of several) every other worker's -----------

    async def _elsewhere(self, name: str, *args: Any) -> list[Any]:
        """The other workers' results of ``name`` (none with one process: ADR 060)."""
        return [] if self.others is None else await self.others(name, list(args))

    async def local_operation(self, name: str, args: list[Any]) -> Any:
        """A session operation on this process's sessions only (what another worker asks)."""
        local: dict[str, Callable[..., Any]] = {
            "session_list": self._session_list,
            "session_detail": self._session_detail,
            "disconnect": self._disconnect,
            "slow_consumers": self._slow_consumers,
            "unsubscribe": self._unsubscribe,
            "trace_open": self._trace_open,
            "trace_take": self._trace_take,
            "trace_close": self._trace_close,
            "subject_rows": self._subject_rows,
            "subscriber_count": self.hub.subscriber_count,
        }
        return local[name](*args)

    async def session_list(self) -> list[dict[str, Any]]:
        """Every session of the server, as :class:`~pushgrid.ops.sessions.SessionDocument`."""
        rows = self._session_list()
        for others in await self._elsewhere("session_list"):
            rows += others
        return rows

    async def session_detail(self, session_id: str, keep: int = 20) -> dict[str, Any] | None:
        found = self._session_detail(session_id, keep)
        if found is None:
            found = next(iter(await self._elsewhere("session_detail", session_id, keep)), None)
        return found

    async def disconnect(self, session_id: str) -> bool:
        return self._disconnect(session_id) or any(await self._elsewhere("disconnect", session_id))

    async def slow_consumers(self) -> list[dict[str, Any]]:
        """The server's slow-consumer log (every worker's), oldest first."""
        records = self._slow_consumers()
        for others in await self._elsewhere("slow_consumers"):
            records += others
        return sorted(records, key=lambda record: record["at"])

    async def unsubscribe(self, session_id: str, subject: str) -> bool:
        return self._unsubscribe(session_id, subject) or any(
            await self._elsewhere("unsubscribe", session_id, subject)
        )

    def _session_list(self) -> list[dict[str, Any]]:
        return [to_builtins(session_info(s)) for s in self.hub.sessions.values()]

    def _session_detail(self, session_id: str, keep: int = 20) -> dict[str, Any] | None:
        """One session for the live trace; from now on its last ``keep`` frames are recorded."""
        session = self.hub.sessions.get(session_id)
        if session is None:
            return None
        recorded = self.hub.watch(session, keep)
        info = session_info(session)
        detail = SessionDetailDocument(
            **{f: getattr(info, f) for f in info.__struct_fields__},
            last_frames=[frame_info(at, frame) for at, frame in recorded],
        )
        # what its client reported (ADR 048), beside the document
        return {**to_builtins(detail), "delivery": session.delivery.summary()}

    async def trace_open(self, kind: str, value: str) -> dict[str, Any]:
        """Open a trace by client id or subject (admin API, audited there): ``{"id"}`` or
        ``{"error"}``. A client trace starts recording the matching sessions' live frames;
        with several workers every worker opens it under the same id (ADR 060)."""
        opened = self._trace_open(kind, value)
        if "id" in opened:
            await self._elsewhere("trace_open", kind, value, opened["id"])
        return opened

    def _trace_open(self, kind: str, value: str, tap_id: str = "") -> dict[str, Any]:
        # a subject is traced where it is numbered (its owner: once per message)
        record = kind != "subject" or self.owns is None or self.owns(str(value))
        try:
            tap = self.hub.tracer.open(str(kind), str(value), tap_id, record)
        except TraceRefused as exc:
            return {"error": str(exc)}
        if tap.kind == "client":
            for session in self.hub.sessions.values():
                if session.client_id == tap.value:
                    self.hub.rebind(session)
        return {"id": tap.id}

    def _trace_take(self, trace_id: str) -> list[dict[str, Any]] | None:
        tap = self.hub.tracer.taps.get(str(trace_id))
        return None if tap is None else [dataclasses.asdict(e) for e in tap.take()]

    async def trace_read(self, trace_id: str, after: int, limit: int) -> dict[str, Any] | None:
        """The trace's events after ``after`` (at most ``limit``, 1-5000); None if unknown.
        With several workers, the others' new events join worker 0's first."""
        tap = self.hub.tracer.taps.get(str(trace_id))
        if tap is None:
            return None
        for events in await self._elsewhere("trace_take", trace_id):
            tap.merge(TraceEvent(**event) for event in events)
        events = tap.after(int(after), max(1, min(5000, int(limit))))
        return {
            "id": tap.id,
            "kind": tap.kind,
            "value": tap.value,
            "created": tap.created,
            "next_index": tap.next_index,
            "dropped": tap.dropped,
            "events": [dataclasses.asdict(e) for e in events],
        }

    async def trace_close(self, trace_id: str) -> bool:
        closed = self._trace_close(trace_id)
        await self._elsewhere("trace_close", trace_id)
        return closed

    def _trace_close(self, trace_id: str) -> bool:
        tap = self.hub.tracer.taps.get(str(trace_id))
        if not self.hub.tracer.close(str(trace_id)):
            return False
        if tap is not None and tap.kind == "client":
            for session in self.hub.sessions.values():
                if session.client_id == tap.value:
                    self.hub.rebind(session)
        return True

    def _slow_consumers(self) -> list[dict[str, Any]]:
        """This process's slow-consumer log (server/core/slow_consumers.py), oldest first."""
        return [dataclasses.asdict(record) for record in self.hub.slow_consumers.records]

    def _disconnect(self, session_id: str) -> bool:
        session = self.hub.sessions.get(session_id)
        if session is None:
            return False
        session.peer.close(CloseCode.DISCONNECTED_BY_OPERATOR, "disconnected by operator")
        return True

    async def subject_snapshot(self, subject: str) -> dict[str, Any] | None:
        _checked(subject)
        snapshot = await self.engine.snapshot(subject)
        if snapshot is None:
            return None
        return {
            "subject": snapshot.subject,
            "content": snapshot.content,
            "fields": snapshot.fields,
            "epoch": snapshot.epoch,
            "seq": snapshot.seq,
            "ts": snapshot.ts,
        }

    async def subscriber_count(self, subject: str) -> int:
        """Subscribers of ``subject`` on this member (with several workers: all of them)."""
        counts = await self._elsewhere("subscriber_count", subject)
        return self.hub.subscriber_count(subject) + sum(int(count) for count in counts)

    def subscribed_subjects(self) -> int:
        return sum(1 for _ in self.hub.subjects())

    def subject_occupancy(self, subject: str) -> dict[str, Any]:
        """The cluster's subscribers of ``subject``, in all and per member (docs/occupancy.md)."""
        return {
            "subject": subject,
            "subscribers": self.occupancy.subscribers(subject),
            "members": self.occupancy.by_member(subject),
        }

    def subject_presence(self, subject: str) -> dict[str, Any]:
        """Who follows ``subject`` in the cluster (docs/occupancy.md, "Presence"); ``enabled``
        false (and nobody listed) when the subject keeps no presence."""
        if self.presence is None or not self.presence.enabled(subject):
            return {
                "subject": subject,
                "enabled": False,
                "subscribers": self.occupancy.subscribers(subject),
                "clients": [],
                "truncated": False,
            }
        answer = self.presence.answer(subject, None)
        return {
            "subject": subject,
            "enabled": True,
            "subscribers": answer.subscribers,
            "clients": [
                {"session": c.session, "client_id": c.client_id, "member": c.member}
                for c in answer.clients
            ],
            "truncated": answer.truncated,
        }

    def occupied_subjects(self) -> int:
        return self.occupancy.occupied()

    async def publish_alert(self, summary: str, fields: Any) -> int:
        """The admin API's alert announcement: retained, qos standard, on the server's own
        subject (reached only through the authenticated monitoring port); returns its seq."""
        values = {str(k): "" if v is None else str(v) for k, v in dict(fields or {}).items()}
        request = PublishRequest(ALERTS_SUBJECT, str(summary), values, True, "standard")
        return (await self.engine.publish(request)).seq

    def watch(self, pattern: str) -> dict[str, Any]:
        """Start watching ``pattern`` (admin API, audited there): ``{"pattern", "watched":
        true}`` or ``{"pattern", "error": kind, "detail"}`` (kind: invalid, duplicate, cap)."""
        try:
            self.watchlist.add(str(pattern), "runtime")
        except WatchError as exc:
            return {"pattern": pattern, "error": exc.kind, "detail": str(exc)}
        return {"pattern": pattern, "watched": True}

    def unwatch(self, pattern: str) -> dict[str, Any]:
        """Stop watching ``pattern``: ``{"pattern", "watched": false}`` or an error (unknown)."""
        try:
            self.watchlist.remove(str(pattern))
        except WatchError as exc:
            return {"pattern": pattern, "error": exc.kind, "detail": str(exc)}
        return {"pattern": pattern, "watched": False}

    # -- the subject browser (issue 35, ADR 051) -------------------------------------------

    async def subject_list(self, pattern: str) -> dict[str, Any]:
        """The subjects matching ``pattern`` (the entitlement rules' syntax) that this member
        holds or has subscribers of: at most :data:`MAX_LISTED`, ``truncated`` past it. With
        several workers, each lists what it owns and what its sessions follow; the rows of one
        subject add their subscribers (its owner alone has its snapshot and last publish)."""
        error = pattern_error(pattern)
        if error is not None:
            raise ValueError(error)
        listed = self._subject_rows(pattern)
        for other in await self._elsewhere("subject_rows", pattern):
            listed = merged_rows(listed, other)
        rows = listed["subjects"]
        truncated = bool(listed["truncated"]) or len(rows) > MAX_LISTED
        return {"pattern": pattern, "subjects": rows[:MAX_LISTED], "truncated": truncated}

    def _subject_rows(self, pattern: str) -> dict[str, Any]:
        """This process's part of :meth:`subject_list` (what another worker asks)."""
        counts = dict(self.hub.subscriber_counts())
        rows: dict[str, dict[str, Any]] = {}
        truncated = False
        for entry in self.engine.catalog():
            if pattern_matches(pattern, entry.subject):
                if len(rows) >= MAX_LISTED:
                    truncated = True
                    break
                rows[entry.subject] = _row(entry, counts.get(entry.subject, 0))
        for subject, count in counts.items():  # subscribed, never published: no engine entry
            if subject not in rows and pattern_matches(pattern, subject):
                if len(rows) >= MAX_LISTED:
                    truncated = True
                    break
                rows[subject] = _row(SubjectEntry(subject, 0, 0), count)
        return {"subjects": list(rows.values()), "truncated": truncated}

    async def subject_history(self, subject: str, limit: int) -> list[dict[str, Any]]:
        """The last ``limit`` (at most :data:`MAX_HISTORY`) cached messages, oldest first."""
        _checked(subject)
        messages = await self.engine.history(subject, max(0, min(int(limit), MAX_HISTORY)))
        return [
            {
                "epoch": m.epoch,
                "seq": m.seq,
                "ts": m.ts,
                "retained": m.retained,
                "qos": m.qos,
                "content": m.content[:2048],
                "fields": m.fields,
            }
            for m in messages
        ]

    async def remove_snapshot(self, subject: str) -> dict[str, Any]:
        """Remove the retained snapshot through the engine (every member of a cluster):
        ``{"subject", "removed", "epoch", "seq"}`` with the subject's position after it."""
        _checked(subject)
        removed = await self.engine.remove_snapshot(subject)
        epoch, seq = await self.engine.position(subject)
        return {"subject": subject, "removed": removed, "epoch": epoch, "seq": seq}

    def _unsubscribe(self, session_id: str, subject: str) -> bool:
        """End one session's subscription as if it had sent ``unsubscribe``: it gets the
        ``unsubscribed`` frame (no id) and nothing more of the subject; False if it had none."""
        session = self.hub.sessions.get(session_id)
        if session is None or not self.hub.unsubscribe(session, subject):
            return False
        session.send(Unsubscribed(subject=subject))
        return True


def _checked(subject: str) -> None:
    try:
        validate_subject(subject)
    except InvalidSubject as invalid:
        raise ValueError(invalid.message) from None


def merged_rows(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """Two workers' subject rows as one list: a subject's subscribers added, its snapshot size
    and last publish the larger (only its owner has them: the other says 0)."""
    rows = {row["subject"]: dict(row) for row in ours["subjects"]}
    for row in theirs["subjects"]:
        mine = rows.setdefault(row["subject"], dict(row, subscribers=0))
        mine["subscribers"] += row["subscribers"]
        mine["snapshot_bytes"] = max(mine["snapshot_bytes"], row["snapshot_bytes"])
        mine["last_publish"] = max(mine["last_publish"], row["last_publish"])
    truncated = bool(ours["truncated"] or theirs["truncated"])
    return {"subjects": list(rows.values()), "truncated": truncated}


def _row(entry: SubjectEntry, subscribers: int) -> dict[str, Any]:
    return {
        "subject": entry.subject,
        "subscribers": subscribers,
        "snapshot_bytes": entry.snapshot_bytes,
        "last_publish": entry.last_publish,
    }
