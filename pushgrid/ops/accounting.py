"""The Accounting MBean (``pushgrid:type=Accounting``): what became of every due delivery (ADR 054).

Per row (the member's totals, the top subjects by deliveries due, each watched pattern): the
counts since start and over the last second of messages published, deliveries due (the
subject's subscribers when a message arrived), written to the socket, conflated away, sent as
field deltas, dropped with a slow consumer, closed (the connection or subscription ended
first), covered (the opening snapshot or recovery already held it) and publishes refused by
entitlement. On a settled system ``due = written + conflated + dropped + closed + covered``;
``Unaccounted`` is ``due`` minus those outcomes (what is in flight, or a bug).
docs/monitoring.md, "Delivery accounting", says how each is counted.
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec

from .attributes import LIST, MAP, STRING, java

#: the columns of a row, in the order every view shows them
COLUMNS: Final = (
    "published",
    "due",
    "written",
    "conflated",
    "deltas",
    "dropped",
    "closed",
    "covered",
    "refused",
)
#: the outcomes whose sum equals ``due`` on a settled system
OUTCOMES: Final = ("written", "conflated", "dropped", "closed", "covered")


def unaccounted(row: dict[str, int]) -> int:
    """``due`` minus every outcome: 0 when the row adds up."""
    return row.get("due", 0) - sum(row.get(name, 0) for name in OUTCOMES)


class AccountEntry(msgspec.Struct, rename="camel", frozen=True, kw_only=True):
    """One row: a subject, a watched pattern, or (``name`` "") the member's totals."""

    name: str
    total: dict[str, int]  # COLUMNS since start
    second: dict[str, int]  # COLUMNS over the last second
    unaccounted: int  # total due minus total outcomes


class AccountingDocument(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """Every attribute of the Accounting MBean, in its order."""

    member: Annotated[str, java(STRING, "This member")]
    top_n: Annotated[int, java("int", "Subjects listed (the most deliveries due since start)")]
    totals: Annotated[dict[str, int], java(MAP, "Every subject's columns since start")]
    totals_per_second: Annotated[dict[str, int], java(MAP, "Every subject's last second")]
    unaccounted: Annotated[int, java("long", "Due minus written, conflated, dropped, ...")]
    subjects: Annotated[
        list[AccountEntry], java(LIST, "Top subjects by due: name, total, second, unaccounted")
    ]
    patterns: Annotated[
        list[AccountEntry], java(LIST, "Watched patterns: name, total, second, unaccounted")
    ]
    subjects_followed: Annotated[int, java("int", "Subjects counted one by one")]
    subjects_forgotten: Annotated[
        int, java("long", "Subjects dropped from the one-by-one list (cap); still in totals")
    ]


def empty_columns() -> dict[str, int]:
    return dict.fromkeys(COLUMNS, 0)


EMPTY_ACCOUNTING: Final = AccountingDocument(
    member="",
    top_n=0,
    totals=empty_columns(),
    totals_per_second=empty_columns(),
    unaccounted=0,
    subjects=[],
    patterns=[],
    subjects_followed=0,
    subjects_forgotten=0,
)
