"""Client sessions of the members (Jolokia ``pushgrid:type=Sessions``): list, filter, page,
disconnect (the ``disconnect`` operation closes the WebSocket with code 4003).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import ValidationError

from ..access import member_access
from ..member_client import SESSIONS_MBEAN, MemberEndpoint, MemberFailure
from ..problems import not_found
from ..schemas import MemberError, SessionOut, SessionPage, SessionSort


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """Filters (all optional, combined with AND), order and page of a session list."""

    remote: str | None = None  # substring of the remote address ("10.0.0." or ":5432")
    subject: str | None = None  # subscribed to exactly this subject
    connected_after: datetime | None = None  # connected at or after
    connected_before: datetime | None = None  # connected at or before
    min_bytes_in: int | None = None
    min_bytes_out: int | None = None
    sort: SessionSort = "connected_since"
    internal: bool = False  # list the internal probes too (ADR 049)
    offset: int = 0
    limit: int = 100


def parse_sessions(member: MemberEndpoint, value: Any) -> list[SessionOut]:
    """The ``list()`` operation's answer -> sessions (malformed entries raise MemberFailure)."""
    if not isinstance(value, list):
        raise MemberFailure(member, "error", "unexpected Sessions.list answer")
    sessions = []
    for raw in value:
        if not isinstance(raw, dict):
            raise MemberFailure(member, "error", "unexpected Sessions.list entry")
        try:
            sessions.append(
                SessionOut(
                    member=member.name,
                    id=str(raw["id"]),
                    remote=str(raw.get("remote", "")),
                    connected_since=datetime.fromtimestamp(
                        int(raw.get("connected_since", 0)) / 1000, UTC
                    ),
                    subjects=[str(s) for s in raw.get("subjects", [])],
                    messages_in=int(raw.get("messages_in", 0)),
                    bytes_in=int(raw.get("bytes_in", 0)),
                    bytes_out=int(raw.get("bytes_out", 0)),
                    internal=bool(raw.get("internal", False)),
                )
            )
        except (KeyError, TypeError, ValueError, OverflowError, ValidationError) as exc:
            raise MemberFailure(member, "error", f"unexpected Sessions.list entry: {exc}") from None
    return sessions


def matches(session: SessionOut, query: SessionQuery) -> bool:
    if session.internal and not query.internal:
        return False
    if query.remote is not None and query.remote not in session.remote:
        return False
    if query.subject is not None and query.subject not in session.subjects:
        return False
    if query.connected_after is not None and session.connected_since < query.connected_after:
        return False
    if query.connected_before is not None and session.connected_since > query.connected_before:
        return False
    if query.min_bytes_in is not None and session.bytes_in < query.min_bytes_in:
        return False
    return not (query.min_bytes_out is not None and session.bytes_out < query.min_bytes_out)


def select_sessions(
    sessions: Iterable[SessionOut], query: SessionQuery
) -> tuple[int, list[SessionOut]]:
    """(total matching, the requested page), sorted by ``query.sort`` then member and id."""
    chosen = [session for session in sessions if matches(session, query)]
    key = query.sort.removeprefix("-")
    chosen.sort(key=lambda s: (s.member, s.id))
    chosen.sort(key=lambda s: getattr(s, key), reverse=query.sort.startswith("-"))
    return len(chosen), chosen[query.offset : query.offset + query.limit]


async def member_sessions(http: httpx.AsyncClient, member: MemberEndpoint) -> list[SessionOut]:
    value = await member_access(http, member).execute(SESSIONS_MBEAN, "list")
    return parse_sessions(member, value)


def _page(
    sessions: Iterable[SessionOut], query: SessionQuery, errors: list[MemberError]
) -> SessionPage:
    total, items = select_sessions(sessions, query)
    return SessionPage(
        total=total, offset=query.offset, limit=query.limit, items=items, unreachable=errors
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
    results = await asyncio.gather(
        *(member_sessions(http, member) for member in members), return_exceptions=True
    )
    sessions: list[SessionOut] = []
    errors: list[MemberError] = []
    for member, result in zip(members, results, strict=True):
        if isinstance(result, MemberFailure):
            errors.append(MemberError(member=member.name, error=result.detail))
        elif isinstance(result, BaseException):
            raise result
        else:
            sessions.extend(result)
    return _page(sessions, query, errors)


async def disconnect(http: httpx.AsyncClient, member: MemberEndpoint, session_id: str) -> None:
    """Close a session with code 4003 (404 problem when the member has no such session)."""
    access = member_access(http, member)
    closed = await access.execute(SESSIONS_MBEAN, "disconnect", session_id)
    if closed is not True:
        raise not_found(f"member {member.name!r} has no session {session_id!r}")
