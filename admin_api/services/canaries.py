"""The canary matrix (issue 33 item 3, ADR 049): every member's MBean ``pushgrid:type=Canary``
(the canaries it receives) joined into one member-by-member matrix, with the admin API's own
probes (admin_api/canary_probe.py) beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx

from pushgrid.metrics.canary import CANARY_INTERVAL, STALE_AFTER, pair_name
from pushgrid.ops import names
from pushgrid.ops.canary import CanaryDocument

from ..access import read_view
from ..member_client import MemberEndpoint, MemberFailure
from ..schemas_canary import CanaryMatrixOut, CanaryPairOut, CanaryProbeOut, CanaryReceiverOut

Read = tuple[MemberEndpoint, CanaryDocument | None, str | None]


async def _read(http: httpx.AsyncClient, member: MemberEndpoint) -> Read:
    try:
        return member, await read_view(http, member, names.CANARY, CanaryDocument), None
    except MemberFailure as exc:
        return member, None, exc.detail


def receiver_out(
    member: MemberEndpoint, document: CanaryDocument | None, error: str | None
) -> CanaryReceiverOut:
    if document is None:
        return CanaryReceiverOut(member=member.name, reachable=False, error=error)
    return CanaryReceiverOut(
        member=member.name,
        reachable=True,
        enabled=document.enabled,
        published=document.published,
        publish_failures=document.publish_failures,
        stale_pairs=document.stale_pairs,
    )


def join(reads: Sequence[Read], probes: Sequence[CanaryProbeOut] = ()) -> CanaryMatrixOut:
    """The matrix from each member's own row (pure). A member is a row and a column whether it
    could be read or not; the pairs are those of the receivers that could be read."""
    pairs: list[CanaryPairOut] = []
    members = {member.name for member, _, _ in reads}
    for _, document, _ in reads:
        if document is None:
            continue
        for entry in document.pairs:
            members.update((entry.publisher, entry.receiver))
            pairs.append(
                CanaryPairOut(
                    publisher=entry.publisher,
                    receiver=entry.receiver,
                    age_seconds=entry.age_seconds,
                    latency_seconds=entry.latency_seconds,
                    received=entry.received,
                    stale=entry.stale,
                )
            )
    pairs.sort(key=lambda p: (p.receiver, p.publisher))
    return CanaryMatrixOut(
        interval=CANARY_INTERVAL,
        stale_after=STALE_AFTER,
        members=sorted(members),
        receivers=[receiver_out(*read) for read in reads],
        pairs=pairs,
        stalled=[pair_name(p.publisher, p.receiver) for p in pairs if p.stale],
        probes=sorted(probes, key=lambda p: p.member),
    )


async def canary_matrix(
    http: httpx.AsyncClient,
    members: Sequence[MemberEndpoint],
    probes: Sequence[CanaryProbeOut] = (),
) -> CanaryMatrixOut:
    reads = await asyncio.gather(*(_read(http, member) for member in members))
    return join(reads, probes)
