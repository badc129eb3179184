"""Engine, sessions, migrations and the service functions of the statistics store.

Databases: SQLite (``sqlite:///data/pushgrid.db``, the embedded default; the parent directory is
created, WAL journal, foreign keys on) and PostgreSQL through psycopg 3
(``postgresql+psycopg://user:password@host/db``; a plain ``postgresql://`` or ``postgres://`` URL
is given the psycopg driver).

The schema belongs to the Alembic migrations in ``alembic/`` at the repository root:
:func:`upgrade` applies them programmatically (what ``pushgrid db upgrade`` runs), wherever the
current directory is.

Service functions take a :class:`~sqlalchemy.orm.Session`; each writer is one transaction: it
commits on success (together with anything the caller left pending) and rolls back on error.
Readers only read. Nothing here imports pyspark or pandas at module level.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import (
    URL,
    Engine,
    Table,
    and_,
    create_engine,
    delete,
    event,
    func,
    inspect,
    or_,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker

from .models import (
    JobRun,
    RunStatus,
    TrendPoint,
    WindowStat,
    from_unix,
    utc_now,
)

if TYPE_CHECKING:
    import pandas as pd
    from alembic.config import Config

    from ..results import PipelineResult, StageResult

__all__ = [
    "ALEMBIC_INI",
    "MIGRATIONS_DIR",
    "StoreError",
    "WrittenRows",
    "alembic_config",
    "current_revision",
    "display_url",
    "finish_run",
    "get_run",
    "has_schema",
    "head_revision",
    "latest_runs",
    "make_engine",
    "make_session_factory",
    "normalize_url",
    "session_scope",
    "start_run",
    "trend",
    "upgrade",
    "window_stats",
    "write_results",
]

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
ALEMBIC_INI: Final = REPO_ROOT / "alembic.ini"
MIGRATIONS_DIR: Final = REPO_ROOT / "alembic"

BATCH_SIZE: Final = 1000
MAX_ERROR_CHARS: Final = 20_000
STAT_KEY: Final = ("scope", "indicator", "window", "as_of")
STAT_VALUES: Final = ("count", "max", "avg", "stddev", "run_id", "computed_at")
_FRAME_COLUMNS: Final = ("scope", "indicator", "window", "as_of", "count", "max", "avg", "stddev")


class StoreError(Exception):
    """A store problem worth a one-line message (bad URL, missing migrations, unknown run)."""


# --- engine and sessions ----------------------------------------------------------------------


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


def make_engine(url: str | URL, *, echo: bool = False) -> Engine:
    """An engine for ``url``; SQLite gets its directory, WAL and foreign keys."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = _sqlite_file(parsed)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
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
    """Sessions on ``bind`` (an engine, or a URL to make one); objects stay usable after commit."""
    engine = bind if isinstance(bind, Engine) else make_engine(bind)
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(url: str | URL) -> Iterator[Session]:
    """A session on a fresh engine for ``url``, closed and disposed of at the end."""
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            yield session
    finally:
        engine.dispose()


# --- migrations -------------------------------------------------------------------------------


def alembic_config(url: str | URL | None = None, connection: Any = None) -> Config:
    """The Alembic configuration of the repository, usable from any current directory.

    ``script_location`` is set from this file's location (not from the current directory);
    ``connection`` (a SQLAlchemy Connection), when given, is the one ``alembic/env.py`` migrates.
    """
    from alembic.config import Config

    if not (MIGRATIONS_DIR / "env.py").is_file():
        raise StoreError(
            f"the Alembic migrations are missing ({MIGRATIONS_DIR}): run pushgrid from its "
            "source tree or an editable install"
        )
    # stdout: the current one (Config's default is whatever sys.stdout was at import time).
    ini = str(ALEMBIC_INI) if ALEMBIC_INI.is_file() else None
    config = Config(ini, stdout=sys.stdout)
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("path_separator", "os")
    if url is not None:
        rendered = normalize_url(url).render_as_string(hide_password=False)
        config.set_main_option("sqlalchemy.url", rendered.replace("%", "%%"))
    config.attributes["configure_logger"] = False
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    """The newest migration in ``alembic/versions``."""
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


# --- job runs ---------------------------------------------------------------------------------


@contextmanager
def _transaction(session: Session) -> Iterator[None]:
    try:
        yield
        session.commit()
    except BaseException:
        session.rollback()
        raise


def start_run(
    session: Session,
    *,
    master: str | None = None,
    as_of: int | None = None,
    started_at: datetime | None = None,
) -> JobRun:
    """Record a run as ``running`` (committed at once, so a crash leaves a trace)."""
    run = JobRun(
        started_at=started_at or utc_now(),
        status="running",
        master=master,
        as_of=None if as_of is None else from_unix(as_of),
    )
    with _transaction(session):
        session.add(run)
    return run


#: ``job_runs.error`` of a run that ended without recording its outcome (killed, machine down).
INTERRUPTED = "interrupted: the run ended without recording its outcome (killed?)"


def fail_interrupted(session: Session) -> list[int]:
    """Mark every ``running`` run failed (ids returned): call only while holding the warehouse
    lock, which every live run holds, so a ``running`` row is then one that was killed."""
    with _transaction(session):
        runs = list(session.scalars(select(JobRun).where(JobRun.status == "running")))
        for run in runs:
            run.status = "failed"
            run.finished_at = utc_now()
            run.error = INTERRUPTED
    return [run.id for run in runs]


def record_stages(session: Session, run_id: int, stages: Sequence[StageResult]) -> None:
    """Store the stages done so far of a running run (``pushgrid stats status`` shows them)."""
    with _transaction(session):
        get_run(session, run_id).stages = _stage_dicts(stages)


def running_run(session: Session) -> JobRun | None:
    """The newest ``running`` run, if any."""
    return session.scalar(
        select(JobRun)
        .where(JobRun.status == "running")
        .order_by(JobRun.started_at.desc(), JobRun.id.desc())
        .limit(1)
    )


def get_run(session: Session, run_id: int) -> JobRun:
    run = session.get(JobRun, run_id)
    if run is None:
        raise StoreError(f"no job run {run_id}")
    return run


def _stage_dicts(stages: Iterable[StageResult]) -> list[dict[str, Any]]:
    return [asdict(stage) for stage in stages]


def finish_run(
    session: Session,
    run_id: int,
    *,
    status: RunStatus,
    as_of: int | None = None,
    input_rows: int | None = None,
    output_rows: int | None = None,
    stages: Sequence[StageResult] | None = None,
    error: str | None = None,
    finished_at: datetime | None = None,
) -> JobRun:
    """Close a run as ``succeeded`` or ``failed`` with its counts or error text.

    ``as_of``, counts and stages left ``None`` keep what the run already has.
    """
    if status not in ("succeeded", "failed"):
        raise ValueError(f"a run finishes as succeeded or failed, not {status!r}")
    with _transaction(session):
        run = get_run(session, run_id)
        run.status = status
        run.finished_at = finished_at or utc_now()
        if as_of is not None:
            run.as_of = from_unix(as_of)
        if input_rows is not None:
            run.input_rows = int(input_rows)
        if output_rows is not None:
            run.output_rows = int(output_rows)
        if stages is not None:
            run.stages = _stage_dicts(stages)
        if error is not None:
            run.error = error[:MAX_ERROR_CHARS]
    return run


def latest_runs(session: Session, limit: int = 10) -> list[JobRun]:
    """The last ``limit`` runs, newest first."""
    stmt = select(JobRun).order_by(JobRun.id.desc()).limit(limit)
    return list(session.scalars(stmt))


# --- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrittenRows:
    window_stats: int
    trend_points: int

    @property
    def total(self) -> int:
        return self.window_stats + self.trend_points


def _optional_float(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):  # pandas.NA and friends
        return None
    return None if math.isnan(number) else number


def _frame_rows(
    frame: pd.DataFrame, name: str, run_id: int, computed_at: datetime
) -> list[dict[str, Any]]:
    missing = [column for column in _FRAME_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing columns {', '.join(missing)}")
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}  # by key: a repeated key keeps its last row
    moments: dict[int, datetime] = {}
    for record in frame.loc[:, list(_FRAME_COLUMNS)].itertuples(index=False, name=None):
        scope, indicator, window, as_of, count, max_, avg, stddev = record
        try:
            seconds = int(as_of)
            moment = moments.get(seconds)
            if moment is None:
                moment = moments[seconds] = from_unix(seconds)
            row = {
                "scope": str(scope),
                "indicator": str(indicator),
                "window": str(window),
                "as_of": moment,
                "count": int(count),
                "max": _optional_float(max_),
                "avg": _optional_float(avg),
                "stddev": _optional_float(stddev),
                "run_id": run_id,
                "computed_at": computed_at,
            }
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"{name}: bad row {record!r}: {exc}") from None
        rows[(row["scope"], row["indicator"], row["window"], seconds)] = row
    return list(rows.values())


def _batches(rows: Sequence[Mapping[str, Any]], size: int) -> Iterator[Sequence[Mapping[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def _upsert(session: Session, table: Table, rows: Sequence[Mapping[str, Any]], size: int) -> None:
    """``INSERT ... ON CONFLICT (key) DO UPDATE`` in batches (SQLite and PostgreSQL)."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        insert: sqlite.Insert | postgresql.Insert = sqlite.insert(table)
    elif dialect == "postgresql":
        insert = postgresql.insert(table)
    else:
        raise StoreError(f"unsupported database {dialect!r}: use SQLite or PostgreSQL")
    stmt = insert.on_conflict_do_update(
        index_elements=[table.c[name] for name in STAT_KEY],
        set_={name: insert.excluded[name] for name in STAT_VALUES},
    )
    for batch in _batches(rows, size):
        session.execute(stmt, list(batch))


def write_results(
    session: Session,
    run_id: int,
    result: PipelineResult,
    *,
    batch_size: int = BATCH_SIZE,
) -> WrittenRows:
    """Upsert a run's window statistics and trend points in one transaction.

    Rows are keyed by (scope, indicator, window, as_of): a rerun for the same as-of replaces
    values (and ``run_id``, ``computed_at``) instead of adding rows. Window statistics at the
    result's as-of instants that this run did not produce are deleted, so after a rerun the
    as-of holds exactly the new result. Trend points outside the result are kept (a series
    grows run after run).
    """
    computed_at = utc_now()
    stats_rows = _frame_rows(result.window_stats, "window_stats", run_id, computed_at)
    trend_rows = _frame_rows(result.trend_points, "trend_points", run_id, computed_at)
    stats_table = WindowStat.__table__
    trend_table = TrendPoint.__table__
    assert isinstance(stats_table, Table)
    assert isinstance(trend_table, Table)
    with _transaction(session):
        get_run(session, run_id)  # a clear error (and no orphan rows) for an unknown run
        _upsert(session, stats_table, stats_rows, batch_size)
        as_ofs = sorted({row["as_of"] for row in stats_rows} | {from_unix(result.as_of)})
        session.execute(
            delete(WindowStat)
            .where(WindowStat.as_of.in_(as_ofs))
            .where(or_(WindowStat.run_id.is_(None), WindowStat.run_id != run_id))
        )
        _upsert(session, trend_table, trend_rows, batch_size)
    return WrittenRows(len(stats_rows), len(trend_rows))


# --- readers (for the CLI and the admin API) --------------------------------------------------


def _order(names: Sequence[str]) -> dict[str, int]:
    return {name: position for position, name in enumerate(names)}


def _sort_key(row: WindowStat | TrendPoint) -> tuple[Any, ...]:
    from metrics.indicators import INDICATOR_NAMES
    from metrics.window_spec import WINDOW_NAMES

    indicators, windows = _order(INDICATOR_NAMES), _order(WINDOW_NAMES)
    return (
        row.scope != "cluster",
        row.scope,
        indicators.get(row.indicator, len(indicators)),
        row.indicator,
        windows.get(row.window, len(windows)),
        row.window,
        row.as_of,
    )


def _moment(value: datetime | int | float) -> datetime:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: give a timezone-aware (UTC) value")
        return value
    return from_unix(value)


def window_stats(
    session: Session,
    scope: str | None = None,
    indicator: str | None = None,
    window: str | None = None,
) -> list[WindowStat]:
    """The latest as-of of every (scope, indicator, window), optionally filtered.

    Sorted cluster first, then nodes; indicators and windows in their documented order.
    """
    filters = []
    if scope is not None:
        filters.append(WindowStat.scope == scope)
    if indicator is not None:
        filters.append(WindowStat.indicator == indicator)
    if window is not None:
        filters.append(WindowStat.window == window)
    latest = (
        select(
            WindowStat.scope,
            WindowStat.indicator,
            WindowStat.window,
            func.max(WindowStat.as_of).label("as_of"),
        )
        .where(*filters)
        .group_by(WindowStat.scope, WindowStat.indicator, WindowStat.window)
        .subquery()
    )
    stmt = select(WindowStat).join(
        latest,
        and_(
            WindowStat.scope == latest.c.scope,
            WindowStat.indicator == latest.c.indicator,
            WindowStat.window == latest.c.window,
            WindowStat.as_of == latest.c.as_of,
        ),
    )
    return sorted(session.scalars(stmt), key=_sort_key)


def trend(
    session: Session,
    scope: str,
    indicator: str,
    window: str,
    since: datetime | int | None = None,
    until: datetime | int | None = None,
) -> list[TrendPoint]:
    """The series of one (scope, indicator, window), oldest first; ``since``/``until`` inclusive.

    Bounds are aware datetimes or Unix seconds.
    """
    stmt = select(TrendPoint).where(
        TrendPoint.scope == scope,
        TrendPoint.indicator == indicator,
        TrendPoint.window == window,
    )
    if since is not None:
        stmt = stmt.where(TrendPoint.as_of >= _moment(since))
    if until is not None:
        stmt = stmt.where(TrendPoint.as_of <= _moment(until))
    return list(session.scalars(stmt.order_by(TrendPoint.as_of)))
