"""The member panel on a real server: its numbers against /proc, and open files rising when 100
clients connect; the same panel in /stats (JSON and text), the MBean and Prometheus.

docs/monitoring.md, "Member panel"; metrics/member_panel.py computes it (unit tests:
tests/unit/test_member_panel.py).
"""

from __future__ import annotations

import os
import resource
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from .pgtest import DEFAULT_TIMEOUT, ServerProcess, parse_prometheus, parse_stats_text

CLIENTS = 100


@pytest.fixture(scope="module")
def srv(module_server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return module_server_factory(ServerName="it-panel", MetaSubjectInterval=0)


def _panel(srv: ServerProcess) -> dict[str, Any]:
    with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
        document = http.get(f"{srv.monitor_url}/stats", params={"format": "json"}).json()
    panel: dict[str, Any] = document["panel"]
    return panel


def _wait_panel(srv: ServerProcess, ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while True:
        panel = _panel(srv)
        if ready(panel) or time.monotonic() > deadline:
            return panel
        time.sleep(0.2)


def _proc_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _proc_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_panel_reads_the_process(srv: ServerProcess) -> None:
    assert srv.proc is not None
    pid = srv.proc.pid
    panel = _wait_panel(srv, lambda p: p["cpu_percent"] is not None)
    assert panel["cpu_percent"] is not None, panel
    assert 0 <= panel["cpu_percent"] < 400
    assert panel["cpu_seconds_total"] > 0
    rss = _proc_rss(pid)
    assert panel["rss_bytes"] > 0
    assert abs(panel["rss_bytes"] - rss) / rss < 0.25, (panel["rss_bytes"], rss)
    # the server raises its soft limit to the hard one (server/rlimits.py)
    assert panel["max_open_files"] == resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert abs(panel["open_files"] - _proc_files(pid)) <= 5
    assert panel["loop_lag_seconds"] is not None
    assert panel["loop_lag_seconds"] >= 0
    assert panel["loop_lag_max_seconds"] >= panel["loop_lag_seconds"]
    assert panel["window_seconds"] == 60
    assert panel["replica_lag_max"] is None  # no stream without a cluster


def test_open_files_rise_with_clients(srv: ServerProcess) -> None:
    before = _wait_panel(srv, lambda p: p["cpu_percent"] is not None)["open_files"]
    sockets: list[socket.socket] = []
    try:
        for _ in range(CLIENTS):
            sockets.append(socket.create_connection((srv.host, srv.port), DEFAULT_TIMEOUT))
        panel = _wait_panel(srv, lambda p: p["open_files"] >= before + CLIENTS)
        assert srv.proc is not None
        # on failure: was the panel's count stale, or did the process not hold the sockets?
        assert panel["open_files"] >= before + CLIENTS, (
            f"open files {before} before, {panel['open_files']} on the panel after {CLIENTS} "
            f"connections; /proc says {_proc_files(srv.proc.pid)} now"
        )
    finally:
        for sock in sockets:
            sock.close()
    after = _wait_panel(srv, lambda p: p["open_files"] < before + CLIENTS // 2)
    assert after["open_files"] < before + CLIENTS // 2, "closed connections give their files back"


def test_panel_in_every_view(srv: ServerProcess) -> None:
    _wait_panel(srv, lambda p: p["cpu_percent"] is not None)
    with httpx.Client(base_url=srv.monitor_url, trust_env=False, timeout=DEFAULT_TIMEOUT) as h:
        _, text = parse_stats_text(h.get("/stats").text)
        metrics = parse_prometheus(h.get("/metrics").text)
        answer = h.get("/jolokia/read/pushgrid:type=MemberPanel").json()
    assert float(text["panel.rss_bytes"]) > 0
    assert text["panel.replica_lag_max"] == "U"
    assert metrics[("pushgrid_event_loop_lag_seconds", ())] >= 0
    assert metrics[("pushgrid_event_loop_lag_max_seconds", ())] >= 0
    assert ("pushgrid_flush_delay_p99_seconds", ()) in metrics
    assert metrics[("pushgrid_slow_consumer_disconnects_window", ())] == 0
    assert metrics[("process_open_fds", ())] > 0
    assert answer["status"] == 200, answer
    bean = answer["value"]
    assert bean["ResidentBytes"] > 0
    assert bean["OpenFiles"] > 0
    assert bean["MaxOpenFiles"] == resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert bean["EventLoopLag"] >= 0
    assert bean["Panel"]["rss_bytes"] > 0
