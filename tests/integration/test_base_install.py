"""``pip install pushgrid`` alone: a push-server node and its clients, without the ops stack.

The wheel is built from a copy of the tree and installed WITH its dependencies (from the package
index, through pip's cache) into a fresh virtual environment, with no extra. That environment
must run ``pushgrid server`` and a publish/subscribe round trip through the ``pushgrid`` CLI,
hold none of the [admin] and [stats] packages, and answer a command of those roles with the
extra to install (ADR 020). Every command runs outside the checkout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from .pgtest import clean_env, free_port
from .test_wheel_install import _wheel

#: what a node must not carry (each is a dependency of an extra only)
OPS_STACK = ("pyspark", "pandas", "pyarrow", "numpy", "dash", "plotly", "fastapi", "sqlalchemy")


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("base-install")
    wheel = _wheel(root)
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert tops == {
        "pushgrid",
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info",
    }, tops
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return venv


def _pushgrid(
    venv: Path, cwd: Path, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "pushgrid"), *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_base_install_has_no_ops_stack(base_venv: Path) -> None:
    listed = subprocess.run(
        [str(base_venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {entry["name"].lower() for entry in json.loads(listed)}
    assert "pushgrid" in names
    assert sorted(names & set(OPS_STACK)) == []


@pytest.mark.parametrize(
    ("command", "extra"),
    [(("admin", "serve"), "admin"), (("console", "--demo"), "admin"), (("stats", "run"), "stats")],
)
def test_a_command_of_an_ops_role_names_its_extra(
    base_venv: Path, tmp_path: Path, command: tuple[str, ...], extra: str
) -> None:
    done = _pushgrid(base_venv, tmp_path, *command)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"pip install 'pushgrid[{extra}]'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_up_names_the_extras_before_starting_anything(base_venv: Path, tmp_path: Path) -> None:
    done = _pushgrid(base_venv, tmp_path, "up")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pushgrid[admin]" in done.stderr
    assert not (tmp_path / "data").exists()


def test_server_and_a_round_trip_from_the_base_install(base_venv: Path, tmp_path: Path) -> None:
    port, monitor = free_port(), free_port()
    conf = tmp_path / "pushgrid.conf"
    conf.write_text(
        f"Listen = 127.0.0.1:{port}\nMonitorHTTP.Listen = 127.0.0.1:{monitor}\nLogLevel = WARNING\n"
    )
    server = subprocess.Popen(
        [str(base_venv / "bin" / "pushgrid"), "server", "--config", str(conf)],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                assert time.monotonic() < deadline, "the server never answered /health"
                time.sleep(0.2)
        address = f"127.0.0.1:{port}"
        subscriber = subprocess.Popen(
            [
                str(base_venv / "bin" / "pushgrid"),
                "subscribe",
                "/base/install",
                "-n",
                "1",
                "--server",
                address,
            ],
            cwd=tmp_path,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # The subscriber announces its subscription on stderr; publish until it got one.
            published = None
            deadline = time.monotonic() + 60
            while subscriber.poll() is None and time.monotonic() < deadline:
                published = _pushgrid(
                    base_venv, tmp_path, "publish", "/base/install", "hello", "--server", address
                )
                assert published.returncode == 0, published.stdout + published.stderr
                try:
                    subscriber.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    continue
            out, err = subscriber.communicate(timeout=10)
        finally:
            if subscriber.poll() is None:
                subscriber.kill()
        assert subscriber.returncode == 0, err
        line = json.loads(out.splitlines()[0])
        assert (line["subject"], line["content"]) == ("/base/install", "hello")
    finally:
        server.terminate()
        server.wait(timeout=20)
