"""``/sessions`` and ``/members/{name}/sessions``: client sessions, disconnect."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, status

from ..deps import GuardedRoute, HttpDep, MemberDep, MembersDep, Operator, Viewer, audit_target
from ..problems import MEMBER_ERRORS, ProblemError, problem_responses
from ..schemas import (
    MAX_SUBJECT_LENGTH,
    SessionPage,
    SessionSort,
    SessionTransport,
    SlowConsumerPage,
)
from ..services import sessions
from ..services.sessions import SessionQuery, SlowConsumerQuery

router = APIRouter(tags=["sessions"], route_class=GuardedRoute)

MAX_BYTES = 2**62


def _utc(moment: datetime | None, name: str) -> datetime | None:
    if moment is None:
        return None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ProblemError(422, f"{name} needs a time zone (e.g. 2026-11-22T15:00:00Z)")
    try:
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ProblemError(422, f"{name} is out of range") from None


def session_query(
    remote: Annotated[
        str | None,
        Query(max_length=255, description="Substring of the remote address (host:port)"),
    ] = None,
    subject: Annotated[
        str | None,
        Query(
            max_length=MAX_SUBJECT_LENGTH, description="Only sessions subscribed to this subject"
        ),
    ] = None,
    connected_after: Annotated[
        datetime | None, Query(description="Connected at or after (ISO 8601)")
    ] = None,
    connected_before: Annotated[
        datetime | None, Query(description="Connected at or before (ISO 8601)")
    ] = None,
    min_bytes_in: Annotated[int | None, Query(ge=0, le=MAX_BYTES)] = None,
    min_bytes_out: Annotated[int | None, Query(ge=0, le=MAX_BYTES)] = None,
    client_id: Annotated[
        str | None, Query(max_length=255, description="Substring of the client id")
    ] = None,
    transport: Annotated[SessionTransport | None, Query(description="websocket or sse")] = None,
    member: Annotated[
        str | None, Query(max_length=255, description="Only this member's sessions")
    ] = None,
    min_outbound_buffer_bytes: Annotated[
        int | None, Query(ge=0, le=MAX_BYTES, description="At least this many bytes queued")
    ] = None,
    sort: Annotated[
        SessionSort, Query(description="Order ('-' for descending)")
    ] = "connected_since",
    internal: Annotated[
        bool, Query(description="Also list internal probes (the admin API's canary subscriber)")
    ] = False,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> SessionQuery:
    return SessionQuery(
        remote=remote,
        subject=subject,
        connected_after=_utc(connected_after, "connected_after"),
        connected_before=_utc(connected_before, "connected_before"),
        min_bytes_in=min_bytes_in,
        min_bytes_out=min_bytes_out,
        client_id=client_id,
        transport=transport,
        member=member,
        min_outbound_buffer_bytes=min_outbound_buffer_bytes,
        sort=sort,
        internal=internal,
        offset=offset,
        limit=limit,
    )


QueryDep = Annotated[SessionQuery, Depends(session_query)]


@router.get(
    "/sessions", name="sessions.list", response_model=SessionPage, responses=problem_responses()
)
async def list_sessions(
    principal: Viewer, members: MembersDep, query: QueryDep, http: HttpDep
) -> SessionPage:
    """Sessions of every member, filtered, sorted and paged.

    Members that cannot be read are listed in `unreachable` (the answer is still 200).
    """
    return await sessions.cluster_page(http, members, query)


@router.get(
    "/members/{name}/sessions",
    name="sessions.member",
    response_model=SessionPage,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def list_member_sessions(
    principal: Viewer, member: MemberDep, query: QueryDep, http: HttpDep
) -> SessionPage:
    """Sessions of one member, filtered, sorted and paged."""
    return await sessions.one_member_page(http, member, query)


@router.delete(
    "/members/{name}/sessions/{session_id}",
    name="sessions.disconnect",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def disconnect_session(
    principal: Operator, member: MemberDep, session_id: str, request: Request, http: HttpDep
) -> Response:
    """Disconnect a session through the member's `Sessions.disconnect` MBean operation: the
    client's WebSocket is closed with code 4003 (disconnected by operator)."""
    audit_target(request, f"{member.name}/{session_id}")
    await sessions.disconnect(http, member, session_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def slow_consumer_query(
    session: Annotated[str | None, Query(max_length=64, description="Exactly this session")] = None,
    client_id: Annotated[
        str | None, Query(max_length=255, description="Exactly this client id")
    ] = None,
    remote: Annotated[
        str | None, Query(max_length=255, description="Substring of the remote address")
    ] = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> SlowConsumerQuery:
    return SlowConsumerQuery(session, client_id, remote, offset, limit)


SlowQueryDep = Annotated[SlowConsumerQuery, Depends(slow_consumer_query)]


@router.get(
    "/slow-consumers",
    name="sessions.slow_consumers",
    response_model=SlowConsumerPage,
    responses=problem_responses(),
)
async def list_slow_consumers(
    principal: Viewer, members: MembersDep, query: SlowQueryDep, http: HttpDep
) -> SlowConsumerPage:
    """Sessions the members closed as slow consumers (4001), newest first: each member keeps
    its last 200. Members that cannot be read are listed in `unreachable`."""
    return await sessions.slow_consumer_page(http, members, query)


@router.get(
    "/members/{name}/slow-consumers",
    name="sessions.member_slow_consumers",
    response_model=SlowConsumerPage,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def list_member_slow_consumers(
    principal: Viewer, member: MemberDep, query: SlowQueryDep, http: HttpDep
) -> SlowConsumerPage:
    """One member's slow-consumer closes, newest first."""
    records = await sessions.member_slow_consumers(http, member)
    return sessions.slow_consumers_paged(records, query, [])
