"""The admin API's history keeps every second of every member (issue 21 item 6, ADR 026).

Two real servers; the admin API's collector polls them only every few seconds (a slow or
missed poll), one member is SIGKILLed and 84 clients connect to the survivor at once, as
clients reconnecting after a kill do. ``GET /stats/history`` must hold each second of the
survivor without a gap, the whole storm (84 connections, counted in the seconds they happened)
on the cluster's connections/s, and nothing of the dead member after its kill.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pushgrid.admin_api.member_client import new_http_client

from .pgtest import DEFAULT_TIMEOUT, AdminHarness, ServerProcess, WsClient, member_entry

STORM = 84
POLL_EVERY = 3.0  # seconds: far slower than the one-second samples


def _column(series: dict[str, Any], indicator: str) -> dict[int, float | None]:
    return dict(zip(series["seconds"], series["values"][indicator], strict=True))


async def test_history_keeps_every_second_of_a_storm_after_a_kill(
    server_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    m1 = server_factory(ServerName="m1")
    m2 = server_factory(ServerName="m2")
    admin = AdminHarness(tmp_path / "admin", [member_entry("m1", m1), member_entry("m2", m2)])
    collector = admin.app.state.history
    clients: list[WsClient] = []
    try:
        async with new_http_client(timeout=2.0) as http, admin.client("viewer") as api:
            started = int(time.time())
            await collector.poll(http)
            clients += await asyncio.gather(*(WsClient.connect(m2) for _ in range(5)))
            await asyncio.sleep(POLL_EVERY)
            await collector.poll(http)
            m2.kill()  # SIGKILL: its 5 clients are gone with it
            killed = int(time.time())
            clients += await asyncio.gather(*(WsClient.connect(m1) for _ in range(STORM)))
            stormed = int(time.time())
            deadline = time.monotonic() + DEFAULT_TIMEOUT
            while True:
                await asyncio.sleep(POLL_EVERY)
                await collector.poll(http)
                body = (await api.get("/api/v1/stats/history", params={"since": started})).json()
                survivor = next(m for m in body["members"] if m["scope"] == "m1")
                users = _column(survivor, "connected_users")
                if max(users) > stormed + 1 and users[max(users)] == STORM:
                    break
                assert time.monotonic() < deadline, users
    finally:
        for client in clients:
            await client.close()
        admin.close()

    seconds = survivor["seconds"]
    assert seconds == list(range(seconds[0], seconds[-1] + 1)), "polls every 3 s, no second lost"
    assert seconds[0] <= started + 1
    connects = _column(body["cluster"], "connections_per_second")
    storm = {ts: v for ts, v in connects.items() if ts >= killed and v}
    assert sum(storm.values()) == STORM, storm
    assert max(storm.values()) >= STORM / 4, f"a storm shows as a spike: {storm}"
    dead = next(m for m in body["members"] if m["scope"] == "m2")
    assert dead["seconds"], "m2 was read before its kill"
    assert max(dead["seconds"]) <= killed + 1, "nothing of a dead member after its kill"
    assert _column(dead, "connected_users")[max(dead["seconds"])] == 5
    cluster_users = _column(body["cluster"], "connected_users")
    assert cluster_users[max(cluster_users)] == STORM, "the dead member no longer counts"
    assert body["retention"] == 3600
