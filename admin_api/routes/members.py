"""``/members``: the servers the admin API manages."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from ..deps import (
    Admin,
    GuardedRoute,
    HttpDep,
    MemberDep,
    MemberNamePath,
    MembersDep,
    MemberServiceDep,
    Viewer,
    audit_target,
)
from ..problems import problem_responses
from ..schemas import MemberCreate, MemberList, MemberOut
from ..services.members import describe, describe_all

router = APIRouter(prefix="/members", tags=["members"], route_class=GuardedRoute)


@router.get("", name="members.list", response_model=MemberList, responses=problem_responses())
async def list_members(principal: Viewer, members: MembersDep, http: HttpDep) -> MemberList:
    """Every member (configured, then registered) with what its Jolokia agent says.

    A member that cannot be read is listed with `reachable: false` and the reason in `error`;
    the list is still 200.
    """
    return await describe_all(http, members)


@router.post(
    "",
    name="members.register",
    status_code=status.HTTP_201_CREATED,
    response_model=MemberOut,
    responses={
        **problem_responses(409),
        201: {"headers": {"Location": {"description": "The member", "schema": {"type": "string"}}}},
    },
)
async def register_member(
    principal: Admin,
    data: MemberCreate,
    request: Request,
    response: Response,
    members: MemberServiceDep,
    http: HttpDep,
) -> MemberOut:
    """Register a member at run time (its credentials are kept server-side, never returned).

    The member need not be up: the answer says whether it is reachable.
    """
    audit_target(request, data.name, f"monitor_url={data.monitor_url}")
    member = members.register(data, principal.name)
    response.headers["Location"] = f"{request.url.path.rstrip('/')}/{member.name}"
    return await describe(http, member)


@router.get(
    "/{name}", name="members.get", response_model=MemberOut, responses=problem_responses(404)
)
async def get_member(principal: Viewer, member: MemberDep, http: HttpDep) -> MemberOut:
    """One member and its state (`reachable: false` with the reason when it cannot be read)."""
    return await describe(http, member)


@router.delete(
    "/{name}",
    name="members.remove",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(404, 409),
)
def remove_member(
    principal: Admin,
    name: MemberNamePath,
    request: Request,
    members: MemberServiceDep,
) -> Response:
    """Forget a registered member (configured members are read-only: 409)."""
    audit_target(request, name)
    members.remove(name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
