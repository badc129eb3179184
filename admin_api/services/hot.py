"""Hot subjects of the members (Jolokia ``pushgrid:type=HotSubjects``) and merged for the cluster.

The cluster ranking adds up, per subject, the members' estimates and error bounds (each member
over-estimates by at most its own bound, so the sum over-estimates by at most the sum of the
bounds) and their histories second by second, aligned on the newest. A subject that is hot on
one member only is still ranked; a subject just below every member's top N is missed, which the
documentation says (docs/monitoring.md, "Hot subjects").
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import httpx
from pydantic import ValidationError

from ..member_client import Member, MemberClient, MemberFailure
from ..schemas_ops import ClusterHot, HotEntry, HotSubjects, MemberHot, RankingName

HOT_MBEAN: Final = "pushgrid:type=HotSubjects"
RANKINGS: Final[tuple[RankingName, ...]] = (
    "messages_in",
    "messages_out",
    "bytes_out",
    "subscribers",
)


def parse_hot(member: Member, value: Any) -> MemberHot:
    """The MBean's ``Document`` attribute -> :class:`MemberHot` (MemberFailure if malformed)."""
    if not isinstance(value, Mapping) or not isinstance(value.get("rankings"), Mapping):
        raise MemberFailure(member, "error", "unexpected HotSubjects answer")
    ts = value.get("ts")
    try:
        return MemberHot(
            member=member.name,
            reachable=True,
            sample_time=datetime.fromtimestamp(ts, UTC) if isinstance(ts, int) and ts else None,
            top_n=int(value.get("top_n", 0)),
            error_bounds=dict(value.get("error_bounds") or {}),
            rankings={name: list(value["rankings"].get(name, [])) for name in RANKINGS},
        )
    except (TypeError, ValueError, ValidationError) as exc:
        raise MemberFailure(member, "error", f"unexpected HotSubjects answer: {exc}") from None


async def member_hot(http: httpx.AsyncClient, member: Member) -> MemberHot:
    """One member's rankings (raises :class:`MemberFailure`)."""
    value = await MemberClient(http, member).request(
        {"type": "read", "mbean": HOT_MBEAN, "attribute": "Document"}
    )
    return parse_hot(member, value)


async def _member_or_error(http: httpx.AsyncClient, member: Member) -> MemberHot:
    try:
        return await member_hot(http, member)
    except MemberFailure as exc:
        return MemberHot(member=member.name, reachable=False, error=exc.detail)


def _add_history(into: list[float], more: Sequence[float]) -> list[float]:
    """Element-wise sum aligned on the newest value (the lists end at the same second)."""
    longer, shorter = (into, list(more)) if len(into) >= len(more) else (list(more), into)
    offset = len(longer) - len(shorter)
    return [v + (shorter[i - offset] if i >= offset else 0.0) for i, v in enumerate(longer)]


def merge(members: Sequence[MemberHot]) -> ClusterHot:
    """Sum the reachable members' rankings per subject; keep the largest top N."""
    top_n = max((m.top_n for m in members if m.reachable), default=0)
    rankings: dict[RankingName, list[HotEntry]] = {}
    for name in RANKINGS:
        merged: dict[str, HotEntry] = {}
        for member in members:
            for entry in member.rankings.get(name, []):
                seen = merged.get(entry.subject)
                if seen is None:
                    merged[entry.subject] = entry.model_copy()
                    continue
                seen.value += entry.value
                seen.error += entry.error
                seen.history = _add_history(seen.history, entry.history)
        ordered = sorted(merged.values(), key=lambda e: (-e.value, e.subject))
        rankings[name] = ordered[:top_n]
    return ClusterHot(top_n=top_n, rankings=rankings)


async def hot_subjects(http: httpx.AsyncClient, members: Sequence[Member]) -> HotSubjects:
    results = list(await asyncio.gather(*(_member_or_error(http, m) for m in members)))
    return HotSubjects(at=datetime.now(UTC), cluster=merge(results), members=results)
