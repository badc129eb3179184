"""``--log-level`` is the LogLevel key for a command and the processes it starts (issue 21)."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from pushgrid.cli.main import command_line

app = command_line()  # every part registered, as `pushgrid --help` shows them


@pytest.mark.parametrize("command", [["server"], ["up"], ["admin", "serve"]])
def test_a_bad_level_stops_start_up_naming_the_option(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PUSHGRID_LOGLEVEL", "INFO")  # restored after the test
    result = CliRunner().invoke(app, [*command, "--log-level", "chatty"])
    assert result.exit_code == 2
    assert "'--log-level'" in result.output
    assert os.environ["PUSHGRID_LOGLEVEL"] == "INFO", "a refused level reaches no child"


def test_a_good_level_reaches_the_children(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUSHGRID_LOGLEVEL", "INFO")
    CliRunner().invoke(app, ["server", "--log-level", "debug", "--help"])
    assert os.environ["PUSHGRID_LOGLEVEL"] == "DEBUG", "children inherit the level"


def test_the_level_reaches_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from pushgrid.config.cli_support import settings_or_exit

    monkeypatch.setenv("PUSHGRID_LOGLEVEL", "INFO")
    CliRunner().invoke(app, ["server", "--log-level", "warning", "--help"])
    assert settings_or_exit(None).log_level == "WARNING"
