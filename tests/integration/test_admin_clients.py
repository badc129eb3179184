"""The Clients API (issue 35 item 1, ADR 050) against real ``pushgrid server`` processes: every
field of a client (client id, transport, compression, messages out, outbound buffer, internal),
the filters, sorts and page bounds, problem+json on bad parameters, probes of our own left out
of lists and counts, the slow-consumer log, and a disconnect a real SDK client sees as 4003."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from pushgrid.client import PushgridClient, Status, StatusEvent
from pushgrid.client.backoff import BackoffPolicy
from pushgrid.protocol.errors import CloseCode

from .pgtest import AdminHarness, ServerProcess, WsClient, assert_problem, member_entry

API = "/api/v1"
Connect = Callable[..., Awaitable[WsClient]]


async def _listing(api: httpx.AsyncClient, path: str, **params: Any) -> dict[str, Any]:
    response = await api.get(f"{API}{path}", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _settled(
    api: httpx.AsyncClient, until: Callable[[dict[str, Any]], bool], **params: Any
) -> dict[str, Any]:
    """The cluster's client list once ``until`` holds (a generous deadline, then exact checks)."""
    deadline = time.monotonic() + 20
    while True:
        body = await _listing(api, "/sessions", **params)
        if until(body):
            return body
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.1)


async def _subscribe_as(client: WsClient, subject: str, client_id: str) -> None:
    await client.send(
        {"op": "subscribe", "id": 7, "subjects": [{"subject": subject, "client_id": client_id}]}
    )
    await client.wait_for(lambda f: f.get("type") == "subscribed", 10, "subscribed")


def _by_id(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for item in body["items"]}


async def test_clients_fields_filters_sorts_and_internal_probes(
    tmp_path: Path, server_factory: Callable[..., ServerProcess], connect: Connect
) -> None:
    push = server_factory(ServerName="clients-1", MetaSubjectInterval=0)
    admin = AdminHarness(tmp_path / "admin", [member_entry("clients-1", push)])
    topic = "/clients/quotes/IBM"
    try:
        alice = await connect(push)
        await _subscribe_as(alice, topic, "alice-desk")
        publisher = await connect(push)
        for n in range(3):
            await publisher.publish_ok(topic, f"price {n}")
        await alice.messages(3)
        async with (
            httpx.AsyncClient(timeout=10) as sse,
            sse.stream(
                "GET", f"{push.url}/events", params={"subject": topic, "client_id": "bob-feed"}
            ) as stream,
        ):
            assert stream.status_code == 200
            async with admin.client("viewer") as api:
                ids = {alice.welcome["session"], publisher.welcome["session"]}
                body = await _settled(api, lambda b: b["total"] == 3)
                assert body["internal_hidden"] == 0  # no probe of ours here
                items = _by_id(body)
                assert ids <= set(items)
                a = items[alice.welcome["session"]]
                assert (a["client_id"], a["transport"], a["internal"]) == (
                    "alice-desk",
                    "websocket",
                    False,
                )
                assert a["messages_out"] == 3  # the 3 messages; welcome and subscribed are answers
                assert a["subjects"] == [topic]
                assert a["outbound_buffer_bytes"] >= 0
                assert a["delivery_latency_ms"] is None  # nothing reported: no number made up
                p = items[publisher.welcome["session"]]
                assert (p["messages_in"], p["messages_out"], p["client_id"]) == (3, 0, "")
                (feed,) = [i for i in body["items"] if i["transport"] == "sse"]
                assert (feed["client_id"], feed["compression"]) == ("bob-feed", False)

                both = await _listing(api, "/sessions", internal="true")
                assert both["total"] == 3

                by_client = await _listing(api, "/sessions", client_id="alice")
                assert [i["id"] for i in by_client["items"]] == [alice.welcome["session"]]
                by_transport = await _listing(api, "/sessions", transport="sse")
                assert [i["id"] for i in by_transport["items"]] == [feed["id"]]
                by_member = await _listing(api, "/sessions", member="clients-1")
                assert by_member["total"] == 3
                assert (await _listing(api, "/sessions", member="nobody"))["total"] == 0

                ordered = await _listing(api, "/sessions", sort="-messages_out")
                outs = [i["messages_out"] for i in ordered["items"]]
                assert outs == sorted(outs, reverse=True)
                assert ordered["items"][0]["id"] in (alice.welcome["session"], feed["id"])
                by_name = await _listing(api, "/sessions", sort="client_id")
                names = [i["client_id"] for i in by_name["items"]]
                assert names == sorted(names)
                page = await _listing(api, "/sessions", sort="client_id", limit=1, offset=2)
                assert page["total"] == 3
                assert [i["id"] for i in page["items"]] == [by_name["items"][2]["id"]]

                for params, where in (
                    ({"limit": 1001}, "limit"),
                    ({"limit": 0}, "limit"),
                    ({"offset": -1}, "offset"),
                    ({"sort": "password"}, "sort"),
                    ({"internal": "maybe"}, "internal"),
                    ({"transport": "carrier-pigeon"}, "transport"),
                    ({"min_outbound_buffer_bytes": -1}, "min_outbound_buffer_bytes"),
                ):
                    bad = await api.get(f"{API}/sessions", params=params)
                    assert assert_problem(bad, 422)["errors"][0]["loc"] == ["query", where]
    finally:
        await admin.app.state.traces.close()
        admin.close()


async def test_slow_consumer_closes_are_recorded_and_shown(
    tmp_path: Path, server_factory: Callable[..., ServerProcess], connect: Connect
) -> None:
    push = server_factory(ServerName="clients-slow", MaxOutboundBufferSize=65536)
    admin = AdminHarness(tmp_path / "admin", [member_entry("clients-slow", push)])
    topic = "/clients/slow/history"
    try:
        publisher = await connect(push)
        for n in range(150):
            await publisher.publish_ok(topic, f"{n:04d}" + "h" * 1000)
        greedy = await connect(push)
        await greedy.send(
            {
                "op": "subscribe",
                "id": 1,
                "subjects": [{"subject": topic, "history": 150, "client_id": "greedy-1"}],
            }
        )
        assert await greedy.wait_closed() == CloseCode.SLOW_CONSUMER
        async with admin.client("viewer") as api:
            body = await _listing(api, "/slow-consumers")
            (record,) = body["items"]
            assert record["session"] == greedy.welcome["session"]
            assert (record["member"], record["client_id"], record["transport"]) == (
                "clients-slow",
                "greedy-1",
                "websocket",
            )
            assert record["subjects"] == [topic]
            assert record["subject_count"] == 1
            assert record["limit"] == 65536
            assert record["queued_bytes"] >= 0
            assert record["remote"].startswith("127.0.0.1:")
            one = await _listing(api, "/members/clients-slow/slow-consumers", client_id="greedy-1")
            assert one["items"] == body["items"]
            none = await _listing(api, "/slow-consumers", client_id="someone-else")
            assert (none["total"], none["items"]) == (0, [])
            bad = await api.get(f"{API}/slow-consumers", params={"limit": 5000})
            assert_problem(bad, 422)
            unknown = await api.get(f"{API}/members/nobody/slow-consumers")
            assert_problem(unknown, 404)

        # a client with the same id that connects again shows the close in its detail
        again = await connect(push)
        await _subscribe_as(again, topic, "greedy-1")
        async with admin.client("operator") as api:
            path = f"{API}/members/clients-slow/sessions/{again.welcome['session']}"
            detail = (await api.get(path)).json()
            assert detail["client_id"] == "greedy-1"
            assert [r["session"] for r in detail["slow_consumers"]] == [greedy.welcome["session"]]
    finally:
        await admin.app.state.traces.close()
        admin.close()


async def test_a_disconnected_sdk_client_sees_4003_and_the_disconnect_is_audited(
    tmp_path: Path, server_factory: Callable[..., ServerProcess]
) -> None:
    push = server_factory(ServerName="clients-cut")
    admin = AdminHarness(tmp_path / "admin", [member_entry("clients-cut", push)])
    closed: asyncio.Queue[StatusEvent] = asyncio.Queue()

    def on_status(event: StatusEvent) -> None:
        if event.status in (Status.SERVER_DOWN, Status.CLOSED):
            closed.put_nowait(event)

    client = PushgridClient(push.ws_url, on_status=on_status, backoff=BackoffPolicy(), proxy=None)
    await client.subscribe("/clients/cut/x")
    await client.connect(timeout=10)
    try:
        async with admin.client("viewer") as api:
            body = await _settled(api, lambda b: b["total"] == 1)
        session_id = body["items"][0]["id"]
        path = f"{API}/members/clients-cut/sessions/{session_id}"
        async with admin.client("viewer") as viewer:
            assert_problem(await viewer.delete(path), 403, "forbidden")
        async with admin.client("operator") as api:
            assert (await api.delete(path)).status_code == 204
        event = await asyncio.wait_for(closed.get(), 15)
        assert event.close_code == CloseCode.DISCONNECTED_BY_OPERATOR
        assert event.close_code == 4003  # docs/protocol.md 8.2, client/closecodes.py
        async with admin.client("admin") as api:
            audit = (await api.get(f"{API}/audit")).json()["items"]
        done = [e for e in audit if e["action"] == "sessions.disconnect"]
        assert sorted((e["role"], e["status"], e["outcome"]) for e in done) == [
            ("operator", 204, "succeeded"),
            ("viewer", 403, "denied"),
        ]
        (succeeded,) = [e for e in done if e["status"] == 204]
        assert succeeded["target"] == f"clients-cut/{session_id}"
    finally:
        await client.close()
        await admin.app.state.traces.close()
        admin.close()
