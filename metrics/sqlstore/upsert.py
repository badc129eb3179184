"""``INSERT ... ON CONFLICT DO UPDATE`` in batches, the one upsert of the statistics tables."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from .engine import StoreError

__all__ = ["STAT_KEY", "STAT_VALUES", "upsert"]

STAT_KEY: Final = ("scope", "indicator", "window", "as_of")
STAT_VALUES: Final = ("count", "max", "avg", "stddev", "run_id", "computed_at")


def _batches(rows: Sequence[Mapping[str, Any]], size: int) -> Iterator[Sequence[Mapping[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def upsert(
    db: Session,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    size: int,
    key: Sequence[str] = STAT_KEY,
    values: Sequence[str] = STAT_VALUES,
) -> None:
    """``INSERT ... ON CONFLICT (key) DO UPDATE`` in batches (SQLite and PostgreSQL)."""
    if not rows:
        return
    dialect = db.get_bind().dialect.name
    if dialect == "sqlite":
        insert: sqlite.Insert | postgresql.Insert = sqlite.insert(table)
    elif dialect == "postgresql":
        insert = postgresql.insert(table)
    else:
        raise StoreError(f"unsupported database {dialect!r}: use SQLite or PostgreSQL")
    stmt = insert.on_conflict_do_update(
        index_elements=[table.c[name] for name in key],
        set_={name: insert.excluded[name] for name in values},
    )
    for batch in _batches(rows, size):
        db.execute(stmt, list(batch))
