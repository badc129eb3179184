"""``/delivery``: end-to-end delivery latency and the loss the clients report (ADR 048)."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import GuardedRoute, HttpDep, MemberDep, MembersDep, Viewer
from ..problems import MEMBER_ERRORS, problem_responses
from ..schemas_delivery import DeliveryLatency, MemberDelivery
from ..services.delivery import delivery_latency, read_member

router = APIRouter(tags=["delivery"], route_class=GuardedRoute)


@router.get(
    "/delivery/latency",
    name="delivery.latency",
    response_model=DeliveryLatency,
    responses=problem_responses(),
)
async def get_delivery_latency(
    principal: Viewer, members: MembersDep, http: HttpDep
) -> DeliveryLatency:
    """Delivery latency and client-observed loss, per member and for the cluster.

    The latency is the clients' own measurement of each live update (the publisher's arrival
    at its ingress member to the subscriber's receipt, corrected by the client's clock offset),
    over the members' last `window_seconds`: count, p50/p90/p99/p99.9 (seconds, the upper
    bound of the bucket holding the percentile) and the buckets themselves; the cluster adds
    the reachable members' buckets. Per member also the server's own legs (`publish_ack`,
    `engine`, `fanout`), the loss counters the clients report (`gaps`, `duplicates`,
    `resyncs`, `recovered`, `recovery_failed`) and per watched pattern the same. A member that
    cannot be read is listed with `reachable: false`.
    """
    return await delivery_latency(http, members)


@router.get(
    "/members/{name}/delivery/latency",
    name="delivery.member",
    response_model=MemberDelivery,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def get_member_delivery(
    principal: Viewer, member: MemberDep, http: HttpDep
) -> MemberDelivery:
    """One member's delivery latency, legs and client-observed loss."""
    return await read_member(http, member)
