"""``/stats/live``: the seven indicators read live from the members."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import GuardedRoute, HttpDep, MemberDep, MembersDep, Viewer
from ..problems import MEMBER_ERRORS, problem_responses
from ..schemas import LiveStats, MemberLive
from ..services.live import live_stats, member_live

router = APIRouter(prefix="/stats/live", tags=["live statistics"], route_class=GuardedRoute)


@router.get("", name="live.cluster", response_model=LiveStats, responses=problem_responses())
async def get_live(principal: Viewer, members: MembersDep, http: HttpDep) -> LiveStats:
    """Every member's indicators (current value and live windows) and the cluster's sums.

    The cluster part sums the current values of the reachable members; cluster windows come
    from the pipeline (`/api/v1/stats/windows?scope=cluster`). A member that cannot be read is
    listed with `reachable: false` and its error.
    """
    return await live_stats(http, members)


@router.get(
    "/{name}",
    name="live.member",
    response_model=MemberLive,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def get_member_live(principal: Viewer, member: MemberDep, http: HttpDep) -> MemberLive:
    """One member's indicators: current value and the live windows 1m ... 15mo."""
    return await member_live(http, member)
