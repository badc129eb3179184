"""``pushgrid server`` refuses a bad ``Workers`` with exit 2 and a message naming the key, before
any process is forked (ADR 044; the real binary: tests/integration/test_workers.py). In process:
each value would otherwise cost a Python start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pushgrid.cli.allocator import MARKER
from pushgrid.cli.main import app


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"Workers": "0"}, "Workers must be at least 1"),
        ({"Workers": "-3"}, "Workers must be at least 1"),
        ({"Workers": "lots"}, "Workers must be auto or a number"),
        ({"Workers": "100000"}, "Workers = 100000 needs at least"),
    ],
)
def test_bad_workers_is_a_clear_error(
    tmp_path: Path, settings: dict[str, str], words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "pushgrid.conf"
    lines = {"Listen": "127.0.0.1:0", **settings}
    conf.write_text("".join(f"{k} = {v}\n" for k, v in lines.items()), encoding="utf-8")
    monkeypatch.setenv("PUSHGRID_WORKERS", settings["Workers"])  # restored after the test
    # as if already re-executed on its allocator: a re-execution here would start pytest again
    monkeypatch.setenv(MARKER, "")
    result = CliRunner().invoke(app, ["server", "--config", str(conf)])
    assert result.exit_code == 2, result.output
    assert words in " ".join(result.output.split()), result.output
