"""The audit log: one row per mutating request (written by :mod:`admin_api.audit`), listable."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from pushgrid.metrics.sqlstore import transaction
from pushgrid.metrics.sqlstore.admin_models import AuditEntry
from pushgrid.metrics.sqlstore.models import utc_now

from ..schemas import AuditOut, AuditPage
from ..security import Role

Outcome = Literal["succeeded", "denied", "failed"]
MAX_DETAIL: Final = 2000
MAX_TARGET: Final = 1024
MAX_PATH: Final = 2048


def outcome_of(status: int) -> Outcome:
    """``succeeded`` (1xx-3xx), ``denied`` (401, 403) or ``failed`` (any other error)."""
    if status < 400:
        return "succeeded"
    if status in (401, 403):
        return "denied"
    return "failed"


def _clip(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class AuditRecord:
    method: str
    path: str
    action: str
    status: int
    actor: str | None = None
    token_id: str | None = None
    role: str | None = None
    target: str | None = None
    detail: str | None = None
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class CliAudit:
    """An action of the ``pushgrid`` command line on the admin database (a token created by
    ``pushgrid admin create-token`` or ``--bootstrap``): audited like the API's own, under the
    same action name, with method ``CLI``, the command as the path and the system user as the
    actor (issue 34: CLI tokens were missing from the log)."""

    command: str  # "pushgrid admin create-token"
    action: str  # the API route's name for the same action: "tokens.create"
    user: str  # who ran it (the operating system's user name)

    def entry(self, target: str, detail: str) -> AuditEntry:
        return AuditEntry(
            at=utc_now(),
            actor=_clip(f"{self.user} (cli)", 128),
            method="CLI",
            path=self.command,
            action=self.action,
            target=_clip(target, MAX_TARGET),
            status=201,
            detail=_clip(detail, MAX_DETAIL),
        )


def audit_out(row: AuditEntry) -> AuditOut:
    return AuditOut(
        id=row.id,
        at=row.at,
        actor=row.actor,
        token_id=row.token_id,
        role=Role(row.role) if row.role in tuple(Role) else None,
        method=row.method,
        path=row.path,
        action=row.action,
        target=row.target,
        status=row.status,
        outcome=outcome_of(row.status),
        detail=row.detail,
    )


class AuditService:
    def __init__(self, db: Session) -> None:
        self.db = db

    def record(self, record: AuditRecord) -> AuditEntry:
        row = AuditEntry(
            at=record.at or utc_now(),
            actor=_clip(record.actor, 128),
            token_id=record.token_id,
            role=record.role,
            method=record.method[:8],
            path=_clip(record.path, MAX_PATH) or "",
            action=record.action[:64],
            target=_clip(record.target, MAX_TARGET),
            status=record.status,
            detail=_clip(record.detail, MAX_DETAIL),
        )
        with transaction(self.db):
            self.db.add(row)
        return row

    def page(
        self,
        *,
        offset: int = 0,
        limit: int = 100,
        actor: str | None = None,
        action: str | None = None,
        outcome: Outcome | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> AuditPage:
        """Entries matching the filters, newest first."""
        filters = []
        if actor is not None:
            filters.append(AuditEntry.actor == actor)
        if action is not None:
            filters.append(AuditEntry.action == action)
        if since is not None:
            filters.append(AuditEntry.at >= since)
        if until is not None:
            filters.append(AuditEntry.at < until)
        if outcome == "succeeded":
            filters.append(AuditEntry.status < 400)
        elif outcome == "denied":
            filters.append(AuditEntry.status.in_((401, 403)))
        elif outcome == "failed":
            filters.append(AuditEntry.status >= 400)
            filters.append(AuditEntry.status.not_in((401, 403)))
        total = self.db.scalar(select(func.count()).select_from(AuditEntry).where(*filters))
        rows = self.db.scalars(
            select(AuditEntry)
            .where(*filters)
            .order_by(AuditEntry.id.desc())
            .offset(offset)
            .limit(limit)
        )
        return AuditPage(
            total=total or 0,
            offset=offset,
            limit=limit,
            items=[audit_out(row) for row in rows],
        )
