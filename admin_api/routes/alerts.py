"""``/alerts``: alert rules (operator to change, audited), active alerts and their history."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Path, Query, Request, Response, status
from fastapi.responses import PlainTextResponse

from ..deps import GuardedRoute, Operator, SqlSession, Viewer, audit_target
from ..problems import problem_responses
from ..rules_export import prometheus_rules
from ..schemas_ops import AlertHistory, AlertList, RuleIn, RuleList, RuleOut
from ..services.alerts import AlertRunner, RuleService, alert_out

router = APIRouter(prefix="/alerts", tags=["alerts"], route_class=GuardedRoute)

RuleId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The rule's id")]


def _runner(request: Request) -> AlertRunner:
    return cast(AlertRunner, request.app.state.alert_runner)


@router.get("", name="alerts.active", response_model=AlertList, responses=problem_responses())
async def active_alerts(principal: Viewer, request: Request) -> AlertList:
    """Pending and firing alerts, firing first (evaluated every `Alerts.Interval` seconds)."""
    return AlertList(items=[alert_out(a) for a in _runner(request).evaluator.active()])


@router.get(
    "/history", name="alerts.history", response_model=AlertHistory, responses=problem_responses()
)
def alert_history(
    principal: Viewer,
    db: SqlSession,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    rule_id: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
) -> AlertHistory:
    """State changes (pending, firing, resolved), newest first."""
    return AlertHistory(items=RuleService(db).history(limit, rule_id))


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


@router.post(
    "/rules",
    name="alerts.create_rule",
    status_code=status.HTTP_201_CREATED,
    response_model=RuleOut,
    responses=problem_responses(409),
)
def create_rule(principal: Operator, data: RuleIn, db: SqlSession, request: Request) -> RuleOut:
    """Create an alert rule (409 when the name is taken)."""
    audit_target(request, data.name, f"{data.indicator} {data.comparison} {data.threshold:g}")
    return RuleService(db).create(data, principal.name)


@router.put(
    "/rules/{rule_id}",
    name="alerts.update_rule",
    response_model=RuleOut,
    responses=problem_responses(404, 409),
)
def update_rule(
    principal: Operator, rule_id: RuleId, data: RuleIn, db: SqlSession, request: Request
) -> RuleOut:
    """Replace an alert rule; its alerts keep their state."""
    audit_target(request, data.name)
    return RuleService(db).update(rule_id, data)


@router.delete(
    "/rules/{rule_id}",
    name="alerts.delete_rule",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses=problem_responses(404),
)
def delete_rule(principal: Operator, rule_id: RuleId, db: SqlSession, request: Request) -> Response:
    """Delete an alert rule; its active alerts resolve at the next evaluation."""
    audit_target(request, str(rule_id))
    RuleService(db).delete(rule_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
