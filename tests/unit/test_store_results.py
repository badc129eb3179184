"""Job runs, upserted results and readers against real SQLite files (one database per test)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from pushgrid.metrics import sqlstore
from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.sqlstore import results as sqlstore_results
from pushgrid.metrics.sqlstore.models import JobRun, TrendPoint, WindowStat, from_unix
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.spark_stats.results import PipelineResult
from pushgrid.spark_stats.synthetic_results import stat_frame, synthetic_result

AS_OF = 1_795_363_199  # 2026-11-22 15:59:59 UTC
NODES = ("push-1", "push-2")
KEYS_PER_AS_OF = (1 + len(NODES)) * len(INDICATOR_NAMES) * len(WINDOW_NAMES)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    sqlstore.upgrade(url)
    engine = sqlstore.make_engine(url)
    with sqlstore.make_session_factory(engine)() as s:
        yield s
    engine.dispose()


def _count(session: Session, model: type[WindowStat] | type[TrendPoint]) -> int:
    return session.scalar(select(func.count()).select_from(model)) or 0


def _run(session: Session) -> int:
    return sqlstore.start_run(session, master="local[2]").id


# --- job runs ---------------------------------------------------------------------------------


def test_run_lifecycle_succeeded(session: Session) -> None:
    before = datetime.now(UTC)
    run = sqlstore.start_run(session, master="local[2]", as_of=AS_OF)
    assert run.id is not None
    assert run.status == "running"
    assert run.finished_at is None
    assert run.duration is None
    session.expunge_all()
    stored = sqlstore.get_run(session, run.id)
    assert stored.started_at.tzinfo is not None
    assert stored.started_at >= before - timedelta(seconds=1)
    assert stored.as_of == from_unix(AS_OF)

    result = synthetic_result(AS_OF, NODES)
    finished = sqlstore.finish_run(
        session,
        run.id,
        status="succeeded",
        as_of=AS_OF + 1,
        input_rows=14_400,
        output_rows=123,
        stages=result.stages,
    )
    assert finished.status == "succeeded"
    session.expunge_all()
    stored = sqlstore.get_run(session, run.id)
    assert stored.status == "succeeded"
    assert stored.as_of == from_unix(AS_OF + 1)
    assert (stored.input_rows, stored.output_rows) == (14_400, 123)
    assert stored.error is None
    assert stored.finished_at is not None
    assert stored.finished_at >= stored.started_at
    assert stored.duration is not None
    assert stored.duration >= 0
    assert stored.stages == [dataclasses.asdict(stage) for stage in result.stages]


def test_run_lifecycle_failed_keeps_the_error(session: Session) -> None:
    run_id = _run(session)
    sqlstore.finish_run(session, run_id, status="failed", error="boom\n" + "x" * 50_000)
    session.expunge_all()
    stored = sqlstore.get_run(session, run_id)
    assert stored.status == "failed"
    assert stored.error is not None
    assert stored.error.startswith("boom\n")
    assert len(stored.error) == sqlstore.MAX_ERROR_CHARS
    assert stored.as_of is None
    assert stored.input_rows is None


def test_finish_run_rejects_bad_status_and_unknown_runs(session: Session) -> None:
    run_id = _run(session)
    with pytest.raises(ValueError, match="succeeded, failed or interrupted"):
        sqlstore.finish_run(session, run_id, status="running")
    with pytest.raises(sqlstore.StoreError, match="no job run 999"):
        sqlstore.finish_run(session, 999, status="failed", error="x")
    assert sqlstore.get_run(session, run_id).status == "running"


def test_latest_runs_newest_first_with_limit(session: Session) -> None:
    ids = [_run(session) for _ in range(5)]
    assert [r.id for r in sqlstore.latest_runs(session, 3)] == ids[::-1][:3]
    assert [r.id for r in sqlstore.latest_runs(session)] == ids[::-1]


def test_deleting_a_run_keeps_its_rows_without_a_run(session: Session) -> None:
    run_id = _run(session)
    sqlstore.write_results(session, run_id, synthetic_result(AS_OF, NODES, trend_points=1))
    session.execute(delete(JobRun).where(JobRun.id == run_id))
    session.commit()
    assert _count(session, WindowStat) == KEYS_PER_AS_OF
    assert session.scalar(select(func.count()).where(WindowStat.run_id.is_not(None))) == 0


# --- writing results --------------------------------------------------------------------------


def test_write_results_then_rerun_replaces(session: Session) -> None:
    first = _run(session)
    written = sqlstore.write_results(session, first, synthetic_result(AS_OF, NODES, trend_points=3))
    assert written.window_stats == KEYS_PER_AS_OF
    assert written.trend_points == 3 * KEYS_PER_AS_OF
    assert written.total == 4 * KEYS_PER_AS_OF
    assert _count(session, WindowStat) == KEYS_PER_AS_OF
    assert _count(session, TrendPoint) == 3 * KEYS_PER_AS_OF
    old = sqlstore.window_stats(session, "cluster", "connected_users", "1h")[0]
    old_avg, old_computed = old.avg, old.computed_at
    assert old_avg is not None

    second = _run(session)
    sqlstore.write_results(
        session, second, synthetic_result(AS_OF, NODES, trend_points=3, offset=0.5)
    )
    session.expire_all()
    assert _count(session, WindowStat) == KEYS_PER_AS_OF  # replaced, not duplicated
    assert _count(session, TrendPoint) == 3 * KEYS_PER_AS_OF
    new = sqlstore.window_stats(session, "cluster", "connected_users", "1h")[0]
    assert new.avg == pytest.approx(old_avg + 0.5)
    assert new.run_id == second
    assert new.computed_at >= old_computed
    assert session.scalar(select(func.count()).where(TrendPoint.run_id != second)) == 0


def test_a_new_as_of_adds_rows_and_trend_points_accumulate(session: Session) -> None:
    sqlstore.write_results(session, _run(session), synthetic_result(AS_OF, NODES, trend_points=2))
    later = AS_OF + 3600
    sqlstore.write_results(session, _run(session), synthetic_result(later, NODES, trend_points=2))
    assert _count(session, WindowStat) == 2 * KEYS_PER_AS_OF
    # points AS_OF-3600, AS_OF, AS_OF+3600: the shared one (AS_OF) is upserted
    assert _count(session, TrendPoint) == 3 * KEYS_PER_AS_OF


def test_rerun_removes_window_stats_the_new_result_lacks(session: Session) -> None:
    sqlstore.write_results(session, _run(session), synthetic_result(AS_OF, ("a", "b", "gone")))
    sqlstore.write_results(session, _run(session), synthetic_result(AS_OF, ("a", "b")))
    scopes = {row.scope for row in sqlstore.window_stats(session)}
    assert scopes == {"cluster", "node:a", "node:b"}


def test_nulls_numpy_types_and_small_batches(session: Session) -> None:
    frame = stat_frame([AS_OF], NODES, empty_windows=("15mo",))
    frame["count"] = frame["count"].astype(np.int64)
    result = PipelineResult(AS_OF, frame, frame.iloc[0:0].copy())
    sqlstore.write_results(session, _run(session), result, batch_size=7)
    assert _count(session, WindowStat) == KEYS_PER_AS_OF
    empty = sqlstore.window_stats(session, "node:push-2", "outgoing_bytes_per_second", "15mo")[0]
    assert (empty.count, empty.max, empty.avg, empty.stddev) == (0, None, None, None)
    full = sqlstore.window_stats(session, "node:push-2", "outgoing_bytes_per_second", "15d")[0]
    assert full.count > 0
    assert full.avg is not None
    assert isinstance(full.count, int)
    assert not math.isnan(full.avg)


def test_bad_frames_are_refused_and_nothing_is_written(session: Session) -> None:
    run_id = _run(session)
    good = synthetic_result(AS_OF, NODES)
    missing = PipelineResult(AS_OF, good.window_stats.drop(columns=["stddev"]), good.trend_points)
    with pytest.raises(ValueError, match="window_stats: missing columns stddev"):
        sqlstore.write_results(session, run_id, missing)
    bad_trend = good.trend_points.copy()
    bad_trend["count"] = bad_trend["count"].astype(object)
    bad_trend.loc[bad_trend.index[-1], "count"] = "many"
    with pytest.raises(ValueError, match="trend_points: bad row"):
        sqlstore.write_results(session, run_id, PipelineResult(AS_OF, good.window_stats, bad_trend))
    with pytest.raises(sqlstore.StoreError, match="no job run 4242"):
        sqlstore.write_results(session, 4242, good)
    assert _count(session, WindowStat) == 0
    assert _count(session, TrendPoint) == 0


def test_a_failing_write_rolls_back_the_whole_call(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _run(session)
    upsert = sqlstore_results._upsert

    def failing_on_trend(s: Session, table: Any, rows: Any, size: int) -> None:
        if table.name == "trend_points":
            raise RuntimeError("disk full")
        upsert(s, table, rows, size)

    monkeypatch.setattr(sqlstore_results, "_upsert", failing_on_trend)
    with pytest.raises(RuntimeError, match="disk full"):
        sqlstore.write_results(session, run_id, synthetic_result(AS_OF, NODES))
    assert _count(session, WindowStat) == 0  # the window statistics went back too
    monkeypatch.setattr(sqlstore_results, "_upsert", upsert)
    sqlstore.write_results(session, run_id, synthetic_result(AS_OF, NODES))  # the session is usable
    assert _count(session, WindowStat) == KEYS_PER_AS_OF


# --- readers ----------------------------------------------------------------------------------


def test_window_stats_returns_the_latest_as_of_per_key(session: Session) -> None:
    sqlstore.write_results(session, _run(session), synthetic_result(AS_OF, NODES, trend_points=1))
    later = AS_OF + 3600
    # the later run only covers push-1: push-2's latest stays at AS_OF
    sqlstore.write_results(
        session, _run(session), synthetic_result(later, ("push-1",), trend_points=1)
    )
    rows = sqlstore.window_stats(session)
    assert len(rows) == KEYS_PER_AS_OF
    by_scope = {row.scope: row.as_of for row in rows}
    assert by_scope["cluster"] == from_unix(later)
    assert by_scope["node:push-1"] == from_unix(later)
    assert by_scope["node:push-2"] == from_unix(AS_OF)
    # order: cluster first, then nodes; indicators and windows in their documented order
    assert rows[0].scope == "cluster"
    assert [r.window for r in rows[: len(WINDOW_NAMES)]] == list(WINDOW_NAMES)
    assert rows[0].indicator == INDICATOR_NAMES[0]
    assert all(row.as_of.tzinfo is UTC for row in rows)

    one = sqlstore.window_stats(
        session, scope="node:push-2", indicator="connected_users", window="5m"
    )
    assert len(one) == 1
    assert one[0].to_dict()["as_of"] == AS_OF
    assert len(sqlstore.window_stats(session, window="1h")) == 3 * len(INDICATOR_NAMES)
    assert len(sqlstore.window_stats(session, indicator="connected_users")) == 3 * len(WINDOW_NAMES)
    assert sqlstore.window_stats(session, scope="node:nope") == []


def test_trend_series_with_bounds(session: Session) -> None:
    result = synthetic_result(AS_OF, NODES, trend_points=5, trend_step=600)
    sqlstore.write_results(session, _run(session), result)
    series = sqlstore.trend(session, "cluster", "connected_users", "1m")
    assert [p.to_dict()["as_of"] for p in series] == [AS_OF - k * 600 for k in (4, 3, 2, 1, 0)]
    middle = sqlstore.trend(session, "cluster", "connected_users", "1m", AS_OF - 1800, AS_OF - 600)
    assert [p.to_dict()["as_of"] for p in middle] == [AS_OF - 1800, AS_OF - 1200, AS_OF - 600]
    since = sqlstore.trend(
        session, "cluster", "connected_users", "1m", since=from_unix(AS_OF - 600)
    )
    assert len(since) == 2
    with pytest.raises(ValueError, match="naive datetime"):
        sqlstore.trend(session, "cluster", "connected_users", "1m", since=datetime(2026, 1, 1))
    assert sqlstore.trend(session, "cluster", "connected_users", "nope") == []


def test_to_dict_is_json_ready(session: Session) -> None:
    sqlstore.write_results(session, _run(session), synthetic_result(AS_OF, NODES, trend_points=1))
    row = sqlstore.window_stats(session, "cluster", "connected_users", "1m")[0].to_dict()
    assert set(row) == {
        "scope",
        "indicator",
        "window",
        "as_of",
        "count",
        "max",
        "avg",
        "stddev",
        "run_id",
        "computed_at",
    }
    assert row["as_of"] == AS_OF
    assert datetime.fromisoformat(row["computed_at"]).tzinfo is not None


def test_naive_datetimes_are_refused(session: Session) -> None:
    session.add(JobRun(started_at=datetime(2026, 1, 1), status="running"))
    with pytest.raises(Exception, match="naive datetime"):
        session.commit()
    session.rollback()


def test_a_repeated_key_in_one_frame_keeps_its_last_row(session: Session) -> None:
    good = synthetic_result(AS_OF, NODES)
    repeated = good.window_stats.iloc[:1].copy()
    repeated["avg"] = -1.0
    frame = pd.concat([good.window_stats, repeated], ignore_index=True)
    written = sqlstore.write_results(
        session, _run(session), PipelineResult(AS_OF, frame, good.trend_points)
    )
    assert written.window_stats == KEYS_PER_AS_OF
    first = good.window_stats.iloc[0]
    (row,) = sqlstore.window_stats(session, first["scope"], first["indicator"], first["window"])
    assert row.avg == -1.0


def test_delivery_windows_upsert_and_read_on_sqlite(session: Session) -> None:
    """ADR 062: migration 0014's table keeps inf (above the last bucket), a rerun replaces."""
    from pushgrid.spark_stats.synthetic_results import synthetic_delivery

    frame = synthetic_delivery(AS_OF, NODES)
    result = dataclasses.replace(synthetic_result(AS_OF, NODES), delivery_stats=frame)
    for _ in range(2):
        run = _run(session)
        assert sqlstore.write_results(session, run, result).delivery_stats == len(frame)
    stored = sqlstore.delivery_window_stats(session)
    assert len(stored) == len(frame) == 3 * len(WINDOW_NAMES)
    assert {r.run_id for r in stored} == {run}
    assert [r.window for r in stored[: len(WINDOW_NAMES)]] == list(WINDOW_NAMES)
    first = stored[0]
    assert (first.scope, first.series, first.count, first.p50) == ("cluster", "member", 100, 0.01)
    assert first.p999 == math.inf
    assert first.buckets == "30:60 31:39 71:1"
    assert (first.gaps, first.duplicates, first.recovery_failed) == (2, 0, 0)  # migration 0016
    from pushgrid.metrics.sqlstore import delivery_results
    from pushgrid.protocol.latency import LOSS_KINDS

    assert delivery_results.LOSS_KINDS == LOSS_KINDS
    assert sqlstore.delivery_window_stats(session, scope="node:push-2", series="x") == []
