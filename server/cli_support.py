"""Small helpers every ``pushgrid`` sub-command shares: error exits and loading the Settings."""

from __future__ import annotations

from pathlib import Path

import typer

from .config import ConfigError, Settings, load_settings


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
