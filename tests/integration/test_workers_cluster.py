"""Workers = 2 on cluster members (ADR 067, docs/workers.md "Cluster members"): worker 0 of a
member holds its one cluster engine and owns every subject, the other worker forwards to it.

A Guaranteed cluster of three seeds: members 1 and 2 run Workers = 2, member 3 one process
(the reference for what a member uses: its NATS connections). Which worker holds a connection
is read from the kernel (tests/integration/test_workers.py's helpers).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from typing import Any

import httpx
import psutil
import pytest

from pushgrid.server.cluster.topology import MONITOR_OFFSET

from .cluster import Cluster, cluster_status
from .pgtest import ServerProcess, WsClient, jolokia_exec, until
from .test_workers import (
    _stats,
    leave_and_recover,
    on_each_worker,
    on_worker,
    wait_for,
    workers_of,
)

pytestmark = pytest.mark.timeout(300)


async def _connect(target: ServerProcess, token: str | None = None) -> WsClient:
    return await WsClient.connect(target, token)


@pytest.fixture(scope="module")
def guaranteed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes = Cluster(
        tmp_path_factory.mktemp("wclus"), configured=3, Workers=2, ClusterPublishTimeout=12
    )
    del nodes.member(3).settings["Workers"]  # the one-process reference member
    try:
        yield nodes.start()
    finally:
        nodes.kill_all()
        for member in nodes.members:
            log = member.log() if member.starts else ""
            assert "Traceback (most recent call last)" not in log, log[-3000:]


async def test_standard_members_of_two_workers_each_number_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Standard mode: a member's workers share the member's (epoch, seq) (each member keeps
    its own epoch, as with one process) and the member table counts each member once."""
    pair = Cluster(tmp_path_factory.mktemp("wclus-std"), configured=2, mode="Standard", Workers=2)
    try:
        pair.start()
        for index in (1, 2):
            status = cluster_status(pair.member(index))
            assert status["mode"] == "standard"
            assert sorted(m["name"] for m in status["members"]) == ["m1", "m2"]
        s = topic()
        clients = {
            (m, w): c
            for m in (1, 2)
            for w, c in (await on_each_worker(pair.member(m), _connect)).items()
        }
        for client in clients.values():
            await client.subscribe(s)
        for n in range(20):
            await list(clients.values())[n % 4].publish_ok(s, f"m{n}")
        seen = {where: await c.messages(20, s) for where, c in clients.items()}
        for where, frames in seen.items():
            assert [f["seq"] for f in frames] == list(range(1, 21)), where
            assert sorted(f["content"] for f in frames) == sorted(f"m{n}" for n in range(20))
        for m in (1, 2):  # a member's workers deliver the same (epoch, seq, content) sequence
            # (Standard orders per member: two members may order two publishes differently)
            assert positions(seen[(m, 0)]) == positions(seen[(m, 1)]), m
        epochs = {m: {f["epoch"] for w in (0, 1) for f in seen[(m, w)]} for m in (1, 2)}
        assert len(epochs[1]) == len(epochs[2]) == 1, epochs  # one epoch per member
        assert epochs[1] != epochs[2]
        # occupancy is the cluster's: every worker's subscribers of both members, each member
        # named once (its workers fold into it), seen from either member
        for member in (pair.member(1), pair.member(2)):
            shared = await wait_for_async(partial(_occupied, member, s, 4), f"4 on {member}")
            assert shared["members"] == {"m1": 2, "m2": 2}, shared
        for client in clients.values():
            await client.close()
    finally:
        pair.kill_all()


def positions(frames: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(f["epoch"], f["seq"], f["content"]) for f in frames]


async def _occupied(member: ServerProcess, s: str, count: int) -> dict[str, Any] | None:
    """The Subjects MBean's occupancy of ``s`` on ``member`` when it counts ``count``."""
    answer = await jolokia_exec(member, "pushgrid:type=Subjects", "occupancy", [s])
    value: dict[str, Any] = answer["value"]
    return value if answer["status"] == 200 and value["subscribers"] == count else None


async def wait_for_async(
    check: Callable[[], Awaitable[dict[str, Any] | None]], what: str, within: float = 60.0
) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.2)
    raise AssertionError(f"no {what} within {within} s")


def topic() -> str:
    return f"/wclus/{uuid.uuid4().hex[:10]}"


def nats_clients(cluster: Cluster, member: ServerProcess) -> int:
    """The NATS client connections, on every node of the cluster, held by the processes of
    ``member`` (its supervisor and its workers), matched by the client's port."""
    assert member.proc is not None
    root = psutil.Process(member.proc.pid)
    ports = {
        conn.laddr.port
        for proc in [root, *root.children(recursive=True)]
        if "nats-server" not in proc.name()
        for conn in proc.net_connections("tcp")
        if conn.laddr and conn.raddr
    }
    count = 0
    for endpoint in cluster.endpoints:
        host, port = endpoint.rsplit(":", 1)
        url = f"http://{host}:{int(port) + MONITOR_OFFSET}/connz?limit=1000"
        connz = httpx.get(url, timeout=5, trust_env=False).json()
        count += sum(1 for c in connz.get("connections", []) if c.get("port") in ports)
    return count


async def _two_rows(member: ServerProcess) -> list[dict[str, Any]] | None:
    rows: list[dict[str, Any]] = _stats(member)["workers"]
    return rows if len(rows) >= 2 else None


async def test_a_member_is_one_member_with_one_member_s_nats_connections(
    guaranteed: Cluster,
) -> None:
    for index in (1, 2):
        assert sorted(workers_of(guaranteed.member(index))) == [0, 1]
    for index in (1, 2, 3):
        names = [m["name"] for m in cluster_status(guaranteed.member(index))["members"]]
        assert sorted(names) == ["m1", "m2", "m3"], names
    reference = nats_clients(guaranteed, guaranteed.member(3))
    assert reference >= 1
    print(f"NATS client connections of a member: {reference} (one process and two alike)")
    # the ops plane sees one member with two processes (worker 0's monitoring port)
    for index in (1, 2):
        member = guaranteed.member(index)
        pids = workers_of(member)
        # worker 1's first report reaches worker 0 a second after it started (bounded wait)
        rows = await until(partial(_two_rows, member), "both workers' rows in /stats", 60.0)
        assert [(w["index"], w["pid"], w["linked"]) for w in rows] == [
            (0, pids[0], True),
            (1, pids[1], True),
        ]
    assert nats_clients(guaranteed, guaranteed.member(1)) == reference
    assert nats_clients(guaranteed, guaranteed.member(2)) == reference
    # /health on the client port is the member's whichever worker answers (fresh connections)
    for _ in range(20):
        async with guaranteed.member(1).http() as http:
            health = (await http.get("/health")).json()
        assert (health["mode"], health["quorum"], health["engine"]) == ("guaranteed", True, "nats")


async def test_publish_through_every_worker_one_contiguous_numbering(guaranteed: Cluster) -> None:
    s = topic()
    clients = {
        (m, w): c
        for m in (1, 2)
        for w, c in (await on_each_worker(guaranteed.member(m), _connect)).items()
    }
    try:
        for client in clients.values():
            assert (await client.subscribe(s))["status"] == "allow"
        acks = []
        for n in range(24):
            publisher = list(clients.values())[n % 4]
            acks.append(await publisher.publish_ok(s, f"m{n}"))
        epoch = acks[0]["epoch"]
        assert [(a["epoch"], a["seq"]) for a in acks] == [(epoch, i) for i in range(1, 25)]
        for where, client in clients.items():
            got = await client.messages(24, s)
            assert [(f["epoch"], f["seq"], f["content"]) for f in got] == [
                (epoch, i, f"m{i - 1}") for i in range(1, 25)
            ], where
        # concurrent publishers on every worker of both members: every subscriber, whichever
        # worker holds it, gets every message once, in one contiguous numbering
        await asyncio.gather(
            *(_publish_many(c, s, f"c{k}", 50) for k, c in enumerate(clients.values()))
        )
        for where, client in clients.items():
            got = await client.messages(200, s, timeout=60)
            assert [(f["epoch"], f["seq"]) for f in got] == [(epoch, i) for i in range(25, 225)], (
                where
            )
            assert len({f["content"] for f in got}) == 200, where
        # snapshot and history are the member's whichever worker answers
        for m in (1, 2):
            fresh = await on_worker(1, guaranteed.member(m), _connect)
            _sub, frames = await fresh.subscribe_all(s, history=5)
            assert [(f["kind"], f["seq"]) for f in frames][-5:] == [
                ("historical", i) for i in range(220, 225)
            ], frames
            await fresh.close()
    finally:
        for client in clients.values():
            await client.close()


async def _publish_many(client: WsClient, s: str, prefix: str, count: int) -> None:
    """``count`` publishes on one connection, all in flight together, each acknowledged."""
    frames: list[dict[str, Any]] = [
        {"op": "publish", "id": client.next_id(), "subject": s, "content": f"{prefix}-{n}"}
        for n in range(count)
    ]
    for frame in frames:
        await client.send(frame)
    for frame in frames:
        answer = await client.wait_for(partial(_answers, frame["id"]), 60, "ack")
        assert answer.get("result") == "ok", answer


def _answers(request_id: int, frame: dict[str, Any]) -> bool:
    return frame.get("id") == request_id


async def test_a_reconnect_to_the_other_worker_recovers_without_resync(
    guaranteed: Cluster,
) -> None:
    member = guaranteed.member(1)
    s = topic()
    clients = await on_each_worker(member, _connect)
    publisher = clients[1]
    again = await leave_and_recover(member, _connect, s, clients[0], publisher, 1, 13)
    for client in (again, publisher):
        await client.close()


def _replaced(member: ServerProcess, index: int, old: int) -> bool:
    """Worker ``index`` of ``member`` runs again, in a process other than ``old``."""
    return workers_of(member).get(index) not in (None, old)


async def _publish_acked(
    members: list[ServerProcess], s: str, content: str, failures: list[str]
) -> tuple[dict[str, Any], str]:
    """Publish with a msg_id until some worker of some member acknowledges it (a client's own
    retries: a new connection each time, so it lands wherever the kernel puts it, its own
    member first); the answer and the member that gave it. ``failures`` gets the others."""
    msg_id = uuid.uuid4().hex
    for attempt in range(600):
        member = members[attempt % len(members)]
        try:
            client = await WsClient.connect(member)
            try:
                result = await client.publish(s, content, msg_id=msg_id, timeout=20)
            finally:
                await client.close()
        except Exception as exc:  # refused, closed, timed out: this client retries
            failures.append(repr(exc)[:80])
        else:
            if result.get("result") == "ok":
                return result, member.settings["ServerName"]
            failures.append(str(result.get("code")))
        await asyncio.sleep(0.1)
    raise AssertionError(f"{content} never acknowledged")


async def test_sigkill_of_each_worker_under_load_loses_nothing_acknowledged(
    guaranteed: Cluster,
) -> None:
    """Worker 1 of member 1, then worker 0 of member 2 (the one with the member's cluster
    engine and its nats-server) are SIGKILLed while publishers keep publishing through both
    members; each member acknowledges again after its restart; every acknowledged message is
    in the stream once, in one contiguous numbering."""
    s = topic()
    members = [guaranteed.member(1), guaranteed.member(2)]
    acks: list[tuple[dict[str, Any], str]] = []
    failures: list[str] = []
    stop = asyncio.Event()

    async def publisher(k: int) -> None:
        order = members[k % 2 :] + members[: k % 2]
        n = 0
        while not stop.is_set():
            acks.append(await _publish_acked(order, s, f"p{k}-{n}", failures))
            n += 1

    def acked_by(name: str, at_least: int = 0) -> int:
        count = sum(1 for _ack, by in acks if by == name)
        return count if count >= at_least else 0

    tasks = [asyncio.create_task(publisher(k)) for k in range(4)]
    try:
        await wait_for("first acks", lambda: acked_by("m1", 10) and acked_by("m2", 10))
        for name, index in (("m1", 1), ("m2", 0)):
            member = guaranteed.member(int(name[1]))
            old = workers_of(member)[index]
            os.kill(old, signal.SIGKILL)
            await wait_for(f"a new worker {index}", partial(_replaced, member, index, old))
            await asyncio.to_thread(guaranteed.wait_healthy)
            await wait_for(f"acks of {name} after", partial(acked_by, name, acked_by(name) + 10))
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
    seqs = sorted(ack["seq"] for ack, _by in acks)
    assert len(set(seqs)) == len(seqs), "two acknowledged publishes share a seq"
    reader = await on_worker(1, guaranteed.member(2), _connect)
    try:
        _sub, frames = await reader.subscribe_all(s, history=1000)
        history = [(f["seq"], f["content"]) for f in frames if f["kind"] == "historical"]
        assert [seq for seq, _ in history] == list(range(1, len(history) + 1))
        contents = [content for _, content in history]
        assert len(set(contents)) == len(contents), "a message stored twice"
        assert set(seqs) <= {seq for seq, _ in history}
        assert len(history) == len(acks), (len(history), len(acks), failures[-20:])
    finally:
        await reader.close()
    print(f"{len(acks)} acknowledged, {len(failures)} attempts retried: {failures[-8:]}")
