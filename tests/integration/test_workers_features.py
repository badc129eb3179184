"""Workers = 2: the features that used to work per worker, now the server's (issue 31 item 2,
ADR 060, docs/workers.md). One module-scoped server; each test uses subjects of its own and
puts clients on both workers (tests/integration/test_workers.py finds which worker holds a
connection from the kernel)."""

from __future__ import annotations

import asyncio
import functools
import itertools
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from websockets.asyncio.client import connect as ws_connect

from pushgrid.server.workers.ownership import owner_of

from .pgtest import (
    BatchWsClient,
    RawWs,
    ServerProcess,
    WsClient,
    jolokia_exec,
    monitor_http,
    publish_burst,
    subscribe_with,
)
from .test_conflation import at_period_start, is_message
from .test_entitlement import SECRET as JWT_SECRET
from .test_entitlement import token as jwt_token
from .test_entitlement_hardening import _plugin_env
from .test_occupancy import _eventually as _poll
from .test_workers import Connect, on_each_worker, on_worker, worker_holding

pytestmark = pytest.mark.timeout(240)

SUBJECTS_MBEAN = "pushgrid:type=Subjects"
SESSIONS_MBEAN = "pushgrid:type=Sessions"
OCCUPANCY_EVENTS = "/pushgrid/occupancy"
NAME = "w2f"
WATCHED = "/Watched/*"
_fresh = itertools.count(1)
_RUN = uuid.uuid4().hex[:6]


def room(owner: int, under: str = "/Chat") -> str:
    """A fresh subject under ``under`` (``/Chat/*`` keeps presence) that worker ``owner`` (of
    2) owns."""
    while True:
        s = f"{under}/{_RUN}-{next(_fresh)}"
        if owner_of(s, 2) == owner:
            return s


@pytest.fixture(scope="module")
def two_workers(module_server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return module_server_factory(
        Workers=2,
        ServerName=NAME,
        **{"Occupancy.PresencePatterns": "/Chat/*", "WatchedSubjects.Patterns": WATCHED},
    )


async def _exec(srv: ServerProcess, operation: str, subject: str) -> dict[str, Any]:
    answer = await jolokia_exec(srv, SUBJECTS_MBEAN, operation, [subject])
    assert answer["status"] == 200, answer
    value: dict[str, Any] = answer["value"]
    return value


async def _subscribe_as(client: WsClient, subject: str, client_id: str) -> None:
    request_id = client.next_id()
    item = {"subject": subject, "client_id": client_id}
    await client.send({"op": "subscribe", "id": request_id, "subjects": [item]})
    subscribed = await client.expect("subscribed", id=request_id)
    assert subscribed["status"] == "allow", subscribed


async def _presence(client: WsClient, subject: str) -> dict[str, Any]:
    request_id = client.next_id()
    await client.send({"op": "presence", "id": request_id, "subject": subject})
    return await client.expect("presence", id=request_id)


async def _eventually(check: Callable[[], Any], what: str) -> Any:
    """Poll ``check`` for up to a minute: the other worker's share reaches worker 0 with its
    next report or occupancy interval, later on a loaded machine."""
    return await _poll(check, what, within=60.0)


def _listed(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((c["client_id"], c["member"]) for c in answer["clients"])


@pytest.mark.parametrize("owner", [0, 1])
async def test_presence_and_occupancy_are_the_server_s(
    two_workers: ServerProcess, connect: Connect, owner: int
) -> None:
    """ann on worker 0 and bob on worker 1 follow one room: the MBeans (worker 0) and a
    client's presence question on either worker see both, under the server's name."""
    clients = await on_each_worker(two_workers, connect)
    s = room(owner)
    await _subscribe_as(clients[0], s, "ann")
    await _subscribe_as(clients[1], s, "bob")
    both = [("ann", NAME), ("bob", NAME)]

    async def counted() -> bool:
        occupancy = await _exec(two_workers, "occupancy", s)
        presence = await _exec(two_workers, "presence", s)
        return (
            occupancy["subscribers"] == 2
            and occupancy["members"] == {NAME: 2}
            and presence["subscribers"] == 2
            and _listed(presence) == both
        )

    await _eventually(counted, "both followers in the MBeans")
    for index, client in clients.items():
        answer = await _presence(client, s)
        assert (answer["subscribers"], _listed(answer)) == (2, both), index
    await clients[1].close()  # bob leaves: the server's count follows

    async def bob_left() -> bool:
        presence = await _exec(two_workers, "presence", s)
        return presence["subscribers"] == 1 and _listed(presence) == [("ann", NAME)]

    await _eventually(bob_left, "bob gone from the presence list")


async def test_occupancy_events_count_subscribers_on_every_worker(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str]
) -> None:
    """A watcher of /pushgrid/occupancy on worker 0 hears that a subject only a client of
    worker 1 follows is occupied, once, with the server's count."""
    clients = await on_each_worker(two_workers, connect)
    watcher, other = clients[0], clients[1]
    assert (await watcher.subscribe(OCCUPANCY_EVENTS))["status"] == "allow"

    async def watched() -> bool:
        return (await _exec(two_workers, "occupancy", OCCUPANCY_EVENTS))["subscribers"] >= 1

    await _eventually(watched, "the watcher counted")
    s = subject("occupied")
    assert (await other.subscribe(s))["status"] == "allow"
    event = await watcher.wait_for(
        lambda f: f.get("type") == "message" and f.get("fields", {}).get("subject") == s,
        what=f"the occupied event of {s}",
    )
    assert (event["fields"]["event"], event["fields"]["subscribers"]) == ("occupied", "1")
    assert event["fields"]["member"] == NAME


async def _stats(srv: ServerProcess) -> dict[str, Any]:
    async with monitor_http(srv) as http:
        document: dict[str, Any] = (await http.get("/stats", params={"format": "json"})).json()
    return document


def _ranked(document: dict[str, Any], ranking: str, subject: str) -> float:
    rows = document["hot_subjects"]["rankings"][ranking]
    return next((row["value"] for row in rows if row["subject"] == subject), 0)


async def test_hot_and_watched_subjects_count_the_server_s_traffic_once(
    two_workers: ServerProcess, connect: Connect
) -> None:
    """A watched subject worker 0 owns, published on worker 1 and followed on both: worker 0's
    views count its messages in once (where they entered), out on both workers, and both
    subscribers."""
    clients = await on_each_worker(two_workers, connect)
    s = room(0, "/Watched")
    for client in clients.values():
        assert (await client.subscribe(s))["status"] == "allow"
    n = 9
    for i in range(n):
        await clients[1].publish_ok(s, f"m{i}")
    for client in clients.values():
        assert len(await client.messages(n, s)) == n

    async def counted() -> dict[str, Any] | None:
        document = await _stats(two_workers)
        found = {p["pattern"]: p for p in document["watched_subjects"]["patterns"]}[WATCHED]
        totals = found["totals"]
        if (
            totals["messages_in_total"] == n
            and totals["messages_out_total"] == 2 * n
            and found["subscribers"] == 2
            and _ranked(document, "messages_in", s) > 0
            and _ranked(document, "messages_out", s) > 0
            and _ranked(document, "subscribers", s) == 2
        ):
            return document
        return None

    await _eventually(counted, f"{s}: {n} in, {2 * n} out and 2 subscribers in worker 0's views")


async def test_publish_rate_per_address_is_the_server_s(
    server_factory: Callable[..., ServerProcess], connect: Connect, subject: Callable[[str], str]
) -> None:
    """PublishRatePerAddress with two connections of one address, one on each worker: the
    tokens one worker's connection took are gone for the other's too (a rate too low to
    refill during the test: only the burst counts)."""
    srv = server_factory(
        Workers=2,
        PublishRatePerAddress=0.001,
        PublishBurst=5,
        PublishRatePerConnection=0,  # unlimited: only the address's bucket counts
        MetaSubjectInterval=0,
        **{"Canary.Enabled": False},
    )
    clients = await on_each_worker(srv, connect)
    s = subject("rate")
    first = [(await clients[0].publish(s, f"a{i}"))["result"] for i in range(6)]
    assert first == ["ok"] * 5 + ["rate_limited"], first
    # the other worker hears of the spent tokens within SHARE_INTERVAL (0.1 s); a loaded
    # machine gets twenty times that
    await asyncio.sleep(2.0)
    second = [await clients[1].publish(s, f"b{i}") for i in range(3)]
    assert [r["result"] for r in second] == ["rate_limited"] * 3, second
    assert "PublishRatePerAddress" in second[0]["reason"], second[0]


async def test_session_operations_reach_the_sessions_of_every_worker(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str]
) -> None:
    """The Sessions MBean (worker 0) lists, details, unsubscribes and disconnects a session
    that worker 1 holds."""
    clients = await on_each_worker(two_workers, connect)
    held = clients[1]
    session = held.welcome["session"]
    s = subject("browsed")
    assert (await held.subscribe(s))["status"] == "allow"
    listed = await jolokia_exec(two_workers, SESSIONS_MBEAN, "list", [])
    ids = {row["id"] for row in listed["value"]}
    assert {clients[0].welcome["session"], session} <= ids, listed
    detail = (await jolokia_exec(two_workers, SESSIONS_MBEAN, "detail", [session]))["value"]
    assert detail is not None
    assert (detail["id"], detail["subjects"]) == (session, [s]), detail
    unsubscribed = await jolokia_exec(two_workers, SUBJECTS_MBEAN, "unsubscribe", [session, s])
    assert unsubscribed["value"] is True, unsubscribed
    await held.expect("unsubscribed", subject=s)
    answer = await jolokia_exec(two_workers, SESSIONS_MBEAN, "disconnect", [session])
    assert answer["value"] is True, answer
    assert await held.wait_closed() == 4003
    gone = await jolokia_exec(two_workers, SESSIONS_MBEAN, "disconnect", ["no-such-session"])
    assert gone["value"] is False, gone


async def test_the_subject_browser_is_the_server_s(
    two_workers: ServerProcess, connect: Connect
) -> None:
    """The Subjects MBean (worker 0) lists the subjects each worker owns, once each, with the
    subscribers of both workers; subscriberCount counts both; removeSnapshot of a subject worker 1
    owns removes it there (it answered "unsupported" and listed worker 0's subjects only)."""
    clients = await on_each_worker(two_workers, connect)
    mine, theirs = room(0, "/Browse"), room(1, "/Browse")
    for s in (mine, theirs):
        for client in clients.values():
            assert (await client.subscribe(s))["status"] == "allow"
        await clients[0].publish_ok(s, "x" * 10, {"f": "1"})

    async def listed() -> dict[str, Any] | None:
        answer = await jolokia_exec(two_workers, SUBJECTS_MBEAN, "list", ["/Browse/*"])
        assert answer["status"] == 200, answer
        rows = {row["subject"]: row for row in answer["value"]["subjects"]}
        return rows if set(rows) == {mine, theirs} else None

    rows = await _eventually(listed, "both workers' subjects listed")
    for s in (mine, theirs):
        assert rows[s]["subscribers"] == 2, rows
        assert rows[s]["snapshot_bytes"] > 0, rows
        assert rows[s]["last_publish"] > 0, rows
        count = await jolokia_exec(two_workers, SUBJECTS_MBEAN, "subscriberCount", [s])
        assert count["value"] == 2, count
    removed = await _exec(two_workers, "removeSnapshot", theirs)
    assert removed["removed"] is True, removed
    assert (removed["epoch"], removed["seq"]) != ("", 0)
    assert (await jolokia_exec(two_workers, SUBJECTS_MBEAN, "snapshot", [theirs]))["value"] is None
    again = await _exec(two_workers, "removeSnapshot", theirs)
    assert again["removed"] is False, again


async def _trace(srv: ServerProcess, operation: str, *arguments: Any) -> Any:
    answer = await jolokia_exec(srv, SESSIONS_MBEAN, operation, list(arguments))
    assert answer["status"] == 200, answer
    return answer["value"]


async def test_live_traces_follow_clients_and_subjects_of_every_worker(
    two_workers: ServerProcess, connect: Connect
) -> None:
    """A client trace and a subject trace opened on worker 0 record what worker 1 sends its
    client and numbers: each message once in the subject trace."""
    clients = await on_each_worker(two_workers, connect)
    s = room(1, "/Traced")
    await _subscribe_as(clients[1], s, "tracy")
    by_client = (await _trace(two_workers, "traceOpen", "client", "tracy"))["id"]
    by_subject = (await _trace(two_workers, "traceOpen", "subject", s))["id"]
    for i in range(3):
        await clients[0].publish_ok(s, f"t{i}")
    assert len(await clients[1].messages(3, s)) == 3

    async def traced() -> dict[str, list[dict[str, Any]]] | None:
        found = {}
        for trace_id in (by_client, by_subject):
            read = await _trace(two_workers, "traceRead", trace_id, -1, 100)
            found[trace_id] = [e for e in read["events"] if e["subject"] == s]
        return found if all(len(events) >= 3 for events in found.values()) else None

    found = await _eventually(traced, "three messages in both traces")
    session = clients[1].welcome["session"]
    assert [(e["session"], e["client_id"]) for e in found[by_client]] == [(session, "tracy")] * 3
    assert len(found[by_subject]) == 3, found[by_subject]
    assert [f"t{i}" in e["text"] for i, e in enumerate(found[by_subject])] == [True] * 3
    for trace_id in (by_client, by_subject):
        assert await _trace(two_workers, "traceClose", trace_id) is True


# -- proofs: features that take the forwarded path unchanged (issue 31 item 2 step 5) -------
# Each: a subscriber on worker 0 of a subject worker 1 owns, its publisher on worker 1.


async def _on(index: int, srv: ServerProcess, connect: Connect, token: str) -> WsClient:
    return await on_worker(index, srv, functools.partial(connect, token=token))


async def test_jwt_entitlement_across_workers(
    server_factory: Callable[..., ServerProcess], connect: Connect
) -> None:
    srv = server_factory(Workers=2, Entitlement="jwt", EntitlementJwtSecret=JWT_SECRET)
    reader = await _on(0, srv, connect, jwt_token({"sub": ["/Stocks/*"], "pub": []}))
    writer = await _on(1, srv, connect, jwt_token({"sub": [], "pub": ["/Stocks/*"]}))
    s = room(1, "/Stocks")
    assert (await reader.subscribe(s))["status"] == "allow"
    assert (await reader.subscribe(room(1, "/Bonds")))["status"] == "deny"
    assert (await reader.publish(s, "no"))["result"] == "denied"
    assert (await writer.subscribe(s))["status"] == "deny"
    await writer.publish_ok(s, "yes")
    assert [m["content"] for m in await reader.messages(1, s)] == ["yes"]


async def test_custom_entitlement_across_workers(
    server_factory: Callable[..., ServerProcess], connect: Connect, tmp_path: Path
) -> None:
    keys = {"reader": {"sub": ["/Public/"]}, "writer": {"sub": ["/Public/"], "pub": ["/Public/"]}}
    srv = server_factory(
        _env=_plugin_env(tmp_path, keys),
        Workers=2,
        Entitlement="custom:example",
        EntitlementCustomTimeout=2,
    )
    reader, writer = await _on(0, srv, connect, "reader"), await _on(1, srv, connect, "writer")
    s = room(1, "/Public")
    assert (await reader.subscribe(s))["status"] == "allow"
    assert (await reader.subscribe(room(1, "/Private")))["status"] == "deny"
    assert (await reader.publish(s, "no"))["result"] == "denied"
    await writer.publish_ok(s, "hello")
    assert [m["content"] for m in await reader.messages(1, s)] == ["hello"]


async def test_conflation_across_workers(two_workers: ServerProcess, connect: Connect) -> None:
    clients = await on_each_worker(two_workers, connect)
    s = room(1, "/Conflated")
    subscribed = await subscribe_with(clients[0], s, conflation=887)
    live_since = asyncio.get_running_loop().time()
    assert subscribed["status"] == "allow", subscribed
    items = [(f"c{i}", {f"f{i}": str(i), "last": str(i)}) for i in range(1, 6)]
    await at_period_start(live_since, 0.8)  # 887 ms conflates over 800 ms
    results = await publish_burst(clients[1], s, items)
    message = await clients[0].wait_for(is_message(s), what="the conflated message")
    assert (message["conflated"], message["content"]) == (True, "c5"), message
    assert message["fields"] == {**{f"f{i}": str(i) for i in range(1, 6)}, "last": "5"}
    assert message["seq"] == results[-1]["seq"]


async def test_batching_across_workers(server_factory: Callable[..., ServerProcess]) -> None:
    srv = server_factory(Workers=2, BatchingTime=100)
    opened: list[BatchWsClient] = []

    async def batch_client(_target: ServerProcess) -> WsClient:
        client = await BatchWsClient.open(srv)
        opened.append(client)
        client.welcome = await client.expect("welcome")
        return client

    try:
        subscriber = cast(BatchWsClient, await on_worker(0, srv, batch_client))
        publisher = await on_worker(1, srv, batch_client)
        s = room(1, "/Batched")
        assert (await subscribe_with(subscriber, s))["status"] == "allow"
        mark = len(subscriber.raw)
        results = await publish_burst(publisher, s, [(f"m{i}", {}) for i in range(30)])
        got = await subscriber.messages(30, s)
        assert [m["seq"] for m in got] == [r["seq"] for r in results]
        frames = subscriber.raw[mark:]
        assert len(frames) < 30, f"{len(frames)} frames for 30 messages: not batched"
        assert any(isinstance(f, list) for f in frames)
    finally:
        for client in opened:
            await client.close()


async def test_permessage_deflate_across_workers(
    two_workers: ServerProcess, connect: Connect
) -> None:
    publisher = await on_worker(1, two_workers, connect)
    s = room(1, "/Deflated")
    for _ in range(80):
        ws = await ws_connect(two_workers.ws_url, compression="deflate", proxy=None)
        client = WsClient(ws)
        if worker_holding(two_workers, client) == 0:
            break
        await client.close()
    else:
        raise AssertionError("80 connections, none on worker 0")
    try:
        assert ws.response is not None
        assert "permessage-deflate" in ws.response.headers["Sec-WebSocket-Extensions"]
        await client.expect("welcome")
        assert (await client.subscribe(s))["status"] == "allow"
        content = "quote " * 200  # compressible
        await publisher.publish_ok(s, content)
        assert [m["content"] for m in await client.messages(1, s)] == [content]
    finally:
        await client.close()


async def test_slow_consumer_policy_across_workers(
    server_factory: Callable[..., ServerProcess], connect: Connect
) -> None:
    """A subscriber on worker 0 that stops reading a subject worker 1 owns is closed as a slow
    consumer, and the Sessions MBean's slowConsumers (worker 0) lists it."""
    srv = server_factory(Workers=2, MaxOutboundBufferSize=65536, SlowConsumerCloseTimeout=1)
    s = room(1, "/Slow")
    for _ in range(80):
        slow = await asyncio.to_thread(RawWs, srv.host, srv.port, rcvbuf=4096)
        port = slow.sock.getsockname()[1]
        if worker_holding(srv, cast(WsClient, _LocalPort(port))) == 0:
            break
        slow.close()
    else:
        raise AssertionError("80 connections, none on worker 0")
    slow.send_json({"op": "subscribe", "id": 1, "subjects": [{"subject": s}]})
    await asyncio.to_thread(slow.read_frames, 2)  # welcome + subscribed; then it stops reading
    publisher = await on_worker(1, srv, connect)
    payload = "x" * 1024

    async def closed_as_slow() -> list[dict[str, Any]] | None:
        for _ in range(100):
            await publisher.publish_ok(s, payload)
        records = await _trace(srv, "slowConsumers")
        return [r for r in records if r["subjects"] == [s]] or None

    (record,) = await _eventually(closed_as_slow, "the slow consumer closed and listed")
    assert record["limit"] == 65536, record
    ended = await asyncio.to_thread(slow.read_until_closed, 30)
    assert ended == "reset" or slow.close_code == 4001, (ended, slow.close_code)
    slow.close()


class _LocalPort:
    """What worker_holding reads of a client: its local (address, port)."""

    def __init__(self, port: int) -> None:
        self.ws = self
        self.local_address = ("127.0.0.1", port)
