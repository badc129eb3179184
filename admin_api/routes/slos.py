"""``/slos``: service level objectives, their error budgets and burn rates (operator to change,
audited; ADR 055)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response

from ..deps import GuardedRoute, Operator, SqlSession, Viewer, audit_target
from ..problems import problem_responses
from ..schemas_slo import SloHistory, SloIn, SloList, SloOut, SloPatch
from ..services.slos import SloService
from .verbs import changed, created, deleted, no_content

router = APIRouter(prefix="/slos", tags=["slos"], route_class=GuardedRoute)

ObjectiveId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The objective's id")]


@router.get("", name="slos.list", response_model=SloList, responses=problem_responses())
def list_objectives(principal: Viewer, db: SqlSession) -> SloList:
    """Every objective, by name, with its events over the period, the budget left and the burn
    rates over 5 min, 30 min, 1 h and 6 h."""
    return SloList(items=SloService(db).all())


@router.get(
    "/{objective_id}", name="slos.get", response_model=SloOut, responses=problem_responses(404)
)
def get_objective(principal: Viewer, objective_id: ObjectiveId, db: SqlSession) -> SloOut:
    """One objective and where it stands."""
    return SloService(db).get(objective_id)


@router.get(
    "/{objective_id}/history",
    name="slos.history",
    response_model=SloHistory,
    responses=problem_responses(404),
)
def objective_history(
    principal: Viewer,
    objective_id: ObjectiveId,
    db: SqlSession,
    points: Annotated[int, Query(ge=2, le=1000, description="At most this many steps")] = 200,
) -> SloHistory:
    """The budget left and the burn rate over the period, in steps of whole minutes (the
    console's charts)."""
    return SloService(db).history(objective_id, points)


@created(router, "", "slos.create", SloOut, 409)
def create_objective(principal: Operator, data: SloIn, db: SqlSession, request: Request) -> SloOut:
    """Create an objective (409 when the name is taken); its events count from now on."""
    audit_target(request, data.name, f"{data.kind} {data.target:g} over {data.period_days} d")
    return SloService(db).create(data, principal.name)


@changed(router, "PATCH", "/{objective_id}", "slos.patch", SloOut, 404, 409)
def patch_objective(
    principal: Operator,
    objective_id: ObjectiveId,
    changes: SloPatch,
    db: SqlSession,
    request: Request,
) -> SloOut:
    """Change some fields; the objective as a whole is checked again (422). Recorded events
    are kept: a new threshold applies to the minutes recorded from now on."""
    fields = changes.model_dump(exclude_unset=True)
    audit_target(
        request, str(objective_id), ", ".join(f"{k}={v}" for k, v in sorted(fields.items()))
    )
    return SloService(db).patch(objective_id, changes)


@deleted(router, "/{objective_id}", "slos.delete")
def delete_objective(
    principal: Operator, objective_id: ObjectiveId, db: SqlSession, request: Request
) -> Response:
    """Delete an objective and its recorded events; its burn-rate alerts resolve at the next
    evaluation."""
    audit_target(request, str(objective_id))
    SloService(db).delete(objective_id)
    return no_content()
