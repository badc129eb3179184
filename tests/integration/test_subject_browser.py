# ruff: noqa: F811  (pytest fixtures imported from test_admin_api, used as arguments)
"""The subject browser's admin API routes (issue 35 item 3, ADR 051) against real members.

Two standalone ``pushgrid server`` processes and a member nothing listens on: search by the
entitlement rules' pattern syntax across members, paging bounds, problem+json for a bad pattern
naming the parameter, a subject's cached history, ending a real client's subscription, the
roles and the audit entries. A real 2-member Standard cluster: a snapshot removed through the API
is gone on every member, subscribers keep their (epoch, seq) and the numbering goes on.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .cluster import Cluster
from .pgtest import AdminHarness, WsClient, assert_problem, member_entry
from .test_admin_api import admin, push1, push2  # noqa: F401  (fixtures, used by name)

API = "/api/v1"


async def _listed(api: Any, pattern: str, count: int, **params: Any) -> dict[str, Any]:
    """The page once ``count`` subjects match (members apply publishes asynchronously)."""
    body: dict[str, Any] = {}
    for _ in range(100):
        response = await api.get(f"{API}/subjects", params={"pattern": pattern, **params})
        assert response.status_code == 200, response.text
        body = response.json()
        if body["total"] == count:
            return body
        await asyncio.sleep(0.05)
    raise AssertionError(f"{body['total']} subjects match {pattern}, expected {count}: {body}")


async def test_search_by_pattern_across_members_sorted_and_paged(
    admin, push1, push2, connect, subject
):
    base = subject("b")  # /test/<test>/b: a prefix of its own
    prefix = base.rsplit("/", 1)[0]
    a1, a2 = await connect(push1), await connect(push2)
    await a1.publish_ok(f"{prefix}/NYSE/IBM", "193", {"volume": "6.62M"})
    await a1.publish_ok(f"{prefix}/NYSE/IBM", "192", retained=False)
    await a2.publish_ok(f"{prefix}/NYSE/IBM", "191")
    await a2.publish_ok(f"{prefix}/LSE/VOD", "x", retained=False)
    watcher = await connect(push2)
    assert (await watcher.subscribe(f"{prefix}/NYSE/IBM"))["status"] == "allow"
    other = await connect(push1)
    assert (await other.subscribe(f"{prefix}/LSE/NEW"))["status"] == "allow"  # never published
    async with admin.client("viewer") as api:
        body = await _listed(api, f"{prefix}/*", 3)
        rows = {row["subject"]: row for row in body["items"]}
        ibm = rows[f"{prefix}/NYSE/IBM"]
        assert ibm["members"] == ["push-1", "push-2"]
        assert ibm["subscribers"] == 1
        # push-1 holds "193" + volume, push-2 "191": the larger is shown
        assert ibm["snapshot_bytes"] == len("193") + len("volume") + len("6.62M")
        assert ibm["last_publish"] is not None
        assert rows[f"{prefix}/LSE/VOD"]["snapshot_bytes"] == 0
        assert rows[f"{prefix}/LSE/NEW"] == {
            "subject": f"{prefix}/LSE/NEW",
            "subscribers": 1,
            "snapshot_bytes": 0,
            "last_publish": None,
            "members": ["push-1"],
        }
        assert [u["member"] for u in body["unreachable"]] == ["down"]
        assert body["truncated"] is False
        # the pattern syntax of the entitlement rules: * is one segment, a last * any depth
        nyse = await _listed(api, f"{prefix}/*/IBM", 1)
        assert [r["subject"] for r in nyse["items"]] == [f"{prefix}/NYSE/IBM"]
        page = await _listed(api, f"{prefix}/*", 3, sort="-snapshot_bytes", offset=1, limit=1)
        assert (page["offset"], page["limit"]) == (1, 1)
        assert [r["subject"] for r in page["items"]] == [f"{prefix}/LSE/NEW"]  # 0 bytes, by name
        by_subscribers = await _listed(api, f"{prefix}/*", 3, sort="-subscribers", limit=2)
        assert [r["subscribers"] for r in by_subscribers["items"]] == [1, 1]

        bad = await api.get(f"{API}/subjects", params={"pattern": "Stocks/*"})
        problem = assert_problem(bad, 422, "invalid_pattern")
        assert "'pattern'" in problem["detail"]
        assert problem["errors"][0]["loc"] == ["query", "pattern"]
        too_big = await api.get(f"{API}/subjects", params={"limit": 501})
        assert assert_problem(too_big, 422)["errors"][0]["loc"] == ["query", "limit"]
        bad_sort = await api.get(f"{API}/subjects", params={"sort": "content"})
        assert assert_problem(bad_sort, 422)["errors"][0]["loc"] == ["query", "sort"]
        negative = await api.get(f"{API}/subjects", params={"offset": -1})
        assert assert_problem(negative, 422)["errors"][0]["loc"] == ["query", "offset"]


async def test_history_shows_the_last_cached_messages_with_their_numbers(
    admin, push1, connect, subject
):
    topic = subject("h")
    publisher = await connect(push1)
    results = [await publisher.publish_ok(topic, f"m{i}") for i in range(1, 6)]
    await publisher.publish_ok(topic, "standard", qos="standard")  # not cached
    async with admin.client("viewer") as api:
        response = await api.get(
            f"{API}/members/push-1/subjects/history", params={"subject": topic, "limit": 3}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["member"], body["subject"], body["limit"]) == ("push-1", topic, 3)
        assert [(i["seq"], i["content"]) for i in body["items"]] == [
            (3, "m3"),
            (4, "m4"),
            (5, "m5"),
        ]
        assert {i["epoch"] for i in body["items"]} == {results[0]["epoch"]}
        too_many = await api.get(
            f"{API}/members/push-1/subjects/history", params={"subject": topic, "limit": 101}
        )
        assert assert_problem(too_many, 422)["errors"][0]["loc"] == ["query", "limit"]
        invalid = await api.get(
            f"{API}/members/push-1/subjects/history", params={"subject": "nope"}
        )
        assert_problem(invalid, 422, "invalid_subject")
        down = await api.get(f"{API}/members/down/subjects/history", params={"subject": topic})
        assert_problem(down, 502, "member_unreachable")


async def test_unsubscribe_ends_one_subscription_of_a_real_client(admin, push1, connect, subject):
    topic, kept = subject("gone"), subject("kept")
    client: WsClient = await connect(push1)
    await client.subscribe(topic)
    await client.subscribe(kept)
    publisher = await connect(push1)
    session = client.welcome["session"]
    async with admin.client("viewer") as api:
        forbidden = await api.delete(
            f"{API}/members/push-1/sessions/{session}/subjects", params={"subject": topic}
        )
        assert_problem(forbidden, 403, "forbidden")
    async with admin.client("operator") as api:
        response = await api.delete(
            f"{API}/members/push-1/sessions/{session}/subjects", params={"subject": topic}
        )
        assert response.status_code == 204, response.text
        told = await client.expect("unsubscribed", subject=topic)
        assert told.get("id") is None
        await publisher.publish_ok(topic, "not for you")
        await publisher.publish_ok(kept, "still yours")
        message = await client.expect("message", subject=kept)
        assert message["content"] == "still yours"
        assert not [f for f in await client.sync() if f.get("subject") == topic]
        assert not client.closed.is_set()
        again = await api.delete(
            f"{API}/members/push-1/sessions/{session}/subjects", params={"subject": topic}
        )
        assert_problem(again, 404, "not_found")
        info = await api.get(f"{API}/members/push-1/subjects", params={"subject": topic})
        assert info.json()["subscribers"] == 0
    async with admin.client("admin") as api:
        audit = (await api.get(f"{API}/audit", params={"limit": 100})).json()["items"]
    entries = [e for e in audit if e["action"] == "subjects.unsubscribe"]
    assert [(e["status"], e["outcome"], e["role"]) for e in entries] == [
        (404, "failed", "operator"),
        (204, "succeeded", "operator"),
        (403, "denied", "viewer"),
    ]
    assert entries[1]["target"] == f"push-1/{session}"
    assert entries[1]["detail"] == f"subject={topic}"


async def test_removal_on_a_standalone_member_and_its_audit(admin, push1, push2, connect, subject):
    topic = subject("r")
    publisher = await connect(push1)
    first = await publisher.publish_ok(topic, "193", {"volume": "1"})
    async with admin.client("viewer") as api:
        forbidden = await api.delete(f"{API}/subjects/snapshot", params={"subject": topic})
        assert_problem(forbidden, 403, "forbidden")
    async with admin.client("operator") as api:
        removed = await api.delete(f"{API}/subjects/snapshot", params={"subject": topic})
        assert removed.status_code == 200, removed.text
        body = removed.json()
        assert (body["subject"], body["removed"]) == (topic, True)
        # each standalone member gets it (push-2 held none); epoch and seq unchanged
        assert [(m["member"], m["removed"]) for m in body["members"]] == [
            ("push-1", True),
            ("push-2", False),
        ]
        assert (body["members"][0]["epoch"], body["members"][0]["seq"]) == (
            first["epoch"],
            first["seq"],
        )
        assert [u["member"] for u in body["unreachable"]] == ["down"]
        info = await api.get(f"{API}/members/push-1/subjects", params={"subject": topic})
        assert info.json()["snapshot"] is None
        invalid = await api.delete(f"{API}/subjects/snapshot", params={"subject": "x"})
        assert_problem(invalid, 422, "invalid_subject")
    async with admin.client("admin") as api:
        audit = (await api.get(f"{API}/audit", params={"limit": 100})).json()["items"]
    entries = [e for e in audit if e["action"] == "subjects.remove_snapshot"]
    assert [(e["status"], e["outcome"]) for e in entries] == [
        (422, "failed"),
        (200, "succeeded"),
        (403, "denied"),
    ]
    assert entries[1]["target"] == topic


async def test_a_removed_snapshot_is_gone_on_every_cluster_member(tmp_path, connect, subject):
    nodes = Cluster(tmp_path / "cluster", configured=2, mode="Standard")
    admin = None
    try:
        nodes.start(1, 2)
        one, two = nodes.member(1), nodes.member(2)
        admin = AdminHarness(tmp_path / "admin", [member_entry("m1", one), member_entry("m2", two)])
        topic = subject("c")
        live = await connect(two)
        await live.subscribe(topic)
        publisher = await connect(one)
        await publisher.publish_ok(topic, "193", {"volume": "6.62M"})
        before = await live.expect("message", subject=topic, content="193")
        async with admin.client("operator") as api:
            for name in ("m1", "m2"):
                info = await api.get(f"{API}/members/{name}/subjects", params={"subject": topic})
                assert info.json()["snapshot"]["content"] == "193", name
            removed = await api.delete(f"{API}/subjects/snapshot", params={"subject": topic})
            assert removed.status_code == 200, removed.text
            assert removed.json()["removed"] is True
            assert [m["member"] for m in removed.json()["members"]] == ["m1", "m2"]
            for name in ("m1", "m2"):  # applied by each member as it arrives: bounded wait
                for _ in range(100):
                    info = await api.get(
                        f"{API}/members/{name}/subjects", params={"subject": topic}
                    )
                    if info.json()["snapshot"] is None:
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise AssertionError(f"{name} still holds the snapshot: {info.json()}")
            listed = (await api.get(f"{API}/subjects", params={"pattern": topic})).json()
            assert [(r["subject"], r["snapshot_bytes"]) for r in listed["items"]] == [(topic, 0)]
        # the live subscriber is told nothing; a new one gets no snapshot at the same position
        assert not [f for f in await live.sync() if f.get("subject") == topic]
        newcomer = await connect(two)
        subscribed, frames = await newcomer.subscribe_all(topic)
        assert subscribed["status"] == "allow"
        assert (subscribed["epoch"], subscribed["seq"]) == (before["epoch"], before["seq"])
        assert not [f for f in frames if f.get("type") == "message"]
        # the numbering goes on in the same epoch (each Standard member has its own): no gap
        await publisher.publish_ok(topic, "192")
        message = await live.expect("message", subject=topic, content="192")
        assert (message["epoch"], message["seq"]) == (before["epoch"], before["seq"] + 1)
    finally:
        if admin is not None:
            admin.close()
        nodes.kill_all()
