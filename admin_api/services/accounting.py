"""Delivery accounting of the members (Jolokia ``pushgrid:type=Accounting``, ADR 054), added up
for the cluster: every column is a count, so the cluster's row is the sum of the members' rows
and adds up exactly when each member's does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

import httpx

from pushgrid.kernel.throttle import host_of
from pushgrid.ops import names
from pushgrid.ops.accounting import (
    COLUMNS,
    OUTCOMES,
    AccountEntry,
    AccountingDocument,
    empty_columns,
    unaccounted,
)

from ..access import read_view
from ..member_client import MemberEndpoint, MemberFailure
from ..schemas import SlowConsumerOut
from ..schemas_accounting import (
    AccountingMemberOut,
    AccountingOut,
    AccountRowOut,
    SlowConsumerOffenderOut,
    SlowConsumerOffendersOut,
)
from .sessions import from_every_member, member_slow_consumers

Read = tuple[MemberEndpoint, AccountingDocument | None, str | None]
Part = tuple[str, dict[str, int], dict[str, int]]  # (member, total, second)


async def _read(http: httpx.AsyncClient, member: MemberEndpoint) -> Read:
    try:
        return member, await read_view(http, member, names.ACCOUNTING, AccountingDocument), None
    except MemberFailure as exc:
        return member, None, exc.detail


def row_out(name: str, parts: Sequence[Part]) -> AccountRowOut:
    """The sum of the members' ``parts`` of one row."""
    total, second = empty_columns(), empty_columns()
    for _, counts, rate in parts:
        for column in COLUMNS:
            total[column] += counts.get(column, 0)
            second[column] += rate.get(column, 0)
    missing = unaccounted(total)
    return AccountRowOut(
        name=name,
        total=total,
        per_second=second,
        unaccounted=missing,
        adds_up=missing == 0,
        members=sorted(member for member, _, _ in parts),
    )


def _merged(rows: Iterable[tuple[str, AccountEntry]]) -> list[AccountRowOut]:
    parts: dict[str, list[Part]] = {}
    for member, entry in rows:
        parts.setdefault(entry.name, []).append((member, entry.total, entry.second))
    return [row_out(name, p) for name, p in parts.items()]


def member_out(
    member: MemberEndpoint, document: AccountingDocument | None, error: str | None
) -> AccountingMemberOut:
    if document is None:
        return AccountingMemberOut(member=member.name, reachable=False, error=error)
    return AccountingMemberOut(
        member=member.name,
        reachable=True,
        unaccounted=document.unaccounted,
        subjects_followed=document.subjects_followed,
        subjects_forgotten=document.subjects_forgotten,
    )


def join(reads: Sequence[Read]) -> AccountingOut:
    """The cluster's accounting from each member's document (pure)."""
    read = [(m.name, d) for m, d, _ in reads if d is not None]
    top = max((d.top_n for _, d in read), default=0)
    subjects = _merged((name, entry) for name, d in read for entry in d.subjects)
    subjects.sort(key=lambda row: (-row.total["due"], row.name))
    patterns = _merged((name, entry) for name, d in read for entry in d.patterns)
    patterns.sort(key=lambda row: row.name)
    totals = row_out("", [(name, d.totals, d.totals_per_second) for name, d in read])
    return AccountingOut(
        columns=list(COLUMNS),
        outcomes=list(OUTCOMES),
        members=[member_out(*r) for r in reads],
        totals=totals,
        subjects=subjects[:top],
        patterns=patterns,
    )


async def accounting(http: httpx.AsyncClient, members: Sequence[MemberEndpoint]) -> AccountingOut:
    return join(await asyncio.gather(*(_read(http, member) for member in members)))


async def member_accounting(http: httpx.AsyncClient, member: MemberEndpoint) -> AccountingOut:
    """One member's accounting (a member that cannot be read is the route's 502/504)."""
    document = await read_view(http, member, names.ACCOUNTING, AccountingDocument)
    return join([(member, document, None)])


def offenders(records: Iterable[SlowConsumerOut], limit: int) -> list[SlowConsumerOffenderOut]:
    """The members' slow-consumer records grouped by client (its client id, else its host),
    most closes first, then the most recent (pure)."""
    groups: dict[str, list[SlowConsumerOut]] = {}
    for record in records:
        key = record.client_id or host_of(record.remote)
        groups.setdefault(key, []).append(record)
    rows = []
    for key, group in groups.items():
        group.sort(key=lambda r: r.at)
        last = group[-1]
        subjects = list(dict.fromkeys(s for r in group for s in r.subjects))
        rows.append(
            SlowConsumerOffenderOut(
                client=key,
                client_id=last.client_id,
                closes=len(group),
                members=sorted({r.member for r in group}),
                first_at=group[0].at,
                last_at=last.at,
                last_remote=last.remote,
                subjects=subjects[:50],
                max_queued_bytes=max(r.queued_bytes for r in group),
                compressed=last.compressed,
                last_rtt_ms=last.rtt_ms,
            )
        )
    rows.sort(key=lambda row: (-row.closes, -row.last_at.timestamp(), row.client))
    return rows[:limit]


async def offender_page(
    http: httpx.AsyncClient, members: Sequence[MemberEndpoint], limit: int
) -> SlowConsumerOffendersOut:
    records, errors = await from_every_member(http, members, member_slow_consumers)
    return SlowConsumerOffendersOut(items=offenders(records, limit), unreachable=errors)
