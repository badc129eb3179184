"""The admin API against real ``pushgrid server`` processes and a real SQLite file.

Two live members (push-1, push-2) shared by the module, one configured member nothing listens on
(``down``), and per test a fresh database with one token per role (``AdminHarness``). Every
endpoint is exercised here; the role matrix is in test_admin_roles.py, the schema fuzzing in
test_admin_schemathesis.py.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from pushgrid.admin_api.security import hash_token
from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.sqlstore import start_run, write_results
from pushgrid.metrics.sqlstore.admin_models import ApiToken, AuditEntry, RegisteredMember
from pushgrid.metrics.sqlstore.models import JobRun
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.spark_stats.locking import warehouse_lock
from pushgrid.spark_stats.synthetic_results import synthetic_result

from .pgtest import (
    AdminHarness,
    ServerProcess,
    SilentTcpServer,
    WsClient,
    assert_problem,
    down_member_entry,
    member_entry,
    window_coverage,
)

API = "/api/v1"


@pytest.fixture(scope="module")
def push1(module_server_factory) -> ServerProcess:
    return module_server_factory(ServerName="push-1", MetaSubjectInterval=0)


@pytest.fixture(scope="module")
def push2(module_server_factory) -> ServerProcess:
    return module_server_factory(ServerName="push-2", MetaSubjectInterval=0)


@pytest.fixture
def admin(tmp_path, push1, push2) -> Iterator[AdminHarness]:
    harness = AdminHarness(
        tmp_path / "admin",
        [member_entry("push-1", push1), member_entry("push-2", push2), down_member_entry("down")],
    )
    yield harness
    harness.close()


async def wait_sessions(admin: AdminHarness, member: str, count: int) -> list[dict[str, Any]]:
    """The member's sessions once there are ``count`` of them (bounded wait)."""
    items: list[dict[str, Any]] = []
    async with admin.client("viewer") as api:
        for _ in range(100):
            response = await api.get(f"{API}/members/{member}/sessions")
            assert response.status_code == 200, response.text
            items = response.json()["items"]
            if len(items) == count:
                return items
            await asyncio.sleep(0.05)
    raise AssertionError(f"{member} has {len(items)} sessions, expected {count}")


# --- members ----------------------------------------------------------------------------------


async def test_members_list_reports_each_member_and_a_down_one(admin, push1):
    async with admin.client("viewer") as api:
        response = await api.get(f"{API}/members")
    assert response.status_code == 200, response.text
    body = response.json()
    by_name = {item["name"]: item for item in body["items"]}
    assert list(by_name) == ["push-1", "push-2", "down"]  # configuration order
    assert (body["reachable"], body["unreachable"]) == (2, 1)
    one = by_name["push-1"]
    assert one["reachable"] is True
    assert one["error"] is None
    assert one["source"] == "config"
    assert one["server_name"] == "push-1"
    assert one["version"] == "0.1.0"
    assert one["engine"] == "memory"
    assert one["delivery_mode"] == "standalone"
    assert one["uptime_seconds"] > 0
    assert one["monitor_url"] == push1.monitor_url
    assert one["client_url"] == push1.url  # derived from the member's Listen setting
    started = datetime.fromisoformat(one["started_at"])
    assert abs((datetime.now(UTC) - started).total_seconds() - one["uptime_seconds"]) < 60
    panel = one["panel"]  # the operator panel, read from the member's MemberPanel MBean
    assert panel["rss_bytes"] > 0
    assert panel["open_files"] > 0
    assert panel["max_open_files"] >= panel["open_files"]
    assert panel["window_seconds"] == 60
    assert panel["replica_lag_max"] is None
    down = by_name["down"]
    assert down["reachable"] is False
    assert down["panel"] is None
    assert "unreachable" in down["error"]
    assert "'down'" in down["error"]
    assert down["version"] is None


async def test_member_get_unknown_and_down(admin):
    async with admin.client("viewer") as api:
        ok = await api.get(f"{API}/members/push-2")
        down = await api.get(f"{API}/members/down")
        unknown = await api.get(f"{API}/members/nobody")
    assert ok.status_code == 200
    assert ok.json()["server_name"] == "push-2"
    assert down.status_code == 200
    assert down.json()["reachable"] is False
    problem = assert_problem(unknown, 404, "not_found")
    assert "nobody" in problem["detail"]
    assert problem["instance"] == f"{API}/members/nobody"


async def test_register_member_with_credentials_and_remove(admin, server_factory):
    secured = server_factory(
        ServerName="secured", MonitorUsername="mon", MonitorPassword="s3cret-pw"
    )
    async with admin.client("admin") as api:
        created = await api.post(
            f"{API}/members",
            json={
                "name": "secured",
                "monitor_url": secured.monitor_url + "/",
                "username": "mon",
                "password": "s3cret-pw",
            },
        )
        assert created.status_code == 201, created.text
        assert created.headers["location"] == f"{API}/members/secured"
        member = created.json()
        assert member["reachable"] is True, member
        assert member["source"] == "registered"
        assert member["monitor_url"] == secured.monitor_url  # trailing / removed
        assert member["has_credentials"] is True
        assert member["server_name"] == "secured"
        wrong = await api.post(
            f"{API}/members",
            json={
                "name": "wrong-pw",
                "monitor_url": secured.monitor_url,
                "username": "mon",
                "password": "nope",
            },
        )
        assert wrong.status_code == 201
        assert wrong.json()["reachable"] is False
        assert "credentials" in wrong.json()["error"]
        listing = await api.get(f"{API}/members")
        names = [item["name"] for item in listing.json()["items"]]
        assert names == ["push-1", "push-2", "down", "secured", "wrong-pw"]
        for text in (created.text, wrong.text, listing.text):
            assert "s3cret-pw" not in text
            assert '"password"' not in text
        # the credentials are used for member calls too
        live = await api.get(f"{API}/stats/live/secured")
        assert live.status_code == 200, live.text
        denied = await api.get(f"{API}/stats/live/wrong-pw")
        assert_problem(denied, 502, "member_auth_failed")
        # conflicts and validation
        again = await api.post(
            f"{API}/members", json={"name": "secured", "monitor_url": secured.monitor_url}
        )
        assert_problem(again, 409, "member_exists")
        shadow = await api.post(
            f"{API}/members", json={"name": "push-1", "monitor_url": secured.monitor_url}
        )
        assert_problem(shadow, 409, "member_exists")
        bad_url = await api.post(
            f"{API}/members", json={"name": "x", "monitor_url": "ftp://host:1"}
        )
        assert_problem(bad_url, 422, "validation_failed")
        userinfo = await api.post(
            f"{API}/members", json={"name": "x", "monitor_url": "http://u:p@host:1"}
        )
        assert_problem(userinfo, 422)
        half = await api.post(
            f"{API}/members",
            json={"name": "half", "monitor_url": secured.monitor_url, "username": "mon"},
        )
        assert_problem(half, 422)
        # removal: registered ones only
        config_member = await api.delete(f"{API}/members/push-1")
        assert_problem(config_member, 409, "member_read_only")
        removed = await api.delete(f"{API}/members/secured")
        assert removed.status_code == 204
        assert removed.content == b""
        gone = await api.get(f"{API}/members/secured")
        assert_problem(gone, 404)
        twice = await api.delete(f"{API}/members/secured")
        assert_problem(twice, 404)
    with admin.session_factory() as session:
        row = session.get(RegisteredMember, "wrong-pw")
        assert row is not None
        assert row.created_by == "test-admin"
        assert session.get(RegisteredMember, "secured") is None


# --- live statistics --------------------------------------------------------------------------


async def test_live_statistics_per_member_and_cluster_sums(admin, push1, push2, connect):
    clients = [await connect(push1), await connect(push1), await connect(push2)]
    assert len(clients) == 3

    async def live() -> dict[str, Any]:
        async with admin.client("viewer") as api:
            response = await api.get(f"{API}/stats/live")
        assert response.status_code == 200, response.text
        return response.json()

    body: dict[str, Any] = {}
    for _ in range(60):  # the sampler takes one sample a second
        body = await live()
        members = {m["member"]: m for m in body["members"]}
        users = {
            name: next(i["current"] for i in m["indicators"] if i["name"] == "connected_users")
            for name, m in members.items()
            if m["reachable"]
        }
        if users == {"push-1": 2.0, "push-2": 1.0}:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"connected users never showed 2 + 1: {body}")
    members = {m["member"]: m for m in body["members"]}
    assert members["down"]["reachable"] is False
    assert "unreachable" in members["down"]["error"]
    assert members["down"]["indicators"] == []
    assert (body["cluster"]["members_reachable"], body["cluster"]["members_unreachable"]) == (2, 1)
    one = members["push-1"]
    assert [i["name"] for i in one["indicators"]] == list(INDICATOR_NAMES)
    for indicator in one["indicators"]:
        assert list(indicator["windows"]) == list(WINDOW_NAMES)
        for window in indicator["windows"].values():
            assert window["count"] >= 1
            assert set(window) == {"max", "avg", "stddev", "count"}
    assert one["sample_time"] is not None
    cluster = {i["name"]: i["current"] for i in body["cluster"]["indicators"]}
    assert list(cluster) == list(INDICATOR_NAMES)
    for name in INDICATOR_NAMES:
        expected = sum(
            next(i["current"] for i in members[m]["indicators"] if i["name"] == name)
            for m in ("push-1", "push-2")
        )
        assert math.isclose(cluster[name], expected), name
    assert cluster["connected_users"] == 3.0

    async with admin.client("viewer") as api:
        single = await api.get(f"{API}/stats/live/push-2")
        down = await api.get(f"{API}/stats/live/down")
        unknown = await api.get(f"{API}/stats/live/none")
    assert single.status_code == 200
    assert single.json()["member"] == "push-2"
    assert single.json()["reachable"] is True
    problem = assert_problem(down, 502, "member_unreachable")
    assert problem["member"] == "down"
    assert "'down'" in problem["detail"]
    assert_problem(unknown, 404)


async def test_a_member_that_hangs_is_a_504_and_the_rest_still_answers(tmp_path, push1):
    admin = AdminHarness(
        tmp_path / "hang", [member_entry("push-1", push1), down_member_entry()], member_timeout=0.5
    )
    hanging = await SilentTcpServer().start()
    try:
        async with admin.client("admin") as api:
            created = await api.post(
                f"{API}/members", json={"name": "hang", "monitor_url": hanging.url}
            )
            assert created.status_code == 201
            assert created.json()["reachable"] is False
            assert "no answer within 0.5 s" in created.json()["error"]
            timeout = await api.get(f"{API}/stats/live/hang")
            problem = assert_problem(timeout, 504, "member_timeout")
            assert problem["member"] == "hang"
            listing = await api.get(f"{API}/stats/live")
            assert listing.status_code == 200
            members = {m["member"]: m for m in listing.json()["members"]}
            assert members["push-1"]["reachable"] is True
            assert members["hang"]["reachable"] is False
            sessions = await api.get(f"{API}/sessions")
            assert sessions.status_code == 200
            assert {e["member"] for e in sessions.json()["unreachable"]} == {"down", "hang"}
    finally:
        await hanging.close()
        admin.close()


# --- subjects -----------------------------------------------------------------------------------


async def test_subject_snapshot_subscribers_and_test_publish(admin, push1, connect, subject):
    topic = subject("IBM")
    subscriber: WsClient = await connect(push1)
    subscribed = await subscriber.subscribe(topic)
    assert subscribed["status"] == "allow"
    async with admin.client("operator") as api:
        published = await api.post(
            f"{API}/members/push-1/publish",
            json={"subject": topic, "content": "193", "fields": {"volume": "6.62M"}},
        )
        assert published.status_code == 200, published.text
        result = published.json()
        assert result["result"] == "ok"
        assert result["member"] == "push-1"
        assert result["seq"] == 1
        message = await subscriber.expect("message", subject=topic, kind="update")
        assert message["content"] == "193"
        assert message["fields"] == {"volume": "6.62M"}
        assert message["epoch"] == result["epoch"]
        second = await api.post(
            f"{API}/members/push-1/publish",
            json={"subject": topic, "content": "192", "qos": "guaranteed"},
        )
        assert second.json()["seq"] == 2

        info = await api.get(f"{API}/members/push-1/subjects", params={"subject": topic})
        assert info.status_code == 200, info.text
        body = info.json()
        assert body["subscribers"] == 1
        assert body["snapshot"]["content"] == "192"
        assert body["snapshot"]["fields"] == {"volume": "6.62M"}  # union of retained fields
        assert body["snapshot"]["seq"] == 2

        other = await api.get(f"{API}/members/push-2/subjects", params={"subject": topic})
        assert other.json() == {
            "member": "push-2",
            "subject": topic,
            "subscribers": 0,
            "snapshot": None,
        }
        invalid = await api.get(f"{API}/members/push-1/subjects", params={"subject": "/Stocks"})
        assert "two or more segments" in assert_problem(invalid, 422, "invalid_subject")["detail"]
        bad_body = await api.post(
            f"{API}/members/push-1/publish", json={"subject": "nope", "content": "x"}
        )
        assert_problem(bad_body, 422, "validation_failed")
        down = await api.post(
            f"{API}/members/down/publish", json={"subject": topic, "content": "x"}
        )
        assert assert_problem(down, 502)["member"] == "down"
        down_info = await api.get(f"{API}/members/down/subjects", params={"subject": topic})
        assert_problem(down_info, 502, "member_unreachable")


async def test_publish_goes_to_the_registered_client_url(admin, push2, connect, subject):
    topic = subject("x")
    subscriber = await connect(push2)
    await subscriber.subscribe(topic)
    async with admin.client("admin") as api:
        created = await api.post(
            f"{API}/members",
            json={
                "name": "explicit",
                "monitor_url": push2.monitor_url,
                "client_url": push2.url,
            },
        )
        assert created.json()["client_url"] == push2.url
        published = await api.post(
            f"{API}/members/explicit/publish",
            json={"subject": topic, "content": "hello", "retained": False, "qos": "standard"},
        )
        assert published.status_code == 200, published.text
    message = await subscriber.expect("message", subject=topic)
    assert message["content"] == "hello"
    assert message["qos"] == "standard"


async def test_member_refusals_of_a_publish_are_problems(admin, server_factory, subject):
    strict = server_factory(ServerName="strict", MaxMessageSize=16, PublishAllow="10.9.9.9")
    async with admin.client("admin") as api:
        await api.post(f"{API}/members", json={"name": "strict", "monitor_url": strict.monitor_url})
        too_large = await api.post(
            f"{API}/members/strict/publish", json={"subject": subject(), "content": "x" * 100}
        )
        assert assert_problem(too_large, 413, "message_too_large")["member"] == "strict"
        denied = await api.post(
            f"{API}/members/strict/publish", json={"subject": subject(), "content": "x"}
        )
        problem = assert_problem(denied, 502, "member_error")
        assert "denied" in problem["detail"]


# --- sessions -----------------------------------------------------------------------------------


async def test_sessions_filters_and_paging(admin, push1, push2, connect, subject):
    topic = subject("s")
    before = datetime.now(UTC) - timedelta(seconds=1)
    a = await connect(push1)
    b = await connect(push1)
    c = await connect(push2)
    await a.subscribe(topic)
    await a.publish(topic, "x" * 500)  # a's bytes_in grows
    await a.sync()
    ids = {a.welcome["session"], b.welcome["session"], c.welcome["session"]}
    await wait_sessions(admin, "push-1", 2)
    async with admin.client("viewer") as api:
        everything = await api.get(f"{API}/sessions", params={"limit": 1000})
        body = everything.json()
        mine = [s for s in body["items"] if s["id"] in ids]
        assert len(mine) == 3
        assert body["unreachable"] == [{"member": "down", "error": body["unreachable"][0]["error"]}]
        assert "unreachable" in body["unreachable"][0]["error"]
        session_a = next(s for s in mine if s["id"] == a.welcome["session"])
        assert session_a["member"] == "push-1"
        assert session_a["subjects"] == [topic]
        assert session_a["remote"].startswith("127.0.0.1:")
        assert session_a["bytes_in"] > 500
        assert session_a["messages_in"] >= 1
        assert datetime.fromisoformat(session_a["connected_since"]) >= before

        by_subject = await api.get(f"{API}/sessions", params={"subject": topic})
        assert [s["id"] for s in by_subject.json()["items"]] == [a.welcome["session"]]
        port = session_a["remote"].rpartition(":")[2]
        by_remote = await api.get(f"{API}/sessions", params={"remote": f":{port}"})
        assert a.welcome["session"] in [s["id"] for s in by_remote.json()["items"]]
        by_bytes = await api.get(f"{API}/sessions", params={"min_bytes_in": 500})
        assert a.welcome["session"] in [s["id"] for s in by_bytes.json()["items"]]
        assert b.welcome["session"] not in [s["id"] for s in by_bytes.json()["items"]]
        since = await api.get(
            f"{API}/sessions",
            params={"connected_after": (datetime.now(UTC) + timedelta(hours=1)).isoformat()},
        )
        assert since.json()["items"] == []
        assert since.json()["total"] == 0
        naive = await api.get(f"{API}/sessions", params={"connected_after": "2026-01-01T00:00:00"})
        assert_problem(naive, 422)

        member = await api.get(f"{API}/members/push-1/sessions", params={"sort": "-bytes_in"})
        items = member.json()["items"]
        assert {s["member"] for s in items} == {"push-1"}
        assert [s["bytes_in"] for s in items] == sorted(
            (s["bytes_in"] for s in items), reverse=True
        )
        total = member.json()["total"]
        first = await api.get(f"{API}/members/push-1/sessions", params={"limit": 1})
        second = await api.get(f"{API}/members/push-1/sessions", params={"limit": 1, "offset": 1})
        assert first.json()["total"] == second.json()["total"] == total
        assert len(first.json()["items"]) == len(second.json()["items"]) == 1
        assert first.json()["items"][0]["id"] != second.json()["items"][0]["id"]
        bad_limit = await api.get(f"{API}/sessions", params={"limit": 0})
        assert assert_problem(bad_limit, 422)["errors"][0]["loc"] == ["query", "limit"]
        down = await api.get(f"{API}/members/down/sessions")
        assert_problem(down, 502, "member_unreachable")


async def test_disconnect_through_the_api_really_disconnects(admin, push1, connect):
    client = await connect(push1)
    bystander = await connect(push1)
    session_id = client.welcome["session"]
    async with admin.client("operator") as api:
        response = await api.delete(f"{API}/members/push-1/sessions/{session_id}")
        assert response.status_code == 204, response.text
        await asyncio.wait_for(client.closed.wait(), 10)
        assert client.close_code == 4003
        assert not bystander.closed.is_set()
        for _ in range(100):
            listing = await api.get(f"{API}/members/push-1/sessions")
            if session_id not in [s["id"] for s in listing.json()["items"]]:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the disconnected session is still listed")
        again = await api.delete(f"{API}/members/push-1/sessions/{session_id}")
        assert_problem(again, 404)
        down = await api.delete(f"{API}/members/down/sessions/{session_id}")
        assert_problem(down, 502)
    async with admin.client("viewer") as api:
        forbidden = await api.delete(
            f"{API}/members/push-1/sessions/{bystander.welcome['session']}"
        )
        assert_problem(forbidden, 403, "forbidden")
    assert not bystander.closed.is_set()


# --- pipeline statistics ------------------------------------------------------------------------


def _stat_rows(frame: Any) -> list[dict[str, Any]]:
    def clean(value: Any) -> Any:
        return None if isinstance(value, float) and math.isnan(value) else value

    return [
        {key: clean(value) for key, value in row.items()} for row in frame.to_dict(orient="records")
    ]


async def test_window_statistics_written_by_the_pipeline_come_back_unchanged(admin):
    as_of = 1_795_363_200
    result = synthetic_result(as_of, nodes=("push-1", "push-2"), trend_points=4)
    with admin.session_factory() as session:
        run = start_run(session, master="local[2]", as_of=as_of)
        write_results(session, run.id, result)
    expected = {
        (row["scope"], row["indicator"], row["window"]): row
        for row in _stat_rows(result.window_stats)
    }
    async with admin.client("viewer") as api:
        response = await api.get(f"{API}/stats/windows")
        assert response.status_code == 200, response.text
        body = response.json()
        items = body["items"]
        assert len(items) == len(expected) == 3 * 7 * 12
        for item in items:
            row = expected[(item["scope"], item["indicator"], item["window"])]
            assert datetime.fromisoformat(item["as_of"]).timestamp() == as_of
            assert item["count"] == row["count"]
            share = window_coverage(item["window"], row["count"], as_of)
            assert item["coverage"] == pytest.approx(share)
            assert item["low_coverage"] is (item["coverage"] < 0.9)
            assert item["max"] == row["max"]  # exactly: floats survive JSON unchanged
            assert item["avg"] == row["avg"]
            assert item["stddev"] == row["stddev"]
            assert item["run_id"] == run.id
            assert item["stale"] is False
            assert 0 <= item["age_seconds"] < 60
        assert items[0]["scope"] == "cluster"
        assert body["stale_after_seconds"] == 900.0

        filtered = await api.get(
            f"{API}/stats/windows",
            params={"scope": "node:push-2", "indicator": "connected_users", "window": "1h"},
        )
        (only,) = filtered.json()["items"]
        row = expected[("node:push-2", "connected_users", "1h")]
        assert (only["max"], only["avg"], only["stddev"]) == (row["max"], row["avg"], row["stddev"])
        nothing = await api.get(f"{API}/stats/windows", params={"scope": "node:elsewhere"})
        assert nothing.json()["items"] == []
        bad = await api.get(f"{API}/stats/windows", params={"window": "2m"})
        assert_problem(bad, 422)

        trend = await api.get(
            f"{API}/stats/trend",
            params={"indicator": "outgoing_messages_per_second", "window": "5m"},
        )
        assert trend.status_code == 200, trend.text
        series = trend.json()
        assert series["scope"] == "cluster"
        expected_trend = [
            row
            for row in _stat_rows(result.trend_points)
            if (row["scope"], row["indicator"], row["window"])
            == ("cluster", "outgoing_messages_per_second", "5m")
        ]
        assert [datetime.fromisoformat(p["as_of"]).timestamp() for p in series["points"]] == [
            row["as_of"] for row in expected_trend
        ]
        assert [p["avg"] for p in series["points"]] == [row["avg"] for row in expected_trend]
        ranged = await api.get(
            f"{API}/stats/trend",
            params={
                "indicator": "outgoing_messages_per_second",
                "window": "5m",
                "since": as_of - 3600,
                "until": as_of,
            },
        )
        assert len(ranged.json()["points"]) == 2
        backwards = await api.get(
            f"{API}/stats/trend",
            params={"indicator": "connected_users", "window": "1m", "since": 10, "until": 5},
        )
        assert_problem(backwards, 422)
        missing = await api.get(f"{API}/stats/trend", params={"window": "1m"})
        assert_problem(missing, 422)


async def test_old_pipeline_results_are_flagged_stale(tmp_path, push1):
    harness = AdminHarness(
        tmp_path / "stale", [member_entry("push-1", push1)], admin_stale_after=0.001
    )
    try:
        with harness.session_factory() as session:
            run = start_run(session, as_of=1_795_363_200)
            write_results(session, run.id, synthetic_result(1_795_363_200, nodes=("push-1",)))
        await asyncio.sleep(0.05)
        async with harness.client("viewer") as api:
            body = (await api.get(f"{API}/stats/windows", params={"window": "1m"})).json()
        assert body["items"]
        assert all(item["stale"] for item in body["items"])
        assert body["stale_after_seconds"] == 0.001
    finally:
        harness.close()


# --- jobs ---------------------------------------------------------------------------------------


async def test_jobs_trigger_list_get_and_conflict(admin):
    async with admin.client("operator") as api:
        empty = await api.get(f"{API}/jobs")
        assert empty.json() == {"total": 0, "offset": 0, "limit": 20, "items": []}
        # two triggers at once: one starts the run, the other is refused while it runs
        first, second = await asyncio.gather(
            api.post(f"{API}/jobs", json={"as_of": 1_795_363_200}),
            api.post(f"{API}/jobs", json={"as_of": 1_795_363_200}),
        )
        triggered, refused = (first, second) if first.status_code == 202 else (second, first)
        assert triggered.status_code == 202, triggered.text
        assert "still running" in assert_problem(refused, 409, "job_running")["detail"]
        run = triggered.json()
        assert triggered.headers["location"] == f"{API}/jobs/{run['id']}"
        assert run["status"] in ("running", "failed")
        assert run["as_of"] is not None
        # the real `pushgrid stats run` child fails fast: the archive does not exist
        for _ in range(200):
            got = await api.get(triggered.headers["location"])
            assert got.status_code == 200
            if got.json()["status"] != "running":
                break
            await asyncio.sleep(0.05)
        final = got.json()
        for _ in range(200):
            if not admin.job_runner.busy:
                break
            await asyncio.sleep(0.05)
        assert final["status"] == "failed"
        assert "does not exist" in final["error"]
        assert final["finished_at"] is not None
        listing = await api.get(f"{API}/jobs")
        assert [item["id"] for item in listing.json()["items"]] == [run["id"]]
        failed = await api.get(f"{API}/jobs", params={"status": "succeeded"})
        assert failed.json()["total"] == 0
        assert_problem(await api.get(f"{API}/jobs/999"), 404)
        # a run is going on (it holds the warehouse lock, e.g. one of pushgrid up): refused
        with admin.session_factory() as session:
            running = start_run(session, master="local[*]")
        with warehouse_lock(admin.settings.stats_warehouse):
            conflict = await api.post(f"{API}/jobs")
        problem = assert_problem(conflict, 409, "job_running")
        assert f"run {running.id}" in problem["detail"]
    with admin.session_factory() as session:
        assert len(session.scalars(select(JobRun)).all()) == 2
    assert "triggered by test-operator" in (admin.workdir / "admin-stats.log").read_text()


# --- tokens and audit ---------------------------------------------------------------------------


async def test_tokens_create_list_revoke(admin):
    async with admin.client("admin") as api:
        created = await api.post(f"{API}/tokens", json={"name": "grafana", "role": "viewer"})
        assert created.status_code == 201, created.text
        token = created.json()["token"]
        token_id = created.json()["id"]
        assert token.startswith("pgt_")
        assert created.json()["prefix"] == token[:12]
        assert created.headers["location"] == f"{API}/tokens/{token_id}"
        listing = await api.get(f"{API}/tokens")
        assert token not in listing.text
        assert hash_token(token) not in listing.text
        names = {item["name"]: item for item in listing.json()["items"]}
        assert names["grafana"]["role"] == "viewer"
        assert names["grafana"]["created_by"] == "test-admin"
        assert names["test-admin"]["last_used_at"] is not None
        bad_role = await api.post(f"{API}/tokens", json={"name": "x", "role": "root"})
        assert_problem(bad_role, 422)
    with admin.session_factory() as session:
        row = session.get(ApiToken, token_id)
        assert row is not None
        assert row.token_hash == hash_token(token)
        assert token not in {row.token_hash, row.prefix, row.name}
    async with admin.client(None, headers={"authorization": f"Bearer {token}"}) as grafana:
        me = await grafana.get(f"{API}/me")
        assert me.json() == {"token_id": token_id, "name": "grafana", "role": "viewer"}
        assert_problem(await grafana.get(f"{API}/tokens"), 403)
    async with admin.client("admin") as api:
        revoked = await api.delete(f"{API}/tokens/{token_id}")
        assert revoked.status_code == 204
        assert (await api.delete(f"{API}/tokens/{token_id}")).status_code == 204
        assert_problem(await api.delete(f"{API}/tokens/nope"), 404)
        listing = await api.get(f"{API}/tokens")
        assert {i["id"]: i["revoked"] for i in listing.json()["items"]}[token_id] is True
    async with admin.client(None, headers={"authorization": f"Bearer {token}"}) as grafana:
        response = await grafana.get(f"{API}/me")
        assert_problem(response, 401, "unauthorized")
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_audit_records_every_mutating_call(admin, push1, connect, subject):
    client = await connect(push1)
    topic = subject()
    async with admin.client("operator") as api:
        assert (
            await api.post(f"{API}/members/push-1/publish", json={"subject": topic, "content": "1"})
        ).status_code == 200
        disconnect = await api.delete(f"{API}/members/push-1/sessions/{client.welcome['session']}")
        assert disconnect.status_code == 204
        forbidden = await api.post(f"{API}/tokens", json={"name": "x", "role": "admin"})
        assert forbidden.status_code == 403
    async with admin.client(None) as anonymous:
        assert (await anonymous.delete(f"{API}/members/push-1")).status_code == 401
    async with admin.client("admin") as api:
        created = await api.post(f"{API}/tokens", json={"name": "ci", "role": "operator"})
        invalid = await api.post(f"{API}/members", json={"name": "x"})
        assert invalid.status_code == 422
        assert (await api.get(f"{API}/members")).status_code == 200  # reads are not audited
        response = await api.get(f"{API}/audit")
        assert response.status_code == 200
        entries = response.json()["items"]
        denied = await api.get(f"{API}/audit", params={"outcome": "denied"})
    assert [e["action"] for e in entries] == [
        "members.register",
        "tokens.create",
        "members.remove",
        "tokens.create",
        "sessions.disconnect",
        "subjects.publish",
    ]
    invalid_e, token_e, anonymous_e, forbidden_e, disconnect_e, publish_e = entries
    assert publish_e["actor"] == "test-operator"
    assert publish_e["role"] == "operator"
    assert publish_e["method"] == "POST"
    assert publish_e["path"] == f"{API}/members/push-1/publish"
    assert publish_e["target"] == "push-1"
    assert publish_e["detail"] == f"subject={topic}"
    assert (publish_e["status"], publish_e["outcome"]) == (200, "succeeded")
    assert disconnect_e["target"] == f"push-1/{client.welcome['session']}"
    assert (disconnect_e["status"], disconnect_e["outcome"]) == (204, "succeeded")
    assert (forbidden_e["status"], forbidden_e["outcome"]) == (403, "denied")
    assert forbidden_e["actor"] == "test-operator"
    assert "admin role" in forbidden_e["detail"]
    assert anonymous_e["actor"] is None
    assert (anonymous_e["status"], anonymous_e["outcome"]) == (401, "denied")
    assert anonymous_e["target"] == "name=push-1"
    assert token_e["actor"] == "test-admin"
    assert token_e["target"] == created.json()["id"]
    assert created.json()["token"] not in str(entries)
    assert (invalid_e["status"], invalid_e["outcome"]) == (422, "failed")
    assert "monitor_url" in invalid_e["detail"]
    for entry in entries:
        at = datetime.fromisoformat(entry["at"])
        assert abs((datetime.now(UTC) - at).total_seconds()) < 60
    assert {e["action"] for e in denied.json()["items"]} == {
        "members.remove",
        "tokens.create",
    }
    with admin.session_factory() as session:
        assert len(session.scalars(select(AuditEntry)).all()) == 6
    async with admin.client("operator") as api:
        assert_problem(await api.get(f"{API}/audit"), 403)


# --- errors -------------------------------------------------------------------------------------


async def test_errors_are_problem_documents(admin):
    async with admin.client("viewer") as api:
        assert_problem(await api.get(f"{API}/nothing/here"), 404, "not_found")
        not_allowed = await api.put(f"{API}/members")
        assert_problem(not_allowed, 405, "method_not_allowed")
        assert "GET" in not_allowed.headers["allow"]
        broken = await api.post(
            f"{API}/tokens", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert_problem(broken, 403)  # the role check comes before the body
    async with admin.client("admin") as api:
        broken = await api.post(
            f"{API}/tokens", content=b"{not json", headers={"content-type": "application/json"}
        )
        problem = assert_problem(broken, 422, "validation_failed")
        assert problem["errors"]
    async with admin.client(None) as anonymous:
        response = await anonymous.get(f"{API}/members")
        assert_problem(response, 401, "unauthorized")
        assert response.headers["www-authenticate"] == 'Bearer realm="pushgrid-admin"'
        wrong = await anonymous.get(f"{API}/members", headers={"authorization": "Basic eDp5"})
        assert_problem(wrong, 401)
        unknown = await anonymous.get(
            f"{API}/members", headers={"authorization": "Bearer pgt_" + "x" * 43}
        )
        assert_problem(unknown, 401)
        docs = await anonymous.get(f"{API}/openapi.json")
        assert docs.status_code == 200
        assert docs.json()["info"]["title"] == "pushgrid admin API"
