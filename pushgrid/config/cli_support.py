"""Small helpers every ``pushgrid`` sub-command shares: error exits and loading the Settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from . import ConfigError, Settings, load_settings


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``pushgrid: message`` on stderr and return the Exit to raise."""
    typer.echo(f"pushgrid: {message}", err=True)
    return typer.Exit(code)


def settings_or_exit(config: Path | None) -> Settings:
    """The Settings from ``config`` (and PUSHGRID_* variables), or exit 2 naming the problem."""
    try:
        return load_settings(config)
    except ConfigError as exc:
        raise fail(f"configuration error\n{exc}", 2) from None


def _log_level(value: str | None) -> str | None:
    """``--log-level`` is the ``LogLevel`` key for this command and the processes it starts
    (``PUSHGRID_LOGLEVEL`` wins over the file; a bad value stops start-up naming the key)."""
    if value:
        os.environ["PUSHGRID_LOGLEVEL"] = value.upper()
    return value


LogLevelOption = Annotated[
    str | None,
    typer.Option(
        "--log-level",
        help="DEBUG, INFO, WARNING or ERROR (the LogLevel key, default INFO).",
        callback=_log_level,
        is_eager=True,
    ),
]
