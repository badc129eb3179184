"""Delivery latency and loss of the members (Jolokia ``pushgrid:type=Delivery``), merged for the
cluster by adding the members' histogram buckets (the same fixed buckets everywhere:
pushgrid/protocol/latency.py), so the cluster's percentiles are exact to the bucket."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import httpx

from pushgrid.ops import names
from pushgrid.ops.delivery import LEGS, DeliveryDocument, percentiles, text_counts, text_loss
from pushgrid.protocol.latency import BUCKET_COUNT, LOSS_KINDS

from ..access import read_view
from ..member_client import MemberEndpoint, MemberFailure, each_member
from ..schemas_delivery import (
    ClusterDelivery,
    DeliveryLatency,
    LatencySummary,
    MemberDelivery,
    PatternDelivery,
)


def summary(counts: Sequence[int]) -> LatencySummary:
    return LatencySummary(
        count=sum(counts),
        **percentiles(list(counts)),
        buckets={i: n for i, n in enumerate(counts) if n},
    )


def _counts(member: MemberEndpoint, text: str) -> list[int]:
    try:
        return text_counts(text)
    except ValueError as exc:
        raise MemberFailure(member, "error", f"unexpected Delivery answer: {exc}") from None


def _loss(member: MemberEndpoint, text: str) -> dict[str, int]:
    try:
        return text_loss(text)
    except ValueError as exc:
        raise MemberFailure(member, "error", f"unexpected Delivery answer: {exc}") from None


def member_delivery(member: MemberEndpoint, document: DeliveryDocument) -> MemberDelivery:
    patterns = [
        PatternDelivery(
            pattern=pattern,
            latency=summary(_counts(member, text)),
            loss=_loss(member, document.pattern_loss.get(pattern, "")),
        )
        for pattern, text in document.pattern_buckets.items()
    ]
    return MemberDelivery(
        member=member.name,
        reachable=True,
        window_seconds=document.window,
        latency=summary(_counts(member, document.latency_buckets)),
        loss=dict(document.loss),
        loss_total=dict(document.loss_total),
        reports=document.reports,
        rejected_reports=document.rejected_reports,
        legs={leg: summary(_counts(member, t)) for leg, t in document.leg_buckets.items()},
        patterns=patterns,
    )


async def read_member(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberDelivery:
    """One member's delivery numbers (raises :class:`MemberFailure`)."""
    document = await read_view(http, member, names.DELIVERY, DeliveryDocument)
    return member_delivery(member, document)


def _unreachable(member: MemberEndpoint, detail: str) -> MemberDelivery:
    return MemberDelivery(member=member.name, reachable=False, error=detail)


def _add(total: list[int], summary_: LatencySummary | None) -> None:
    if summary_ is not None:
        for index, n in summary_.buckets.items():
            total[index] += n


def _add_loss(total: dict[str, int], loss: Mapping[str, int]) -> None:
    for kind in LOSS_KINDS:
        total[kind] = total.get(kind, 0) + loss.get(kind, 0)


def merge(members: Sequence[MemberDelivery]) -> ClusterDelivery:
    """The reachable members' buckets and counters added."""
    reachable = [m for m in members if m.reachable]
    latency = [0] * BUCKET_COUNT
    legs = {leg: [0] * BUCKET_COUNT for leg in LEGS}
    loss: dict[str, int] = dict.fromkeys(LOSS_KINDS, 0)
    loss_total: dict[str, int] = dict.fromkeys(LOSS_KINDS, 0)
    patterns: dict[str, tuple[list[int], dict[str, int]]] = {}
    for member in reachable:
        _add(latency, member.latency)
        for leg, leg_summary in member.legs.items():
            _add(legs.setdefault(leg, [0] * BUCKET_COUNT), leg_summary)
        _add_loss(loss, member.loss)
        _add_loss(loss_total, member.loss_total)
        for p in member.patterns:
            counts, pattern_loss = patterns.setdefault(p.pattern, ([0] * BUCKET_COUNT, {}))
            _add(counts, p.latency)
            _add_loss(pattern_loss, p.loss)
    return ClusterDelivery(
        members=len(reachable),
        latency=summary(latency),
        loss=loss,
        loss_total=loss_total,
        legs={leg: summary(counts) for leg, counts in legs.items()},
        patterns=[
            PatternDelivery(pattern=name, latency=summary(counts), loss=pattern_loss)
            for name, (counts, pattern_loss) in patterns.items()
        ],
    )


async def delivery_latency(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint]
) -> DeliveryLatency:
    results = await each_member(http, members, read_member, _unreachable)
    return DeliveryLatency(at=datetime.now(UTC), cluster=merge(results), members=results)
