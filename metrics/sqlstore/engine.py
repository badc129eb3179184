"""Engines, SQL sessions and the one transaction helper of the SQL store.

Databases: SQLite (``sqlite:///data/pushgrid.db``, the embedded default; the parent directory is
created, WAL journal, foreign keys on) and PostgreSQL through psycopg 3
(``postgresql+psycopg://user:password@host/db``; a plain ``postgresql://`` or ``postgres://`` URL
is given the psycopg driver).

Every writer of the store (the statistics runs, the admin API's services) wraps its unit of work
in :func:`transaction`: it commits on success and rolls back on error, so no caller commits or
rolls back by hand.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker

from pushgrid.protocol.exceptions import StatsError

__all__ = [
    "StoreError",
    "display_url",
    "make_engine",
    "make_session_factory",
    "normalize_url",
    "session_scope",
    "transaction",
]


class StoreError(StatsError):
    """A store problem worth a one-line message (bad URL, missing migrations, unknown run)."""

    code = "store"


# --- engines and SQL sessions---------------------------------------------------------------------


def normalize_url(url: str | URL) -> URL:
    """Parse a database URL; PostgreSQL without a driver gets psycopg 3."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"invalid database URL {str(url)!r}: {exc}") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def display_url(url: str | URL) -> str:
    """The URL with its password hidden (for messages)."""
    try:
        return normalize_url(url).render_as_string(hide_password=True)
    except StoreError:
        return str(url)


def _sqlite_file(url: URL) -> Path | None:
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def private_database_file(path: Path) -> None:
    """Create the SQLite file (or tighten an existing one) readable by its owner only, whatever
    the umask: it holds admin token hashes and members' credentials (issue 22). SQLite gives its
    ``-wal``/``-shm``/``-journal`` files the database file's mode; existing ones are tightened.

    An existing file is never opened here: closing any descriptor of a database file drops the
    POSIX locks every SQLite connection of this process holds on it (chmod needs none)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:  # new: nobody in this process has it open
        try:
            os.fchmod(descriptor, 0o600)
        finally:
            os.close(descriptor)
    for suffix in ("", "-wal", "-shm", "-journal"):
        file = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError, PermissionError):
            if file.stat().st_mode & 0o077:
                file.chmod(0o600)


def make_engine(url: str | URL, *, echo: bool = False) -> Engine:
    """An engine for ``url``; SQLite gets its directory, a private file (0600), WAL and
    foreign keys."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = _sqlite_file(parsed)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            private_database_file(path)
        engine = create_engine(parsed, echo=echo, connect_args={"timeout": 30})
        wal = path is not None

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("PRAGMA foreign_keys=ON")
                if wal:
                    cursor.execute("PRAGMA journal_mode=WAL")
                    cursor.execute("PRAGMA synchronous=NORMAL")
            finally:
                cursor.close()

        return engine
    try:
        return create_engine(parsed, echo=echo, pool_pre_ping=True)
    except ModuleNotFoundError as exc:
        raise StoreError(
            f"no driver for {display_url(parsed)}: {exc} (PostgreSQL needs psycopg: "
            "pip install 'psycopg[binary]')"
        ) from None


def make_session_factory(bind: Engine | str | URL) -> sessionmaker[Session]:
    """SQL sessions on ``bind`` (an engine, or a URL to make one); objects outlive commits."""
    engine = bind if isinstance(bind, Engine) else make_engine(bind)
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(url: str | URL) -> Iterator[Session]:
    """An SQL session on a fresh engine for ``url``, closed and disposed of at the end."""
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            yield session
    finally:
        engine.dispose()


@contextmanager
def transaction(db: Session) -> Iterator[Session]:
    """One unit of work on ``db``: committed on success (with anything the caller left
    pending), rolled back on any error or interruption, which is then raised again."""
    try:
        yield db
        db.commit()
    except BaseException:
        db.rollback()
        raise
