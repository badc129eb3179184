"""``/alerts/silences`` and ``/alerts/acknowledgements``: quieting alerts (operator, audited)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, cast

from fastapi import APIRouter, Path, Request, Response
from starlette.concurrency import run_in_threadpool

from ..deps import GuardedRoute, Operator, SqlSession, Viewer, audit_target
from ..problems import problem_responses
from ..schemas_ops import AckIn, AckOut, SilenceIn, SilenceList, SilenceOut
from ..services.alert_silences import AckService, SilenceService
from ..services.alerts import AlertRunner
from .verbs import created, deleted, no_content

router = APIRouter(prefix="/alerts", tags=["alerts"], route_class=GuardedRoute)

SilenceId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The silence's id")]


@router.get(
    "/silences", name="alerts.silences", response_model=SilenceList, responses=problem_responses()
)
def list_silences(principal: Viewer, db: SqlSession) -> SilenceList:
    """The silences in force, the ones ending first first."""
    return SilenceList(items=SilenceService(db).active(datetime.now(UTC)))


@created(router, "/silences", "alerts.silence", SilenceOut, 404)
def create_silence(
    principal: Operator, data: SilenceIn, db: SqlSession, request: Request
) -> SilenceOut:
    """Silence a rule's alerts (on one target, or every target) until a time: they are still
    evaluated, listed and recorded, not announced (404: no such rule; 422: a past `until`)."""
    audit_target(request, f"{data.rule_id}/{data.target or '*'}", f"until {data.until.isoformat()}")
    return SilenceService(db).create(data, principal.name, datetime.now(UTC))


@deleted(router, "/silences/{silence_id}", "alerts.unsilence")
def delete_silence(
    principal: Operator, silence_id: SilenceId, db: SqlSession, request: Request
) -> Response:
    """End a silence now."""
    audit_target(request, str(silence_id))
    SilenceService(db).delete(silence_id)
    return no_content()


@created(router, "/acknowledgements", "alerts.acknowledge", AckOut, 404)
async def acknowledge(principal: Operator, data: AckIn, db: SqlSession, request: Request) -> AckOut:
    """Acknowledge a pending or firing alert (404 otherwise): it stays listed with who
    acknowledged it, leaves the console's banner, and is forgotten when the alert resolves."""
    audit_target(request, f"{data.rule_id}/{data.target}", data.comment or None)
    runner = cast(AlertRunner, request.app.state.alert_runner)
    active = {(a.rule.id, a.target) for a in runner.evaluator.active()}
    return await run_in_threadpool(AckService(db).acknowledge, data, principal.name, active)
