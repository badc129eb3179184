"""``/delivery/canaries``: which member's canaries reach which member, and how late (ADR 049)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..canary_probe import CanaryProbes
from ..deps import GuardedRoute, HttpDep, MembersDep, Viewer
from ..problems import problem_responses
from ..schemas_canary import CanaryMatrixOut
from ..services.canaries import canary_matrix

router = APIRouter(prefix="/delivery", tags=["delivery"], route_class=GuardedRoute)


@router.get(
    "/canaries",
    name="delivery.canaries",
    response_model=CanaryMatrixOut,
    responses=problem_responses(),
)
async def get_canaries(
    principal: Viewer, members: MembersDep, http: HttpDep, request: Request
) -> CanaryMatrixOut:
    """The canary matrix: per pair publisher -> receiver, the age of the last canary and its
    latency, and whether it is stale.

    Every member publishes a canary once a second and follows everyone's through its delivery
    path (MBean `pushgrid:type=Canary` per receiver). A receiver that cannot be read is listed
    with `reachable: false` and has no pairs. `probes`: the admin API's own subscriber on each
    member's client port and the canaries it receives.
    """
    probes: CanaryProbes | None = getattr(request.app.state, "canary_probes", None)
    return await canary_matrix(http, members, [] if probes is None else probes.views())
