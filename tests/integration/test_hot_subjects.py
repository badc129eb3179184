"""Hot subjects on a real server driven by real clients: /stats?format=json, the
``pushgrid:type=HotSubjects`` MBean and Prometheus (top N only) agree on a skewed load."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from .pgtest import (
    DEFAULT_TIMEOUT,
    AdminHarness,
    ServerProcess,
    WsClient,
    member_entry,
    monitor_http,
    parse_prometheus,
)

TOP_N = 3


async def _stats(server: ServerProcess) -> dict[str, Any]:
    async with monitor_http(server) as http:
        response = await http.get("/stats", params={"format": "json"})
        assert response.status_code == 200
        document: dict[str, Any] = response.json()["hot_subjects"]
        return document


async def _until_ranked(server: ServerProcess, hot: str, deadline: float) -> dict[str, Any]:
    while True:
        document = await _stats(server)
        ranking = document["rankings"]["messages_in"]
        # rates fold every second, subscriber counts every 5 s: wait for both; a subscriber
        # refresh between the two subscribes lists one subject for 5 s, so wait for both
        full = len(ranking) >= TOP_N and len(document["rankings"]["subscribers"]) >= 2
        if full and ranking[0]["subject"] == hot:
            return document
        assert time.monotonic() < deadline, f"{hot} never ranked first: {document}"
        await asyncio.sleep(0.3)


async def test_skewed_load_is_ranked_everywhere(
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    # a long window: rates decay slowly, so a slow (loaded) test run reads the same ranking
    server = server_factory(**{"HotSubjects.TopN": TOP_N, "HotSubjects.Window": 30})
    subscriber = await connect(server)
    publisher = await connect(server)
    hot, warm = "/hot/quotes/IBM", "/hot/quotes/ACME"
    await subscriber.subscribe(hot)
    await subscriber.subscribe(warm)
    # 10 subjects: /hot/quotes/IBM gets 20 messages for each 4 of ACME and 1 of the others.
    for round_ in range(6):
        for _ in range(20):
            await publisher.publish_ok(hot, f"tick {round_}")
        for _ in range(4):
            await publisher.publish_ok(warm, "x")
        for index in range(8):
            await publisher.publish_ok(f"/hot/cold/{index}", "y")
    document = await _until_ranked(server, hot, time.monotonic() + 3 * DEFAULT_TIMEOUT)
    rankings = document["rankings"]
    assert [e["subject"] for e in rankings["messages_in"][:2]] == [hot, warm]
    assert len(rankings["messages_in"]) == TOP_N  # top N only, out of 10 subjects
    assert [e["subject"] for e in rankings["messages_out"][:2]] == [hot, warm]
    assert rankings["bytes_out"][0]["subject"] == hot
    assert {e["subject"]: e["value"] for e in rankings["subscribers"]} == {hot: 1, warm: 1}
    assert rankings["messages_in"][0]["value"] > rankings["messages_in"][1]["value"] > 0

    async with monitor_http(server) as http:
        answer = (
            await http.post(
                "/jolokia",
                json={"type": "read", "mbean": "pushgrid:type=HotSubjects"},
            )
        ).json()
        assert answer["status"] == 200, answer
        value = answer["value"]
        assert value["TopN"] == TOP_N
        assert value["IncomingMessages"][0]["subject"] == hot
        assert value["Subscribers"][0]["value"] == 1
        metrics = parse_prometheus((await http.get("/metrics")).text)
    ranked = {
        dict(labels)["subject"]
        for (name, labels), _ in metrics.items()
        if name == "pushgrid_hot_subject_rate" and dict(labels)["ranking"] == "messages_in"
    }
    assert hot in ranked
    assert len(ranked) == TOP_N


def test_rankings_can_be_turned_off(server_factory: Callable[..., ServerProcess]) -> None:
    server = server_factory(**{"HotSubjects.TopN": 0})
    with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
        document = http.get(f"{server.monitor_url}/stats?format=json").json()
    assert document["hot_subjects"]["top_n"] == 0
    assert document["hot_subjects"]["rankings"]["messages_in"] == []


async def test_admin_api_ranks_per_member_and_sums_the_cluster(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    servers = [
        server_factory(ServerName=f"hot-{n}", MetaSubjectInterval=0, **{"HotSubjects.Window": 2})
        for n in (1, 2)
    ]
    admin = AdminHarness(
        tmp_path / "admin",
        [member_entry(f"hot-{n}", s) for n, s in zip((1, 2), servers, strict=True)],
    )
    shared, only_one = "/hot/shared/x", "/hot/only/y"
    try:
        publishers = [await connect(s) for s in servers]
        for _ in range(15):
            for publisher in publishers:
                await publisher.publish_ok(shared, "s")
            await publishers[0].publish_ok(only_one, "o")
        async with admin.client("viewer") as api:
            deadline = time.monotonic() + DEFAULT_TIMEOUT
            while True:
                answer = (await api.get("/api/v1/hot-subjects")).json()
                members = {m["member"]: m for m in answer["members"]}
                ranked = {
                    name: {e["subject"]: e["value"] for e in m["rankings"]["messages_in"]}
                    for name, m in members.items()
                }
                if all(shared in r for r in ranked.values()) and only_one in ranked["hot-1"]:
                    break
                assert time.monotonic() < deadline, answer
                await asyncio.sleep(0.3)
            cluster = {
                e["subject"]: e["value"] for e in answer["cluster"]["rankings"]["messages_in"]
            }
            assert cluster[shared] == pytest.approx(
                ranked["hot-1"][shared] + ranked["hot-2"][shared], abs=0.01
            )
            assert cluster[only_one] == pytest.approx(ranked["hot-1"][only_one], abs=0.01)
            assert only_one not in ranked["hot-2"]
            one = (await api.get("/api/v1/members/hot-2/hot-subjects")).json()
            assert one["member"] == "hot-2"
            assert one["reachable"] is True
            assert one["top_n"] == 20
            missing = await api.get("/api/v1/members/nobody/hot-subjects")
            assert missing.status_code == 404
    finally:
        admin.close()
