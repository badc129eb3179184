"""The store's schema migrations (Alembic), wherever pushgrid is installed.

The migrations live in the repository's top-level ``alembic/`` directory; the build maps that
directory to the package :data:`MIGRATIONS_PACKAGE` (``pyproject.toml``, ``package-dir``), so a
wheel carries them and an editable install finds them through the same name. They are found with
:mod:`importlib.resources`, never from the current directory or this file's location: ``pushgrid
db upgrade`` works from any directory, from a checkout or from an installed wheel (ADR 015).
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import URL, Engine, inspect

from .engine import StoreError, make_engine, normalize_url

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = [
    "MIGRATIONS_PACKAGE",
    "alembic_config",
    "current_revision",
    "has_schema",
    "head_revision",
    "migrations_dir",
    "upgrade",
]

MIGRATIONS_PACKAGE: Final = "pushgrid.metrics.sqlstore.migrations"


def migrations_dir() -> Path:
    """The directory holding ``env.py`` and ``versions/`` (a real directory: Alembic needs one)."""
    try:
        # joinpath on the package's files: a Path for a plain or a namespace package alike
        env = resources.files(MIGRATIONS_PACKAGE).joinpath("env.py")
    except ModuleNotFoundError:
        env = None
    if not isinstance(env, Path) or not env.is_file():
        raise StoreError(
            f"the Alembic migrations ({MIGRATIONS_PACKAGE}) are not installed: reinstall "
            "pushgrid (pip install pushgrid, or `make install` in a checkout)"
        )
    return env.parent


def alembic_config(url: str | URL | None = None, connection: Any = None) -> Config:
    """The Alembic configuration of the store, usable from any current directory.

    ``script_location`` is the installed migrations (:func:`migrations_dir`); no ``alembic.ini``
    is read (it is only for the plain ``alembic`` command in a checkout);
    ``connection`` (a SQLAlchemy Connection), when given, is the one ``alembic/env.py`` migrates.
    """
    from alembic.config import Config

    script_location = migrations_dir()
    # stdout: the current one (Config's default is whatever sys.stdout was at import time).
    config = Config(None, stdout=sys.stdout)
    config.set_main_option("script_location", str(script_location))
    config.set_main_option("path_separator", "os")
    if url is not None:
        rendered = normalize_url(url).render_as_string(hide_password=False)
        config.set_main_option("sqlalchemy.url", rendered.replace("%", "%%"))
    config.attributes["configure_logger"] = False
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    """The newest migration (the head of ``alembic/versions``)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(bind: Engine | str | URL) -> str | None:
    """The revision the database is at (``None``: never migrated)."""
    from alembic.runtime.migration import MigrationContext

    engine = bind if isinstance(bind, Engine) else make_engine(bind)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        if engine is not bind:
            engine.dispose()


def upgrade(url: str | URL, revision: str = "head") -> str | None:
    """Apply the migrations up to ``revision``; return the revision the database is now at."""
    from alembic import command

    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            command.upgrade(alembic_config(url, connection=connection), revision)
        return current_revision(engine)
    finally:
        engine.dispose()


def has_schema(engine: Engine) -> bool:
    """Whether the statistics tables exist (``pushgrid db upgrade`` was run)."""
    names = set(inspect(engine).get_table_names())
    return {"job_runs", "window_stats", "trend_points"} <= names
