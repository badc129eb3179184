"""Traces by client id or subject recorded inside the members (issue 35 item 2, ADR 050),
against two real ``pushgrid server`` processes: a client traced by its client id across two
subjects on the whole cluster, millisecond times, a JSON-lines download, a subject trace that
adds no session or subscriber, roles, bounds and audit."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from .pgtest import AdminHarness, ServerProcess, WsClient, assert_problem, member_entry

API = "/api/v1"
Connect = Callable[..., Awaitable[WsClient]]


async def _until(
    api: httpx.AsyncClient, trace_id: str, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        view: dict[str, Any] = (await api.get(f"{API}/member-traces/{trace_id}")).json()
        if done(view):
            return view
        assert time.monotonic() < deadline, view
        await asyncio.sleep(0.2)


def _messages(view: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in view["events"] if e["direction"] == "out" and '"message"' in e["text"]]


async def test_trace_a_client_across_two_subjects_and_download_it(
    tmp_path: Path, server_factory: Callable[..., ServerProcess], connect: Connect
) -> None:
    push_a = server_factory(ServerName="mt-a", MetaSubjectInterval=0)
    push_b = server_factory(ServerName="mt-b", MetaSubjectInterval=0)
    admin = AdminHarness(
        tmp_path / "admin", [member_entry("mt-a", push_a), member_entry("mt-b", push_b)]
    )
    first, second = "/mt/quotes/IBM", "/mt/news/IBM"
    try:
        traced = await connect(push_a)
        await traced.send(
            {
                "op": "subscribe",
                "id": 1,
                "subjects": [
                    {"subject": first, "client_id": "desk-7"},
                    {"subject": second, "client_id": "desk-7"},
                ],
            }
        )
        await traced.wait_for(lambda f: f.get("subject") == second, 10, "subscribed")
        bystander = await connect(push_a)
        await bystander.subscribe(first)
        async with admin.client("operator") as api:
            before = (await api.get(f"{API}/sessions", params={"internal": "true"})).json()
            opened = await api.post(
                f"{API}/member-traces", json={"by": "client", "value": "desk-7"}
            )
            assert opened.status_code == 201, opened.text
            trace = opened.json()
            assert [(m["member"], m["error"]) for m in trace["members"]] == [
                ("mt-a", None),
                ("mt-b", None),
            ]
            publisher = await connect(push_a)
            await publisher.publish_ok(first, "IBM 101")
            await publisher.publish_ok(second, "IBM beats")
            await publisher.publish_ok(first, "IBM 102")
            await traced.send({"op": "publish", "id": 9, "subject": first, "content": "mine"})
            view = await _until(api, trace["id"], lambda v: len(_messages(v)) >= 4)
            messages = _messages(view)
            assert {e["subject"] for e in messages} == {first, second}
            assert {e["member"] for e in view["events"]} == {"mt-a"}
            assert {e["session"] for e in view["events"]} == {traced.welcome["session"]}
            contents = [json.loads(e["text"])["content"] for e in messages]
            assert contents[:3] == ["IBM 101", "IBM beats", "IBM 102"]
            (sent,) = [e for e in view["events"] if e["direction"] == "in"]
            assert json.loads(sent["text"])["content"] == "mine"
            times = [datetime.fromisoformat(e["at"]) for e in view["events"]]
            assert times == sorted(times)
            # millisecond times: whole milliseconds, not whole seconds
            assert all(t.microsecond % 1000 == 0 for t in times)
            assert any(t.microsecond for t in times)

            # a trace is not a session and not a subscriber
            after = (await api.get(f"{API}/sessions", params={"internal": "true"})).json()
            assert after["total"] == before["total"] + 1  # the publisher, nothing else
            later = await api.get(
                f"{API}/member-traces/{trace['id']}", params={"after": view["next_index"] - 2}
            )
            assert [e["index"] for e in later.json()["events"]] == [view["next_index"] - 1]

            download = await api.get(f"{API}/member-traces/{trace['id']}/events.jsonl")
            assert download.status_code == 200
            assert download.headers["content-type"].startswith("application/x-ndjson")
            assert "attachment" in download.headers["content-disposition"]
            lines = [json.loads(line) for line in download.text.splitlines()]
            assert len(lines) >= view["next_index"]
            assert lines[: len(view["events"])] == view["events"]

            async with admin.client("viewer") as viewer:
                body = {"by": "client", "value": "desk-7"}
                assert_problem(await viewer.post(f"{API}/member-traces", json=body), 403)
            async with admin.client("admin") as other:  # another token's trace is not found
                assert_problem(await other.get(f"{API}/member-traces/{trace['id']}"), 404)
            for bad in (
                {"by": "session", "value": "x"},
                {"by": "client", "value": ""},
                {"by": "subject", "value": "no-slash"},
                {"by": "client", "value": "x", "extra": 1},
            ):
                assert_problem(await api.post(f"{API}/member-traces", json=bad), 422)
            missing = {"by": "client", "value": "x", "member": "nobody"}
            assert_problem(await api.post(f"{API}/member-traces", json=missing), 404)

            assert (await api.delete(f"{API}/member-traces/{trace['id']}")).status_code == 204
            assert_problem(await api.get(f"{API}/member-traces/{trace['id']}"), 404)
            async with admin.client("admin") as reader:
                audit = (await reader.get(f"{API}/audit")).json()["items"]
            actions = {(e["action"], e["status"]) for e in audit}
            assert ("trace.member_open", 201) in actions
            assert ("trace.member_close", 204) in actions
    finally:
        await admin.app.state.traces.close()
        admin.close()


async def test_a_subject_trace_on_one_member_records_without_subscribing(
    tmp_path: Path, server_factory: Callable[..., ServerProcess], connect: Connect
) -> None:
    push = server_factory(ServerName="mt-s", MetaSubjectInterval=0)
    admin = AdminHarness(tmp_path / "admin", [member_entry("mt-s", push)])
    subject = "/mt/nobody/listens"
    try:
        async with admin.client("operator") as api:
            opened = await api.post(
                f"{API}/member-traces", json={"by": "subject", "value": subject, "member": "mt-s"}
            )
            assert opened.status_code == 201, opened.text
            trace_id = opened.json()["id"]
            publisher = await connect(push)
            for n in range(3):
                await publisher.publish_ok(subject, f"n{n}")
            view = await _until(api, trace_id, lambda v: len(v["events"]) >= 3)
            assert [json.loads(e["text"])["content"] for e in view["events"]] == ["n0", "n1", "n2"]
            assert {e["session"] for e in view["events"]} == {""}
            sessions = (await api.get(f"{API}/sessions", params={"internal": "true"})).json()
            assert [s["id"] for s in sessions["items"]] == [publisher.welcome["session"]]
            assert all(subject not in s["subjects"] for s in sessions["items"])
    finally:
        await admin.app.state.traces.close()
        admin.close()
