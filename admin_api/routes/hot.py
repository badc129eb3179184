"""``/hot-subjects`` and ``/members/{name}/hot-subjects``: the members' hottest subjects."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import GuardedRoute, HttpDep, MemberDep, MembersDep, Viewer
from ..problems import MEMBER_ERRORS, problem_responses
from ..schemas_ops import HotSubjects, MemberHot
from ..services.hot import hot_subjects, member_hot

router = APIRouter(tags=["hot subjects"], route_class=GuardedRoute)


@router.get(
    "/hot-subjects", name="hot.cluster", response_model=HotSubjects, responses=problem_responses()
)
async def get_hot(principal: Viewer, members: MembersDep, http: HttpDep) -> HotSubjects:
    """The top subjects of every member and of the cluster (summed per subject).

    Rankings: incoming messages/s, outgoing messages/s, outgoing bytes/s (estimates of a
    space-saving sketch with their error bounds) and subscribers (exact). A member that cannot
    be read is listed with `reachable: false`.
    """
    return await hot_subjects(http, members)


@router.get(
    "/members/{name}/hot-subjects",
    name="hot.member",
    response_model=MemberHot,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def get_member_hot(principal: Viewer, member: MemberDep, http: HttpDep) -> MemberHot:
    """One member's top subjects."""
    return await member_hot(http, member)
