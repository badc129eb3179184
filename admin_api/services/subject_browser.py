"""The subject browser (issue 35 item 3, ADR 051): subjects of every member matching a pattern,
one subject's cached history, removing a retained snapshot, ending one session's subscription.

Every member answers through its ``pushgrid:type=Subjects`` MBean (Jolokia ``exec`` on the
authenticated monitoring port, the path of every admin action); the admin API merges, sorts and
pages. A removal goes through one member's engine, which applies it on every member.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import ValidationError

from pushgrid.ops import names
from pushgrid.protocol.subjects import pattern_error

from ..access import member_access
from ..member_client import MemberEndpoint, MemberFailure, MemberJolokiaError, each_member
from ..problems import ProblemError, not_found
from ..schemas import MemberError
from ..schemas_subjects import (
    HistoryItem,
    MemberRemoval,
    SubjectHistory,
    SubjectPage,
    SubjectRow,
    SubjectSort,
)


@dataclass(frozen=True, slots=True)
class SubjectQuery:
    pattern: str = "*"
    sort: SubjectSort = "subject"
    offset: int = 0
    limit: int = 100


def check_pattern(pattern: str) -> None:
    """422 ``invalid_pattern`` naming the query parameter, before any member is asked."""
    reason = pattern_error(pattern)
    if reason is not None:
        raise ProblemError(
            422,
            f"query parameter 'pattern': invalid pattern {pattern!r}: {reason}",
            "invalid_pattern",
            extensions={
                "errors": [{"loc": ["query", "pattern"], "msg": reason, "type": "value_error"}]
            },
        )


@dataclass(slots=True)
class _Merged:
    subscribers: int
    snapshot_bytes: int
    last_publish: int
    members: list[str]


#: a member's answer: who, its rows, whether it cut them at its bound
_Listed = tuple[MemberEndpoint, list[dict[str, Any]], bool]


def _member_rows(member: MemberEndpoint, value: Any) -> tuple[list[dict[str, Any]], bool]:
    if not isinstance(value, dict) or not isinstance(value.get("subjects"), list):
        raise MemberFailure(member, "error", "unexpected Subjects.list answer")
    return value["subjects"], bool(value.get("truncated"))


async def _list(
    http: httpx.AsyncClient, member: MemberEndpoint, pattern: str
) -> tuple[list[dict[str, Any]], bool]:
    value = await member_access(http, member).execute(names.SUBJECTS, names.SUBJECTS_LIST, pattern)
    return _member_rows(member, value)


def _merge(merged: dict[str, _Merged], member: MemberEndpoint, rows: list[dict[str, Any]]) -> None:
    for raw in rows:
        try:
            subject = str(raw["subject"])
            subscribers, size, last = (
                int(raw["subscribers"]),
                int(raw["snapshot_bytes"]),
                int(raw["last_publish"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MemberFailure(member, "error", f"unexpected Subjects.list row: {exc}") from None
        row = merged.get(subject)
        if row is None:
            merged[subject] = _Merged(subscribers, size, last, [member.name])
            continue
        row.subscribers += subscribers
        row.snapshot_bytes = max(row.snapshot_bytes, size)
        row.last_publish = max(row.last_publish, last)
        row.members.append(member.name)


def _row(subject: str, merged: _Merged) -> SubjectRow:
    last = merged.last_publish
    return SubjectRow(
        subject=subject,
        subscribers=merged.subscribers,
        snapshot_bytes=merged.snapshot_bytes,
        last_publish=datetime.fromtimestamp(last / 1000, UTC) if last > 0 else None,
        members=sorted(merged.members),
    )


def _sort_key(key: str) -> Any:
    if key == "last_publish":  # never published sorts first ascending
        return lambda row: row.last_publish or datetime.min.replace(tzinfo=UTC)
    return lambda row: getattr(row, key)


def select(rows: list[SubjectRow], query: SubjectQuery) -> list[SubjectRow]:
    """The requested page, sorted by ``query.sort`` then subject (pure)."""
    rows = sorted(rows, key=lambda row: row.subject)
    key = query.sort.removeprefix("-")
    if key != "subject" or query.sort.startswith("-"):
        rows.sort(key=_sort_key(key), reverse=query.sort.startswith("-"))
    return rows[query.offset : query.offset + query.limit]


async def subject_page(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint], query: SubjectQuery
) -> SubjectPage:
    """Every member's subjects matching the pattern; members that cannot be read are listed in
    ``unreachable`` (the answer is still 200)."""
    check_pattern(query.pattern)

    async def listed(http: httpx.AsyncClient, member: MemberEndpoint) -> _Listed | MemberError:
        return (member, *await _list(http, member, query.pattern))

    def failed(member: MemberEndpoint, detail: str) -> _Listed | MemberError:
        return MemberError(member=member.name, error=detail)

    merged: dict[str, _Merged] = {}
    errors: list[MemberError] = []
    truncated = False
    for answer in await each_member(http, members, listed, failed):
        if isinstance(answer, MemberError):
            errors.append(answer)
        else:
            _merge(merged, answer[0], answer[1])
            truncated = truncated or answer[2]
    rows = [_row(subject, row) for subject, row in merged.items()]
    return SubjectPage(
        pattern=query.pattern,
        total=len(rows),
        offset=query.offset,
        limit=query.limit,
        items=select(rows, query),
        truncated=truncated,
        unreachable=errors,
    )


async def history(
    http: httpx.AsyncClient, member: MemberEndpoint, subject: str, limit: int
) -> SubjectHistory:
    value = await member_access(http, member).execute(
        names.SUBJECTS, names.SUBJECTS_HISTORY, subject, limit
    )
    if not isinstance(value, list):
        raise MemberFailure(member, "error", "unexpected Subjects.history answer")
    try:
        items = [
            HistoryItem.model_validate(
                {**raw, "ts": datetime.fromtimestamp(int(raw["ts"]) / 1000, UTC)}
            )
            for raw in value
        ]
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise MemberFailure(member, "error", f"unexpected Subjects.history entry: {exc}") from None
    return SubjectHistory(member=member.name, subject=subject, limit=limit, items=items)


async def remove_snapshot(
    http: httpx.AsyncClient, member: MemberEndpoint, subject: str
) -> MemberRemoval:
    """Through ``member``'s engine, which applies it on every member of its cluster (ADR 051)."""
    try:
        value = await member_access(http, member).execute(
            names.SUBJECTS, names.SUBJECTS_REMOVE_SNAPSHOT, subject
        )
    except MemberJolokiaError as exc:
        raise _refusal(member, exc) from None
    if not isinstance(value, dict):
        raise MemberFailure(member, "error", "unexpected Subjects.removeSnapshot answer")
    try:
        return MemberRemoval(
            member=member.name, removed=value["removed"], epoch=value["epoch"], seq=value["seq"]
        )
    except (KeyError, ValidationError) as exc:
        raise MemberFailure(member, "error", f"unexpected removeSnapshot answer: {exc}") from None


def _refusal(member: MemberEndpoint, exc: MemberJolokiaError) -> ProblemError:
    """The engine's refusals as problems of their own; anything else stays a member error."""
    if exc.error_type == "SnapshotRemovalUnsupported":
        return ProblemError(
            409,
            f"member {member.name!r}: {exc.error}",
            "snapshot_removal_unsupported",
            member=member.name,
        )
    if exc.error_type == "EngineUnavailable":
        return ProblemError(
            503, f"member {member.name!r}: {exc.error}", "engine_unavailable", member=member.name
        )
    return exc


async def unsubscribe(
    http: httpx.AsyncClient, member: MemberEndpoint, session_id: str, subject: str
) -> None:
    """End one session's subscription (404 when it has none on that member)."""
    done = await member_access(http, member).execute(
        names.SUBJECTS, names.SUBJECTS_UNSUBSCRIBE, session_id, subject
    )
    if done is not True:
        raise not_found(
            f"member {member.name!r} has no session {session_id!r} subscribed to {subject!r}"
        )
