"""The latest as-of of every key: the one query the window tables' readers share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.orm import Session

from .models import Base

__all__ = ["latest_rows"]

Row = TypeVar("Row", bound=Base)


def latest_rows(
    db: Session, model: type[Row], keys: Sequence[str], filters: Sequence[ColumnElement[bool]]
) -> list[Row]:
    """The rows of ``model`` holding the latest ``as_of`` of each combination of ``keys``
    (among the rows ``filters`` keep), unsorted."""
    columns: list[Any] = [getattr(model, key) for key in keys]
    as_of: Any = getattr(model, "as_of")  # noqa: B009  (Row does not declare it)
    latest = (
        select(*columns, func.max(as_of).label("as_of"))
        .where(*filters)
        .group_by(*columns)
        .subquery()
    )
    same = [column == latest.c[key] for column, key in zip(columns, keys, strict=True)]
    return list(db.scalars(select(model).join(latest, and_(*same, as_of == latest.c.as_of))))
