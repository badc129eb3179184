"""The Jolokia agent on the monitoring port (docs/monitoring.md, "Jolokia MBeans").

Driven with the PyPI ``jolokia`` client (``JolokiaClient``: POSTs to ``<base>``), with GET
requests in the URL form (``!/`` escapes a ``/`` inside a segment) and with the bulk requests
Telegraf's ``jolokia2_agent`` input POSTs to ``<base>/read``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from jolokia import JolokiaClient

from pushgrid.metrics.indicators import INDICATORS
from pushgrid.metrics.window_spec import WINDOW_NAMES

from .pgtest import ServerProcess, jolokia_bulk, monitor_http

INDICATOR_BEANS = sorted(f"pushgrid:name={i.mbean},type=Indicator" for i in INDICATORS)
ALL_BEANS = sorted(
    [
        *INDICATOR_BEANS,
        "pushgrid:type=Accounting",
        "pushgrid:type=Canary",
        "pushgrid:type=Cluster",
        "pushgrid:type=Cache",
        "pushgrid:type=Compression",
        "pushgrid:type=Delivery",
        "pushgrid:type=HotSubjects",
        "pushgrid:type=MemberPanel",
        "pushgrid:type=Server",
        "pushgrid:type=Sessions",
        "pushgrid:type=Subjects",
        "pushgrid:type=WatchedSubjects",
        "pushgrid:type=Workers",
    ]
)
WINDOW_ATTRIBUTES = [
    f"{label}{window}" for window in WINDOW_NAMES for label in ("Max", "Average", "StdDev", "Count")
]


@pytest.fixture(scope="module")
def srv(module_server_factory) -> ServerProcess:
    return module_server_factory(ServerName="it-node", MetaSubjectInterval=0)


@pytest.fixture
def client(srv) -> JolokiaClient:
    jolokia = JolokiaClient(f"{srv.monitor_url}/jolokia")
    jolokia.session.trust_env = False
    return jolokia


async def call(function: Any, /, **kwargs: Any) -> Any:
    """Run a blocking JolokiaClient call off the event loop (WebSocket readers keep running)."""
    return await asyncio.to_thread(function, **kwargs)


def exec_body(mbean: str, operation: str, *arguments: Any) -> dict[str, Any]:
    """A Jolokia ``exec`` request object (POSTed: exec over GET is refused)."""
    return {"type": "exec", "mbean": mbean, "operation": operation, "arguments": list(arguments)}


def ok(answer: Any) -> Any:
    assert isinstance(answer, dict), answer
    assert answer["status"] == 200, answer
    return answer["value"]


async def wait_first_sample(srv: ServerProcess) -> None:
    async with monitor_http(srv) as mon:
        for _ in range(100):
            if (await mon.get("/stats", params={"format": "json"})).json()["ts"] > 0:
                return
            await asyncio.sleep(0.05)
    raise AssertionError("no sample within 5 s")


# --- JolokiaClient (PyPI) -----------------------------------------------------------------------


async def test_client_reads_server_attributes(srv, client):
    version = ok(await call(client.version))
    assert version["protocol"] == "7.2"
    assert version["agent"]
    assert version["info"]["product"] == "pushgrid"

    server = "pushgrid:type=Server"
    assert ok(await call(client.get_attribute, mbean=server, attribute="ServerName")) == "it-node"
    assert ok(await call(client.get_attribute, mbean=server, attribute="Engine")) == "memory"
    uptime = ok(await call(client.get_attribute, mbean=server, attribute="Uptime"))
    assert uptime > 0
    start = ok(await call(client.get_attribute, mbean=server, attribute="StartTime"))
    assert isinstance(start, int)
    assert abs(start / 1000 - (time.time() - uptime)) < 60, "StartTime is ms since the epoch"
    counters = ok(await call(client.get_attribute, mbean=server, attribute="Counters"))
    for key in ("connections_total", "messages_in_total", "messages_out_total", "sessions"):
        assert isinstance(counters[key], int), key
    # an inner path into a map attribute
    inner = ok(
        await call(
            client.get_attribute, mbean=server, attribute="Counters", path="messages_in_total"
        )
    )
    assert inner == counters["messages_in_total"]
    # a list of attributes: the client sends a bulk request, one answer per attribute
    answers = await call(client.get_attribute, mbean=server, attribute=["ServerName", "Version"])
    assert [a["status"] for a in answers] == [200, 200]
    assert [a["request"]["attribute"] for a in answers] == ["ServerName", "Version"]
    assert answers[0]["value"] == "it-node"
    # every ObjectName of the table and its attributes
    configuration = ok(await call(client.get_attribute, mbean=server, attribute="Configuration"))
    assert configuration["ServerName"] == "it-node"
    assert configuration["MetaSubjectInterval"] == 0
    for mbean, attribute in [
        ("pushgrid:type=Server", "DeliveryMode"),
        ("pushgrid:type=Server", "ConnectedUsers"),
        ("pushgrid:type=Server", "Subscriptions"),
        ("pushgrid:type=Cache", "Subjects"),
        ("pushgrid:type=Cache", "CachedMessages"),
        ("pushgrid:type=Cache", "CachedBytes"),
        ("pushgrid:type=Cache", "MaxCachedMessagesPerSubject"),
        ("pushgrid:type=Cache", "CacheExpireTime"),
        ("pushgrid:type=Cache", "RecoverySuccesses"),
        ("pushgrid:type=Cache", "RecoveryFailures"),
        ("pushgrid:type=Cache", "DroppedSnapshots"),
        ("pushgrid:type=Compression", "Contexts"),
        ("pushgrid:type=Compression", "MaxContexts"),
        ("pushgrid:type=Compression", "UncompressedBytes"),
        ("pushgrid:type=Compression", "CompressedBytes"),
        ("pushgrid:type=Sessions", "Count"),
        ("pushgrid:type=Sessions", "SlowConsumerDisconnects"),
        ("pushgrid:type=Sessions", "KeepaliveTimeouts"),
        ("pushgrid:type=Subjects", "Count"),
        ("pushgrid:type=Subjects", "Subscribed"),
        ("pushgrid:type=Subjects", "Subscriptions"),
    ]:
        answer = await call(client.get_attribute, mbean=mbean, attribute=attribute)
        assert answer["status"] == 200, (mbean, attribute, answer)
    assert (
        ok(
            await call(
                client.get_attribute,
                mbean="pushgrid:type=Cache",
                attribute="MaxCachedMessagesPerSubject",
            )
        )
        == 1000
    )
    # an unknown attribute or MBean is a 404 inside an HTTP 200
    missing = await call(client.get_attribute, mbean=server, attribute="NoSuchAttribute")
    assert missing["status"] == 404
    assert "AttributeNotFound" in missing["error_type"]
    absent = await call(client.get_attribute, mbean="pushgrid:type=Nothing", attribute="Count")
    assert absent["status"] == 404
    assert "InstanceNotFound" in absent["error_type"]


async def test_client_reads_indicator_beans(srv, client):
    await wait_first_sample(srv)
    for bean in INDICATOR_BEANS:
        values = ok(await call(client.get_attribute, mbean=bean, attribute=None))
        for attribute in ("Description", "Unit", "Current", "SampleTime", "Total", "Windows"):
            assert attribute in values, (bean, attribute)
        for attribute in WINDOW_ATTRIBUTES:
            assert attribute in values, (bean, attribute)
        assert values["SampleTime"] > 1_700_000_000
        assert sorted(values["Windows"]) == sorted(WINDOW_NAMES)
        for window in WINDOW_NAMES:
            stats = values["Windows"][window]
            assert set(stats) == {"max", "avg", "stddev", "count"}
            assert values[f"Count{window}"] == stats["count"] >= 1


async def test_client_search_list_and_write(client):
    assert sorted(ok(await call(client.search, mbean="pushgrid:*"))) == ALL_BEANS
    indicators = ok(await call(client.search, mbean="pushgrid:type=Indicator,*"))
    assert sorted(indicators) == INDICATOR_BEANS
    assert ok(await call(client.search, mbean="nothing:*")) == []

    tree = ok(await call(client.list, path="pushgrid"))
    assert sorted(f"pushgrid:{key}" for key in tree) == ALL_BEANS
    sessions = tree["type=Sessions"]
    assert sessions["op"]["disconnect"]["args"][0]["type"] == "java.lang.String"
    assert sessions["op"]["disconnect"]["ret"] == "boolean"
    assert "list" in sessions["op"]
    subjects = tree["type=Subjects"]
    assert set(subjects["op"]) >= {"snapshot", "subscriberCount"}
    indicator = tree["name=IncomingMessagesPerSecond,type=Indicator"]
    for attribute in ("Current", "Total", "SampleTime", "Windows", *WINDOW_ATTRIBUTES):
        assert attribute in indicator["attr"], attribute
        assert indicator["attr"][attribute]["rw"] is False
    everything = ok(await call(client.list))
    assert "pushgrid" in everything

    # attributes are read-only
    refused = await call(
        client.set_attribute,
        mbean="pushgrid:type=Cache",
        attr_value_pairs=("MaxCachedMessagesPerSubject", 5),
    )
    assert refused["status"] == 403, refused


async def test_exec_disconnect_closes_the_session_with_4003(srv, client, connect, subject):
    watched = subject("watched")
    victim = await connect(srv)
    bystander = await connect(srv)
    assert (await victim.subscribe(watched))["status"] == "allow"
    victim_id = victim.welcome["session"]
    count = ok(await call(client.get_attribute, mbean="pushgrid:type=Sessions", attribute="Count"))
    assert count >= 2

    sessions = ok(
        await call(client.execute, mbean="pushgrid:type=Sessions", operation="list", arguments=[])
    )
    by_id = {session["id"]: session for session in sessions}
    assert victim_id in by_id
    assert bystander.welcome["session"] in by_id
    assert by_id[victim_id]["subjects"] == [watched]

    done = ok(
        await call(
            client.execute,
            mbean="pushgrid:type=Sessions",
            operation="disconnect",
            arguments=[victim_id],
        )
    )
    assert done is True
    assert await victim.wait_closed() == 4003
    assert await bystander.sync() == [], "only that session is closed"

    async with monitor_http(srv) as mon:

        async def sessions_count() -> int:
            answer = (await mon.get("/jolokia/read/pushgrid:type=Sessions/Count")).json()
            return int(ok(answer))

        counts: list[int] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while (latest := await sessions_count()) != count - 1:
            counts.append(latest)
            assert loop.time() < deadline, f"Sessions Count stays {counts[-5:]}, want {count - 1}"
            await asyncio.sleep(0.05)
        # an unknown (or already closed) session answers false
        again = await mon.post(
            "/jolokia", json=exec_body("pushgrid:type=Sessions", "disconnect", victim_id)
        )
        assert ok(again.json()) is False


async def test_exec_snapshot_of_a_subject(srv, client, connect):
    publisher = await connect(srv)
    listener = await connect(srv)
    subject = "/Stocks/NYSE/IBM"
    assert (await listener.subscribe(subject))["status"] == "allow"
    await publisher.publish_ok(subject, "193", {"volume": "6.62M"})
    last = await publisher.publish_ok(subject, "195", {"ask": "190"})

    snapshot = ok(
        await call(
            client.execute,
            mbean="pushgrid:type=Subjects",
            operation="snapshot",
            arguments=[subject],
        )
    )
    assert snapshot["subject"] == subject
    assert snapshot["content"] == "195"
    assert snapshot["fields"] == {"volume": "6.62M", "ask": "190"}
    assert (snapshot["epoch"], snapshot["seq"]) == (last["epoch"], last["seq"])

    async with monitor_http(srv) as mon:
        # exec needs a POST (a GET is refused 405, test_monitoring_boundary.py); the type may
        # come from the POST's path
        body = exec_body("pushgrid:type=Subjects", "snapshot", subject)
        del body["type"]
        response = await mon.post("/jolokia/exec", json=body)
        assert response.status_code == 200
        answer = response.json()
        assert ok(answer) == snapshot
        assert answer["request"]["arguments"] == [subject]
        count = await mon.post(
            "/jolokia", json=exec_body("pushgrid:type=Subjects", "subscriberCount", subject)
        )
        assert ok(count.json()) == 1
        refused = await mon.get("/jolokia/exec/pushgrid:type=Subjects/snapshot/!/Stocks!/NYSE!/IBM")
        assert refused.status_code == 405
        none = await mon.post(
            "/jolokia", json=exec_body("pushgrid:type=Subjects", "snapshot", "/Stocks/NYSE/NONE")
        )
        assert ok(none.json()) is None, "a subject without messages has no snapshot"


async def test_telegraf_bulk_read(srv):
    """What Telegraf's jolokia2_agent input sends: a JSON array POSTed to <base>/read.

    One attribute is sent as a string, several as a list; ``path`` only when set. Telegraf
    pairs each answer with its metric by the echoed ``request`` and needs HTTP 200.
    """
    await wait_first_sample(srv)
    requests = [
        {
            "type": "read",
            "mbean": "pushgrid:type=Indicator,name=*",
            "attribute": ["Current", "Max1m", "Average1m", "StdDev1m"],
        },
        {"type": "read", "mbean": "pushgrid:type=Server", "attribute": "Uptime"},
        {"type": "read", "mbean": "pushgrid:type=NoSuchBean", "attribute": "Count"},
        {"type": "read", "mbean": "pushgrid:type=Sessions", "attribute": "Count"},
        {
            "type": "read",
            "mbean": "pushgrid:type=Server",
            "attribute": "Counters",
            "path": "messages_in_total",
        },
    ]
    async with monitor_http(srv) as mon:
        response = await mon.post(
            "/jolokia/read", json=requests, headers={"Content-type": "application/json"}
        )
        assert response.status_code == 200
        answers = response.json()
    assert isinstance(answers, list)
    assert len(answers) == len(requests)
    assert [answer["request"] for answer in answers] == requests, "answers in order, echoed"
    assert [answer["status"] for answer in answers] == [200, 200, 404, 200, 200]
    beans = answers[0]["value"]
    assert sorted(beans) == INDICATOR_BEANS
    for values in beans.values():
        assert set(values) == {"Current", "Max1m", "Average1m", "StdDev1m"}
        for value in values.values():
            assert isinstance(value, int | float), values
    assert answers[1]["value"] > 0
    assert "error" in answers[2]
    assert "value" not in answers[2]
    assert isinstance(answers[3]["value"], int)
    assert isinstance(answers[4]["value"], int)


async def test_pattern_read_of_one_attribute(srv, client):
    await wait_first_sample(srv)
    async with monitor_http(srv) as mon:
        answer = (await mon.get("/jolokia/read/pushgrid:type=Indicator,*/Max1m")).json()
    beans = ok(answer)
    assert sorted(beans) == INDICATOR_BEANS
    assert len(beans) == 7
    for values in beans.values():
        assert list(values) == ["Max1m"]
        assert isinstance(values["Max1m"], int | float)
    posted = ok(
        await call(client.get_attribute, mbean="pushgrid:type=Indicator,*", attribute="Max1m")
    )
    assert sorted(posted) == INDICATOR_BEANS


@pytest.mark.parametrize("path", ["/jolokia", "/jolokia/read"])
@pytest.mark.parametrize("body", [b"{not json", b'[{"type": "read",', b"42"])
async def test_malformed_post_is_http_400(srv, path, body):
    async with monitor_http(srv) as mon:
        response = await mon.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    document = response.json()
    assert document["status"] == 400
    assert document["error_type"]


async def test_one_bad_request_in_a_bulk_fails_alone(srv):
    async with monitor_http(srv) as mon:
        answers = await jolokia_bulk(
            mon,
            [
                {"type": "read", "mbean": "pushgrid:type=Server", "attribute": "ServerName"},
                {"type": "nonsense"},
                {"type": "read", "mbean": "not an object name"},
                {"type": "search", "mbean": "pushgrid:type=Sessions"},
            ],
        )
    assert [answer["status"] for answer in answers] == [200, 400, 400, 200]
    assert answers[0]["value"] == "it-node"
    assert answers[3]["value"] == ["pushgrid:type=Sessions"]
