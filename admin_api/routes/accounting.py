"""``/delivery/accounting``: what became of every delivery the subscribers were due (ADR 054)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import GuardedRoute, HttpDep, MemberDep, MembersDep, Viewer
from ..problems import MEMBER_ERRORS, problem_responses
from ..schemas_accounting import AccountingOut, SlowConsumerOffendersOut
from ..services.accounting import accounting, member_accounting, offender_page

router = APIRouter(tags=["delivery"], route_class=GuardedRoute)


@router.get(
    "/delivery/accounting",
    name="delivery.accounting",
    response_model=AccountingOut,
    responses=problem_responses(),
)
async def get_accounting(principal: Viewer, members: MembersDep, http: HttpDep) -> AccountingOut:
    """Delivery accounting of the cluster: published, due and each outcome, per row.

    Rows: the totals, the subjects with the most deliveries due (each member lists its own
    `Accounting.TopSubjects`; a subject's row adds the members that list it, named in
    `members`) and every watched pattern. Columns (counts since start and over the last
    second): `published` (accepted on the member), `due` (a subscriber's share of a message
    when it arrived), `written` (handed to the socket), `conflated` (replaced by a later
    message of a conflation period), `deltas` (written as field deltas), `dropped` (slow
    consumer), `closed` (connection or subscription ended first), `covered` (the opening
    snapshot or recovery held it), `refused` (publishes refused by entitlement). On a settled
    system `due` equals the sum of the `outcomes`; `unaccounted` is the difference. A member
    that cannot be read is listed with `reachable: false`.
    """
    return await accounting(http, members)


@router.get(
    "/members/{name}/delivery/accounting",
    name="delivery.member_accounting",
    response_model=AccountingOut,
    responses=problem_responses(*MEMBER_ERRORS),
)
async def get_member_accounting(
    principal: Viewer, member: MemberDep, http: HttpDep
) -> AccountingOut:
    """One member's delivery accounting (its own top subjects and watched patterns)."""
    return await member_accounting(http, member)


@router.get(
    "/slow-consumers/offenders",
    name="sessions.slow_consumer_offenders",
    response_model=SlowConsumerOffendersOut,
    responses=problem_responses(),
)
async def get_slow_consumer_offenders(
    principal: Viewer,
    members: MembersDep,
    http: HttpDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> SlowConsumerOffendersOut:
    """Repeat offenders: the members' slow-consumer closes grouped by client, most first.

    A client is its client id, else its host (the address without the port). Per client: its
    closes across the cluster (each member keeps its last 200), the members that closed it,
    first and last close, its last address, the subjects it followed, the most bytes queued
    for it, whether its last connection was compressed and the round trip its client last
    reported. Members that cannot be read are listed in `unreachable`.
    """
    return await offender_page(http, members, limit)
