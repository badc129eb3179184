"""``pushgrid admin`` as a real process: uvicorn on a port, migrations at start, tokens from the
command line (printed once, stored hashed), a first admin token with ``--bootstrap``.

The commands run as ``python -m admin_api ...`` (the same Typer group ``pushgrid admin`` is once
``pushgrid/cli/main.py`` registers it); the last test runs ``pushgrid admin`` itself when it is
there.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from pushgrid.admin_api.security import hash_token

from .pgtest import ServerProcess, clean_env, free_port, run_cli, write_conf

ADMIN = [sys.executable, "-m", "pushgrid.admin_api"]


def run_admin(*args: str, cwd: Path, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ADMIN, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        env=clean_env(),
        cwd=cwd,
        check=False,
    )


class AdminProcess:
    """``python -m admin_api [ARGS]`` running, its stdout in a file."""

    def __init__(self, argv: list[str], cwd: Path, port: int) -> None:
        self.port = port
        self.out_path = cwd / "admin.out"
        self.err_path = cwd / "admin.err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=cwd, env=clean_env())
        self.base = f"http://127.0.0.1:{port}"

    def output(self) -> str:
        return self.out_path.read_text("utf-8", "replace")

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with httpx.Client(trust_env=False, timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise AssertionError(
                        f"admin API exited with {self.proc.returncode}:\n{self.output()}\n"
                        + self.err_path.read_text("utf-8", "replace")
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if http.get(f"{self.base}/api/v1/openapi.json").status_code == 200:
                        return
                time.sleep(0.1)
        raise AssertionError(f"admin API not ready in {timeout} s:\n{self.output()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def started() -> Iterator[list[AdminProcess]]:
    processes: list[AdminProcess] = []
    yield processes
    for process in processes:
        process.stop()


def _conf(tmp_path: Path, member: ServerProcess, port: int) -> Path:
    return write_conf(
        tmp_path / "admin.conf",
        {
            "Database": f"sqlite:///{tmp_path / 'data' / 'admin.db'}",
            "Admin.Members": f"it={member.monitor_url}",
            "Admin.Listen": f"127.0.0.1:{port}",
            "MetricsArchive": "off",
            "StatsInterval": 0,
        },
    )


def test_serve_bootstraps_a_first_admin_token_and_create_token_prints_one(
    tmp_path, server_factory, started
):
    member = server_factory(ServerName="cli-member", MetaSubjectInterval=0)
    port = free_port()
    conf = _conf(tmp_path, member, port)
    admin = AdminProcess([*ADMIN, "--config", str(conf), "--bootstrap"], tmp_path, port)
    started.append(admin)
    admin.wait_ready()
    lines = [line for line in admin.output().splitlines() if "first admin token" in line]
    assert len(lines) == 1, admin.output()
    bootstrap = lines[0].rsplit(" ", 1)[1]
    assert bootstrap.startswith("pgt_")

    created = run_admin(
        "create-token", "--role", "viewer", "--name", "dash", "--config", str(conf), cwd=tmp_path
    )
    assert created.returncode == 0, created.stderr
    viewer = created.stdout.strip()
    assert viewer.startswith("pgt_")
    assert created.stdout.count("pgt_") == 1  # the token is printed once, on stdout only
    assert "pgt_" not in created.stderr
    assert "shown only now" in created.stderr

    with httpx.Client(base_url=admin.base, trust_env=False, timeout=10) as http:
        members = http.get("/api/v1/members", headers={"authorization": f"Bearer {bootstrap}"})
        assert members.status_code == 200, members.text
        (item,) = members.json()["items"]
        assert (item["name"], item["reachable"], item["server_name"]) == ("it", True, "cli-member")
        me = http.get("/api/v1/me", headers={"authorization": f"Bearer {viewer}"})
        assert me.json()["role"] == "viewer"
        assert me.json()["name"] == "dash"
        denied = http.post(
            "/api/v1/tokens",
            json={"name": "x", "role": "admin"},
            headers={"authorization": f"Bearer {viewer}"},
        )
        assert denied.status_code == 403
        assert denied.headers["content-type"] == "application/problem+json"
        anonymous = http.get("/api/v1/members")
        assert anonymous.status_code == 401
        assert anonymous.headers["www-authenticate"].startswith("Bearer")
        docs = http.get("/api/docs")
        assert docs.status_code == 200
        assert "swagger" in docs.text.lower()
        # issue 34: tokens made on the command line are in the audit log, as the API's are
        audit = http.get(
            "/api/v1/audit",
            params={"action": "tokens.create"},
            headers={"authorization": f"Bearer {bootstrap}"},
        )
        assert audit.status_code == 200, audit.text
        items = audit.json()["items"]
        made = {
            (e["path"], e["detail"], e["outcome"], e["actor"].endswith(" (cli)"))
            for e in items
            if e["method"] == "CLI"
        }
        assert made == {
            (
                "pushgrid admin serve --bootstrap",
                "name=bootstrap-admin role=admin",
                "succeeded",
                True,
            ),
            ("pushgrid admin create-token", "name=dash role=viewer", "succeeded", True),
        }
        assert [e["outcome"] for e in items if e["method"] == "POST"] == ["denied"]  # the viewer's

    # only hashes in the database
    engine = create_engine(f"sqlite:///{tmp_path / 'data' / 'admin.db'}")
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT name, role, token_hash FROM admin_tokens"))
            stored = {row.name: (row.role, row.token_hash) for row in rows}
    finally:
        engine.dispose()
    assert stored == {
        "bootstrap-admin": ("admin", hash_token(bootstrap)),
        "dash": ("viewer", hash_token(viewer)),
    }

    # a second start hands out no new token
    admin.stop()
    again = AdminProcess([*ADMIN, "serve", "--config", str(conf), "--bootstrap"], tmp_path, port)
    started.append(again)
    again.wait_ready()
    assert "first admin token" not in again.output()
    assert "admin tokens exist" in again.output()


def test_bad_configuration_and_options_exit_2(tmp_path):
    bad = write_conf(tmp_path / "bad.conf", {"Admin.Listen": "nowhere"})
    result = run_admin("serve", "--config", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert "Admin.Listen" in result.stderr
    role = run_admin("create-token", "--role", "root", cwd=tmp_path)
    assert role.returncode == 2
    assert "root" in role.stderr


def test_pushgrid_admin_command(tmp_path):
    help_ = run_cli("admin", "--help")
    if help_.returncode != 0:
        pytest.skip("`pushgrid admin` is not registered in pushgrid/cli/main.py yet")
    assert "create-token" in help_.stdout
    conf = write_conf(tmp_path / "admin.conf", {"Database": f"sqlite:///{tmp_path / 'admin.db'}"})
    created = run_cli("admin", "create-token", "--role", "operator", "--config", str(conf))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip().startswith("pgt_")
