"""Live trace through the admin API: it subscribes to the member's client port as a pushgrid
client, so messages published by a real client show up, entitlement is enforced by the member,
the buffer is bounded, and a session's detail shows its subscriptions and last frames."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jwt

from .pgtest import AdminHarness, ServerProcess, WsClient, assert_problem, member_entry

API = "/api/v1"
SECRET = "trace-test-secret-0123456789abcdef0123"


async def _poll(api: Any, trace_id: str, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while True:
        view: dict[str, Any] = (await api.get(f"{API}/traces/{trace_id}")).json()
        if until(view):
            return view
        assert time.monotonic() < deadline, view
        await asyncio.sleep(0.2)


async def test_trace_shows_published_messages_and_the_buffer_is_bounded(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    push = server_factory(ServerName="trace-1")
    admin = AdminHarness(tmp_path / "admin", [member_entry("trace-1", push)], trace_buffer_size=5)
    subject = "/trace/quotes/IBM"
    try:
        async with admin.client("operator") as api:
            response = await api.post(f"{API}/members/trace-1/traces", json={"subject": subject})
            assert response.status_code == 201, response.text
            trace_id = response.json()["id"]
            await _poll(api, trace_id, lambda v: v["status"] == "live")
            publisher = await connect(push)
            for n in range(8):
                await publisher.publish_ok(subject, f"price {n}", {"n": str(n)})
            view = await _poll(api, trace_id, lambda v: v["next_index"] >= 8)
            assert [m["content"] for m in view["messages"]] == [f"price {n}" for n in range(3, 8)]
            assert view["dropped"] == 3
            last = view["messages"][-1]
            assert last["fields"] == {"n": "7"}
            assert last["kind"] == "update"
            assert last["seq"] > 0
            assert last["size"] == len("price 7") + 2
            later = (await api.get(f"{API}/traces/{trace_id}", params={"after": 6})).json()
            assert [m["index"] for m in later["messages"]] == [7]

            # the trace is a session of the member; its detail records the frames it is sent
            sessions = (await api.get(f"{API}/members/trace-1/sessions")).json()["items"]
            (traced,) = [s for s in sessions if subject in s["subjects"]]
            path = f"{API}/members/trace-1/sessions/{traced['id']}"
            first = (await api.get(path)).json()
            assert first["subjects"] == [subject]
            assert first["outbound_buffer_bytes"] >= 0
            await publisher.publish_ok(subject, "after watch")
            detail = (await api.get(path)).json()
            assert any("after watch" in frame["text"] for frame in detail["last_frames"])
            assert_problem(await api.get(f"{API}/members/trace-1/sessions/nope"), 404)

            assert (await api.delete(f"{API}/traces/{trace_id}")).status_code == 204
            assert_problem(await api.get(f"{API}/traces/{trace_id}"), 404)
            async with admin.client("viewer") as viewer:
                denied = await viewer.post(
                    f"{API}/members/trace-1/traces", json={"subject": subject}
                )
                assert_problem(denied, 403)
            audit = (await api.get(f"{API}/audit", headers=admin.headers("admin"))).json()
            actions = [entry["action"] for entry in audit["items"]]
            assert "trace.open" in actions
            assert "trace.close" in actions
    finally:
        await admin.app.state.traces.close()
        admin.close()


async def test_trace_respects_entitlement(
    tmp_path: Path, server_factory: Callable[..., ServerProcess]
) -> None:
    push = server_factory(ServerName="trace-jwt", Entitlement="jwt", EntitlementJwtSecret=SECRET)
    admin = AdminHarness(tmp_path / "admin", [member_entry("trace-jwt", push)])
    allowed = jwt.encode(
        {"sub": "ops", "permissions": {"sub": ["/ok/*"]}, "exp": int(time.time()) + 3600},
        SECRET,
        "HS256",
    )
    try:
        async with admin.client("operator") as api:
            body = {"subject": "/secret/x", "entitlement_token": allowed}
            response = await api.post(f"{API}/members/trace-jwt/traces", json=body)
            assert response.status_code == 201, response.text
            view = await _poll(api, response.json()["id"], lambda v: v["status"] != "connecting")
            assert view["status"] == "denied", view
            body = {"subject": "/ok/x", "entitlement_token": allowed}
            response = await api.post(f"{API}/members/trace-jwt/traces", json=body)
            view = await _poll(api, response.json()["id"], lambda v: v["status"] != "connecting")
            assert view["status"] == "live", view
    finally:
        await admin.app.state.traces.close()
        admin.close()
