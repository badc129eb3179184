"""deploy/systemd, checked by systemd's own tools and by the pushgrid commands the units run.

- ``systemd-analyze verify``: the units load without a warning (an unknown or misspelt key, a
  bad value, a missing binary or timer target all print one), with ExecStart pointed at this
  checkout's ``pushgrid`` instead of /opt/pushgrid.
- ``systemd-analyze security --offline``: each service's exposure stays low (the hardening is
  there and effective, not just written).
- Each ExecStart command line is accepted by the real ``pushgrid`` CLI (``--help`` appended:
  an unknown command or option fails).
"""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from .pgtest import PUSHGRID, REPO, run_cli

UNITS = REPO / "deploy" / "systemd"
INSTALLED = "/opt/pushgrid/venv/bin/pushgrid"
SERVICES = [
    "pushgrid-server@push1.service",
    "pushgrid-admin.service",
    "pushgrid-stats.service",
    "pushgrid-rrd.service",
]

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze missing (make system-deps)"
)


@pytest.fixture(scope="module")
def unit_dir(tmp_path_factory) -> Path:
    """The units, with ExecStart on this checkout's pushgrid (verify checks the binary exists)."""
    out = tmp_path_factory.mktemp("units")
    for unit in UNITS.iterdir():
        text = unit.read_text()
        (out / unit.name).write_text(text.replace(INSTALLED, PUSHGRID[0]))
    return out


def analyze(unit_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", *args],
        cwd=unit_dir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def read_unit(name: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(UNITS / name)
    return parser


def test_every_unit_verifies_without_a_warning(unit_dir):
    if not Path(PUSHGRID[0]).is_file():
        pytest.skip("pushgrid is not installed as a script in this environment")
    units = [*SERVICES, "pushgrid-stats.timer"]
    result = analyze(unit_dir, "verify", *units)
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == "", result.stdout + result.stderr


def test_verify_would_catch_a_misspelt_key(unit_dir, tmp_path):
    broken = (unit_dir / "pushgrid-admin.service").read_text()
    (tmp_path / "pushgrid-admin.service").write_text(
        broken.replace("NoNewPrivileges=", "NoNewPrivilege=")
    )
    result = analyze(tmp_path, "verify", "pushgrid-admin.service")
    assert "Unknown key 'NoNewPrivilege'" in result.stderr


@pytest.mark.parametrize("service", SERVICES)
def test_each_service_is_hardened(unit_dir, service):
    # exposure is 0 (locked down) to 10 (wide open); a default service scores about 9.6
    result = analyze(unit_dir, "security", "--offline=true", "--threshold=35", service)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr


def test_the_member_unit_keeps_only_the_privilege_to_bind_443_and_stops_gracefully():
    service = read_unit("pushgrid-server@.service")["Service"]
    assert service["User"] == "pushgrid"
    assert service["NoNewPrivileges"] == "yes"
    assert service["ProtectSystem"] == "strict"
    assert service["AmbientCapabilities"] == "CAP_NET_BIND_SERVICE"
    assert service["CapabilityBoundingSet"] == "CAP_NET_BIND_SERVICE"
    assert "/var/lib/pushgrid" in service["ReadWritePaths"].split()
    assert service["KillSignal"] == "SIGTERM"
    assert service["KillMode"] == "mixed"  # pushgrid stops its own nats-server child
    assert service["Restart"] == "on-failure"
    assert service["RestartPreventExitStatus"] == "2"  # a configuration error is not retried
    from pushgrid.config import Settings

    shutdown = Settings.model_fields["shutdown_timeout"].default
    assert float(service["TimeoutStopSec"]) >= 2 * shutdown + 10
    for name in ("pushgrid-admin.service", "pushgrid-stats.service", "pushgrid-rrd.service"):
        other = read_unit(name)["Service"]
        assert other["User"] == "pushgrid"
        assert other["CapabilityBoundingSet"] == ""  # no capability at all


def test_the_timer_starts_the_statistics_run():
    timer = read_unit("pushgrid-stats.timer")["Timer"]
    assert timer["Unit"] == "pushgrid-stats.service"
    assert timer["Persistent"] == "true"
    assert read_unit("pushgrid-stats.service")["Service"]["Type"] == "oneshot"


@pytest.mark.parametrize("service", ["pushgrid-server@.service", *SERVICES[1:]])
def test_each_exec_start_is_a_real_pushgrid_command(service):
    argv = shlex.split(read_unit(service)["Service"]["ExecStart"])
    assert argv[0] == INSTALLED
    args = [a.replace("%i", "push1") for a in argv[1:]]
    result = run_cli(*args, "--help")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Usage:" in result.stdout
