"""``/subjects``: the subject browser (list and search every member's subjects, a subject's
cached history, remove a retained snapshot, end one session's subscription; ADR 051)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, status

from ..deps import GuardedRoute, HttpDep, MemberDep, MembersDep, Operator, Viewer, audit_target
from ..member_client import MemberFailure
from ..problems import MEMBER_ERRORS, ProblemError, problem_responses
from ..schemas import MAX_SUBJECT_LENGTH, MemberError
from ..schemas_subjects import (
    MAX_HISTORY,
    MAX_SUBJECT_PAGE,
    MemberRemoval,
    SnapshotRemoved,
    SubjectHistory,
    SubjectPage,
    SubjectSort,
)
from ..services import subject_browser
from ..services.entitlement import require_grant
from ..services.subject_browser import SubjectQuery
from ..services.subjects import check_subject
from .subjects import EntitlementToken

router = APIRouter(tags=["subjects"], route_class=GuardedRoute)

SubjectParam = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_SUBJECT_LENGTH,
        description="The subject",
        examples=["/Stocks/NYSE/IBM"],
    ),
]


def subject_query(
    pattern: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_SUBJECT_LENGTH,
            description="A pattern of the entitlement rules' syntax: `*` is any one segment, a "
            "last `*` any deeper path too (`/Stocks/*`); `*` alone is every subject",
        ),
    ] = "*",
    sort: Annotated[SubjectSort, Query(description="Order ('-' for descending)")] = "subject",
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_SUBJECT_PAGE)] = 100,
) -> SubjectQuery:
    return SubjectQuery(pattern=pattern, sort=sort, offset=offset, limit=limit)


@router.get(
    "/subjects",
    name="subjects.list",
    response_model=SubjectPage,
    responses=problem_responses(),
)
async def list_subjects(
    principal: Viewer,
    members: MembersDep,
    query: Annotated[SubjectQuery, Depends(subject_query)],
    http: HttpDep,
) -> SubjectPage:
    """Subjects of every member matching a pattern, with subscribers, snapshot size and last
    publish, sorted and paged.

    A bad pattern is a 422 `invalid_pattern` naming the `pattern` parameter. Members that
    cannot be read are listed in `unreachable` (the answer is still 200). Each member lists at
    most 10,000 matching subjects (`truncated`)."""
    return await subject_browser.subject_page(http, members, query)


@router.get(
    "/members/{name}/subjects/history",
    name="subjects.history",
    response_model=SubjectHistory,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def subject_history(
    principal: Viewer,
    member: MemberDep,
    http: HttpDep,
    subject: SubjectParam,
    limit: Annotated[int, Query(ge=1, le=MAX_HISTORY)] = 20,
    entitlement_token: EntitlementToken = None,
) -> SubjectHistory:
    """The last `limit` cached messages of a subject on one member (epoch, seq, time,
    content), oldest first.

    On a member with entitlement the caller's `X-Entitlement-Token` must grant the subject
    (403 `entitlement_required` / `entitlement_denied`)."""
    check_subject(subject)
    await require_grant(http, member, entitlement_token, subject)
    return await subject_browser.history(http, member, subject, limit)


@router.delete(
    "/subjects/snapshot",
    name="subjects.remove_snapshot",
    response_model=SnapshotRemoved,
    responses=problem_responses(*MEMBER_ERRORS, 409, 503),
)
async def remove_snapshot(
    principal: Operator,
    members: MembersDep,
    request: Request,
    http: HttpDep,
    subject: SubjectParam,
    entitlement_token: EntitlementToken = None,
) -> SnapshotRemoved:
    """Remove a subject's retained snapshot on every member, through each member's engine.

    A cluster's engine applies the removal on all its members (so asking each member again
    changes nothing: a removal is idempotent), and standalone members each get it. Epoch and
    seq do not change: new subscribers get no snapshot, live subscribers are sent nothing,
    recovery is unaffected (docs/protocol.md). 409 `snapshot_removal_unsupported` on a
    Guaranteed (JetStream) cluster, 503 `engine_unavailable` when a member is cut off from its
    cluster; entitlement as for the history. Members that cannot be reached are listed in
    `unreachable` (502 when none answers)."""
    check_subject(subject)
    audit_target(request, subject)
    if not members:
        raise ProblemError(409, "no member is registered", "no_members")
    done: list[MemberRemoval] = []
    unreachable: list[MemberError] = []
    failure: MemberFailure | None = None
    for member in members:
        try:
            await require_grant(http, member, entitlement_token, subject)
            done.append(await subject_browser.remove_snapshot(http, member, subject))
        except MemberFailure as exc:
            if exc.kind not in ("unreachable", "timeout"):
                raise
            failure = exc
            unreachable.append(MemberError(member=member.name, error=exc.detail))
    if not done and failure is not None:
        raise failure
    removed = any(d.removed for d in done)
    return SnapshotRemoved(subject=subject, removed=removed, members=done, unreachable=unreachable)


@router.delete(
    "/members/{name}/sessions/{session_id}/subjects",
    name="subjects.unsubscribe",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def unsubscribe_session(
    principal: Operator,
    member: MemberDep,
    session_id: str,
    request: Request,
    http: HttpDep,
    subject: SubjectParam,
    entitlement_token: EntitlementToken = None,
) -> Response:
    """End one session's subscription to a subject: the client gets `unsubscribed` (no id)
    and nothing more of it; its other subscriptions and the connection stay.

    404 when the session is not subscribed to the subject on that member; entitlement as for
    the history."""
    check_subject(subject)
    audit_target(request, f"{member.name}/{session_id}", f"subject={subject}")
    await require_grant(http, member, entitlement_token, subject)
    await subject_browser.unsubscribe(http, member, session_id, subject)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
