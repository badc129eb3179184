"""``/jobs``: statistics pipeline runs (from SQL) and a trigger for a new one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, Query, Request, Response, status
from starlette.concurrency import run_in_threadpool

from pushgrid.metrics.sqlstore.models import RunStatus

from ..deps import (
    GuardedRoute,
    JobRunnerDep,
    Operator,
    SqlSession,
    SqlSessionFactory,
    Viewer,
    audit_target,
)
from ..problems import problem_responses
from ..schemas import JobRunOut, JobRunPage, JobTrigger
from ..services.jobs import JobService

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=GuardedRoute)

RunId = Annotated[int, Path(ge=1, le=2**62, description="The run's id")]


@router.get("", name="jobs.list", response_model=JobRunPage, responses=problem_responses())
def list_jobs(
    principal: Viewer,
    db: SqlSession,
    status: Annotated[RunStatus | None, Query(description="Only runs in this state")] = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 20,
) -> JobRunPage:
    """Pipeline runs, newest first (what `pushgrid stats status` shows)."""
    return JobService(db).page(offset=offset, limit=limit, status=status)


@router.get(
    "/{run_id}", name="jobs.get", response_model=JobRunOut, responses=problem_responses(404)
)
def get_job(principal: Viewer, run_id: RunId, db: SqlSession) -> JobRunOut:
    """One pipeline run."""
    return JobService(db).get(run_id)


@router.post(
    "",
    name="jobs.trigger",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=JobRunOut,
    responses={
        **problem_responses(409),
        202: {"headers": {"Location": {"description": "The run", "schema": {"type": "string"}}}},
    },
)
async def trigger_job(
    principal: Operator,
    request: Request,
    response: Response,
    runner: JobRunnerDep,
    session_factory: SqlSessionFactory,
    trigger: Annotated[JobTrigger | None, Body()] = None,
) -> JobRunOut:
    """Start a statistics run (`pushgrid stats run` in a child process).

    202 once the run has recorded itself (status `running`, or already `failed` when it failed
    at once); `Location` points at it. 409 while a run is going on.
    """
    as_of = trigger.as_of if trigger is not None else None
    run = await run_in_threadpool(runner.trigger, session_factory, as_of, principal.name)
    audit_target(request, f"run {run.id}", None if as_of is None else f"as_of={as_of}")
    response.headers["Location"] = f"{request.url.path.rstrip('/')}/{run.id}"
    return run
