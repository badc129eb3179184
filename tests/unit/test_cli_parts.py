"""The command line imports only the part a command runs (pushgrid/cli/main.py ``PART_COMMANDS``):
a server start pays for no admin API, client, pipeline, RRD or JMX module (about 0.5 s of CPU
per start), while help and every part's command still find every command."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from pushgrid.cli.main import PART_COMMANDS, command_line

PROBE = """
import json, sys
from pushgrid.cli.main import command_line
command_line(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m.startswith("pushgrid."))))
"""


def _loaded(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(done.stdout))


def test_a_server_start_imports_no_other_part() -> None:
    loaded = _loaded("server", "--config", "x.conf")
    assert not loaded & set(PART_COMMANDS.values())
    assert not [m for m in loaded if m.startswith(("pushgrid.admin_api", "pushgrid.spark_stats"))]


def test_a_part_s_command_imports_that_part_alone() -> None:
    loaded = _loaded("rrd", "--help")
    assert loaded & set(PART_COMMANDS.values()) == {"pushgrid.server.rrd_cli"}


def test_help_lists_every_part_s_commands() -> None:
    result = CliRunner().invoke(command_line(["--help"]), ["--help"])
    assert result.exit_code == 0, result.output
    for name in ("server", "up", *PART_COMMANDS):
        assert name in result.output, name
