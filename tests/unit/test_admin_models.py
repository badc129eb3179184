"""The admin API's tables (migration 0002 = the models) and its database services, on SQLite."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, select
from sqlalchemy.orm import Session, sessionmaker

from pushgrid.admin_api.problems import ProblemError
from pushgrid.admin_api.schemas import MemberCreate
from pushgrid.admin_api.security import Role, hash_token
from pushgrid.admin_api.services.audit import AuditRecord, AuditService, outcome_of
from pushgrid.admin_api.services.jobs import JobRunner, JobService
from pushgrid.admin_api.services.members import MemberService, configured_members
from pushgrid.admin_api.services.tokens import TokenService
from pushgrid.config import Settings, load_settings
from pushgrid.metrics import sqlstore
from pushgrid.metrics.sqlstore.admin_models import ApiToken, AuditEntry, RegisteredMember
from pushgrid.metrics.sqlstore.models import Base, utc_now
from pushgrid.spark_stats.locking import warehouse_lock

ADMIN_TABLES = {"admin_members", "admin_tokens", "admin_audit"}


@pytest.fixture
def url(tmp_path: Path) -> str:
    address = f"sqlite:///{tmp_path / 'admin.db'}"
    sqlstore.upgrade(address)
    return address


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    engine = sqlstore.make_engine(url)
    yield engine
    engine.dispose()


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    return sqlstore.make_session_factory(engine)


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    options: dict[str, object] = {
        "admin_members": ["a=http://10.0.0.1:8900/", "b=http://10.0.0.2:8900"],
        "admin_member_username": "mon",
        "admin_member_password": "pw",
        "database": f"sqlite:///{tmp_path / 'x.db'}",
        **overrides,
    }
    return load_settings(None, environ={}, **options)


# --- schema -----------------------------------------------------------------------------------


def test_migration_0002_creates_exactly_the_models(engine: Engine) -> None:
    assert sqlstore.current_revision(engine) == "0016"
    assert set(Base.metadata.tables) >= ADMIN_TABLES
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    inspector = inspect(engine)
    assert set(inspector.get_table_names()) >= ADMIN_TABLES
    uniques = inspector.get_unique_constraints("admin_tokens")
    assert [u["column_names"] for u in uniques] == [["token_hash"]]
    assert [i["column_names"] for i in inspector.get_indexes("admin_audit")] == [["at"]]


def test_migration_0002_downgrades_to_0001(url: str, engine: Engine) -> None:
    command.downgrade(sqlstore.alembic_config(url), "0001")
    names = set(inspect(engine).get_table_names())
    assert not names & ADMIN_TABLES
    assert {"job_runs", "window_stats", "trend_points"} <= names
    assert sqlstore.upgrade(url) == "0016"


def test_role_is_checked_by_the_database(factory: sessionmaker[Session]) -> None:
    from sqlalchemy.exc import IntegrityError

    with factory() as session:
        session.add(ApiToken(id="x", name="x", role="root", token_hash="h", prefix="p"))
        with pytest.raises(IntegrityError):
            session.commit()


# --- tokens -----------------------------------------------------------------------------------


def test_tokens_are_stored_hashed_and_authenticate(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        created = TokenService(session).create("ops", Role.OPERATOR, created_by="cli")
    token = created.token
    with factory() as session:
        row = session.get(ApiToken, created.id)
        assert row is not None
        assert row.token_hash == hash_token(token)
        stored = [row.id, row.name, row.role, row.token_hash, row.prefix, row.created_by]
        assert token not in stored
        assert row.last_used_at is None
        principal = TokenService(session).authenticate(token)
        assert principal is not None
        assert (principal.name, principal.role, principal.token_id) == (
            "ops",
            Role.OPERATOR,
            created.id,
        )
        assert TokenService(session).authenticate(token + "x") is None
        assert TokenService(session).authenticate("nonsense") is None
    with factory() as session:
        row = session.get(ApiToken, created.id)
        assert row is not None
        assert row.last_used_at is not None
        first_use = row.last_used_at
        TokenService(session).authenticate(token)  # within a minute: not written again
        session.expire_all()
        assert session.get(ApiToken, created.id).last_used_at == first_use  # type: ignore[union-attr]


def test_revoked_tokens_no_longer_authenticate(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        service = TokenService(session)
        created = service.create("x", Role.ADMIN)
        assert service.has_active(Role.ADMIN)
        revoked = service.revoke(created.id)
        assert revoked.revoked
        assert revoked.revoked_at is not None
        assert service.revoke(created.id).revoked_at == revoked.revoked_at  # idempotent
        assert service.authenticate(created.token) is None
        assert not service.has_active(Role.ADMIN)
        with pytest.raises(ProblemError) as missing:
            service.revoke("nope")
        assert missing.value.status == 404
        assert [t.name for t in service.list()] == ["x"]


# --- members ----------------------------------------------------------------------------------


def test_configured_members_use_the_shared_credentials(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    members = configured_members(settings.admin, settings.jmx)
    assert [(m.name, m.monitor_url, m.source) for m in members] == [
        ("a", "http://10.0.0.1:8900", "config"),
        ("b", "http://10.0.0.2:8900", "config"),
    ]
    assert all(m.username == "mon" and m.password == "pw" for m in members)


def test_registered_members_merge_after_configured_ones(
    tmp_path: Path, factory: sessionmaker[Session]
) -> None:
    settings = _settings(tmp_path)
    with factory() as session:
        service = MemberService(session, settings.admin, settings.jmx)
        service.register(
            MemberCreate(name="z", monitor_url="http://10.0.0.9:8900", username="u", password="p"),
            "admin",
        )
        service.register(MemberCreate(name="c", monitor_url="http://10.0.0.3:8900"), None)
        assert [m.name for m in service.all()] == ["a", "b", "c", "z"]
        z = service.get("z")
        assert (z.source, z.username, z.password) == ("registered", "u", "p")
        for name, status in (("a", 409), ("z", 409)):
            with pytest.raises(ProblemError) as conflict:
                service.register(MemberCreate(name=name, monitor_url="http://h:1"), None)
            assert conflict.value.status == status
        with pytest.raises(ProblemError) as read_only:
            service.remove("a")
        assert read_only.value.code == "member_read_only"
        service.remove("z")
        with pytest.raises(ProblemError) as gone:
            service.get("z")
        assert gone.value.status == 404
    with factory() as session:
        assert [row.name for row in session.scalars(select(RegisteredMember))] == ["c"]


# --- audit ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, "succeeded"),
        (201, "succeeded"),
        (204, "succeeded"),
        (401, "denied"),
        (403, "denied"),
        (404, "failed"),
        (409, "failed"),
        (422, "failed"),
        (502, "failed"),
    ],
)
def test_outcome_of_a_status(status: int, outcome: str) -> None:
    assert outcome_of(status) == outcome


def test_audit_page_filters_newest_first(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        service = AuditService(session)
        now = utc_now()
        for index, (actor, action, status) in enumerate(
            [("a", "x.one", 200), ("b", "x.two", 403), ("a", "x.two", 502), (None, "x.one", 401)]
        ):
            service.record(
                AuditRecord(
                    method="POST",
                    path="/api/v1/x",
                    action=action,
                    status=status,
                    actor=actor,
                    detail="d" * 5000 if index == 0 else None,
                    at=now + timedelta(seconds=index),
                )
            )
        page = service.page()
        assert page.total == 4
        assert [e.action for e in page.items] == ["x.one", "x.two", "x.two", "x.one"]
        assert [e.id for e in page.items] == sorted((e.id for e in page.items), reverse=True)
        assert len(page.items[-1].detail or "") == 2000  # clipped
        assert service.page(actor="a").total == 2
        assert service.page(action="x.two").total == 2
        assert [e.status for e in service.page(outcome="denied").items] == [401, 403]
        assert [e.status for e in service.page(outcome="failed").items] == [502]
        assert service.page(outcome="succeeded").total == 1
        assert service.page(since=now + timedelta(seconds=2)).total == 2
        assert [e.status for e in service.page(offset=1, limit=2).items] == [502, 403]
        assert session.scalar(select(AuditEntry.path).limit(1)) == "/api/v1/x"


# --- jobs -------------------------------------------------------------------------------------


def test_job_runner_command(tmp_path: Path) -> None:
    settings = _settings(tmp_path, metrics_archive=str(tmp_path / "arch"), spark_master="local[2]")
    runner = JobRunner(settings.stats, settings.metrics_archive, tmp_path / "log")
    assert runner.argv(123) == [
        sys.executable, "-m", "pushgrid", "stats", "run",
        "--db", settings.database,
        "--archive", str(tmp_path / "arch"),
        "--warehouse", str(settings.stats_warehouse),
        "--master", "local[2]",
        "--as-of", "123",
    ]  # fmt: skip
    assert not runner.busy


def test_job_runner_refusals(tmp_path: Path, url: str, factory: sessionmaker[Session]) -> None:
    no_archive_settings = _settings(tmp_path, metrics_archive="off", database=url)
    off = JobRunner(
        no_archive_settings.stats, no_archive_settings.metrics_archive, tmp_path / "log"
    )
    with pytest.raises(ProblemError) as no_archive:
        off.trigger(factory, None, "t")
    assert (no_archive.value.status, no_archive.value.code) == (409, "no_metrics_archive")

    settings = _settings(tmp_path, metrics_archive=str(tmp_path), database=url)
    broken = JobRunner(
        settings.stats,
        settings.metrics_archive,
        tmp_path / "log",
        python="/bin/false",
        start_timeout=5,
    )
    with pytest.raises(ProblemError) as failed:
        broken.trigger(factory, None, "t")
    assert (failed.value.status, failed.value.code) == (500, "job_not_started")
    assert "exited with 1" in failed.value.detail
    assert "triggered by t" in (tmp_path / "log").read_text()

    with factory() as session:
        run = sqlstore.start_run(session, master="local[*]")
        old = sqlstore.start_run(session, started_at=utc_now() - timedelta(days=2))
        assert JobService(session).get(run.id).status == "running"
        assert JobService(session).page().total == 2
        assert JobService(session).page(status="succeeded").total == 0
        assert [r.id for r in JobService(session).page().items] == [old.id, run.id]
    runner = JobRunner(settings.stats, settings.metrics_archive, tmp_path / "log")
    # a run holds the warehouse lock: refused, naming the newest running run
    with warehouse_lock(settings.stats_warehouse), pytest.raises(ProblemError) as running:
        runner.trigger(factory, None, "t")
    assert running.value.code == "job_running"
    assert f"run {run.id} " in running.value.detail
    # `running` rows without a lock holder were killed: they do not block a new run
    with pytest.raises(ProblemError) as started:
        broken.trigger(factory, None, "t")
    assert started.value.code == "job_not_started"
