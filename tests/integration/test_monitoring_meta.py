"""PUSH meta-subjects: the server publishes its statistics on /pushgrid/<node>/... subjects.

docs/monitoring.md, "PUSH meta-subjects": retained, qos standard, every MetaSubjectInterval
seconds; a new subscriber gets the latest statistics at once as the snapshot; entitlement
applies (grant /pushgrid/* to monitoring users). Also the node name in subjects and archive.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import jwt
import pytest

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.window_spec import WINDOW_NAMES

from .pgtest import ServerProcess, eventually, jolokia_bulk, monitor_http, read_archive

SECRET = "integration-test-secret-0123456789abcdef"
OVERVIEW_FIELDS = {*INDICATOR_NAMES, "sessions", "subscriptions", "subjects", "cache_messages"}
OVERVIEW_FIELDS |= {"uptime", "ts", "dropped_snapshots"}


def token(permissions: dict[str, list[str]]) -> str:
    claims = {"sub": "monitoring", "exp": int(time.time()) + 3600, "permissions": permissions}
    return jwt.encode(claims, SECRET, algorithm="HS256")


async def snapshot_of(srv: ServerProcess, subject: str) -> dict[str, Any] | None:
    """The subject's snapshot via Jolokia (the monitoring port is not subject to entitlement)."""
    async with monitor_http(srv) as mon:
        (answer,) = await jolokia_bulk(
            mon,
            [
                {
                    "type": "exec",
                    "mbean": "pushgrid:type=Subjects",
                    "operation": "snapshot",
                    "arguments": [subject],
                }
            ],
        )
    assert answer["status"] == 200, answer
    return answer["value"]


async def wait_published(srv: ServerProcess, subject: str) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while (snapshot := await snapshot_of(srv, subject)) is None:
        assert loop.time() < deadline, f"nothing published on {subject} within 10 s"
        await asyncio.sleep(0.1)
    return snapshot


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def srv(module_server_factory) -> ServerProcess:
    return module_server_factory(ServerName="it-node", MetaSubjectInterval=1)


async def test_overview_snapshot_at_once(srv, connect):
    await wait_published(srv, "/pushgrid/it-node/overview")
    client = await connect(srv)
    subscribed, frames = await client.subscribe_all("/pushgrid/it-node/overview")
    assert subscribed["status"] == "allow"
    assert frames, "a new subscriber gets the latest statistics at once"
    snapshot = frames[0]
    assert (snapshot["type"], snapshot["kind"]) == ("message", "snapshot")
    assert snapshot["retained"] is True
    fields = snapshot["fields"]
    assert set(fields) == OVERVIEW_FIELDS
    for name, value in fields.items():
        assert is_number(value), (name, value)
    assert snapshot["content"] == fields["ts"]
    assert abs(int(fields["ts"]) - time.time()) < 30, "ts is the sample time in Unix seconds"
    for name in ("sessions", "subscriptions", "subjects", "cache_messages", "connected_users"):
        assert fields[name].isdigit(), (name, fields[name])


async def test_snapshot_frames_say_qos_standard(srv, connect):
    """A meta-subject's snapshot is what its messages are: qos standard (never recoverable).
    (The guaranteed case is in tests/unit/test_engine_contract.py; publishing one here would
    put a message in this module's cache.)"""
    client = await connect(srv)
    for subject in ("/pushgrid/it-node/overview", "/pushgrid/it-node/cluster"):
        await wait_published(srv, subject)
        _, frames = await client.subscribe_all(subject)
        assert frames[0]["kind"] == "snapshot"
        assert frames[0]["qos"] == "standard", (subject, frames[0])


async def test_indicator_subjects_carry_every_window(srv, connect):
    for name in INDICATOR_NAMES:
        subject = f"/pushgrid/it-node/{name}"
        await wait_published(srv, subject)
        client = await connect(srv)  # one per subject: nothing else in flight on it
        subscribed, frames = await client.subscribe_all(subject)
        assert subscribed["status"] == "allow"
        assert frames, f"no snapshot at once on {subject}"
        snapshot = frames[0]
        assert snapshot["kind"] == "snapshot"
        fields = snapshot["fields"]
        expected = {"current", "ts"}
        for window in WINDOW_NAMES:
            expected |= {f"{window}.{stat}" for stat in ("max", "avg", "stddev", "count")}
            assert int(fields[f"{window}.count"]) >= 1, (subject, window)
        assert set(fields) == expected, subject
        assert all(is_number(value) for value in fields.values()), fields
        assert snapshot["content"] == fields["current"]


async def test_live_updates_are_standard_qos_and_never_cached(srv, connect):
    client = await connect(srv)
    connected = int(time.time())
    subject = "/pushgrid/it-node/connected_users"
    await wait_published(srv, subject)
    await client.subscribe(subject)
    updates: list[dict[str, Any]] = []
    while len(updates) < 2:
        frame = await client.expect("message", kind="update", subject=subject)
        # only samples taken after this client connected (sample S is taken just after S + 1)
        if int(frame["fields"]["ts"]) >= connected:
            updates.append(frame)
    for update in updates:
        assert update["retained"] is True
        assert update["qos"] == "standard"
        assert int(update["content"]) >= 1, "this subscriber is connected"
    assert int(updates[1]["fields"]["ts"]) > int(updates[0]["fields"]["ts"])
    # qos standard: never in the recovery cache, however many rounds were published
    async with monitor_http(srv) as mon:
        (cached,) = await jolokia_bulk(
            mon, [{"type": "read", "mbean": "pushgrid:type=Cache", "attribute": "CachedMessages"}]
        )
    assert cached["value"] == 0


async def test_node_name_is_sanitised(server_factory, connect, tmp_path):
    archive = tmp_path / "archive"
    name = "it node#1/x"
    srv = server_factory(ServerName=name, MetaSubjectInterval=1, MetricsArchive=str(archive))
    overview = await wait_published(srv, "/pushgrid/it_node_1_x/overview")
    assert set(overview["fields"]) == OVERVIEW_FIELDS
    client = await connect(srv)
    subscribed, frames = await client.subscribe_all("/pushgrid/it_node_1_x/overview")
    assert subscribed["status"] == "allow"
    assert frames
    assert frames[0]["kind"] == "snapshot"
    # the archive directory is sanitised the same way; its node column keeps the raw name
    rows: list[dict[str, str]] = []

    def archived() -> bool:
        nonlocal rows
        rows = read_archive(archive, "it_node_1_x")
        return bool(rows)

    await eventually(archived, what="an archive line under it_node_1_x/")
    assert {row["node"] for row in rows} == {name}
    days = list(archive.iterdir())
    assert days
    for day in days:
        assert [child.name for child in day.iterdir()] == ["it_node_1_x"]


async def test_meta_subjects_can_be_turned_off(server_factory):
    srv = server_factory(MetaSubjectInterval=0)
    async with monitor_http(srv) as mon:

        async def sample_second() -> int:
            return int((await mon.get("/stats", params={"format": "json"})).json()["ts"])

        # wait for two more samples: any round of a 1 s interval would be out by then
        start = await sample_second()
        for _ in range(100):
            if await sample_second() >= start + 2:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the sampler did not advance two seconds within 5 s")
        (count,) = await jolokia_bulk(
            mon, [{"type": "read", "mbean": "pushgrid:type=Subjects", "attribute": "Count"}]
        )
    # MetaSubjectInterval = 0: no meta-subjects; the one subject is the canaries' (ADR 049)
    assert count["value"] == 1, "MetaSubjectInterval = 0: no meta-subjects"
    assert await snapshot_of(srv, "/pushgrid/it-node/overview") is None


# --- entitlement ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def jwt_srv(module_server_factory) -> ServerProcess:
    return module_server_factory(
        ServerName="it-node",
        MetaSubjectInterval=1,
        Entitlement="jwt",
        EntitlementJwtSecret=SECRET,
    )


async def test_entitlement_applies_to_meta_subjects(jwt_srv, connect):
    subject = "/pushgrid/it-node/overview"
    await wait_published(jwt_srv, subject)

    outsider = await connect(jwt_srv, token({"sub": ["/Stocks/*"]}))
    denied = await outsider.subscribe(subject)
    assert denied["type"] == "subscribed"
    assert denied["status"] == "deny"
    await asyncio.sleep(1.5)  # a meta round goes out meanwhile; none of it may arrive
    assert await outsider.sync() == [], "a denied subscription delivers nothing"

    monitoring = await connect(jwt_srv, token({"sub": ["/pushgrid/*"]}))
    subscribed, frames = await monitoring.subscribe_all(subject)
    assert subscribed["status"] == "allow"
    assert frames, "an entitled subscriber gets the snapshot at once"
    assert frames[0]["kind"] == "snapshot"
    assert set(frames[0]["fields"]) == OVERVIEW_FIELDS
    update = await monitoring.expect("message", kind="update", subject=subject)
    assert update["qos"] == "standard"


async def test_meta_subjects_without_a_token_are_denied(jwt_srv, connect):
    await wait_published(jwt_srv, "/pushgrid/it-node/connected_users")
    anonymous = await connect(jwt_srv)
    denied = await anonymous.subscribe("/pushgrid/it-node/connected_users")
    assert denied["status"] == "deny"
    async with jwt_srv.http() as http:
        response = await http.get("/snapshot", params={"subject": "/pushgrid/it-node/overview"})
    assert response.status_code == 403
