"""``/alerts``: alert rules (operator to change, audited), active alerts and their history."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, cast

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from ..deps import GuardedRoute, Operator, SqlSession, Viewer, audit_target
from ..problems import ProblemError, problem_responses
from ..rules_export import prometheus_rules
from ..schemas_ops import AlertHistory, AlertList, AlertState, RuleIn, RuleList, RuleOut, RulePatch
from ..services.alert_history import HistoryQuery, utc_param
from ..services.alert_history import alert_history as alert_history_page
from ..services.alerts import AlertRunner, RuleService, active_alerts
from .verbs import changed, created, deleted, no_content

router = APIRouter(prefix="/alerts", tags=["alerts"], route_class=GuardedRoute)

RuleId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The rule's id")]


def _runner(request: Request) -> AlertRunner:
    return cast(AlertRunner, request.app.state.alert_runner)


@router.get("", name="alerts.active", response_model=AlertList, responses=problem_responses())
async def list_active(principal: Viewer, request: Request, db: SqlSession) -> AlertList:
    """Pending and firing alerts, firing first (evaluated every `Alerts.Interval` seconds), with
    their silence and acknowledgement."""
    alerts = _runner(request).evaluator.active()  # on the loop that evaluates them
    return AlertList(items=await run_in_threadpool(active_alerts, alerts, db))


@router.get(
    "/history", name="alerts.history", response_model=AlertHistory, responses=problem_responses()
)
def alert_history(
    principal: Viewer,
    db: SqlSession,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    rule_id: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    target: Annotated[
        str | None, Query(min_length=1, max_length=64, description="A member's name or 'cluster'")
    ] = None,
    state: Annotated[AlertState | None, Query(description="pending, firing or resolved")] = None,
    since: Annotated[
        datetime | None, Query(description="At or after (ISO 8601 with a zone)")
    ] = None,
    until: Annotated[datetime | None, Query(description="Before (ISO 8601 with a zone)")] = None,
) -> AlertHistory:
    """State changes (pending, firing, resolved), newest first, filtered and paged, each with
    how long the alert was in its previous state.

    `total` counts every matching change; `since` and `until` need a time zone (422 naming the
    parameter otherwise) and `since` must be before `until`."""
    start, end = utc_param(since, "since"), utc_param(until, "until")
    if start is not None and end is not None and start >= end:
        raise ProblemError(422, "query parameter 'since' must be before 'until'")
    query = HistoryQuery(limit, offset, rule_id, target, state, start, end)
    return alert_history_page(db, query)


@router.get("/rules", name="alerts.rules", response_model=RuleList, responses=problem_responses())
def list_rules(principal: Viewer, db: SqlSession) -> RuleList:
    """Every alert rule, by name."""
    return RuleList(items=RuleService(db).all())


@router.get(
    "/rules/export",
    name="alerts.export",
    response_class=PlainTextResponse,
    responses=problem_responses(),
)
def export_rules(principal: Viewer, db: SqlSession) -> PlainTextResponse:
    """The enabled rules as a Prometheus rules file (YAML; `promtool check rules` accepts it)."""
    text = prometheus_rules(RuleService(db).all())
    return PlainTextResponse(text)  # YAML, served as text/plain (readable in a browser)


@created(router, "/rules", "alerts.create_rule", RuleOut, 409)
def create_rule(principal: Operator, data: RuleIn, db: SqlSession, request: Request) -> RuleOut:
    """Create an alert rule (409 when the name is taken)."""
    audit_target(request, data.name, f"{data.indicator} {data.comparison} {data.threshold:g}")
    return RuleService(db).create(data, principal.name)


@changed(router, "PUT", "/rules/{rule_id}", "alerts.update_rule", RuleOut, 404, 409)
def update_rule(
    principal: Operator, rule_id: RuleId, data: RuleIn, db: SqlSession, request: Request
) -> RuleOut:
    """Replace an alert rule; its alerts keep their state."""
    audit_target(request, data.name)
    return RuleService(db).update(rule_id, data)


@changed(router, "PATCH", "/rules/{rule_id}", "alerts.patch_rule", RuleOut, 404, 409)
def patch_rule(
    principal: Operator, rule_id: RuleId, changes: RulePatch, db: SqlSession, request: Request
) -> RuleOut:
    """Change some fields of a rule (e.g. `{"enabled": false}` or a threshold); its alerts keep
    their state. The rule as a whole is checked again (422)."""
    fields = changes.model_dump(by_alias=True, exclude_unset=True)
    audit_target(request, str(rule_id), ", ".join(f"{k}={v}" for k, v in sorted(fields.items())))
    return RuleService(db).patch(rule_id, changes)


@deleted(router, "/rules/{rule_id}", "alerts.delete_rule")
def delete_rule(principal: Operator, rule_id: RuleId, db: SqlSession, request: Request) -> Response:
    """Delete an alert rule; its active alerts resolve at the next evaluation."""
    audit_target(request, str(rule_id))
    RuleService(db).delete(rule_id)
    return no_content()
