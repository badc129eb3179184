"""A throwaway PostgreSQL server for the integration tests (Debian ``postgresql``).

:func:`running_postgres` finds ``pg_ctl``/``initdb`` under ``/usr/lib/postgresql/*/bin`` and, when
they are missing and we are root, installs the Debian ``postgresql`` package first. It runs
``initdb`` in a fresh directory under the system temp dir and starts the server on a free
127.0.0.1 port with a private socket directory, as the ``postgres`` user when we are root
(PostgreSQL refuses to run as root), and stops it and deletes everything at the end. A test is
skipped (with the reason) only when PostgreSQL is not installed and cannot be installed; any
failure of an installed server fails the test.

Usage in a test module::

    @pytest.fixture(scope="module")
    def pg() -> Iterator[PostgresServer]:
        with running_postgres() as server:
            yield server

    def test_x(pg): url = pg.create_database("x")   # a postgresql+psycopg:// URL
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PG_LIB = Path("/usr/lib/postgresql")
INSTALL_TIMEOUT = 900.0
START_TIMEOUT = 60


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.parent.name)) or (0,)


def find_bin_dir() -> Path | None:
    """The bin directory of the newest installed PostgreSQL server (with pg_ctl and initdb)."""
    candidates = sorted(PG_LIB.glob("*/bin/pg_ctl"), key=_version_key, reverse=True)
    for pg_ctl in candidates:
        if (pg_ctl.parent / "initdb").exists():
            return pg_ctl.parent
    found = shutil.which("pg_ctl")
    if found:
        bin_dir = Path(found).resolve().parent
        if (bin_dir / "initdb").exists():
            return bin_dir
    return None


def _apt_install() -> str | None:
    """Install Debian's postgresql; return why it could not be done (None: installed)."""
    if os.geteuid() != 0:
        return "PostgreSQL is not installed and we are not root (apt-get install postgresql)"
    if shutil.which("apt-get") is None:
        return "PostgreSQL is not installed and there is no apt-get to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "postgresql"]
    output = ""
    for step in ([install], [["apt-get", "update", "-q"], install]):
        output = ""
        try:
            for command in step:
                done = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=INSTALL_TIMEOUT,
                    check=False,
                )
                output = (done.stdout + done.stderr)[-2000:]
                if done.returncode != 0:
                    break
            else:
                if find_bin_dir() is not None:
                    return None
        except subprocess.TimeoutExpired:
            output = f"timed out after {INSTALL_TIMEOUT:.0f} s"
    return f"PostgreSQL is not installed and apt-get install postgresql failed:\n{output}"


def ensure_postgres() -> Path:
    """The PostgreSQL bin directory, installing the package if needed (or skip the test)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        reason = _apt_install()
        bin_dir = find_bin_dir()
        if bin_dir is None:
            pytest.skip(reason or "PostgreSQL could not be found after installing it")
    return bin_dir


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server: ``url(db)`` and ``create_database(name)`` give psycopg URLs."""

    bin_dir: Path
    root: Path
    port: int = 0
    user: str = "postgres"
    _as_user: list[str] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def log(self) -> str:
        try:
            return self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def _run(self, *command: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        argv = [*command]
        if self._as_user and self._as_user[0] == "su":
            full = [*self._as_user, shlex.join(argv)]
        else:
            full = [*self._as_user, *argv]
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        return subprocess.run(
            full, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )

    def _check(self, what: str, done: subprocess.CompletedProcess[str]) -> None:
        if done.returncode != 0:
            raise RuntimeError(
                f"PostgreSQL {what} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n"
                f"{self.log()[-3000:]}"
            )

    def start(self) -> PostgresServer:
        if os.geteuid() == 0:  # the server refuses to run as root
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root but there is no 'postgres' user") from None
            for path in (self.root, *self.root.rglob("*")):
                os.chown(path, owner.pw_uid, owner.pw_gid)
            if shutil.which("runuser"):
                self._as_user = ["runuser", "-u", "postgres", "--"]
            else:
                self._as_user = ["su", "postgres", "-s", "/bin/sh", "-c"]
        self._check(
            "initdb",
            self._run(
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                self.user,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ),
        )
        last: subprocess.CompletedProcess[str] | None = None
        for _ in range(3):  # the free port may be taken in between: try another
            self.port = free_port()
            options = " ".join(
                [
                    f"-p {self.port}",
                    f"-k {self.root}",
                    "-c listen_addresses=127.0.0.1",
                    "-c fsync=off",
                    "-c synchronous_commit=off",
                    "-c full_page_writes=off",
                ]
            )
            last = self._run(
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log_file),
                "-o",
                options,
                "-w",
                "-t",
                str(START_TIMEOUT),
                "start",
                timeout=START_TIMEOUT + 30,
            )
            if last.returncode == 0:
                return self
            if "could not bind" not in self.log() and "in use" not in self.log():
                break
        assert last is not None
        self._check("start", last)
        return self

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").exists():
            self._run(
                str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate", "stop"
            )

    def create_database(self, name: str) -> str:
        """Create database ``name`` (dropped first if it exists); return its URL."""
        import psycopg

        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"database name {name!r}: use lower-case letters, digits, _")
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.user, dbname="postgres", autocommit=True
        ) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {name}")
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """Start a private PostgreSQL server for the duration of the block (or skip)."""
    bin_dir = ensure_postgres()
    root = Path(tempfile.mkdtemp(prefix="pushgrid-pg-"))
    server = PostgresServer(bin_dir, root)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
