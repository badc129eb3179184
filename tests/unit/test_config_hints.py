"""A mistyped key or option value is answered with the closest right one, and a bad option
value is reported against the option typed, not a PUSHGRID_* variable (issue 34, item 4.12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pushgrid.cli.main import command_line
from pushgrid.config import ConfigError, did_you_mean, load_settings

app = command_line()  # every part registered, as `pushgrid --help` shows them


def test_did_you_mean_names_the_closest_choices() -> None:
    keys = ["MaxMessageSize", "MaxCachedMessagesPerSubject", "Listen"]
    assert did_you_mean("maxmesagesize", keys) == " (did you mean MaxMessageSize?)"
    assert did_you_mean("Lisen", keys) == " (did you mean Listen?)"
    assert did_you_mean("Colour", keys) == "", "nothing close: no guess"
    assert did_you_mean("DEBG", ("DEBUG", "INFO")) == " (did you mean DEBUG?)"


def test_a_mistyped_key_in_the_file_gets_the_closest_key(tmp_path: Path) -> None:
    path = tmp_path / "pushgrid.conf"
    path.write_text("Listen = *:1\nMaxCachedMesagesPerSubject = 10\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    assert str(info.value) == (
        f"{path}:2: unknown key 'MaxCachedMesagesPerSubject' "
        "(did you mean MaxCachedMessagesPerSubject?)"
    )


def test_a_key_nothing_like_any_still_points_at_the_docs(tmp_path: Path) -> None:
    path = tmp_path / "pushgrid.conf"
    path.write_text("Zebra = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key 'Zebra' \(see docs/configuration.md\)"):
        load_settings(path, environ={})


def test_a_mistyped_variable_gets_the_closest_variable() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(None, environ={"PUSHGRID_MAXMESAGESIZE": "1"})
    assert "(did you mean PUSHGRID_MAXMESSAGESIZE" in str(info.value)


@pytest.mark.parametrize(
    ("argv", "option", "hint"),
    [
        (["server", "--log-level", "LOUD"], "'--log-level'", "DEBUG, INFO, WARNING, ERROR"),
        (["up", "--log-level", "WARN"], "'--log-level'", "did you mean WARNING?"),
        (["up", "--mode", "Guarenteed"], "'--mode'", "did you mean Guaranteed?"),
    ],
)
def test_a_bad_option_value_names_the_option(
    argv: list[str], option: str, hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PUSHGRID_LOGLEVEL", "INFO")  # restored after the test
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    said = " ".join(result.output.replace("│", " ").split())  # the error box, unwrapped
    assert f"Invalid value for {option}" in said, said
    assert hint in said, said
    assert "PUSHGRID_" not in said, "the user set no variable"
    assert os.environ["PUSHGRID_LOGLEVEL"] == "INFO", "a refused level reaches no child"
