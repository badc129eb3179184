"""The alert history, filtered and paged (``GET /alerts/history``, issue 35 item 4): by rule,
target (a member or ``cluster``), state and time range, newest first, each state change with how
long the alert had been in its previous state (a resolved event: how long it fired)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pushgrid.metrics.sqlstore.admin_models import AlertEvent

from ..problems import ProblemError
from ..schemas_ops import AlertEventOut, AlertHistory, AlertState


def utc_param(moment: datetime | None, name: str) -> datetime | None:
    """A time query parameter in UTC; 422 naming ``name`` without a time zone."""
    if moment is None:
        return None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ProblemError(
            422,
            f"query parameter {name!r} needs a time zone (e.g. 2026-11-22T15:00:00Z)",
            extensions={
                "errors": [
                    {"loc": ["query", name], "msg": "needs a time zone", "type": "value_error"}
                ]
            },
        )
    return moment.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class HistoryQuery:
    limit: int = 100
    offset: int = 0
    rule_id: int | None = None
    target: str | None = None
    state: AlertState | None = None
    since: datetime | None = None  # at or after
    until: datetime | None = None  # before

    def filters(self) -> list[Any]:
        given: list[Any] = []
        if self.rule_id is not None:
            given.append(AlertEvent.rule_id == self.rule_id)
        if self.target is not None:
            given.append(AlertEvent.target == self.target)
        if self.state is not None:
            given.append(AlertEvent.state == self.state)
        if self.since is not None:
            given.append(AlertEvent.at >= self.since)
        if self.until is not None:
            given.append(AlertEvent.at < self.until)
        return given


def alert_history(db: Session, query: HistoryQuery) -> AlertHistory:
    """One page of state changes, newest first, with ``total`` matching ones."""
    # the previous change of the same alert (rule on target), whatever the filters keep
    previous = (
        func.lag(AlertEvent.at, type_=AlertEvent.at.type)
        .over(partition_by=(AlertEvent.rule_id, AlertEvent.target), order_by=AlertEvent.id)
        .label("previous")
    )
    chained = select(AlertEvent.id, previous).subquery()
    filters = query.filters()
    total = db.scalar(select(func.count()).select_from(AlertEvent).where(*filters)) or 0
    rows = db.execute(
        select(AlertEvent, chained.c.previous)
        .join(chained, chained.c.id == AlertEvent.id)
        .where(*filters)
        .order_by(AlertEvent.id.desc())
        .offset(query.offset)
        .limit(query.limit)
    )
    items = [_event(event, before) for event, before in rows]
    return AlertHistory(total=total, offset=query.offset, limit=query.limit, items=items)


def _event(event: AlertEvent, before: datetime | None) -> AlertEventOut:
    return AlertEventOut(
        id=event.id,
        at=event.at,
        rule_id=event.rule_id,
        rule=event.rule,
        target=event.target,
        state=event.state,  # type: ignore[arg-type]
        value=event.value,
        summary=event.summary,
        previous_at=before,
        duration=None if before is None else (event.at - before).total_seconds(),
    )
