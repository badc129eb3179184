"""The statistics pipeline on a real Spark standalone cluster, and the hygiene of its runs.

* A master and two workers started from what the ``pyspark`` package ships (``bin/spark-class``
  ``...deploy.master.Master`` / ``...deploy.worker.Worker``, on 127.0.0.1, 1 core and 1 GB
  each) run ``pushgrid stats run --master spark://127.0.0.1:PORT`` over an archive every worker
  can read; the stored statistics equal those of a ``local[1]`` run, value for value.
* Job hygiene (issue 16): a run started by the admin API's runner lives in its own process
  group; when its driver is SIGKILLed, its JVM does not survive it; the next run marks the killed
  one failed; a second run while one is going is refused (HTTP 409 and CLI); closing the runner
  leaves no process of the run behind.

Every process started here is in a process group of its own, ended at teardown; the last test
checks that no JVM started by this module survives.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from pushgrid.metrics import sqlstore

from .pgtest import REPO, clean_env, free_port, spark_env
from .test_stats_cli import START, write_archive

pytestmark = pytest.mark.slow

pyspark = pytest.importorskip("pyspark")
SPARK_HOME = Path(pyspark.__file__).resolve().parent
AS_OF = START + 2 * 3600 - 1  # the last second of the archive's two closed hours
STAT_COLUMNS = "scope, indicator, window, as_of, count, max, avg, stddev"

_started_groups: list[int] = []


def _group_members(group: int) -> list[int]:
    """Pids of the live (not zombie) processes of a process group."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(entry))
    return members


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _jvms(group: int) -> list[int]:
    return [pid for pid in _group_members(group) if "java" in _cmdline(pid).split(" ", 1)[0]]


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


def _end_group(group: int) -> None:
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, signum)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while _group_members(group) and time.monotonic() < deadline:
            time.sleep(0.2)


# -- the standalone cluster -------------------------------------------------------------------


@dataclass
class Cluster:
    url: str
    master_log: Path
    processes: list[subprocess.Popen[bytes]]

    def wait_ready(self) -> None:
        _wait(lambda: _master_ui(self.master_log), 120, "the master's web UI bound")
        ui = _master_ui(self.master_log)
        _wait(lambda: _alive_workers(ui) == 2, 120, f"two workers registered with the master {ui}")


_BOUND_UI = re.compile(rb"Bound MasterWebUI to \S+ and started at (http://\S+)")


def _master_ui(log: Path) -> str:
    """The master's web UI as the master says it bound it: the port asked for may have been taken
    between ``free_port()`` and the bind (parallel tests), and Spark then takes the next one."""
    found = _BOUND_UI.search(log.read_bytes()) if log.exists() else None
    return found.group(1).decode() if found else ""


def _spark_class(cls: str, *args: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **spark_env(),
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_DAEMON_MEMORY": "256m",  # the master's and workers' own heaps
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), cls, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _started_groups.append(process.pid)
    return process


def _alive_workers(ui: str) -> int:
    try:
        with urllib.request.urlopen(f"{ui}/json/", timeout=5) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except (OSError, ValueError):  # not up yet, or an HTML page while the UI starts
        return 0


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A master and two workers (1 core, 1 GB each) on 127.0.0.1, for one test only.

    Yielded as soon as they are launched: the test does other work while their JVMs start,
    then calls ``wait_ready()``."""
    work = tmp_path_factory.mktemp("spark-cluster")
    port, ui_port = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    processes = [
        _spark_class(
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)),
            log=work / "master.log",
        )
    ]
    for n in (1, 2):
        worker_dir = work / f"worker-{n}"
        worker_dir.mkdir()
        processes.append(
            _spark_class(
                "org.apache.spark.deploy.worker.Worker",
                *("--host", "127.0.0.1", "--cores", "1", "--memory", "1g"),
                *("--webui-port", str(free_port()), "--work-dir", str(worker_dir), url),
                log=work / f"worker-{n}.log",
            )
        )
    try:
        yield Cluster(url, work / "master.log", processes)
    finally:
        for process in processes:
            _end_group(process.pid)


def _stats_run(db_url: str, archive: Path, warehouse: Path, master: str) -> None:
    argv = [sys.executable, "-m", "pushgrid", "stats", "run", "--db", db_url]
    argv += ["--archive", str(archive), "--warehouse", str(warehouse), "--master", master]
    argv += ["--as-of", str(AS_OF)]
    env = {**spark_env(), "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=400, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "succeeded" in done.stdout


def _stored(db_url: str, table: str) -> list[tuple[Any, ...]]:
    with sqlstore.session_scope(db_url) as session:
        rows = session.execute(text(f"SELECT {STAT_COLUMNS} FROM {table} ORDER BY {STAT_COLUMNS}"))
        return [tuple(row) for row in rows]


@pytest.mark.timeout(600)  # a cluster, two runs: minutes on a loaded 2-core machine
def test_cluster_run_stores_exactly_what_a_local_run_stores(
    cluster: Cluster, tmp_path: Path
) -> None:
    # one directory every worker can read (here: the same machine; docs/pipeline.md for hosts)
    archive = tmp_path / "shared" / "archive"
    write_archive(archive)
    local_db = f"sqlite:///{tmp_path / 'local.db'}"
    cluster_db = f"sqlite:///{tmp_path / 'cluster.db'}"
    # the local reference runs while the cluster's JVMs start (each run has its own warehouse)
    with ThreadPoolExecutor(1) as pool:
        local_run = pool.submit(
            _stats_run, local_db, archive, tmp_path / "shared" / "warehouse-local", "local[1]"
        )
        cluster.wait_ready()
        _stats_run(cluster_db, archive, tmp_path / "shared" / "warehouse-cluster", cluster.url)
        local_run.result()

    # the application really ran on the cluster's executors
    with urllib.request.urlopen(f"{_master_ui(cluster.master_log)}/json/", timeout=5) as answer:
        completed = json.load(answer).get("completedapps", [])
    assert [app["name"] for app in completed] == ["pushgrid-stats"]

    for table in ("window_stats", "trend_points"):
        local, on_cluster = _stored(local_db, table), _stored(cluster_db, table)
        assert local, table
        assert on_cluster == local, table

    status = subprocess.run(
        [sys.executable, "-m", "pushgrid", "stats", "status", "--db", cluster_db],
        cwd=REPO,
        env={**clean_env(), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "stages of run 1 (succeeded)" in status.stdout
    for stage in ("compaction", "rollups", "windows"):
        assert stage in status.stdout


# -- job hygiene -------------------------------------------------------------------------------


@pytest.mark.timeout(400)
def test_killed_runs_leave_no_jvm_and_are_marked_failed(tmp_path: Path) -> None:
    from pushgrid.admin_api.problems import ProblemError
    from pushgrid.admin_api.services.jobs import JobRunner
    from pushgrid.config import load_settings
    from pushgrid.metrics.sqlstore import INTERRUPTED, make_engine, make_session_factory, upgrade

    archive = tmp_path / "archive"
    write_archive(archive)
    url = f"sqlite:///{tmp_path / 'stats.db'}"
    upgrade(url)
    settings = load_settings(
        None,
        environ={},
        database=url,
        metrics_archive=str(archive),
        stats_warehouse=str(tmp_path / "warehouse"),
        spark_master="local[1]",
        log_level="WARNING",
    )
    engine = make_engine(url)
    factory = make_session_factory(engine)
    runner = JobRunner(settings.stats, settings.metrics_archive, tmp_path / "stats.log")
    try:
        # 1. the driver of a run is SIGKILLed once its JVM is up: the JVM does not survive it
        first = runner.trigger(factory, None, "test")
        assert runner._process is not None
        group = runner._process.pid
        _started_groups.append(group)
        _wait(lambda: _jvms(group), 120, "the first run's Spark JVM")
        os.kill(group, signal.SIGKILL)  # the driver only (it leads the group), not the group
        _wait(lambda: not _group_members(group), 60, "the JVM to end with its driver")
        with factory() as session:
            assert sqlstore.get_run(session, first.id).status == "running"  # it could not say

        # 2. the next run marks it failed, and a third one is refused while it runs
        second = runner.trigger(factory, None, "test")
        assert runner._process is not None
        group = runner._process.pid
        _started_groups.append(group)
        with factory() as session:
            killed = sqlstore.get_run(session, first.id)
            assert (killed.status, killed.error) == ("failed", INTERRUPTED)
        _wait(lambda: _jvms(group), 120, "the second run's Spark JVM")
        with pytest.raises(ProblemError) as busy:
            runner.trigger(factory, None, "test")
        assert busy.value.code == "job_running"
        cli = subprocess.run(
            [*runner.argv(), "--as-of", str(AS_OF)],
            cwd=REPO,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert cli.returncode == 1, cli.stdout + cli.stderr
        assert f"statistics run {second.id} " in cli.stderr
        assert "one run at a time" in cli.stderr

        # 3. closing the runner (the admin API shuts down) ends the whole group, JVM included
        runner.close(timeout=20)
        assert not _group_members(group)
    finally:
        runner.close(timeout=5)
        engine.dispose()


def test_no_jvm_started_by_this_module_survives() -> None:
    assert _started_groups, "the tests above started nothing"
    survivors = {group: _group_members(group) for group in _started_groups}
    assert not any(survivors.values()), {g: [_cmdline(p) for p in m] for g, m in survivors.items()}
