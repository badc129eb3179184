"""Alembic environment of pushgrid's SQL store.

Target metadata: ``metrics.sqlstore.Base.metadata`` (importing the package registers every
table: the statistics and the admin API's). Database, in order: a connection handed over by
``metrics.sqlstore.upgrade`` (``config.attributes["connection"]``), ``-x url=...``, then
``sqlalchemy.url`` of alembic.ini. SQLite is migrated in batch mode (ALTER by table copy).

Installed, this directory is the package ``metrics.sqlstore.migrations`` (ADR 015).
"""

from __future__ import annotations

from logging.config import fileConfig
from typing import Any, Literal

from alembic import context
from sqlalchemy.engine import Connection

from pushgrid.metrics.sqlstore import Base
from pushgrid.metrics.sqlstore.engine import make_engine, normalize_url
from pushgrid.metrics.sqlstore.models import UTCDateTime

config = context.config

if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name)

target_metadata = Base.metadata


def _url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise RuntimeError("no database URL: pass -x url=... or set sqlalchemy.url")
    return normalize_url(url).render_as_string(hide_password=False)


def _render_item(type_: str, obj: Any, autogen_context: Any) -> str | Literal[False]:
    """Autogenerate writes UTCDateTime as its plain SQL type: migrations import no app code."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(connection: Connection | None = None, url: str | None = None) -> None:
    if connection is not None:
        dialect = connection.dialect.name
    else:
        dialect = normalize_url(url or "").get_backend_name()
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        render_as_batch=dialect == "sqlite",
        compare_type=True,
        render_item=_render_item,
        literal_binds=connection is None,
        dialect_opts={"paramstyle": "named"} if connection is None else {},
    )


def run_migrations_offline() -> None:
    """``alembic upgrade --sql``: print the SQL instead of running it."""
    _configure(url=_url())
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(_url())
    try:
        with engine.connect() as connection:
            _configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
