"""The admin API's migration (0002) and database services on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from pushgrid.admin_api.main import create_app
from pushgrid.admin_api.security import Role, hash_token
from pushgrid.admin_api.services.tokens import TokenService
from pushgrid.config import load_settings
from pushgrid.metrics import sqlstore
from pushgrid.metrics.sqlstore.models import Base

from .postgres import PostgresServer, running_postgres

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with running_postgres() as server:
        yield server


@pytest.fixture
def url(pg: PostgresServer) -> str:
    address = pg.create_database("pushgrid_admin")
    sqlstore.upgrade(address)
    return address


def test_migration_0002_on_postgresql(url: str) -> None:
    engine = sqlstore.make_engine(url)
    try:
        with engine.connect() as connection:
            assert connection.dialect.name == "postgresql"
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
            kind = connection.execute(
                text(
                    "SELECT data_type FROM information_schema.columns "
                    "WHERE table_name = 'admin_audit' AND column_name = 'at'"
                )
            ).scalar()
            assert kind == "timestamp with time zone"
        inspector = inspect(engine)
        assert [c["name"] for c in inspector.get_check_constraints("admin_tokens")] == [
            "ck_admin_tokens_role"
        ]
    finally:
        engine.dispose()
    assert sqlstore.current_revision(url) == sqlstore.head_revision()
    command.downgrade(sqlstore.alembic_config(url), "0001")  # through 0003 (alerts) and 0002
    assert sqlstore.current_revision(url) == "0001"
    assert sqlstore.upgrade(url) == sqlstore.head_revision()


async def test_tokens_and_audit_on_postgresql(url: str) -> None:
    engine = sqlstore.make_engine(url)
    factory = sqlstore.make_session_factory(engine)
    try:
        with factory() as session:
            created = TokenService(session).create("pg-admin", Role.ADMIN)
        settings = load_settings(None, environ={}, database=url, admin_members=[])
        app = create_app(settings, factory)
        headers = {"authorization": f"Bearer {created.token}"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://admin.test", headers=headers
        ) as api:
            made = await api.post("/api/v1/tokens", json={"name": "v", "role": "viewer"})
            assert made.status_code == 201, made.text
            audit = (await api.get("/api/v1/audit")).json()
            assert [e["action"] for e in audit["items"]] == ["tokens.create"]
            assert audit["items"][0]["actor"] == "pg-admin"
        with engine.connect() as connection:
            hashes = set(connection.execute(text("SELECT token_hash FROM admin_tokens")).scalars())
        assert hashes == {hash_token(created.token), hash_token(made.json()["token"])}
    finally:
        engine.dispose()
