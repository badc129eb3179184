"""Alembic migrations against real SQLite files: they create exactly the models' schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from pushgrid.metrics import sqlstore
from pushgrid.metrics.sqlstore.models import Base


def _url(path: Path) -> str:
    return f"sqlite:///{path}"


def test_upgrade_creates_the_models_schema(tmp_path: Path) -> None:
    url = _url(tmp_path / "nested" / "dir" / "pushgrid.db")  # parent directories are created
    assert sqlstore.upgrade(url) == sqlstore.head_revision() == "0016"
    engine = sqlstore.make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
        inspector = inspect(engine)
        assert set(inspector.get_table_names()) == {
            "alembic_version",
            "admin_members",
            "admin_tokens",
            "admin_audit",
            "alert_rules",
            "alert_events",
            "alert_silences",
            "alert_acks",
            "job_runs",
            "window_stats",
            "trend_points",
            "watched_window_stats",
            "delivery_window_stats",
            "admin_users",
            "admin_sessions",
            "slo_objectives",
            "slo_minutes",
        }
        uniques = inspector.get_unique_constraints("window_stats")
        assert [u["column_names"] for u in uniques] == [["scope", "indicator", "window", "as_of"]]
        watched = inspector.get_unique_constraints("watched_window_stats")
        assert [u["column_names"] for u in watched] == [
            ["pattern", "scope", "indicator", "window", "as_of"]
        ]
        delivery = inspector.get_unique_constraints("delivery_window_stats")
        assert [u["column_names"] for u in delivery] == [["scope", "series", "window", "as_of"]]
        indexes = {i["name"]: i for i in inspector.get_indexes("trend_points")}
        key = indexes["ix_trend_points_scope_indicator_window_as_of"]
        assert key["column_names"] == ["scope", "indicator", "window", "as_of"]
        assert key["unique"]
        fks = inspector.get_foreign_keys("window_stats")
        assert fks[0]["referred_table"] == "job_runs"
        assert fks[0]["options"].get("ondelete") == "SET NULL"
    finally:
        engine.dispose()


def test_upgrade_is_idempotent_and_downgrade_removes_everything(tmp_path: Path) -> None:
    url = _url(tmp_path / "p.db")
    assert sqlstore.current_revision(url) is None
    sqlstore.upgrade(url)
    assert sqlstore.upgrade(url) == sqlstore.head_revision()
    engine = sqlstore.make_engine(url)
    try:
        command.downgrade(sqlstore.alembic_config(url), "base")
        assert set(inspect(engine).get_table_names()) == {"alembic_version"}
        assert sqlstore.current_revision(engine) is None
        assert sqlstore.upgrade(url) == sqlstore.head_revision()
        assert sqlstore.has_schema(engine)
    finally:
        engine.dispose()


def test_upgrade_works_from_any_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert sqlstore.upgrade("sqlite:///relative/pushgrid.db") == sqlstore.head_revision()
    assert (elsewhere / "relative" / "pushgrid.db").is_file()


def test_sqlite_engine_uses_wal_and_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    sqlstore.upgrade(_url(path))
    engine = sqlstore.make_engine(_url(path))
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        engine.dispose()
    with sqlite3.connect(path) as raw:  # WAL is persistent in the file
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_autogenerate_finds_nothing_to_migrate(tmp_path: Path) -> None:
    """`alembic check`: the migrations are complete for the models."""
    url = _url(tmp_path / "c.db")
    sqlstore.upgrade(url)
    command.check(sqlstore.alembic_config(url))


def test_offline_sql_for_postgresql(capsys: pytest.CaptureFixture[str]) -> None:
    """The migration renders for PostgreSQL (the real server runs it in the integration suite)."""
    command.upgrade(
        sqlstore.alembic_config("postgresql://user@localhost/pushgrid"), "head", sql=True
    )
    sql = capsys.readouterr().out
    assert "CREATE TABLE job_runs" in sql
    assert "TIMESTAMP WITH TIME ZONE" in sql
    assert 'UNIQUE (scope, indicator, "window", as_of)' in sql
    assert "CREATE UNIQUE INDEX ix_trend_points_scope_indicator_window_as_of" in sql


def test_urls_are_normalised() -> None:
    assert sqlstore.normalize_url("postgresql://u:p@h/d").drivername == "postgresql+psycopg"
    assert sqlstore.normalize_url("postgres://u@h/d").drivername == "postgresql+psycopg"
    assert sqlstore.normalize_url("sqlite:///x.db").drivername == "sqlite"
    assert sqlstore.display_url("postgresql://u:secret@h/d") == "postgresql+psycopg://u:***@h/d"
    with pytest.raises(sqlstore.StoreError, match="invalid database URL"):
        sqlstore.normalize_url("not a url")
