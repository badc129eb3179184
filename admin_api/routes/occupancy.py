"""``/members/{name}/occupancy`` and ``/members/{name}/presence``: who follows a subject in the
whole cluster, as one member knows it (docs/occupancy.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import GuardedRoute, HttpDep, MemberDep, Operator, Viewer
from ..problems import MEMBER_ERRORS, problem_responses
from ..schemas import MAX_SUBJECT_LENGTH, OccupancyOut, PresenceOut
from ..services import occupancy as service
from ..services.entitlement import require_grant
from .subjects import EntitlementToken

router = APIRouter(prefix="/members/{name}", tags=["subjects"], route_class=GuardedRoute)

SubjectQuery = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_SUBJECT_LENGTH,
        description="The subject",
        examples=["/Chat/lobby"],
    ),
]


@router.get(
    "/occupancy",
    name="occupancy.get",
    response_model=OccupancyOut,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def get_occupancy(
    principal: Viewer,
    member: MemberDep,
    http: HttpDep,
    subject: SubjectQuery,
    entitlement_token: EntitlementToken = None,
) -> OccupancyOut:
    """A subject's subscribers in the whole cluster and per member, as the member knows them.

    An invalid subject is a 422 problem (`invalid_subject`). On a member with entitlement the
    caller's token (`X-Entitlement-Token`) must grant the subject, as for `/subjects`."""
    service.check_subject(subject)
    await require_grant(http, member, entitlement_token, subject)
    return await service.occupancy(http, member, subject)


@router.get(
    "/presence",
    name="presence.get",
    response_model=PresenceOut,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def get_presence(
    principal: Operator,
    member: MemberDep,
    http: HttpDep,
    subject: SubjectQuery,
    entitlement_token: EntitlementToken = None,
) -> PresenceOut:
    """The sessions, with their client ids, following a presence subject in the whole cluster.

    Operator role: client ids name people. `enabled` is false (and `clients` empty) for a subject
    that matches no `Occupancy.PresencePatterns`. Entitlement as for `/subjects`."""
    service.check_subject(subject)
    await require_grant(http, member, entitlement_token, subject)
    return await service.presence(http, member, subject)
