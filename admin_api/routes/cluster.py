"""``/cluster``: the cluster the members form, merged from their own views."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import GuardedRoute, HttpDep, MembersDep, Viewer
from ..problems import problem_responses
from ..schemas import ClusterOut, OverviewOut
from ..services.cluster import cluster_overview
from ..services.overview import overview

router = APIRouter(prefix="/cluster", tags=["cluster"], route_class=GuardedRoute)


@router.get("", name="cluster.get", response_model=ClusterOut, responses=problem_responses())
async def get_cluster(principal: Viewer, members: MembersDep, http: HttpDep) -> ClusterOut:
    """Mode, health, quorum, the stream leader and every member's state.

    Each member reports what it sees (MBean `pushgrid:type=Cluster`); members that cannot be
    read are left out of the merge, so the answer stays useful while members die. `health` is
    `unreachable` when no member could be read.
    """
    return await cluster_overview(http, members)


@router.get(
    "/overview", name="cluster.overview", response_model=OverviewOut, responses=problem_responses()
)
async def get_overview(principal: Viewer, members: MembersDep, http: HttpDep) -> OverviewOut:
    """The members, their live indicators and the cluster, read together (the console's Overview).

    One round of reads on one member list: a member listed `reachable: false` is down in
    `cluster.health` too, so one answer never shows a member down beside a cluster `ok`. A member
    that hangs is `not answering for N s` everywhere and is not waited for.
    """
    return await overview(http, members)
