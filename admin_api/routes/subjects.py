"""``/members/{name}/subjects`` and ``/members/{name}/publish``: subjects of one member."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request

from ..deps import GuardedRoute, HttpDep, MemberDep, Operator, Viewer, audit_target
from ..problems import MEMBER_ERRORS, problem_responses
from ..schemas import MAX_SUBJECT_LENGTH, PublishIn, PublishOut, SubjectInfo
from ..services import subjects
from ..services.entitlement import TOKEN_HEADER, require_grant

EntitlementToken = Annotated[
    str | None,
    Header(
        alias=TOKEN_HEADER,
        max_length=8192,
        description="For members with entitlement: the caller's entitlement token (a JWT or a "
        "plug-in's token); the member decides what it grants. Not stored",
    ),
]

router = APIRouter(prefix="/members/{name}", tags=["subjects"], route_class=GuardedRoute)


@router.get(
    "/subjects",
    name="subjects.get",
    response_model=SubjectInfo,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def get_subject(
    principal: Viewer,
    member: MemberDep,
    http: HttpDep,
    subject: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_SUBJECT_LENGTH,
            description="The subject",
            examples=["/Stocks/NYSE/IBM"],
        ),
    ],
    entitlement_token: EntitlementToken = None,
) -> SubjectInfo:
    """A subject on one member: its snapshot (content and fields; null if none) and its local
    subscriber count. An invalid subject is a 422 problem (`invalid_subject`).

    On a member with entitlement, the caller's entitlement token (`X-Entitlement-Token`) must
    grant the subject (the member's client port is asked): 403 `entitlement_required` without
    one, 403 `entitlement_denied` when it does not."""
    subjects.check_subject(subject)
    await require_grant(http, member, entitlement_token, subject)
    return await subjects.subject_info(http, member, subject)


@router.post(
    "/publish",
    name="subjects.publish",
    response_model=PublishOut,
    responses=problem_responses(*MEMBER_ERRORS, 413, 503),
)
async def publish(
    principal: Operator, member: MemberDep, data: PublishIn, request: Request, http: HttpDep
) -> PublishOut:
    """Publish a test message through the member's client port (`POST /publish`).

    The client port is the member's `client_url` (registration) or is derived from its Listen
    setting. The member's refusals: 400 -> 422 `invalid_message`, 413 -> 413, 503 -> 503, 403
    (entitlement, PublishAllow) and others -> 502 `member_error`.
    """
    audit_target(request, member.name, f"subject={data.subject}")
    return await subjects.publish(http, member, data)
