"""Small helpers every ``pushgrid`` sub-command shares: error exits and loading the Settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, get_args

import typer

from . import ConfigError, ServerSettings, Settings, did_you_mean, load_settings


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


def choice(option: str, value: str, choices: tuple[str, ...]) -> str:
    """``value`` as spelt in ``choices`` (case-insensitive), or a usage error naming the
    ``option`` the user typed, the values it takes and the closest one: checked here, not in
    the ``PUSHGRID_*`` variable the option becomes, which the user never set."""
    for known in choices:
        if known.lower() == value.lower():
            return known
    raise typer.BadParameter(
        f"{value!r} is not one of {', '.join(choices)}{did_you_mean(value, choices)}",
        param_hint=f"'{option}'",
    )


LOG_LEVELS: tuple[str, ...] = get_args(ServerSettings.model_fields["log_level"].annotation)


def name_process(title: str, name: str) -> None:
    """Show ``pushgrid <title>`` in `ps` (the command line) and ``pushgrid <name>`` in `top`
    and /proc/PID/comm (15 bytes: the member's name must come first): the members of a local
    cluster run the same command line and differ only in their environment (issue 34)."""
    import setproctitle

    setproctitle.setproctitle(f"pushgrid {title}")
    setproctitle.setthreadtitle(f"pushgrid {name}"[:15])  # the main thread: the process's comm


def _log_level(value: str | None) -> str | None:
    """``--log-level`` is the ``LogLevel`` key for this command and the processes it starts
    (``PUSHGRID_LOGLEVEL`` wins over the file; a bad value is refused naming the option)."""
    if value:
        value = choice("--log-level", value, LOG_LEVELS)
        os.environ["PUSHGRID_LOGLEVEL"] = value
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
