"""Watched subjects of the members (Jolokia ``pushgrid:type=WatchedSubjects``), summed for the
cluster, and run-time changes (the MBean's ``watch``/``unwatch`` operations on every member).

A change is applied member by member: a member that cannot be reached is reported, not retried,
and keeps its patterns (a restart starts from WatchedSubjects.Patterns; docs/admin-api.md).
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import httpx
import msgspec

from pushgrid.ops import names
from pushgrid.ops.attributes import decode
from pushgrid.ops.watched import WatchedSubjectsDocument
from pushgrid.protocol.subjects import pattern_error

from ..member_client import (
    MemberClient,
    MemberEndpoint,
    MemberFailure,
    each_member,
    fits_contract,
    read_document,
)
from ..problems import ProblemError
from ..schemas_ops import (
    ClusterWatchedPattern,
    MemberWatched,
    MemberWatchResult,
    WatchChange,
    WatchedIndicator,
    WatchedPattern,
    WatchedSubjects,
    WatchOutcome,
)

WATCHED_MBEAN: Final = names.WATCHED_SUBJECTS
#: a member's refusal -> what the change reports for it
_REFUSALS: Final[dict[str, WatchOutcome]] = {
    "duplicate": "already_watched",
    "unknown": "not_watched",
}


def parse_watched(member: MemberEndpoint, value: Any) -> MemberWatched:
    """The MBean's ``Document`` -> :class:`MemberWatched` (MemberFailure naming what does not
    fit the contract's :class:`WatchedSubjectsDocument`)."""
    if not isinstance(value, Mapping):
        raise MemberFailure(member, "error", "unexpected WatchedSubjects answer")
    with fits_contract(member):
        document = decode(WatchedSubjectsDocument, value, WATCHED_MBEAN)
    patterns = [
        WatchedPattern(
            pattern=p.pattern,
            source=p.source,
            sample_time=p.ts,
            windows_time=p.windows_ts,
            totals=p.totals,
            subscribers=p.subscribers,
            subjects=p.subjects,
            indicators={
                name: WatchedIndicator.model_validate(msgspec.to_builtins(indicator))
                for name, indicator in p.indicators.items()
            },
        )
        for p in document.patterns
    ]
    return MemberWatched(
        member=member.name, reachable=True, max_patterns=document.max_patterns, patterns=patterns
    )


async def member_watched(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberWatched:
    """One member's watched patterns (raises :class:`MemberFailure`)."""
    return parse_watched(member, await read_document(http, member, WATCHED_MBEAN))


def _unreachable(member: MemberEndpoint, detail: str) -> MemberWatched:
    return MemberWatched(member=member.name, reachable=False, error=detail)


# A subject is active on every member that has a subscriber of it or passes it a message: the
# members' counts overlap, so their sum counts a subject once per member (3 x 40 = 120 in a
# three-member walk-through with 40 subjects). The largest member's count is the cluster's.
SHARED_GAUGES = frozenset({"subjects"})


def merge(members: Sequence[MemberWatched]) -> list[ClusterWatchedPattern]:
    """Per pattern (in first-seen order): totals, subscribers and current values summed, but
    the active subjects are the largest member's count (``SHARED_GAUGES``)."""
    merged: dict[str, ClusterWatchedPattern] = {}
    for member in members:
        for p in member.patterns:
            seen = merged.get(p.pattern)
            if seen is None:
                seen = merged[p.pattern] = ClusterWatchedPattern(
                    pattern=p.pattern, members=0, totals={}, subscribers=0, current={}
                )
            seen.members += 1
            seen.subscribers += p.subscribers
            for name, value in p.totals.items():
                seen.totals[name] = seen.totals.get(name, 0) + value
            for name, indicator in p.indicators.items():
                combine = max if name in SHARED_GAUGES else operator.add
                seen.current[name] = combine(seen.current.get(name, 0.0), indicator.current)
    return list(merged.values())


async def watched_subjects(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint]
) -> WatchedSubjects:
    results = await each_member(http, members, member_watched, _unreachable)
    return WatchedSubjects(at=datetime.now(UTC), cluster=merge(results), members=results)


def check_pattern(pattern: str) -> None:
    """422 ``invalid_pattern`` before any member is asked."""
    reason = pattern_error(pattern)
    if reason is not None:
        raise ProblemError(422, f"invalid pattern {pattern!r}: {reason}", "invalid_pattern")


async def _change(
    http: httpx.AsyncClient,
    member: MemberEndpoint,
    operation: str,
    pattern: str,
    done: WatchOutcome,
) -> MemberWatchResult:
    try:
        answer = await MemberClient(http, member).execute(WATCHED_MBEAN, operation, pattern)
    except MemberFailure as exc:
        return MemberWatchResult(member=member.name, outcome="failed", detail=exc.detail)
    if not isinstance(answer, Mapping):
        return MemberWatchResult(member=member.name, outcome="failed", detail=str(answer))
    kind = answer.get("error")
    if kind is None:
        return MemberWatchResult(member=member.name, outcome=done)
    outcome = _REFUSALS.get(str(kind), "refused")
    return MemberWatchResult(member=member.name, outcome=outcome, detail=answer.get("detail"))


async def change(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint], pattern: str, add: bool
) -> WatchChange:
    """Watch (``add``) or unwatch ``pattern`` on every member.

    409 ``watch_cap`` when a member refused it (WatchedSubjects.MaxPatterns); 404 ``not_watched``
    when no member watched it; otherwise the per-member outcomes (``failed`` for a member that
    could not be reached: the change is not all-or-nothing, repeating it is harmless).
    """
    check_pattern(pattern)
    done: WatchOutcome = "watched" if add else "removed"
    operation = "watch" if add else "unwatch"
    results = await asyncio.gather(*(_change(http, m, operation, pattern, done) for m in members))
    answer = WatchChange(pattern=pattern, members=list(results))
    refused = [r for r in results if r.outcome == "refused"]
    if refused:
        details = "; ".join(f"{r.member}: {r.detail}" for r in refused)
        raise ProblemError(409, details, "watch_cap", extensions=answer.model_dump(mode="json"))
    if not add and results and all(r.outcome == "not_watched" for r in results):
        raise ProblemError(404, f"no member watches {pattern!r}", "not_watched")
    return answer
