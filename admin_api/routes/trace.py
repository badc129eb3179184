"""``/members/{name}/traces`` and ``/traces/{id}``: live trace of a subject (operator, audited),
and ``/members/{name}/sessions/{id}``: one session with its buffer and last frames."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Query, Request, Response, status

from pushgrid.ops import names
from pushgrid.ops.attributes import ContractError
from pushgrid.ops.sessions import SessionDetailDocument, decode_answer, to_builtins

from ..access import member_access
from ..deps import GuardedRoute, HttpDep, MemberDep, MembersDep, Operator, audit_target
from ..member_client import SESSIONS_MBEAN, MemberFailure
from ..problems import MEMBER_ERRORS, not_found, problem_responses
from ..schemas_ops import MemberTraceIn, MemberTraceOut, SessionDetail, TraceIn, TraceOut
from ..services.entitlement import visible_frames
from ..services.member_traces import MemberTraceHub, jsonl
from ..services.members import client_url
from ..services.sessions import session_out, slow_consumers_of
from ..services.subjects import check_subject
from ..services.trace import TraceHub
from .subjects import EntitlementToken

router = APIRouter(tags=["live trace"], route_class=GuardedRoute)
JSON_LINES = "application/x-ndjson"


def _hub(request: Request) -> TraceHub:
    return cast(TraceHub, request.app.state.traces)


@router.post(
    "/members/{name}/traces",
    name="trace.open",
    status_code=status.HTTP_201_CREATED,
    response_model=TraceOut,
    responses=problem_responses(*MEMBER_ERRORS, 409),
)
async def open_trace(
    principal: Operator, member: MemberDep, data: TraceIn, request: Request, http: HttpDep
) -> TraceOut:
    """Start tracing a subject on a member: the admin API subscribes to it on the member's
    client port, as a client, with `entitlement_token` when the member has entitlement on.

    Read the messages with `GET /traces/{id}?after=N`; 409 beyond `Trace.MaxActive` traces.
    """
    audit_target(request, member.name, f"subject={data.subject}")
    check_subject(data.subject)
    url = await client_url(http, member)
    trace = await _hub(request).open(member, url, data.subject, principal, data.entitlement_token)
    return trace.view()


@router.get(
    "/traces/{trace_id}",
    name="trace.read",
    response_model=TraceOut,
    responses=problem_responses(404),
)
async def read_trace(
    principal: Operator,
    trace_id: str,
    request: Request,
    after: Annotated[int, Query(ge=-1, le=2**62, description="Messages after this index")] = -1,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> TraceOut:
    """The trace's status and its buffered messages after `after` (oldest first). A trace
    belongs to the token that opened it: any other gets 404."""
    return _hub(request).get(trace_id, principal).view(after, limit)


@router.delete(
    "/traces/{trace_id}",
    name="trace.close",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(404),
)
async def close_trace(principal: Operator, trace_id: str, request: Request) -> Response:
    """Stop a trace (its subscription on the member is closed); only its owner may."""
    audit_target(request, trace_id)
    await _hub(request).close_one(trace_id, principal)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/members/{name}/sessions/{session_id}",
    name="trace.session",
    response_model=SessionDetail,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def session_detail(
    principal: Operator,
    member: MemberDep,
    session_id: str,
    http: HttpDep,
    entitlement_token: EntitlementToken = None,
) -> SessionDetail:
    """One session: its subscriptions, outbound buffer and last frames sent to it.

    The member records a session's frames from the first time it is looked at (the last 20),
    so the first answer may have none; later ones show what was sent since. On a member with
    entitlement, a frame carrying a subject the caller's entitlement token
    (`X-Entitlement-Token`) does not grant has its `text` replaced by null and
    `redacted: "entitlement"`.
    """
    value = await member_access(http, member).execute(
        SESSIONS_MBEAN, names.SESSIONS_DETAIL, session_id
    )
    if value is None:
        raise not_found(f"member {member.name!r} has no session {session_id!r}")
    try:
        document = decode_answer(value, SessionDetailDocument, "Sessions.detail")
    except ContractError as exc:
        raise MemberFailure(member, "error", str(exc)) from None
    frames = await visible_frames(
        http, member, entitlement_token, [to_builtins(f) for f in document.last_frames]
    )
    client = session_out(member, document)
    history = await slow_consumers_of(http, member, client)
    delivery = value.get("delivery") if isinstance(value, dict) else None
    return SessionDetail(
        **client.model_dump(),
        last_frames=frames,
        slow_consumers=history,
        delivery=delivery if isinstance(delivery, dict) else None,
    )


# --- traces by client id or subject, recorded inside the members (ADR 050) ---------------------


def _recorded(request: Request) -> MemberTraceHub:
    return _hub(request).recorded


@router.post(
    "/member-traces",
    name="trace.member_open",
    status_code=status.HTTP_201_CREATED,
    response_model=MemberTraceOut,
    responses=problem_responses(*MEMBER_ERRORS, 409),
)
async def open_member_trace(
    principal: Operator,
    data: MemberTraceIn,
    members: MembersDep,
    request: Request,
    http: HttpDep,
) -> MemberTraceOut:
    """Trace a client id (frames to and from its sessions, every subject) or a subject (every
    message fanned out), on one member or every member, with millisecond times, until stopped.

    The members record it: nothing subscribes, a subject's subscriber count is unchanged. A
    member that cannot open it is listed with its error; 502 when none can. 409 beyond
    `Trace.MaxActive` member traces.
    """
    audit_target(request, data.member or "*", f"{data.by}={data.value}")
    if data.by == "subject":
        check_subject(data.value)
    chosen = members
    if data.member is not None:
        chosen = [m for m in members if m.name == data.member]
        if not chosen:
            raise not_found(f"no member {data.member!r}")
    trace = await _recorded(request).open(http, chosen, data.by, data.value, principal)
    return trace.view()


@router.get(
    "/member-traces/{trace_id}",
    name="trace.member_read",
    response_model=MemberTraceOut,
    responses=problem_responses(404),
)
async def read_member_trace(
    principal: Operator,
    trace_id: str,
    request: Request,
    http: HttpDep,
    after: Annotated[int, Query(ge=-1, le=2**62, description="Events after this index")] = -1,
    limit: Annotated[int, Query(ge=1, le=5000)] = 500,
) -> MemberTraceOut:
    """The trace's state and its events after `after` (oldest first); only its owner may."""
    hub = _recorded(request)
    trace = hub.get(trace_id, principal)
    await hub.refresh(http, trace)
    return trace.view(after, limit)


@router.get(
    "/member-traces/{trace_id}/events.jsonl",
    name="trace.member_download",
    response_class=Response,
    responses={
        200: {"content": {JSON_LINES: {}}, "description": "One event per line"},
        **problem_responses(404),
    },
)
async def download_member_trace(
    principal: Operator, trace_id: str, request: Request, http: HttpDep
) -> Response:
    """Every event the trace keeps (up to 10,000, oldest first) as JSON lines."""
    hub = _recorded(request)
    trace = hub.get(trace_id, principal)
    await hub.refresh(http, trace)
    return Response(
        jsonl(list(trace.events)),
        media_type=JSON_LINES,
        headers={"content-disposition": f'attachment; filename="trace-{trace.id}.jsonl"'},
    )


@router.delete(
    "/member-traces/{trace_id}",
    name="trace.member_close",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(404),
)
async def close_member_trace(
    principal: Operator, trace_id: str, request: Request, http: HttpDep
) -> Response:
    """Stop a trace (closed on every member); only its owner may."""
    audit_target(request, trace_id)
    await _recorded(request).stop(http, trace_id, principal)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
