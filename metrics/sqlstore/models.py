"""SQLAlchemy 2.0 typed models of the SQL store: the base and the statistics pipeline's tables.

One :class:`Base` (one ``MetaData``) for every table pushgrid keeps in SQL: the statistics
pipeline's tables here, the admin API's in :mod:`.admin_models` (importing :mod:`metrics.sqlstore`
registers both). The schema is owned by the Alembic migrations in ``alembic/versions``
(``pushgrid db upgrade``); ``Base.metadata`` is what they must produce
(``tests/unit/test_store_migrations.py`` compares the two). This module imports neither pyspark
nor pandas.

Times are timezone-aware UTC :class:`~datetime.datetime` values in Python. PostgreSQL stores them
as ``timestamp with time zone``; SQLite, which has no time zone type, stores UTC wall-clock text
(``UTCDateTime`` converts both ways). ``as_of`` is the instant the statistics describe (the
pipeline's ``as_of`` Unix second); ``to_dict()`` gives it back as an integer Unix second.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, Literal

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Deterministic constraint names: the same on every database, so later migrations (SQLite batch
# mode included) can address them by name.
NAMING_CONVENTION: Final[dict[str, str]] = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# ``interrupted``: stopped by a clean shutdown (SIGINT, Ctrl-C, `pushgrid up` stopping), which
# is not a failure of the pipeline (issue 34)
RunStatus = Literal["running", "succeeded", "failed", "interrupted"]
RUN_STATUSES: Final[tuple[RunStatus, ...]] = ("running", "succeeded", "failed", "interrupted")

# Column sizes (shared with the initial migration).
SCOPE_LENGTH: Final = 255
INDICATOR_LENGTH: Final = 64
WINDOW_LENGTH: Final = 16
HOST_LENGTH: Final = 255
PATTERN_LENGTH: Final = 1024  # protocol.subjects.MAX_SUBJECT_BYTES: a pattern is a subject


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every database (naive values are refused)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: give a timezone-aware (UTC) value")
        value = value.astimezone(UTC)
        # SQLite keeps wall-clock text: store UTC without an offset so values compare as text.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)


def from_unix(seconds: int | float) -> datetime:
    """A Unix second as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


def to_unix(moment: datetime) -> int:
    """An aware datetime as an integer Unix second."""
    return int(moment.timestamp())


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class JobRun(Base):
    """One ``pushgrid stats run``: from ``running`` to ``succeeded``, ``failed`` or
    ``interrupted``."""

    __tablename__ = "job_runs"
    __table_args__ = (
        CheckConstraint(
            "status IN ('running', 'succeeded', 'failed', 'interrupted')",
            name="status",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(16), default="running")
    as_of: Mapped[datetime | None] = mapped_column(UTCDateTime)
    master: Mapped[str | None] = mapped_column(String(255))
    input_rows: Mapped[int | None] = mapped_column(BigInteger)
    output_rows: Mapped[int | None] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)
    # [{"name": ..., "input_rows": ..., "output_rows": ..., "seconds": ...}, ...]
    stages: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    # Who runs it (migration 0004): a `running` row whose owner is gone is a killed run.
    owner_host: Mapped[str | None] = mapped_column(String(HOST_LENGTH))
    owner_pid: Mapped[int | None] = mapped_column(Integer)
    warehouse: Mapped[str | None] = mapped_column(Text)

    @property
    def duration(self) -> float | None:
        """Seconds from start to finish (``None`` while running)."""
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    def __repr__(self) -> str:
        return f"JobRun(id={self.id!r}, status={self.status!r}, as_of={self.as_of!r})"


class _StatColumns:
    """The columns of :data:`spark_stats.results.STAT_COLUMNS` plus provenance."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(String(SCOPE_LENGTH))
    indicator: Mapped[str] = mapped_column(String(INDICATOR_LENGTH))
    window: Mapped[str] = mapped_column(String(WINDOW_LENGTH))
    as_of: Mapped[datetime] = mapped_column(UTCDateTime)
    count: Mapped[int] = mapped_column(BigInteger)
    max: Mapped[float | None] = mapped_column(Float)
    avg: Mapped[float | None] = mapped_column(Float)
    stddev: Mapped[float | None] = mapped_column(Float)
    run_id: Mapped[int | None] = mapped_column(
        ForeignKey("job_runs.id", ondelete="SET NULL"), index=True
    )
    computed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``as_of`` as a Unix second, ``computed_at`` as ISO 8601."""
        return {
            "scope": self.scope,
            "indicator": self.indicator,
            "window": self.window,
            "as_of": to_unix(self.as_of),
            "count": self.count,
            "max": self.max,
            "avg": self.avg,
            "stddev": self.stddev,
            "run_id": self.run_id,
            "computed_at": self.computed_at.isoformat(),
        }


class WindowStat(_StatColumns, Base):
    """Window statistics of one (scope, indicator, window) as of one instant."""

    __tablename__ = "window_stats"
    __table_args__ = (UniqueConstraint("scope", "indicator", "window", "as_of"),)

    def __repr__(self) -> str:
        return (
            f"WindowStat({self.scope!r}, {self.indicator!r}, {self.window!r}, "
            f"as_of={self.as_of!r}, count={self.count!r})"
        )


class TrendPoint(_StatColumns, Base):
    """One point of the series of a (scope, indicator, window) over time."""

    __tablename__ = "trend_points"
    __table_args__ = (
        # Unique, and the index trend() reads by range of as_of.
        Index(None, "scope", "indicator", "window", "as_of", unique=True),
    )

    def __repr__(self) -> str:
        return (
            f"TrendPoint({self.scope!r}, {self.indicator!r}, {self.window!r}, "
            f"as_of={self.as_of!r}, count={self.count!r})"
        )


class WatchedWindowStat(_StatColumns, Base):
    """Window statistics of one watched pattern's (scope, indicator, window) as of one instant
    (migration 0007, ADR 030): ``scope`` is ``cluster`` or ``node:<name>``, ``indicator`` one of
    metrics.watched.WATCH_NAMES."""

    __tablename__ = "watched_window_stats"
    __table_args__ = (UniqueConstraint("pattern", "scope", "indicator", "window", "as_of"),)

    pattern: Mapped[str] = mapped_column(String(PATTERN_LENGTH))

    def to_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, **super().to_dict()}

    def __repr__(self) -> str:
        return (
            f"WatchedWindowStat({self.pattern!r}, {self.scope!r}, {self.indicator!r}, "
            f"{self.window!r}, as_of={self.as_of!r}, count={self.count!r})"
        )


#: a delivery series: ``member``, ``leg:<leg>`` or ``pattern:<pattern>`` (metrics/archive.py)
SERIES_LENGTH: Final = PATTERN_LENGTH + 16


class DeliveryWindowStat(Base):
    """Delivery latency percentiles of one (scope, series, window) as of one instant, read from
    the window's merged buckets (migration 0014, ADR 062). ``p*`` are seconds (the bucket's
    upper bound; ``inf`` above the last bound), null when ``count`` is 0."""

    __tablename__ = "delivery_window_stats"
    __table_args__ = (UniqueConstraint("scope", "series", "window", "as_of"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(String(SCOPE_LENGTH))
    series: Mapped[str] = mapped_column(String(SERIES_LENGTH))
    window: Mapped[str] = mapped_column(String(WINDOW_LENGTH))
    as_of: Mapped[datetime] = mapped_column(UTCDateTime)
    count: Mapped[int] = mapped_column(BigInteger)
    p50: Mapped[float | None] = mapped_column(Float)
    p90: Mapped[float | None] = mapped_column(Float)
    p99: Mapped[float | None] = mapped_column(Float)
    p999: Mapped[float | None] = mapped_column(Float)
    buckets: Mapped[str] = mapped_column(Text)  # "index:count" of the merged non-empty buckets
    # the clients' loss reports over the window (migration 0016): totals per kind
    gaps: Mapped[int] = mapped_column(BigInteger, server_default="0")
    duplicates: Mapped[int] = mapped_column(BigInteger, server_default="0")
    resyncs: Mapped[int] = mapped_column(BigInteger, server_default="0")
    recovered: Mapped[int] = mapped_column(BigInteger, server_default="0")
    recovery_failed: Mapped[int] = mapped_column(BigInteger, server_default="0")
    run_id: Mapped[int | None] = mapped_column(
        ForeignKey("job_runs.id", ondelete="SET NULL"), index=True
    )
    computed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)

    def __repr__(self) -> str:
        return (
            f"DeliveryWindowStat({self.scope!r}, {self.series!r}, {self.window!r}, "
            f"as_of={self.as_of!r}, count={self.count!r})"
        )
