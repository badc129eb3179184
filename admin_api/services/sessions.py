"""Client sessions of the members (Jolokia ``pushgrid:type=Sessions``): list, filter, page,
disconnect (the ``disconnect`` operation closes the WebSocket with code 4003).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
from pydantic import ValidationError

from pushgrid.kernel.throttle import host_of
from pushgrid.ops import names
from pushgrid.ops.attributes import ContractError
from pushgrid.ops.names import SESSIONS_SLOW_CONSUMERS
from pushgrid.ops.sessions import SessionDocument, SlowConsumerClose, decode_answer

from ..access import member_access
from ..member_client import SESSIONS_MBEAN, MemberEndpoint, MemberFailure
from ..problems import not_found
from ..schemas import (
    MemberError,
    SessionOut,
    SessionPage,
    SessionSort,
    SessionTransport,
    SlowConsumerOut,
    SlowConsumerPage,
)


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """Filters (all optional, combined with AND), order and page of a session list."""

    remote: str | None = None  # substring of the remote address ("10.0.0." or ":5432")
    subject: str | None = None  # subscribed to exactly this subject
    connected_after: datetime | None = None  # connected at or after
    connected_before: datetime | None = None  # connected at or before
    min_bytes_in: int | None = None
    min_bytes_out: int | None = None
    client_id: str | None = None  # substring of the client id
    transport: SessionTransport | None = None
    member: str | None = None  # exactly this member (the cluster list)
    min_outbound_buffer_bytes: int | None = None
    sort: SessionSort = "connected_since"
    internal: bool = False  # list the internal probes too (ADR 049)
    offset: int = 0
    limit: int = 100


_SESSION_FIELDS = tuple(f for f in SessionDocument.__struct_fields__ if f != "connected_since")


def session_out(member: MemberEndpoint, info: SessionDocument) -> SessionOut:
    return SessionOut(
        member=member.name,
        connected_since=datetime.fromtimestamp(info.connected_since / 1000, UTC),
        **{
            f: getattr(info, f) for f in SessionDocument.__struct_fields__ if f != "connected_since"
        },
    )


def parse_sessions(member: MemberEndpoint, value: Any) -> list[SessionOut]:
    """The ``list()`` operation's answer -> sessions (an answer that does not fit the ops
    contract raises MemberFailure naming what)."""
    try:
        infos = decode_answer(value, list[SessionDocument], "Sessions.list")
        return [session_out(member, info) for info in infos]
    except ContractError as exc:
        raise MemberFailure(member, "error", str(exc)) from None
    except (OverflowError, ValueError, ValidationError) as exc:
        raise MemberFailure(member, "error", f"unexpected Sessions.list entry: {exc}") from None


def _internal_ok(session: SessionOut, query: SessionQuery) -> bool:
    return query.internal or not session.internal


def matches(session: SessionOut, query: SessionQuery) -> bool:
    checks = (
        query.remote is None or query.remote in session.remote,
        query.subject is None or query.subject in session.subjects,
        query.connected_after is None or session.connected_since >= query.connected_after,
        query.connected_before is None or session.connected_since <= query.connected_before,
        query.min_bytes_in is None or session.bytes_in >= query.min_bytes_in,
        query.min_bytes_out is None or session.bytes_out >= query.min_bytes_out,
        query.client_id is None or query.client_id in session.client_id,
        query.transport is None or session.transport == query.transport,
        query.member is None or session.member == query.member,
        query.min_outbound_buffer_bytes is None
        or session.outbound_buffer_bytes >= query.min_outbound_buffer_bytes,
    )
    return all(checks)


def select_sessions(
    sessions: Iterable[SessionOut], query: SessionQuery
) -> tuple[int, list[SessionOut], int]:
    """(total matching, the requested page, internal sessions left out), sorted by
    ``query.sort`` then member and id."""
    candidates = [session for session in sessions if matches(session, query)]
    chosen = [session for session in candidates if _internal_ok(session, query)]
    hidden = 0 if query.internal else sum(1 for s in candidates if s.internal)
    key = query.sort.removeprefix("-")
    chosen.sort(key=lambda s: (s.member, s.id))
    chosen.sort(key=lambda s: getattr(s, key), reverse=query.sort.startswith("-"))
    return len(chosen), chosen[query.offset : query.offset + query.limit], hidden


async def member_sessions(http: httpx.AsyncClient, member: MemberEndpoint) -> list[SessionOut]:
    value = await member_access(http, member).execute(SESSIONS_MBEAN, names.SESSIONS_LIST)
    return parse_sessions(member, value)


def _page(
    sessions: Iterable[SessionOut], query: SessionQuery, errors: list[MemberError]
) -> SessionPage:
    total, items, hidden = select_sessions(sessions, query)
    return SessionPage(
        total=total,
        offset=query.offset,
        limit=query.limit,
        items=items,
        unreachable=errors,
        internal_hidden=hidden,
    )


async def one_member_page(
    http: httpx.AsyncClient, member: MemberEndpoint, query: SessionQuery
) -> SessionPage:
    """One member's sessions (raises MemberFailure when the member cannot be read)."""
    return _page(await member_sessions(http, member), query, [])


async def cluster_page(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint], query: SessionQuery
) -> SessionPage:
    """Every member's sessions; members that cannot be read are listed in ``unreachable``."""
    sessions, errors = await from_every_member(http, members, member_sessions)
    return _page(sessions, query, errors)


T = TypeVar("T")


async def from_every_member(
    http: httpx.AsyncClient,
    members: Sequence[MemberEndpoint],
    read: Callable[[httpx.AsyncClient, MemberEndpoint], Awaitable[list[T]]],
) -> tuple[list[T], list[MemberError]]:
    """``read`` of every member, at once, joined; the members that failed, with why."""
    results = await asyncio.gather(*(read(http, m) for m in members), return_exceptions=True)
    items: list[T] = []
    errors: list[MemberError] = []
    for member, result in zip(members, results, strict=True):
        if isinstance(result, MemberFailure):
            errors.append(MemberError(member=member.name, error=result.detail))
        elif isinstance(result, BaseException):
            raise result
        else:
            items.extend(result)
    return items, errors


async def disconnect(http: httpx.AsyncClient, member: MemberEndpoint, session_id: str) -> None:
    """Close a session with code 4003 (404 problem when the member has no such session)."""
    access = member_access(http, member)
    closed = await access.execute(SESSIONS_MBEAN, names.SESSIONS_DISCONNECT, session_id)
    if closed is not True:
        raise not_found(f"member {member.name!r} has no session {session_id!r}")


@dataclass(frozen=True, slots=True)
class SlowConsumerQuery:
    """Filters and page of the slow-consumer log (newest first)."""

    session: str | None = None  # exactly this session
    client_id: str | None = None  # exactly this client id
    remote: str | None = None  # substring of the address
    offset: int = 0
    limit: int = 100

    def matches(self, record: SlowConsumerOut) -> bool:
        return (
            (self.session is None or record.session == self.session)
            and (self.client_id is None or record.client_id == self.client_id)
            and (self.remote is None or self.remote in record.remote)
        )


async def member_slow_consumers(
    http: httpx.AsyncClient, member: MemberEndpoint
) -> list[SlowConsumerOut]:
    value = await member_access(http, member).execute(SESSIONS_MBEAN, SESSIONS_SLOW_CONSUMERS)
    try:
        records = decode_answer(value, list[SlowConsumerClose], "Sessions.slowConsumers")
    except ContractError as exc:
        raise MemberFailure(member, "error", str(exc)) from None
    return [
        SlowConsumerOut(
            member=member.name,
            at=datetime.fromtimestamp(r.at / 1000, UTC),
            **{f: getattr(r, f) for f in r.__struct_fields__ if f != "at"},
        )
        for r in records
    ]


async def slow_consumer_page(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint], query: SlowConsumerQuery
) -> SlowConsumerPage:
    """The members' slow-consumer logs merged, newest first; unreadable members listed."""
    records, errors = await from_every_member(http, members, member_slow_consumers)
    return slow_consumers_paged(records, query, errors)


def slow_consumers_paged(
    records: Iterable[SlowConsumerOut], query: SlowConsumerQuery, errors: list[MemberError]
) -> SlowConsumerPage:
    """The records matching ``query``, newest first, one page of them."""
    chosen = [r for r in records if query.matches(r)]
    chosen.sort(key=lambda r: (r.at, r.member, r.session), reverse=True)
    return SlowConsumerPage(
        total=len(chosen),
        offset=query.offset,
        limit=query.limit,
        items=chosen[query.offset : query.offset + query.limit],
        unreachable=errors,
    )


async def slow_consumers_of(
    http: httpx.AsyncClient, member: MemberEndpoint, client: SessionOut
) -> list[SlowConsumerOut]:
    """The member's slow-consumer closes of ``client``: the same client id, or without one the
    same host (a reconnecting client gets a new session id and port). A member that cannot be
    read gives none (the detail itself was just read from it)."""
    try:
        records = await member_slow_consumers(http, member)
    except MemberFailure:
        return []
    host = host_of(client.remote)

    def same(record: SlowConsumerOut) -> bool:
        if client.client_id:
            return record.client_id == client.client_id
        return not record.client_id and host_of(record.remote) == host

    return sorted(filter(same, records), key=lambda r: r.at, reverse=True)
