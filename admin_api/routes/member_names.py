"""``/member-names``: the names of the members the admin API manages, without reading them."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import GuardedRoute, MemberServiceDep, Viewer
from ..problems import problem_responses
from ..schemas import MemberNames

router = APIRouter(prefix="/member-names", tags=["members"], route_class=GuardedRoute)


@router.get("", name="members.names", response_model=MemberNames, responses=problem_responses())
def list_member_names(principal: Viewer, service: MemberServiceDep) -> MemberNames:
    """The configured, then registered members' names, from the directory alone.

    No member is asked anything (`GET /members` reads each one's Jolokia agent): what a picker
    of members needs on every refresh. Members found only through the cluster's views are
    listed by `GET /members`.
    """
    return MemberNames(items=[member.name for member in service.all()])
