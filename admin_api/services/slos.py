"""Service level objectives in SQL (``slo_objectives``, their events per minute in
``slo_minutes``) and where each stands: budget left, burn rates (the arithmetic:
admin_api/slo.py; ADR 055)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import SloMinute, SloObjective

from ..alert_signals import Key, key
from ..problems import conflict, not_found
from ..schemas_slo import SloHistory, SloIn, SloOut, SloPatch, SloPoint, SloStatus
from ..slo import (
    BURN_WINDOWS,
    MINUTE,
    Events,
    ObjectiveSpec,
    budget_remaining,
    burn_rates,
    minute_of,
    series,
    series_step,
    threshold_edge,
)

ALERT_PREFIX = "slo:"
LONGEST = max(BURN_WINDOWS.values())


def alert_target(name: str) -> str:
    """The target of an objective's burn-rate alerts (``slo:<name>``)."""
    return ALERT_PREFIX + name


def spec_of(row: SloObjective) -> ObjectiveSpec:
    return ObjectiveSpec(
        row.id,
        row.name,
        row.kind,
        row.target,
        row.period_days,
        row.threshold_ms,
        row.member,
        row.pattern,
    )


class SloService:
    """CRUD of the objectives, their recorded minutes and their status."""

    def __init__(self, db: Session) -> None:
        self.db = db

    def rows(self) -> list[SloObjective]:
        return list(self.db.scalars(select(SloObjective).order_by(SloObjective.name)))

    def _row(self, objective_id: int) -> SloObjective:
        row = self.db.get(SloObjective, objective_id)
        if row is None:
            raise not_found(f"no objective {objective_id}")
        return row

    def all(self, now: float | None = None) -> list[SloOut]:
        at = time.time() if now is None else now
        return [self.out(row, at) for row in self.rows()]

    def get(self, objective_id: int, now: float | None = None) -> SloOut:
        return self.out(self._row(objective_id), time.time() if now is None else now)

    def _save(self, row: SloObjective, data: SloIn) -> None:
        try:
            with transaction(self.db):
                row.name, row.kind, row.target = data.name, data.kind, data.target
                row.period_days, row.threshold_ms = data.period_days, data.threshold_ms
                row.member, row.pattern = data.member, data.pattern
                row.description = data.description
                self.db.add(row)
        except IntegrityError:
            raise conflict(f"an objective named {data.name!r} exists already") from None

    def create(self, data: SloIn, created_by: str | None) -> SloOut:
        row = SloObjective(created_by=created_by)
        self._save(row, data)
        return self.out(row, time.time())

    def patch(self, objective_id: int, changes: SloPatch) -> SloOut:
        row = self._row(objective_id)
        merged = {
            "name": row.name,
            "kind": row.kind,
            "target": row.target,
            "period_days": row.period_days,
            "threshold_ms": row.threshold_ms,
            "member": row.member,
            "pattern": row.pattern,
            "description": row.description,
            **changes.model_dump(exclude_unset=True),
        }
        try:
            data = SloIn.model_validate(merged)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None
        self._save(row, data)
        return self.out(row, time.time())

    def delete(self, objective_id: int) -> None:
        self._row(objective_id)
        with transaction(self.db):
            self.db.execute(delete(SloMinute).where(SloMinute.objective_id == objective_id))
            self.db.execute(delete(SloObjective).where(SloObjective.id == objective_id))

    # -- events ---------------------------------------------------------------------------------

    def minutes(self, objective_id: int, since: int) -> dict[int, Events]:
        rows = self.db.execute(
            select(SloMinute.minute, SloMinute.good, SloMinute.total).where(
                SloMinute.objective_id == objective_id, SloMinute.minute >= since
            )
        )
        return {minute: Events(good, total) for minute, good, total in rows}

    def period_events(self, row: SloObjective, now: float) -> tuple[Events, int | None]:
        """The events of the period (its minutes since ``period_days`` ago) and its first."""
        since = minute_of(now) - row.period_days * 86_400 + MINUTE
        good, total, first = self.db.execute(
            select(
                func.coalesce(func.sum(SloMinute.good), 0),
                func.coalesce(func.sum(SloMinute.total), 0),
                func.min(SloMinute.minute),
            ).where(SloMinute.objective_id == row.id, SloMinute.minute >= since)
        ).one()
        return Events(int(good), int(total)), first

    def add(self, minute: int, events: Mapping[int, Events], now: float) -> None:
        """Add the events of each objective to its ``minute``; drop minutes past every period."""
        with transaction(self.db):
            for objective_id, more in events.items():
                if more.total <= 0:
                    continue
                row = self.db.get(SloMinute, (objective_id, minute))
                if row is None:
                    self.db.add(
                        SloMinute(
                            objective_id=objective_id,
                            minute=minute,
                            good=more.good,
                            total=more.total,
                        )
                    )
                else:
                    row.good, row.total = row.good + more.good, row.total + more.total
            for objective in self.rows():
                oldest = minute_of(now) - objective.period_days * 86_400
                self.db.execute(
                    delete(SloMinute).where(
                        SloMinute.objective_id == objective.id, SloMinute.minute < oldest
                    )
                )

    # -- views ----------------------------------------------------------------------------------

    def out(self, row: SloObjective, now: float) -> SloOut:
        period, first = self.period_events(row, now)
        rates = burn_rates(self.minutes(row.id, minute_of(now) - LONGEST), now, row.target)
        edge = None if row.threshold_ms is None else threshold_edge(row.threshold_ms)[1]
        return SloOut(
            id=row.id,
            name=row.name,
            kind=row.kind,  # type: ignore[arg-type]
            target=row.target,
            period_days=row.period_days,
            threshold_ms=row.threshold_ms,
            member=row.member,
            pattern=row.pattern,
            description=row.description,
            alert_target=alert_target(row.name),
            threshold_edge_ms=edge,
            created_at=row.created_at,
            created_by=row.created_by,
            status=SloStatus(
                good=period.good,
                total=period.total,
                ratio=period.good / period.total if period.total else None,
                budget_remaining=budget_remaining(period, row.target),
                burn_rates=dict(rates.rates),
                fast_burn=rates.fast,
                slow_burn=rates.slow,
                since=None if first is None else datetime.fromtimestamp(first, UTC),
            ),
        )

    def history(self, objective_id: int, points: int, now: float | None = None) -> SloHistory:
        row = self._row(objective_id)
        at = time.time() if now is None else now
        since = minute_of(at) - row.period_days * 86_400 + MINUTE
        minutes = sorted(self.minutes(row.id, since).items())
        step = series_step(minutes[0][0], minutes[-1][0], points) if minutes else MINUTE
        return SloHistory(
            id=row.id,
            name=row.name,
            step_seconds=step,
            points=[
                SloPoint(
                    at=datetime.fromtimestamp(start, UTC), budget_remaining=left, burn_rate=burn
                )
                for start, left, burn in series(minutes, row.target, step)
            ],
        )

    def burn_readings(self, now: float) -> dict[str, dict[Key, float | None]]:
        """The two alert signals of every objective, target ``slo:<name>``."""
        out: dict[str, dict[Key, float | None]] = {}
        for row in self.rows():
            rates = burn_rates(self.minutes(row.id, minute_of(now) - LONGEST), now, row.target)
            out[alert_target(row.name)] = {
                key("slo_fast_burn"): rates.fast,
                key("slo_slow_burn"): rates.slow,
            }
        return out


__all__ = ["SloService", "alert_target", "spec_of"]
