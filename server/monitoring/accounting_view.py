"""Delivery accounting as the monitoring views show it (ADR 054): MBean
``pushgrid:type=Accounting``, Prometheus counters per outcome, the ``accounting`` section of
``/stats``.

Once a second the app folds the hub's tally into :class:`~server.core.accounting.DeliveryAccounts`
and takes an :class:`~pushgrid.ops.accounting.AccountingDocument` of it (on the event loop); every
view formats that one document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import msgspec
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pushgrid.ops import names
from pushgrid.ops.accounting import COLUMNS, AccountEntry, AccountingDocument, unaccounted

from ..core.accounting import Account, DeliveryAccounts
from .mbeans import MBean, ObjectName, document_attributes


class AccountingSource(Protocol):
    def accounting(self) -> AccountingDocument: ...


def entry(name: str, account: Account) -> AccountEntry:
    total = account.row()
    return AccountEntry(
        name=name, total=total, second=account.rate(), unaccounted=unaccounted(total)
    )


def read_accounting(accounts: DeliveryAccounts, member: str, top_n: int) -> AccountingDocument:
    """The document of ``accounts`` now: totals, the ``top_n`` subjects, every watched pattern."""
    totals = accounts.totals.row()
    return AccountingDocument(
        member=member,
        top_n=top_n,
        totals=totals,
        totals_per_second=accounts.totals.rate(),
        unaccounted=unaccounted(totals),
        subjects=[entry(subject, account) for subject, account in accounts.top(top_n)],
        patterns=[entry(p, accounts.patterns[p]) for p in sorted(accounts.patterns)],
        subjects_followed=len(accounts.subjects),
        subjects_forgotten=accounts.forgotten,
    )


def accounting_bean(source: AccountingSource, wrap: Callable[[Callable[[], Any]], Any]) -> MBean:
    return MBean(
        ObjectName.parse(names.ACCOUNTING),
        "Delivery accounting: what became of every delivery the subscribers were due",
        document_attributes(AccountingDocument, source.accounting, wrap),
        [],
    )


def stats_section(document: AccountingDocument) -> dict[str, Any]:
    """``/stats?format=json``'s ``accounting``: the MBean's document, camelCase keys."""
    builtins: dict[str, Any] = msgspec.to_builtins(document)
    return {key[0].lower() + key[1:]: value for key, value in builtins.items()}


def stats_lines(section: dict[str, Any]) -> Iterator[str]:
    """``/stats`` text: ``deliveries.<column>_total`` for the member, then
    ``deliveries.pattern.<pattern>.<column>_total`` per watched pattern."""
    if not section:
        return
    for column in COLUMNS:
        yield f"deliveries.{column}_total {section['totals'][column]}"
    yield f"deliveries.unaccounted {section['unaccounted']}"
    for row in section["patterns"]:
        for column in COLUMNS:
            yield f"deliveries.pattern.{row['name']}.{column}_total {row['total'][column]}"
        yield f"deliveries.pattern.{row['name']}.unaccounted {row['unaccounted']}"


def accounting_metrics(document: AccountingDocument) -> Iterator[Metric]:
    """``pushgrid_deliveries_total{column}`` for the member, the same per watched pattern and
    per listed subject, and the unaccounted difference as gauges."""
    member = CounterMetricFamily(
        "pushgrid_deliveries",
        "Delivery accounting since start: published, due and each outcome (ADR 054)",
        labels=["column"],
    )
    for column in COLUMNS:
        member.add_metric([column], document.totals[column])
    yield member
    for family, label, rows in (
        ("pushgrid_pattern_deliveries", "pattern", document.patterns),
        ("pushgrid_subject_deliveries", "subject", document.subjects),
    ):
        counter = CounterMetricFamily(
            family, f"Delivery accounting per {label} since start", labels=[label, "column"]
        )
        for row in rows:
            for column in COLUMNS:
                counter.add_metric([row.name, column], row.total[column])
        yield counter
    gauge = GaugeMetricFamily(
        "pushgrid_deliveries_unaccounted",
        "Deliveries due minus every outcome (0 on a settled system; in flight otherwise)",
        labels=["pattern"],
    )
    gauge.add_metric([""], document.unaccounted)
    for row in document.patterns:
        gauge.add_metric([row.name], row.unaccounted)
    yield gauge
