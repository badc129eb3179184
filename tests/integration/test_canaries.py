"""Canaries with real processes (issue 33 items 3 and 8a, ADR 049).

A 3-member Standard cluster and the admin API: every pair fresh and the admin API's probes
connected (internal sessions, counted nowhere); then m2's delivery is wedged through the test-only
fault point (``Test.WedgeDeliveryFile``) while it still accepts publishes -> ``DeliveryStalled``
fires on the pairs ``*->m2``, m2's ``/health``, the admin API's ``/cluster`` and the other views say
"degraded: delivery"; released -> healthy again. A member whose nats-server is stopped (SIGSTOP)
-> every canary pair with it stale, the others fresh. Times are printed, never asserted (a loaded
machine): the deadlines are generous.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from .cluster import Cluster
from .pgtest import AdminHarness, ServerProcess, WsClient, until

API = "/api/v1"
DEADLINE = 45.0  # seconds: generous on a loaded 2-core machine (the issue asks 10 s)
NAMES = ("m1", "m2", "m3")


async def _until(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    return await until(check, what, DEADLINE)


async def _get(member: ServerProcess, path: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=3.0, trust_env=False) as http:
        return await http.get(f"{member.monitor_url}{path}")


async def _health(member: ServerProcess) -> dict[str, Any]:
    answer: dict[str, Any] = (await _get(member, "/health")).json()
    return answer


def _cells(matrix: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(p["publisher"], p["receiver"]): p for p in matrix["pairs"]}


def _fresh(matrix: dict[str, Any], pairs: set[tuple[str, str]]) -> bool:
    cells = _cells(matrix)
    return all(pair in cells and not cells[pair]["stale"] for pair in pairs)


EVERY_PAIR = {(p, r) for p in NAMES for r in NAMES}


async def _alert(api: httpx.AsyncClient, rule: str, target: str) -> dict[str, Any] | None:
    items = (await api.get(f"{API}/alerts")).json()["items"]
    return next((a for a in items if (a["rule"], a["target"]) == (rule, target)), None)


@pytest.mark.timeout(300)
async def test_a_wedged_delivery_is_degraded_delivery_and_fires_delivery_stalled(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    wedge = tmp_path_factory.mktemp("wedge") / "m2-wedged"
    cluster = Cluster(tmp_path_factory.mktemp("canary"), configured=3, mode="Standard")
    cluster.member(2).settings["Test.WedgeDeliveryFile"] = str(wedge)
    admin: AdminHarness | None = None
    clients: list[WsClient] = []
    try:
        cluster.start()
        admin = AdminHarness(
            tmp_path_factory.mktemp("canary-admin"),
            [f"{n}={cluster.member(i).monitor_url}" for i, n in enumerate(NAMES, 1)],
        )
        probes, runner = admin.app.state.canary_probes, admin.app.state.alert_runner
        probes.start()
        runner.start()
        async with admin.client("viewer") as api:

            async def matrix() -> dict[str, Any]:
                response = await api.get(f"{API}/delivery/canaries")
                assert response.status_code == 200, response.text
                answer: dict[str, Any] = response.json()
                return answer

            async def all_fresh() -> dict[str, Any] | None:
                seen = await matrix()
                probes_ok = [
                    p["member"] for p in seen["probes"] if not p["stale"] and p["received"]
                ]
                fresh = _fresh(seen, EVERY_PAIR) and sorted(probes_ok) == list(NAMES)
                return seen if fresh else None

            healthy = await _until(all_fresh, "every pair and every probe fresh")
            assert healthy["members"] == list(NAMES)
            assert healthy["stalled"] == []
            assert all(r["reachable"] and r["published"] > 0 for r in healthy["receivers"])
            # the probes are internal sessions: no user in any count, listed on request only
            assert (await api.get(f"{API}/sessions")).json()["items"] == []
            listed = (await api.get(f"{API}/sessions", params={"internal": "true"})).json()
            assert sorted(s["member"] for s in listed["items"] if s["internal"]) == list(NAMES)
            for index in (1, 2, 3):
                assert (await _health(cluster.member(index)))["sessions"] == 0
                # canaries, followers and probes are in no user count (benchmarks/ops_walk.py)
                totals = (await _get(cluster.member(index), "/stats?format=json")).json()
                assert totals["totals"]["messages_in_total"] == 0
                assert totals["totals"]["messages_out_total"] == 0
                assert totals["gauges"]["subscriptions"] == 0

            # a user's subscriber on m2 and a publisher on m2: publishes are accepted meanwhile
            subscriber = await WsClient.connect(cluster.member(2))
            publisher = await WsClient.connect(cluster.member(2))
            clients += [subscriber, publisher]
            assert (await subscriber.subscribe("/wedge/test"))["type"] == "subscribed"
            await publisher.publish_ok("/wedge/test", "before")
            assert (await subscriber.messages(1, "/wedge/test"))[0]["content"] == "before"

            wedge.touch()
            wedged = time.monotonic()
            for publisher_name in NAMES:
                target = f"{publisher_name}->m2"

                async def firing(target: str = target) -> dict[str, Any] | None:
                    return await _alert(api, "DeliveryStalled", target)

                alert = await _until(firing, f"DeliveryStalled {target}")
                assert alert["state"] == "firing"
                assert alert["severity"] == "critical"
            print(
                f"wedge to DeliveryStalled firing on every *->m2: {time.monotonic() - wedged:.2f} s"
            )
            await publisher.publish_ok("/wedge/test", "during")  # still accepted
            assert await _alert(api, "DeliveryStalled", "m1->m3") is None  # others deliver

            health = await _health(cluster.member(2))
            assert health["status"] == "degraded"
            assert {(r["code"], r["member"]) for r in health["reasons"]} == {
                ("delivery_stalled", f"{name}->m2") for name in NAMES
            }
            assert "delivery: canaries of m1 do not reach m2" in {
                r["text"] for r in health["reasons"]
            }
            assert (await _health(cluster.member(1)))["status"] == "ok"
            overall = (await api.get(f"{API}/cluster")).json()
            assert overall["health"] == "degraded"
            assert {(r["code"], r["member"]) for r in overall["reasons"]} >= {
                ("delivery_stalled", "m1->m2")
            }
            seen = await matrix()
            assert set(seen["stalled"]) == {f"{name}->m2" for name in NAMES}
            assert {p["member"]: p["stale"] for p in seen["probes"]}["m2"] is True
            metrics = (await _get(cluster.member(2), "/metrics")).text
            assert 'pushgrid_canary_stale{publisher="m1",receiver="m2"} 1.0' in metrics
            stats = (await _get(cluster.member(2), "/stats")).text
            assert "canary.m3.stale 1" in stats.splitlines()
            assert subscriber.buffer == []  # the wedge: nothing reached the subscriber

            wedge.unlink()
            released = time.monotonic()
            await _until(all_fresh, "every pair fresh again")

            async def resolved() -> bool:
                return await _alert(api, "DeliveryStalled", "m1->m2") is None

            await _until(resolved, "DeliveryStalled resolved")
            print(f"release to DeliveryStalled resolved: {time.monotonic() - released:.2f} s")
            assert (await _health(cluster.member(2)))["status"] == "ok"
        await probes.stop()
        await runner.stop()
    finally:
        for client in clients:
            await client.close()
        if admin is not None:
            admin.close()
        cluster.kill_all()


def _nats_child(member: ServerProcess) -> int:
    """The pid of the member's nats-server (a child of the member's process)."""
    assert member.proc is not None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
            if parent == member.proc.pid and b"nats-server" in command:
                return int(entry.name)
    raise AssertionError(f"no nats-server child of {member.settings['ServerName']}")


async def _member_pairs(member: ServerProcess) -> dict[tuple[str, str], dict[str, Any]]:
    stats = (await _get(member, "/stats?format=json")).json()
    return {(p["publisher"], p["receiver"]): p for p in stats["canaries"]["pairs"]}


@pytest.mark.timeout(300)
async def test_a_stopped_nats_server_makes_every_pair_with_its_member_stale(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    cluster = Cluster(tmp_path_factory.mktemp("canary-nats"), configured=3, mode="Standard")
    stopped: int | None = None
    try:
        cluster.start()
        members = {name: cluster.member(i) for i, name in enumerate(NAMES, 1)}

        async def pairs() -> dict[tuple[str, str], dict[str, Any]]:
            out: dict[tuple[str, str], dict[str, Any]] = {}
            for member in members.values():
                out.update(await _member_pairs(member))
            return out

        async def all_fresh() -> bool:
            seen = await pairs()
            return all(pair in seen and not seen[pair]["stale"] for pair in EVERY_PAIR)

        await _until(all_fresh, "every pair fresh")
        stopped = _nats_child(members["m3"])
        os.kill(stopped, signal.SIGSTOP)
        at = time.monotonic()
        with_m3 = {pair for pair in EVERY_PAIR if "m3" in pair}

        async def stale_with_m3() -> bool:
            seen = await pairs()
            return all(pair in seen and seen[pair]["stale"] for pair in with_m3)

        await _until(stale_with_m3, "every pair with m3 stale")
        took = time.monotonic() - at
        print(f"SIGSTOP of m3's nats-server to every pair with m3 stale: {took:.2f} s")
        seen = await pairs()
        for pair in EVERY_PAIR - with_m3:
            assert not seen[pair]["stale"], pair  # m1 and m2 still reach each other
    finally:
        if stopped is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(stopped, signal.SIGCONT)
        cluster.kill_all()
