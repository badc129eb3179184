"""Hot subjects of the members (Jolokia ``pushgrid:type=HotSubjects``) and merged for the cluster.

The cluster ranking adds up, per subject, the members' estimates and error bounds (each member
over-estimates by at most its own bound, so the sum over-estimates by at most the sum of the
bounds) and their histories second by second, aligned on the newest. A member whose ranking is
full (it lists its top N) and does not list a subject may still have up to its smallest listed
value of it: that much is added to the subject's value *and* to its error, so the cluster value
keeps the members' meaning (an over-estimate by at most ``error``) instead of reading "exact"
while leaving a member out (40 subjects with 6 subscribers each read 2 to 6 "exact" on a
three-member ``make cluster`` before). A subject just below every member's top N is missed,
which the documentation says (docs/monitoring.md, "Hot subjects").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import httpx
import msgspec

from pushgrid.ops import names
from pushgrid.ops.attributes import decode
from pushgrid.ops.hot import HotSubjectsDocument

from ..member_client import MemberEndpoint, MemberFailure, each_member, fits_contract, read_document
from ..schemas_ops import ClusterHot, HotEntry, HotSubjects, MemberHot, RankingName

HOT_MBEAN: Final = names.HOT_SUBJECTS
RANKINGS: Final[tuple[RankingName, ...]] = (
    "messages_in",
    "messages_out",
    "bytes_out",
    "subscribers",
)


def parse_hot(member: MemberEndpoint, value: Any) -> MemberHot:
    """The MBean's ``Document`` attribute -> :class:`MemberHot` (MemberFailure naming what does
    not fit the contract's :class:`HotSubjectsDocument`)."""
    if not isinstance(value, Mapping):
        raise MemberFailure(member, "error", "unexpected HotSubjects answer")
    with fits_contract(member):
        document = decode(HotSubjectsDocument, value, HOT_MBEAN)
    return MemberHot(
        member=member.name,
        reachable=True,
        sample_time=datetime.fromtimestamp(document.ts, UTC) if document.ts else None,
        top_n=document.top_n,
        error_bounds=document.error_bounds,
        rankings={
            name: [HotEntry(**msgspec.structs.asdict(e)) for e in document.rankings.get(name, [])]
            for name in RANKINGS
        },
    )


async def member_hot(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberHot:
    """One member's rankings (raises :class:`MemberFailure`)."""
    return parse_hot(member, await read_document(http, member, HOT_MBEAN))


def _unreachable(member: MemberEndpoint, detail: str) -> MemberHot:
    return MemberHot(member=member.name, reachable=False, error=detail)


def _add_history(into: list[float], more: Sequence[float]) -> list[float]:
    """Element-wise sum aligned on the newest value (the lists end at the same second)."""
    longer, shorter = (into, list(more)) if len(into) >= len(more) else (list(more), into)
    offset = len(longer) - len(shorter)
    return [v + (shorter[i - offset] if i >= offset else 0.0) for i, v in enumerate(longer)]


def _unlisted_bound(member: MemberHot, name: RankingName) -> float:
    """The most a subject the member does not list can have on it: its smallest listed value
    when its ranking is full, 0 when the ranking lists every subject the member has."""
    entries = member.rankings.get(name, [])
    if not member.reachable or not member.top_n or len(entries) < member.top_n:
        return 0.0
    return min(entry.value for entry in entries)


def _merge_ranking(members: Sequence[MemberHot], name: RankingName) -> list[HotEntry]:
    merged: dict[str, HotEntry] = {}
    listed_by: dict[str, set[str]] = {}
    for member in members:
        for entry in member.rankings.get(name, []):
            listed_by.setdefault(entry.subject, set()).add(member.member)
            seen = merged.get(entry.subject)
            if seen is None:
                merged[entry.subject] = entry.model_copy()
                continue
            seen.value += entry.value
            seen.error += entry.error
            seen.history = _add_history(seen.history, entry.history)
    for member in members:
        bound = _unlisted_bound(member, name)
        if bound:
            for subject, entry in merged.items():
                if member.member not in listed_by[subject]:
                    entry.value += bound
                    entry.error += bound
    return sorted(merged.values(), key=lambda e: (-e.value, e.subject))


def merge(members: Sequence[MemberHot]) -> ClusterHot:
    """Sum the reachable members' rankings per subject; keep the largest top N."""
    top_n = max((m.top_n for m in members if m.reachable), default=0)
    rankings = {name: _merge_ranking(members, name)[:top_n] for name in RANKINGS}
    return ClusterHot(top_n=top_n, rankings=rankings)


async def hot_subjects(http: httpx.AsyncClient, members: Sequence[MemberEndpoint]) -> HotSubjects:
    results = await each_member(http, members, member_hot, _unreachable)
    return HotSubjects(at=datetime.now(UTC), cluster=merge(results), members=results)
