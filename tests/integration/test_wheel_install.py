"""pushgrid from a wheel, outside the checkout: ``db upgrade``, ``stats run``, ``admin`` (ADR 015).

The wheel is built from a copy of the tree and installed, without its dependencies, into a
fresh virtual environment in a temporary directory; that environment reaches the dependencies
through a ``.pth`` line naming this checkout's ``.venv`` site-packages (a plain path entry: the
editable install's finder, which maps ``pushgrid`` to the checkout, is not loaded).
Every command runs with its working directory outside the checkout, so nothing is found through
the current directory: the test fails if the wheel lacks a module or the migrations.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .pgtest import REPO, clean_env, free_port, spark_env
from .test_stats_cli import write_archive

PIP = (sys.executable, "-m", "pip")
SKIP = shutil.ignore_patterns(
    ".git", ".venv", "build", "data", "*.egg-info", "__pycache__", ".*_cache", "node_modules"
)


def _wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=SKIP)
    out = tmp_path / "wheelhouse"
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        env=clean_env(),
        check=True,
        capture_output=True,
        timeout=120,
    )
    (wheel,) = out.glob("pushgrid-*.whl")
    return wheel


def _venv(tmp_path: Path, wheel: Path) -> Path:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [*PIP, "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        env=clean_env(),
        check=True,
        capture_output=True,
        timeout=120,
    )
    (purelib,) = (venv / "lib").glob("python3.*/site-packages")
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "_pushgrid_test_deps.pth").write_text("\n".join(deps) + "\n")
    return venv


def _run(venv: Path, cwd: Path, *args: str, timeout: float = 120) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "pushgrid"), *args],
        cwd=cwd,
        env={**spark_env(), "COLUMNS": "200"},  # `stats run` starts Spark
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"pushgrid {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _get(url: str, token: str) -> dict[str, object]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.load(response))


@pytest.mark.timeout(400)
def test_wheel_outside_the_checkout_migrates_runs_and_serves(tmp_path: Path) -> None:
    venv = _venv(tmp_path, _wheel(tmp_path))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    python = venv / "bin" / "python"
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import pushgrid.metrics.sqlstore, pushgrid.server; "
            "print(pushgrid.metrics.sqlstore.__file__); print(pushgrid.server.__file__)",
        ],
        cwd=outside,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(Path(path).is_relative_to(venv) for path in where), where  # not the checkout

    write_archive(outside / "archive")
    port = free_port()
    conf = outside / "pushgrid.conf"
    conf.write_text(
        "Database = sqlite:///data/pushgrid.db\n"  # relative: to the working directory
        "MetricsArchive = archive\n"
        "StatsWarehouse = warehouse\n"
        "SparkMaster = local[1]\n"
        "SparkDriverMemory = 512m\n"
        "LogLevel = WARNING\n"
        f"Admin.Listen = 127.0.0.1:{port}\n"
    )
    upgraded = _run(venv, outside, "db", "upgrade", "--config", str(conf))
    newest = max(path.name[:4] for path in (REPO / "alembic" / "versions").glob("[0-9]*.py"))
    assert f"revision {newest}" in upgraded, upgraded
    _run(venv, outside, "stats", "run", "--config", str(conf), timeout=300)
    assert (outside / "data" / "pushgrid.db").is_file()

    admin = subprocess.Popen(
        [str(venv / "bin" / "pushgrid"), "admin", "serve", "--config", str(conf), "--bootstrap"],
        cwd=outside,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert admin.stdout is not None
        token = None
        for line in admin.stdout:
            found = re.search(r"first admin token \(shown once\): (\S+)", line)
            if found:
                token = found.group(1)
                break
        assert token is not None, "the admin API printed no bootstrap token"
        base = f"http://127.0.0.1:{port}/api/v1"
        deadline = time.monotonic() + 60
        while True:
            try:
                jobs = _get(f"{base}/jobs", token)
                break
            except OSError:
                if time.monotonic() > deadline or admin.poll() is not None:
                    raise
                time.sleep(0.2)
        items = jobs["items"]
        assert isinstance(items, list)
        assert [(job["id"], job["status"]) for job in items] == [(1, "succeeded")], jobs
    finally:
        admin.terminate()
        try:
            admin.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(admin.pid, 9)
            admin.wait()
