"""The operators' side of Workers (issue 31 items 4, 5; ADR 061), on real processes: the Workers
MBean (``pushgrid:type=Workers``) lists each process of a Workers = 2 server (and the one of a
Workers = 1 server, same shape); the admin API's member view carries them; a worker SIGKILLed
for real shows as restarted and fires ``WorkerRestarted``, one SIGSTOPped shows as not answering
and fires ``WorkerNotAnswering``; both resolve.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from pushgrid.ops import names
from pushgrid.server.workers.ownership import owner_of

from .pgtest import AdminHarness, ServerProcess
from .pgtest import until as until_given
from .test_workers import workers_of

API = "/api/v1"
DEADLINE = 60.0  # seconds: a bound for a failing test on a loaded machine, not a measurement


async def until(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    return await until_given(check, what, DEADLINE)


async def workers_bean(srv: ServerProcess) -> dict[str, Any]:
    async with httpx.AsyncClient(trust_env=False, timeout=10.0) as http:
        answer = (await http.get(f"{srv.monitor_url}/jolokia/read/pushgrid:type=Workers")).json()
    assert answer["status"] == 200, answer
    value: dict[str, Any] = answer["value"]
    return value


async def member_exec(srv: ServerProcess, operation: str, *arguments: Any) -> dict[str, Any]:
    """A Subjects MBean operation, asked of the member's monitoring port (as the admin API)."""
    request = {
        "type": "exec",
        "mbean": names.SUBJECTS,
        "operation": operation,
        "arguments": list(arguments),
    }
    async with httpx.AsyncClient(trust_env=False, timeout=30.0) as http:
        answer: dict[str, Any] = (
            await http.post(f"{srv.monitor_url}/jolokia", json=request)
        ).json()
    return answer


@pytest.fixture(scope="module")
def two_workers(module_server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return module_server_factory(Workers=2, ServerName="wops")


async def test_the_mbean_and_the_member_view_list_both_processes(
    two_workers: ServerProcess, tmp_path: Path
) -> None:
    pids = workers_of(two_workers)
    assert sorted(pids) == [0, 1]

    async def both_reported() -> dict[str, Any] | None:
        bean = await workers_bean(two_workers)
        rows = bean["Processes"]
        ready = [r for r in rows if r["answering"] and r["linked"] and r["cpus"]]
        return bean if len(ready) == 2 else None

    bean = await until(both_reported, "both processes in the Workers MBean")
    assert bean["Workers"] == 2
    assert bean["Restarts"] == 0
    assert bean["NotAnswering"] == []
    rows = bean["Processes"]
    assert [(r["index"], r["pid"]) for r in rows] == [(0, pids[0]), (1, pids[1])]
    assert set(bean["Cpus"]) == set(os.sched_getaffinity(pids[0]))
    for r in rows:
        assert r["cpus"] == sorted(os.sched_getaffinity(r["pid"]))
        assert r["rss_bytes"] > 0
        assert r["open_files"] > 0
        assert r["heartbeat_age_seconds"] is not None
    admin = AdminHarness(tmp_path / "admin", [f"wops={two_workers.monitor_url}"])
    async with admin.client("viewer") as api:
        member = (await api.get(f"{API}/members/wops")).json()
    assert [(p["index"], p["pid"]) for p in member["processes"]] == [(0, pids[0]), (1, pids[1])]


async def test_the_member_panel_is_the_whole_servers(two_workers: ServerProcess) -> None:
    """The MemberPanel MBean of a Workers = 2 server is the server's, not worker 0's: its
    open-file limit is both processes' limits, its memory both processes' (issue 31 item 4)."""
    pids = workers_of(two_workers)
    limits = sum(psutil.Process(pid).rlimit(psutil.RLIMIT_NOFILE)[0] for pid in pids.values())

    async def folded() -> dict[str, Any] | None:
        async with httpx.AsyncClient(trust_env=False, timeout=10.0) as http:
            answer = (
                await http.get(f"{two_workers.monitor_url}/jolokia/read/{names.MEMBER_PANEL}")
            ).json()
        panel: dict[str, Any] = answer["value"]
        return panel if panel["MaxOpenFiles"] == limits else None

    panel = await until(folded, "the panel to hold both workers' open-file limits")
    rows = (await workers_bean(two_workers))["Processes"]
    # resident memory moves little on an idle server: the panel holds both processes', far
    # above worker 0's alone
    assert panel["ResidentBytes"] >= 0.8 * sum(r["rss_bytes"] for r in rows)
    assert panel["OpenFiles"] > max(r["open_files"] for r in rows)


async def test_a_one_process_server_has_one_row_of_the_same_shape(
    server_factory: Callable[..., ServerProcess],
) -> None:
    srv = server_factory(ServerName="wops-one")
    assert srv.proc is not None
    bean = await workers_bean(srv)
    assert bean["Workers"] == 1
    (row,) = bean["Processes"]
    assert row["index"] == 0
    assert row["pid"] == srv.proc.pid
    assert row["cpus"] == sorted(os.sched_getaffinity(srv.proc.pid))
    assert row["restarts"] == 0
    assert row["heartbeat_age_seconds"] is None  # no supervisor
    assert row["answering"] is True


async def _alert(api: httpx.AsyncClient, rule: str, target: str) -> dict[str, Any] | None:
    items = (await api.get(f"{API}/alerts")).json()["items"]
    return next((a for a in items if (a["rule"], a["target"]) == (rule, target)), None)


async def test_a_killed_and_a_stopped_worker_fire_their_alerts_and_resolve(
    two_workers: ServerProcess, tmp_path: Path
) -> None:
    """Last in the module: it kills worker 1 and pauses its new life. While it is stopped the
    alert subject (worker 0's, as every ``/pushgrid/`` subject) takes announcements, and a
    question to worker 1 fails at once saying why."""
    admin = AdminHarness(
        tmp_path / "admin", [f"wops={two_workers.monitor_url}"], alerts_publish=False
    )
    runner = admin.app.state.alert_runner
    async with admin.client("operator") as api:
        rules = {r["name"]: r for r in (await api.get(f"{API}/alerts/rules")).json()["items"]}
        assert rules["WorkerRestarted"]["builtin"] is True
        assert rules["WorkerNotAnswering"]["builtin"] is True
        # an operator's edit: the restart alert clears after 2 s instead of 5 minutes
        patched = await api.patch(
            f"{API}/alerts/rules/{rules['WorkerRestarted']['id']}", json={"clear_for": 2.0}
        )
        assert patched.status_code == 200, patched.text
        runner.start()
        try:
            await until(lambda: _evaluated(runner, 3), "3 evaluations")
            assert (await api.get(f"{API}/alerts")).json()["items"] == []

            old = workers_of(two_workers)[1]
            os.kill(old, signal.SIGKILL)
            killed = time.monotonic()

            async def restarted() -> dict[str, Any] | None:
                row = (await workers_bean(two_workers))["Processes"][1]
                return row if row["restarts"] == 1 and row["pid"] not in (0, old) else None

            row = await until(restarted, "worker 1 restarted in the MBean")
            new = row["pid"]
            assert new == workers_of(two_workers)[1]
            target = f"wops worker 1 (pid {new})"
            alert = await until(lambda: _alert(api, "WorkerRestarted", target), "WorkerRestarted")
            print(f"SIGKILL to WorkerRestarted firing: {time.monotonic() - killed:.2f} s")
            assert alert["state"] == "firing"
            assert alert["severity"] == "warning"
            await until(lambda: _gone(api, "WorkerRestarted", target), "WorkerRestarted resolved")

            os.kill(new, signal.SIGSTOP)
            paused = time.monotonic()
            try:

                async def silent() -> bool:
                    bean = await workers_bean(two_workers)
                    return bool(
                        bean["NotAnswering"] == [1] and not bean["Processes"][1]["answering"]
                    )

                await until(silent, "worker 1 not answering in the MBean")
                # the alert subject is worker 0's: announcing still works (it waited for the
                # stopped worker 1 before, past the admin API's member timeout)
                announced = await member_exec(
                    two_workers, names.SUBJECTS_PUBLISH_ALERT, "a test alert", {"rule": "Test"}
                )
                assert announced["status"] == 200, announced
                # a question to the stopped owner of a subject fails at once, naming why (it
                # waited the mesh's 5 s before and then said only that)
                theirs = next(f"/W/{i}" for i in range(100) if owner_of(f"/W/{i}", 2) == 1)
                refused = await member_exec(two_workers, names.SUBJECTS_SNAPSHOT, theirs)
                assert refused["status"] != 200, refused
                assert "worker 1 of this server" in refused["error"]
                assert "has not answered its heartbeat" in refused["error"]
                stopped = await until(
                    lambda: _alert(api, "WorkerNotAnswering", target), "WorkerNotAnswering"
                )
                print(f"SIGSTOP to WorkerNotAnswering firing: {time.monotonic() - paused:.2f} s")
                assert stopped["state"] == "firing"
                assert (
                    await _alert(
                        api,
                        "WorkerNotAnswering",
                        f"wops worker 0 (pid {workers_of(two_workers)[0]})",
                    )
                    is None
                )
            finally:
                os.kill(new, signal.SIGCONT)
                resumed = time.monotonic()
            await until(
                lambda: _gone(api, "WorkerNotAnswering", target), "WorkerNotAnswering resolved"
            )
            print(f"SIGCONT to WorkerNotAnswering resolved: {time.monotonic() - resumed:.2f} s")
            assert workers_of(two_workers)[1] == new  # shown, not killed
            history = (await api.get(f"{API}/alerts/history", params={"target": target})).json()
            states = {(h["rule"], h["state"]) for h in history["items"]}
            assert {
                ("WorkerRestarted", "firing"),
                ("WorkerRestarted", "resolved"),
                ("WorkerNotAnswering", "firing"),
                ("WorkerNotAnswering", "resolved"),
            } <= states
        finally:
            await runner.stop()


async def _evaluated(runner: Any, count: int) -> bool:
    return bool(runner.evaluations >= count)


async def _gone(api: httpx.AsyncClient, rule: str, target: str) -> bool:
    return await _alert(api, rule, target) is None


def test_up_serves_on_every_usable_core_and_status_says_so(tmp_path: Path) -> None:
    """``pushgrid up`` without ``Workers``: ``auto`` (one process per usable core) on a
    single-node server; ``pushgrid status`` prints them with their cores."""
    from pushgrid.server.workers.cores import auto_workers

    from .pgtest import PUSHGRID, clean_env, free_port, run_cli, write_conf

    expected = auto_workers()
    monitor = free_port()
    conf = write_conf(
        tmp_path / "pushgrid.conf",
        {
            "ServerName": "wops-up",
            "Listen": f"127.0.0.1:{free_port()}",
            "MonitorHTTP.Listen": f"127.0.0.1:{monitor}",
            "Admin.Listen": f"127.0.0.1:{free_port()}",
            "StatsInterval": 0,
            "Database": f"sqlite:///{tmp_path / 'pushgrid.db'}",
        },
    )
    env = {k: v for k, v in clean_env().items() if k != "PUSHGRID_WORKERS"}
    assert run_cli("db", "upgrade", "--config", str(conf)).returncode == 0
    log = (tmp_path / "up.log").open("w")
    up = subprocess.Popen(
        [*PUSHGRID, "up", "--config", str(conf)], env=env, cwd=tmp_path, stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + DEADLINE
        while True:
            shown = run_cli("status", "--config", str(conf))
            if shown.returncode == 0 and f"{expected} process" in shown.stdout:
                break
            assert up.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() < deadline, (shown.stdout, shown.stderr)
            time.sleep(0.5)
        cores = ",".join(str(c) for c in sorted(os.sched_getaffinity(up.pid)))
        head = shown.stdout.splitlines()[0]
        assert head.startswith(f"wops-up (http://127.0.0.1:{monitor}): {expected} process")
        assert len([ln for ln in shown.stdout.splitlines() if "  worker " in ln]) == expected
        if cores == "0,1":
            assert head.endswith("on cores 0-1")
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait(timeout=60)
        log.close()
    assert up.returncode == 0


def test_status_names_a_url_that_is_no_monitoring_port(two_workers: ServerProcess) -> None:
    """``pushgrid status -m`` with the client port (a common slip) says which URL and why, exit 1,
    no traceback; the member's real monitoring URL beside it is still shown."""
    from .pgtest import run_cli

    wrong = two_workers.url
    shown = run_cli("status", "-m", wrong, "-m", two_workers.monitor_url)
    assert shown.returncode == 1, shown
    assert f"{wrong}: cannot read its Workers MBean: HTTP 404" in shown.stderr
    assert "monitoring URL" in shown.stderr
    assert "Traceback" not in shown.stderr
    assert "mozilla" not in shown.stderr
    assert "wops (" in shown.stdout
    assert "2 processes" in shown.stdout
