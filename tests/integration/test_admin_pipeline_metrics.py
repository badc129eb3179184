"""The admin API's public ``/metrics``: the statistics pipeline's freshness from ``job_runs``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from pushgrid.metrics.sqlstore.models import JobRun

from .pgtest import AdminHarness, parse_prometheus


@pytest.fixture
def harness(tmp_path) -> Iterator[AdminHarness]:
    admin = AdminHarness(tmp_path / "metrics", [])
    yield admin
    admin.close()


async def scrape(admin: AdminHarness) -> dict[str, float]:
    async with admin.client(role=None) as http:  # public, like Prometheus scrapes it
        response = await http.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = parse_prometheus(response.text)
    return {
        name + "".join(f"{{{k}={v}}}" for k, v in labels): value
        for (name, labels), value in samples.items()
    }


def add_run(admin: AdminHarness, status: str, finished: datetime | None, as_of: datetime) -> None:
    with admin.session_factory() as session:
        session.add(JobRun(status=status, finished_at=finished, as_of=as_of))
        session.commit()


async def test_no_run_yet_reads_zero(harness):
    metrics = await scrape(harness)
    assert metrics["pushgrid_stats_last_success_timestamp_seconds"] == 0
    assert metrics["pushgrid_stats_last_run_failed"] == 0
    for status in ("running", "succeeded", "failed"):
        assert metrics[f"pushgrid_stats_job_runs{{status={status}}}"] == 0


async def test_the_last_success_stays_when_a_later_run_fails(harness):
    now = datetime.now(UTC).replace(microsecond=0)
    add_run(harness, "succeeded", now - timedelta(minutes=20), now - timedelta(hours=1))
    add_run(harness, "succeeded", now - timedelta(minutes=10), now - timedelta(minutes=50))
    add_run(harness, "failed", now - timedelta(minutes=5), now - timedelta(minutes=45))
    add_run(harness, "running", None, now - timedelta(minutes=40))
    metrics = await scrape(harness)
    assert (
        metrics["pushgrid_stats_last_success_timestamp_seconds"]
        == (now - timedelta(minutes=10)).timestamp()
    )
    assert (
        metrics["pushgrid_stats_last_success_as_of_timestamp_seconds"]
        == (now - timedelta(minutes=50)).timestamp()
    )
    assert metrics["pushgrid_stats_last_run_failed"] == 0  # the newest run is still running
    assert metrics["pushgrid_stats_job_runs{status=succeeded}"] == 2
    assert metrics["pushgrid_stats_job_runs{status=failed}"] == 1
    assert metrics["pushgrid_stats_job_runs{status=running}"] == 1


async def test_a_failed_newest_run_is_flagged(harness):
    now = datetime.now(UTC)
    add_run(harness, "failed", now, now - timedelta(hours=1))
    metrics = await scrape(harness)
    assert metrics["pushgrid_stats_last_run_failed"] == 1
    assert metrics["pushgrid_stats_last_success_timestamp_seconds"] == 0


async def test_a_run_interrupted_by_a_shutdown_is_no_failure(harness):
    """Issue 34: `pushgrid up` stopped mid-run, started again: StatsPipelineFailing stayed
    quiet only if the interrupted run is passed over (the run before it decides)."""
    now = datetime.now(UTC)
    add_run(harness, "succeeded", now - timedelta(minutes=10), now - timedelta(hours=1))
    add_run(harness, "interrupted", now, now - timedelta(minutes=50))
    metrics = await scrape(harness)
    assert metrics["pushgrid_stats_last_run_failed"] == 0
    assert metrics["pushgrid_stats_job_runs{status=interrupted}"] == 1
    assert metrics["pushgrid_stats_job_runs{status=failed}"] == 0
    add_run(harness, "failed", now, now - timedelta(minutes=40))
    add_run(harness, "interrupted", now, now - timedelta(minutes=30))
    metrics = await scrape(harness)
    assert metrics["pushgrid_stats_last_run_failed"] == 1, "a failure before it still counts"
