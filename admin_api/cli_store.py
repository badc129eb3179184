"""What the admin command lines share (``cli.py``, ``cli_users.py``): the ``--config`` option and
the database, migrated before any command uses it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pushgrid.config.cli_support import fail

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="pushgrid.conf file (Key = value lines)."),
]


def migrate(url: str) -> None:
    """Apply the migrations to the database at ``url`` (exit 1 naming it when it cannot)."""
    from sqlalchemy.exc import SQLAlchemyError

    from pushgrid.metrics.sqlstore import StoreError, display_url, upgrade

    try:
        upgrade(url)
    except (StoreError, SQLAlchemyError, OSError) as exc:
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise fail(f"cannot migrate {display_url(url)}: {line}") from None
