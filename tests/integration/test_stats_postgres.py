"""The SQL store on a real PostgreSQL server: migrations, upserts, readers, job runs.

The server is private to this module (tests/integration/postgres.py: Debian ``postgresql``,
installed when missing and we are root; the module is skipped only if that is impossible).
The end-to-end ``stats run`` against PostgreSQL is in test_stats_cli.py.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from datetime import UTC, timedelta, timezone

import pandas as pd
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import func, inspect, select, text
from sqlalchemy.orm import Session

from pushgrid.metrics import sqlstore
from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.sqlstore.models import Base, TrendPoint, WindowStat, from_unix
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.spark_stats.results import STAT_COLUMNS
from pushgrid.spark_stats.synthetic_results import synthetic_delivery, synthetic_result

from .postgres import PostgresServer, running_postgres

AS_OF = 1_795_363_199  # 2026-11-22 15:59:59 UTC
NODES = ("push-1", "push-2")
KEYS = (1 + len(NODES)) * len(INDICATOR_NAMES) * len(WINDOW_NAMES)
_names = itertools.count(1)


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


@pytest.fixture
def url(pg: PostgresServer) -> str:
    """A fresh database per test, migrated to head."""
    database_url = pg.create_database(f"store_{next(_names)}")
    assert sqlstore.upgrade(database_url) == sqlstore.head_revision()
    return database_url


@pytest.fixture
def session(url: str) -> Iterator[Session]:
    with sqlstore.session_scope(url) as s:
        yield s


def _count(session: Session, model: type[WindowStat] | type[TrendPoint]) -> int:
    return session.scalar(select(func.count()).select_from(model)) or 0


def test_migrations_create_the_models_schema(url: str) -> None:
    engine = sqlstore.make_engine(url)
    try:
        with engine.connect() as connection:
            assert connection.dialect.name == "postgresql"
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
            column = connection.execute(
                text(
                    "SELECT data_type FROM information_schema.columns "
                    "WHERE table_name = 'window_stats' AND column_name = 'as_of'"
                )
            ).scalar()
            assert column == "timestamp with time zone"
        inspector = inspect(engine)
        assert {"job_runs", "window_stats", "trend_points"} <= set(inspector.get_table_names())
        checks = inspector.get_check_constraints("job_runs")
        assert [c["name"] for c in checks] == ["ck_job_runs_status"]
    finally:
        engine.dispose()
    # idempotent, and reversible
    assert sqlstore.upgrade(url) == sqlstore.head_revision()
    command.downgrade(sqlstore.alembic_config(url), "base")
    assert sqlstore.current_revision(url) is None
    assert sqlstore.upgrade(url) == sqlstore.head_revision()


def test_upsert_replaces_on_postgresql(session: Session) -> None:
    first = sqlstore.start_run(session, master="local[2]").id
    written = sqlstore.write_results(session, first, synthetic_result(AS_OF, NODES, trend_points=3))
    assert written.total == 4 * KEYS
    second = sqlstore.start_run(session, master="local[2]").id
    result = synthetic_result(AS_OF, NODES, trend_points=3, offset=2.0)
    sqlstore.write_results(session, second, result, batch_size=50)
    assert _count(session, WindowStat) == KEYS
    assert _count(session, TrendPoint) == 3 * KEYS
    (row,) = sqlstore.window_stats(session, "node:push-1", "connected_users", "5d")
    expected = result.window_stats.query(
        "scope == 'node:push-1' and indicator == 'connected_users' and window == '5d'"
    )
    assert row.avg == pytest.approx(float(expected["avg"].iloc[0]))
    assert row.run_id == second
    assert row.as_of == from_unix(AS_OF)
    assert row.as_of.tzinfo is UTC


def test_readers_on_postgresql(session: Session) -> None:
    run = sqlstore.start_run(session).id
    sqlstore.write_results(session, run, synthetic_result(AS_OF - 3600, NODES, trend_points=4))
    sqlstore.write_results(session, run, synthetic_result(AS_OF, ("push-1",), trend_points=1))
    latest = {r.scope: r.as_of for r in sqlstore.window_stats(session, indicator="connected_users")}
    assert latest == {
        "cluster": from_unix(AS_OF),
        "node:push-1": from_unix(AS_OF),
        "node:push-2": from_unix(AS_OF - 3600),
    }
    series = sqlstore.trend(session, "node:push-2", "connected_users", "1m")
    assert [p.to_dict()["as_of"] for p in series] == [AS_OF - 3600 * k for k in (4, 3, 2, 1)]
    # bounds as aware datetimes in another zone
    plus_two = timezone(timedelta(hours=2))
    since = from_unix(AS_OF - 3 * 3600).astimezone(plus_two)
    assert len(sqlstore.trend(session, "node:push-2", "connected_users", "1m", since=since)) == 3


def test_job_run_lifecycle_on_postgresql(session: Session) -> None:
    run = sqlstore.start_run(session, master="spark://spark:7077", as_of=AS_OF)
    result = synthetic_result(AS_OF, NODES)
    sqlstore.finish_run(
        session, run.id, status="succeeded", input_rows=10, output_rows=20, stages=result.stages
    )
    failed = sqlstore.start_run(session, master="local[*]")
    sqlstore.finish_run(session, failed.id, status="failed", error="Py4JJavaError: boom")
    session.expunge_all()
    newest, older = sqlstore.latest_runs(session, 2)
    assert (newest.status, newest.error) == ("failed", "Py4JJavaError: boom")
    assert older.status == "succeeded"
    assert older.stages == [dataclasses.asdict(stage) for stage in result.stages]
    assert older.as_of == from_unix(AS_OF)
    assert older.duration is not None
    assert older.duration >= 0


def test_watched_windows_upsert_on_postgresql(session: Session) -> None:
    """ADR 030: a pattern's windows (migration 0007) upsert on their five-column key."""
    rows = [
        ("/Stocks/*", scope, "subscribers", window, AS_OF, 60, 3.0, 2.0, 0.5)
        for scope in ("cluster", "node:push-1")
        for window in WINDOW_NAMES
    ]
    frame = pd.DataFrame(rows, columns=["pattern", *STAT_COLUMNS])
    result = dataclasses.replace(synthetic_result(AS_OF, NODES), watched_stats=frame)
    for _ in range(2):  # a rerun replaces
        run = sqlstore.start_run(session).id
        assert sqlstore.write_results(session, run, result).watched_stats == len(rows)
    stored = sqlstore.watched_window_stats(session, "/Stocks/*")
    assert len(stored) == len(rows)
    assert {r.run_id for r in stored} == {run}
    assert stored[0].scope == "cluster"
    assert sqlstore.watched_window_stats(session, "/Other/*") == []


def test_delivery_windows_upsert_on_postgresql(session: Session) -> None:
    """ADR 062: migration 0014's table on PostgreSQL: inf kept, a rerun replaces, the reader
    filters and orders."""
    frame = synthetic_delivery(AS_OF, NODES)
    result = dataclasses.replace(synthetic_result(AS_OF, NODES), delivery_stats=frame)
    for _ in range(2):
        run = sqlstore.start_run(session).id
        assert sqlstore.write_results(session, run, result).delivery_stats == len(frame)
    stored = sqlstore.delivery_window_stats(session, scope="node:push-1")
    assert [r.window for r in stored] == list(WINDOW_NAMES)
    assert {(r.series, r.run_id) for r in stored} == {("member", run)}
    assert (stored[0].count, stored[0].p50, stored[0].p999) == (100, 0.01, float("inf"))
    assert stored[-1].buckets == "30:720 31:468 71:12"
