"""Traces by client id or subject recorded inside the members (issue 35 item 2, ADR 050).

The admin API opens a trace (``Sessions.traceOpen``) on one member or on every member, then
polls each member's events (``Sessions.traceRead`` after the last index it has) every
:data:`POLL_SECONDS` into one ring of :data:`RING_SIZE` events, merged by time, until the
trace's owner stops it (``Sessions.traceClose`` on every member). Unlike the live trace
(services/trace.py) nothing subscribes: a subject's subscriber count is unchanged. Events are
read as JSON or downloaded as JSON lines.

Bounds: ``Trace.MaxActive`` traces at once (the live trace's setting, counted apart), a member
keeps 10,000 events per trace and 16 traces, the admin API :data:`RING_SIZE` events per trace
(the oldest dropped and counted).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

import httpx

from pushgrid.ops.names import SESSIONS_TRACE_CLOSE, SESSIONS_TRACE_OPEN, SESSIONS_TRACE_READ
from pushgrid.ops.sessions import TraceDocument, decode_answer

from ..access import member_access
from ..member_client import (
    SESSIONS_MBEAN,
    MemberEndpoint,
    MemberFailure,
    fits_contract,
    new_http_client,
)
from ..problems import ProblemError, conflict, not_found
from ..schemas_ops import MemberTraceEvent, MemberTraceOut, MemberTraceState
from ..security import Principal

POLL_SECONDS: Final = 0.5
RING_SIZE: Final = 10_000
READ_LIMIT: Final = 5000


class MemberTrace:
    """One trace: its id on each member, the merged ring, who opened it."""

    def __init__(self, kind: str, value: str, owner: Principal) -> None:
        self.id = secrets.token_hex(8)
        self.kind = kind
        self.value = value
        self.owner_token_id = owner.token_id
        self.created_by = owner.name
        self.created_at = datetime.now(UTC)
        self.members: dict[str, tuple[MemberEndpoint, str]] = {}  # name -> (member, its id)
        self.positions: dict[str, int] = {}  # name -> last index read
        self.errors: dict[str, str] = {}  # name -> why it is not followed
        self.member_dropped: dict[str, int] = {}
        self.events: deque[MemberTraceEvent] = deque(maxlen=RING_SIZE)
        self.next_index = 0
        self.poller: asyncio.Task[None] | None = None
        self.lock = asyncio.Lock()  # one poll at a time: a read's refresh and the poller

    def add(self, member: str, document: TraceDocument) -> None:
        self.member_dropped[member] = document.dropped
        for event in document.events:
            self.events.append(
                MemberTraceEvent(
                    index=self.next_index,
                    member=member,
                    at=datetime.fromtimestamp(event.at / 1000, UTC),
                    direction=event.direction,
                    session=event.session,
                    client_id=event.client_id,
                    subject=event.subject,
                    size=event.size,
                    text=event.text,
                )
            )
            self.next_index += 1
            self.positions[member] = event.index

    def view(self, after: int = -1, limit: int = 500) -> MemberTraceOut:
        events = list(itertools.islice((e for e in self.events if e.index > after), limit))
        return MemberTraceOut(
            id=self.id,
            kind=self.kind,  # type: ignore[arg-type]
            value=self.value,
            created_at=self.created_at,
            created_by=self.created_by,
            members=[
                MemberTraceState(
                    member=name,
                    error=self.errors.get(name),
                    dropped=self.member_dropped.get(name, 0),
                )
                for name in sorted({*self.members, *self.errors})
            ],
            ring_size=RING_SIZE,
            dropped=self.next_index - len(self.events),
            next_index=self.next_index,
            events=events,
        )


async def _open_on(http: httpx.AsyncClient, member: MemberEndpoint, kind: str, value: str) -> str:
    answer = await member_access(http, member).execute(
        SESSIONS_MBEAN, SESSIONS_TRACE_OPEN, kind, value
    )
    if not isinstance(answer, dict) or "id" not in answer:
        error = answer.get("error") if isinstance(answer, dict) else None
        raise MemberFailure(member, "error", str(error or "unexpected traceOpen answer"))
    return str(answer["id"])


async def _read_from(
    http: httpx.AsyncClient, member: MemberEndpoint, member_id: str, after: int
) -> TraceDocument | None:
    answer = await member_access(http, member).execute(
        SESSIONS_MBEAN, SESSIONS_TRACE_READ, member_id, after, READ_LIMIT
    )
    if answer is None:
        return None
    with fits_contract(member):
        document: TraceDocument = decode_answer(answer, TraceDocument, "Sessions.traceRead")
    return document


class MemberTraceHub:
    """The member traces of the admin API process (kept until stopped)."""

    def __init__(self, max_active: int, timeout: float = 3.0) -> None:
        self.max_active = max_active
        self.timeout = timeout
        self.traces: dict[str, MemberTrace] = {}

    async def open(
        self,
        http: httpx.AsyncClient,
        members: Sequence[MemberEndpoint],
        kind: str,
        value: str,
        owner: Principal,
    ) -> MemberTrace:
        if len(self.traces) >= self.max_active:
            raise conflict(
                f"{len(self.traces)} member traces are open (Trace.MaxActive): stop one first",
                "too_many_traces",
            )
        trace = MemberTrace(kind, value, owner)
        results = await asyncio.gather(
            *(_open_on(http, m, kind, value) for m in members), return_exceptions=True
        )
        for member, result in zip(members, results, strict=True):
            if isinstance(result, MemberFailure):
                trace.errors[member.name] = result.detail
            elif isinstance(result, BaseException):
                raise result
            else:
                trace.members[member.name] = (member, result)
                trace.positions[member.name] = -1
        if not trace.members:
            detail = "; ".join(f"{n}: {e}" for n, e in sorted(trace.errors.items()))
            raise ProblemError(502, f"no member opened the trace: {detail}", "member_error")
        self.traces[trace.id] = trace
        trace.poller = asyncio.get_running_loop().create_task(self._follow(trace))
        return trace

    async def _follow(self, trace: MemberTrace) -> None:
        async with new_http_client(self.timeout) as http:
            while True:
                await self._poll(http, trace)
                await asyncio.sleep(POLL_SECONDS)

    async def _poll(self, http: httpx.AsyncClient, trace: MemberTrace) -> None:
        async with trace.lock:
            await self._poll_members(http, trace)

    async def _poll_members(self, http: httpx.AsyncClient, trace: MemberTrace) -> None:
        for name, (member, member_id) in list(trace.members.items()):
            try:
                document = await _read_from(http, member, member_id, trace.positions[name])
            except MemberFailure as failure:
                trace.errors[name] = failure.detail  # retried at the next poll
                continue
            if document is None:  # the member restarted or reaped it: follow it no more
                trace.errors[name] = "the member no longer has this trace (restarted?)"
                del trace.members[name]
                continue
            trace.errors.pop(name, None)
            trace.add(name, document)

    def get(self, trace_id: str, caller: Principal) -> MemberTrace:
        """The caller's own trace; another token's is 404, as if it did not exist."""
        trace = self.traces.get(trace_id)
        if trace is None or trace.owner_token_id != caller.token_id:
            raise not_found(f"no open member trace {trace_id!r} of yours")
        return trace

    async def refresh(self, http: httpx.AsyncClient, trace: MemberTrace) -> None:
        """Read what the members recorded since the last poll (a read sees it at once)."""
        await self._poll(http, trace)

    async def stop(self, http: httpx.AsyncClient, trace_id: str, caller: Principal) -> None:
        trace = self.get(trace_id, caller)
        await self._drop(http, trace)

    async def _drop(self, http: httpx.AsyncClient, trace: MemberTrace) -> None:
        self.traces.pop(trace.id, None)
        if trace.poller is not None:
            trace.poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await trace.poller
        for member, member_id in trace.members.values():
            with contextlib.suppress(MemberFailure):
                await member_access(http, member).execute(
                    SESSIONS_MBEAN, SESSIONS_TRACE_CLOSE, member_id
                )

    async def close(self) -> None:
        async with new_http_client(self.timeout) as http:
            for trace in list(self.traces.values()):
                await self._drop(http, trace)


def jsonl(events: Sequence[MemberTraceEvent]) -> bytes:
    """The events as JSON lines (one object per line, oldest first)."""
    return b"".join(event.model_dump_json().encode() + b"\n" for event in events)
