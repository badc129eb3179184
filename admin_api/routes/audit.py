"""``/audit``: the audit log of mutating calls."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import Admin, GuardedRoute, SqlSession
from ..problems import ProblemError, problem_responses
from ..schemas import AuditPage
from ..services.audit import AuditService, Outcome

router = APIRouter(prefix="/audit", tags=["audit"], route_class=GuardedRoute)


@router.get("", name="audit.list", response_model=AuditPage, responses=problem_responses())
def list_audit(
    principal: Admin,
    db: SqlSession,
    actor: Annotated[str | None, Query(max_length=128, description="Token name")] = None,
    action: Annotated[
        str | None, Query(max_length=64, description="Route name, e.g. members.register")
    ] = None,
    outcome: Outcome | None = None,
    since: Annotated[datetime | None, Query(description="At or after (ISO 8601 with zone)")] = None,
    until: Annotated[datetime | None, Query(description="Before (ISO 8601 with zone)")] = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> AuditPage:
    """Every mutating call (who, what, when, outcome), newest first."""
    for name, moment in (("since", since), ("until", until)):
        if moment is not None and (moment.tzinfo is None or moment.utcoffset() is None):
            raise ProblemError(422, f"{name} needs a time zone (e.g. 2026-11-22T15:00:00Z)")
    if since is not None and until is not None and until <= since:
        raise ProblemError(422, "until must be after since")
    return AuditService(db).page(
        offset=offset, limit=limit, actor=actor, action=action, outcome=outcome, since=since,
        until=until,
    )  # fmt: skip
