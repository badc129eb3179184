"""Delivery accounting of the members (Jolokia ``pushgrid:type=Accounting``, ADR 054), added up
for the cluster: every column is a count, so the cluster's row is the sum of the members' rows
and adds up exactly when each member's does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

import httpx

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
from ..schemas_accounting import AccountingMemberOut, AccountingOut, AccountRowOut

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
