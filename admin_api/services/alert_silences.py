"""Silences (``alert_silences``) and acknowledgements (``alert_acks``) of alerts (docs/alerts.md).

A silenced alert is still evaluated, listed and recorded in the history; it is not announced
(meta-subject, webhook) and not shown in the console's banner until the silence ends. An
acknowledged alert stays active and listed (with who acknowledged it); it leaves the banner, and
the acknowledgement is removed when the alert resolves, so the next occurrence is shown again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import delete, select, tuple_
from sqlalchemy.orm import Session

from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import AlertAck, AlertRule, AlertSilence

from ..problems import ProblemError, not_found
from ..schemas_ops import AckIn, AckOut, SilenceIn, SilenceOut

MAX_SILENCE_DAYS = 90


@dataclass(frozen=True, slots=True)
class Mute:
    """A silence as the runner applies it (pure data)."""

    rule_id: int
    target: str | None
    until: datetime


def silenced_until(
    mutes: Iterable[Mute], rule_id: int, target: str, now: datetime
) -> datetime | None:
    """The end of the longest silence covering this alert now (None: not silenced)."""
    ends = [
        m.until
        for m in mutes
        if m.rule_id == rule_id and m.target in (None, target) and m.until > now
    ]
    return max(ends, default=None)


def _out(row: AlertSilence, rule: str) -> SilenceOut:
    return SilenceOut(
        id=row.id,
        rule_id=row.rule_id,
        rule=rule,
        target=row.target,
        until=row.until,
        comment=row.comment,
        created_at=row.created_at,
        created_by=row.created_by,
    )


class SilenceService:
    def __init__(self, db: Session) -> None:
        self.db = db

    def create(self, data: SilenceIn, created_by: str | None, now: datetime) -> SilenceOut:
        rule = self.db.get(AlertRule, data.rule_id)
        if rule is None:
            raise not_found(f"no alert rule {data.rule_id}")
        until = data.until if data.until.tzinfo else data.until.replace(tzinfo=UTC)
        if until <= now:
            raise ProblemError(422, f"until {until.isoformat()} is not in the future")
        if (until - now).days >= MAX_SILENCE_DAYS:
            raise ProblemError(422, f"a silence lasts less than {MAX_SILENCE_DAYS} days")
        row = AlertSilence(
            rule_id=data.rule_id,
            target=data.target,
            until=until,
            comment=data.comment,
            created_by=created_by,
        )
        with transaction(self.db):
            self.db.add(row)
        return _out(row, rule.name)

    def active(self, now: datetime) -> list[SilenceOut]:
        rows = self.db.execute(
            select(AlertSilence, AlertRule.name)
            .join(AlertRule, AlertRule.id == AlertSilence.rule_id)
            .where(AlertSilence.until > now)
            .order_by(AlertSilence.until)
        )
        return [_out(row, name) for row, name in rows]

    def mutes(self, now: datetime) -> list[Mute]:
        rows = self.db.scalars(select(AlertSilence).where(AlertSilence.until > now))
        return [Mute(r.rule_id, r.target, r.until) for r in rows]

    def delete(self, silence_id: int) -> None:
        if self.db.get(AlertSilence, silence_id) is None:
            raise not_found(f"no silence {silence_id}")
        with transaction(self.db):
            self.db.execute(delete(AlertSilence).where(AlertSilence.id == silence_id))


class AckService:
    def __init__(self, db: Session) -> None:
        self.db = db

    def acknowledge(
        self, data: AckIn, by: str | None, active: Collection[tuple[int, str]]
    ) -> AckOut:
        """``active``: the (rule id, target) of the pending and firing alerts (404 otherwise)."""
        if (data.rule_id, data.target) not in active:
            raise not_found(f"no active alert of rule {data.rule_id} on {data.target!r}")
        row = self.db.get(AlertAck, (data.rule_id, data.target))
        with transaction(self.db):
            if row is None:
                row = AlertAck(rule_id=data.rule_id, target=data.target)
                self.db.add(row)
            row.by, row.comment, row.at = by, data.comment, datetime.now(UTC)
        return AckOut(
            rule_id=row.rule_id, target=row.target, comment=row.comment, at=row.at, by=row.by
        )

    def all(self) -> dict[tuple[int, str], AckOut]:
        return {
            (r.rule_id, r.target): AckOut(
                rule_id=r.rule_id, target=r.target, comment=r.comment, at=r.at, by=r.by
            )
            for r in self.db.scalars(select(AlertAck))
        }

    def forget(self, keys: Sequence[tuple[int, str]]) -> None:
        """Remove the acknowledgements of these alerts (they resolved)."""
        if keys:
            with transaction(self.db):
                self.db.execute(
                    delete(AlertAck).where(tuple_(AlertAck.rule_id, AlertAck.target).in_(keys))
                )
