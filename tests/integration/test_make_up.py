"""``make up`` binds the client port to loopback (issue 22 item 7; docs/security.md).

The recipe is read with ``make -n`` (what it would run) and a real ``pushgrid server`` is started
with the environment it sets (on a free port): its client listener must be loopback only. A
public bind stays one documented key away: ``make up LISTEN='*:8800'``.
"""

from __future__ import annotations

import ipaddress
import shlex
import subprocess
from pathlib import Path

import psutil

from .pgtest import REPO, ServerProcess, free_port


def _recipe_environment(*make_args: str) -> dict[str, str]:
    dry = subprocess.run(
        ["make", "-n", "-s", "up", *make_args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        timeout=30,
    )
    (line,) = [ln for ln in dry.stdout.splitlines() if "pushgrid up" in ln]
    words = shlex.split(line)
    return dict(
        w.split("=", 1) for w in words[: words.index(next(w for w in words if "=" not in w))]
    )


def test_make_up_listens_on_loopback_unless_told(tmp_path: Path) -> None:
    env = _recipe_environment()
    assert "PUSHGRID_LISTEN" in env, "make up sets Listen"
    host, _, port = env["PUSHGRID_LISTEN"].rpartition(":")
    assert ipaddress.ip_address(host.strip("[]")).is_loopback
    assert port == "8800"
    assert _recipe_environment("LISTEN=*:8800")["PUSHGRID_LISTEN"] == "*:8800"

    # the same environment on a real server (a free port: 8800 may be taken on this machine)
    port_free = free_port()
    server = ServerProcess(tmp_path, {}, port_free, env={"PUSHGRID_LISTEN": f"{host}:{port_free}"})
    server.settings.pop("Listen")  # the recipe's variable alone decides
    server.start()
    try:
        assert server.proc is not None
        listening = [
            c.laddr
            for c in psutil.Process(server.proc.pid).net_connections("inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening, "the server listens"
        assert all(ipaddress.ip_address(a.ip).is_loopback for a in listening), listening
    finally:
        server.kill()


def _install_lines(target: str) -> list[str]:
    """The pip installs ``make <target>`` runs on a fresh clone (``-B``: nothing installed yet)."""
    dry = subprocess.run(
        ["make", "-n", "-B", target],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
        timeout=30,
    )
    return [ln for ln in dry.stdout.splitlines() if "pip install" in ln and " -e " in ln]


def test_make_up_installs_what_running_needs_only() -> None:
    """Issue 34 item 4.12: a fresh clone's `make up` spent 2 min installing test, lint and
    browser tools; it installs the `all` extra (server, admin API + console, pipeline) only,
    and `make test` still installs everything."""
    (up,) = _install_lines("up")
    assert "'.[all]'" in up, up
    assert _install_lines("cluster") == [up]
    # everything in one pip run: each run builds the editable project again (docs/adr/066)
    assert _install_lines("test") == [up.replace("'.[all]'", "'.[all,dev]'")]
