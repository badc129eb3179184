"""``pushgrid console`` / ``python -m console``: options and their checks (no server started)."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from pushgrid.config import load_settings
from pushgrid.console.cli import register
from pushgrid.console.mount import api_url_of


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """pushgrid."""

    register(app)
    return app


def test_console_command_is_registered_with_its_options() -> None:
    result = CliRunner().invoke(_app(), ["console", "--help"])
    assert result.exit_code == 0, result.output
    for option in ("--api", "--listen", "--config", "--demo"):
        assert option in result.output


def test_bad_options_are_refused_before_anything_starts() -> None:
    runner = CliRunner()
    result = runner.invoke(_app(), ["console", "--api", "ftp://x", "--listen", "127.0.0.1:1"])
    assert result.exit_code == 2
    assert "http(s) URL" in result.output
    result = runner.invoke(_app(), ["console", "--api", "http://x", "--listen", "nope"])
    assert result.exit_code == 2
    assert "host:port" in result.output


def test_api_url_comes_from_admin_listen() -> None:
    settings = load_settings(None, environ={}, admin_listen="0.0.0.0:9090")
    assert api_url_of(settings.admin) == "http://127.0.0.1:9090"
    settings = load_settings(None, environ={}, admin_listen="10.1.2.3:8080")
    assert api_url_of(settings.admin) == "http://10.1.2.3:8080"
