"""``GET /metrics`` of the admin API: how fresh the statistics pipeline's results are.

The members cannot tell whether ``pushgrid stats run`` still succeeds (it writes to SQL, not to
them); the admin API reads the ``job_runs`` table, so it exports the pipeline's freshness for the
"statistics pipeline stale" alert and the Grafana dashboard (deploy/prometheus, deploy/grafana).
The route is public like Prometheus endpoints usually are: it holds run counts and timestamps,
no statistics, no subjects, no tokens.
"""

from __future__ import annotations

from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pushgrid.metrics.sqlstore.models import RUN_STATUSES, JobRun

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STATUSES = RUN_STATUSES


def _unix(moment: datetime | None) -> float:
    return moment.timestamp() if moment is not None else 0.0


def last_run_failed(db: Session) -> bool:
    """The most recent statistics run failed (the "statistics pipeline failing" signal too).
    Runs stopped by a clean shutdown (``interrupted``) say nothing about the pipeline: they are
    passed over, so a restart does not fire the alert (issue 34)."""
    judged = JobRun.status != "interrupted"
    last_run = db.scalars(select(JobRun).where(judged).order_by(JobRun.id.desc()).limit(1)).first()
    return last_run is not None and last_run.status == "failed"


def pipeline_families(db: Session) -> list[GaugeMetricFamily]:
    """The pipeline gauges, read from ``job_runs`` (a timestamp is 0 when there is no such run)."""
    rows = db.execute(select(JobRun.status, func.count()).group_by(JobRun.status))
    counts: dict[str, int] = {status: count for status, count in rows}
    last_ok = db.scalars(
        select(JobRun).where(JobRun.status == "succeeded").order_by(JobRun.id.desc()).limit(1)
    ).first()
    runs = GaugeMetricFamily(
        "pushgrid_stats_job_runs", "Statistics runs recorded, by status", labels=["status"]
    )
    for status in STATUSES:
        runs.add_metric([status], counts.get(status, 0))
    return [
        runs,
        GaugeMetricFamily(
            "pushgrid_stats_last_success_timestamp_seconds",
            "Unix time the last successful statistics run finished (0: none yet)",
            value=_unix(last_ok.finished_at if last_ok else None),
        ),
        GaugeMetricFamily(
            "pushgrid_stats_last_success_as_of_timestamp_seconds",
            "The instant the last successful run's statistics describe (0: none yet)",
            value=_unix(last_ok.as_of if last_ok else None),
        ),
        GaugeMetricFamily(
            "pushgrid_stats_last_run_failed",
            "1 when the most recent statistics run failed",
            value=1 if last_run_failed(db) else 0,
        ),
    ]


class _Snapshot:
    """A one-shot collector over families read beforehand (the registry API wants a collector)."""

    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self.families = families

    def collect(self) -> list[GaugeMetricFamily]:
        return self.families


def exposition(factory: sessionmaker[Session]) -> bytes:
    with factory() as db:
        families = pipeline_families(db)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(families))
    return generate_latest(registry)


async def _metrics(request: Request) -> Response:
    factory: sessionmaker[Session] = request.app.state.session_factory
    body = await run_in_threadpool(exposition, factory)
    return Response(body, media_type=CONTENT_TYPE)


route = Route("/metrics", _metrics, methods=["GET"], include_in_schema=False)
