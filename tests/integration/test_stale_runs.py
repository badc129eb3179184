"""Stale ``running`` rows of ``job_runs``: whose owner is gone, and whose is not (issue 10, item 9).

Real processes record runs as a statistics run does (``start_run`` with their owner) and are
SIGKILLed; :func:`metrics.sqlstore.fail_stale`, as the next run calls it while holding its own
warehouse's lock, must close exactly the runs of dead owners. The whole path through a real
``pushgrid stats run`` killed mid-run is ``test_stats_cluster.py``'s killed-runs test.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pushgrid.metrics import sqlstore
from pushgrid.metrics.sqlstore import RunOwner

from .pgtest import clean_env

RECORD_AND_WAIT = """
import sys, time
from pushgrid.metrics import sqlstore
with sqlstore.session_scope(sys.argv[1]) as db:
    run = sqlstore.start_run(db, master="local[1]", owner=sqlstore.RunOwner(sys.argv[2]))
print(run.id, flush=True)
time.sleep(300)
"""


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for child in started:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)


def _recording_run(
    children: list[subprocess.Popen[str]], url: str, warehouse: Path
) -> tuple[subprocess.Popen[str], int]:
    child = subprocess.Popen(
        [sys.executable, "-c", RECORD_AND_WAIT, url, str(warehouse)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    children.append(child)
    assert child.stdout is not None
    return child, int(child.stdout.readline())


def _state(url: str, run_id: int) -> tuple[str, str | None]:
    with sqlstore.session_scope(url) as db:
        run = sqlstore.get_run(db, run_id)
        return run.status, run.error


def test_only_runs_whose_owner_is_gone_are_marked_failed(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    url = f"sqlite:///{tmp_path / 'stats.db'}"
    sqlstore.upgrade(url)
    mine, other = tmp_path / "warehouse", tmp_path / "other-warehouse"

    killed, killed_id = _recording_run(children, url, other)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=10)
    _live, live_id = _recording_run(children, url, other)
    _on_mine, on_mine_id = _recording_run(children, url, mine)  # alive, yet on our warehouse
    with sqlstore.session_scope(url) as db:
        remote = sqlstore.start_run(db, owner=RunOwner(str(other), host="elsewhere", pid=1)).id
        legacy = sqlstore.start_run(db).id  # recorded before owners were (migration 0004)
    assert _state(url, killed_id) == ("running", None)  # it could not say

    with sqlstore.session_scope(url) as db:
        failed = sqlstore.fail_stale(db, RunOwner(str(mine)))

    assert sorted(failed) == sorted([killed_id, on_mine_id, legacy])
    status, error = _state(url, killed_id)
    assert status == "failed"
    assert error == (
        f"interrupted: its process {killed.pid} on {socket.gethostname()} is gone without "
        "recording the outcome (killed?)"
    )
    # on our warehouse, whose lock the caller holds: no live run can be there
    assert _state(url, on_mine_id) == ("failed", sqlstore.INTERRUPTED)
    assert _state(url, legacy) == ("failed", sqlstore.INTERRUPTED)
    assert _state(url, live_id) == ("running", None)  # its process is alive
    assert _state(url, remote) == ("running", None)  # another host: not ours to judge
    with sqlstore.session_scope(url) as db:
        assert sqlstore.fail_stale(db, RunOwner(str(mine))) == []  # nothing left to close
        newest = sqlstore.running_run(db, str(other))
        assert newest is not None
        assert newest.id == remote
