"""A real network partition of a Guaranteed cluster loses, duplicates and reorders nothing.

Three members, each in its own network namespace on a bridge (``netns.py``); the test's clients
stay in the root namespace and reach every member, the isolated one included. Publishers load
the cluster through the members outside the partition while the stream leader's member is cut
off from the others (packets dropped, TCP connections cut) for ``ISOLATION`` seconds; the
partition heals, and this happens ``CYCLES`` times (the leader then is often another member).
Afterwards every member must have delivered every acknowledged message to its subscriber exactly
once and in order, with the same numbering everywhere, and must hold it (history, snapshot).

Issue 23: a healed member used to skip the records its own replica had not applied yet (the
replica answers reads while it catches up; an empty answer was taken for "removed"). On the old
engine this test fails with hundreds of acknowledged messages lost on the healed members.

Skipped, saying why, where network namespaces are not allowed (not root, no ``ip netns``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from .cluster import cluster_status
from .netns import NetnsCluster, running_cluster
from .pgtest import ServerProcess, WsClient

SUBJECTS = 12
# Each subject's publisher is paced and capped below MaxCachedMessagesPerSubject (1000): the test
# reads every acknowledged message back from each member's history, which holds the last 1000.
# Unpaced, a quiet machine published 1,300-2,400 per subject and the history check failed on
# records the cache had rightly dropped.
PUBLISHES_PER_SECOND = 15.0
MAX_PER_SUBJECT = 900
LOAD_BEFORE = 3.0  # seconds of load before the first partition
CYCLES = 3  # partitions, one after the other
ISOLATION = 10.0  # seconds the stream leader's member is cut off, each time
SETTLE = 4.0  # seconds of load after each heal
PAD = "x" * 1500  # bytes of content after the id: a bigger backlog to catch up after the heal
CONVERGE = 30.0  # seconds every member has to deliver the last acknowledged messages


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NetnsCluster]:
    # The readers are plain connections that must stay on their member through the partitions
    # (this test watches each member's own delivery): an isolated member must not send them
    # elsewhere (ClusterIsolationTimeout; test_partition_failover.py tests that part).
    with running_cluster(
        tmp_path, "partition test", ClusterPublishTimeout=20, ClusterIsolationTimeout=0
    ) as nodes:
        yield nodes


@dataclass
class Published:
    """What the publishers got: acknowledged (subject -> seq -> content) and failed contents."""

    acked: dict[str, dict[int, str]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)


async def publish_loop(
    nodes: NetnsCluster, topic: str, stop: asyncio.Event, out: Published
) -> None:
    """Publish ``topic#n`` through the members outside the partition in turn until ``stop``;
    never retry (a retry of an unknown outcome may be stored twice: issue 23 item 4, not what
    this test is about)."""
    acked = out.acked.setdefault(topic, {})
    turn = itertools.count()
    async with httpx.AsyncClient(timeout=40, trust_env=False) as http:
        for n in itertools.count(1):
            if stop.is_set() or n > MAX_PER_SUBJECT:
                return
            await asyncio.sleep(1 / PUBLISHES_PER_SECOND)
            content = f"{topic}#{n} {PAD}"
            reachable = [m for i, m in enumerate(nodes.members, 1) if i not in nodes.net.isolated]
            member = reachable[next(turn) % len(reachable)]
            try:
                response = await http.post(
                    f"{member.url}/publish", json={"subject": topic, "content": content}
                )
            except httpx.HTTPError:
                out.failed.append(content)
                continue
            if response.status_code == 200:
                acked[response.json()["seq"]] = content
            else:
                out.failed.append(content)


def stream_leader(nodes: NetnsCluster, wait: float = 20.0) -> int:
    """The member whose node leads the stream (the members learn it once a second)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for member in nodes.members:
            index = nodes.index_of_node(cluster_status(member).get("streamLeader"))
            if index is not None:
                return index
        time.sleep(0.5)
    raise AssertionError(f"no member named the stream leader within {wait} s")


async def subscribe_everything(member: ServerProcess, topics: list[str]) -> WsClient:
    client = await WsClient.connect(member)
    for topic in topics:
        assert (await client.subscribe(topic))["type"] == "subscribed"
    return client


def delivered(client: WsClient, topic: str) -> list[tuple[int, str]]:
    return [
        (f["seq"], f["content"])
        for f in client.buffer
        if f.get("type") == "message" and f.get("subject") == topic
    ]


async def converge(readers: list[WsClient], out: Published) -> None:
    """Wait (bounded) until every reader got each subject's last acknowledged seq."""
    deadline = time.monotonic() + CONVERGE
    while time.monotonic() < deadline:
        if all(
            any(seq >= max(acked, default=0) for seq, _ in delivered(reader, topic))
            for reader in readers
            for topic, acked in out.acked.items()
            if acked
        ):
            return
        await asyncio.sleep(0.5)


def problems(name: str, got: list[tuple[int, str]], acked: dict[int, str]) -> list[str]:
    """What is wrong with one member's view of one subject: every seq from 1 exactly once, in
    order, with the acknowledged content at each acknowledged seq. Each problem says what the
    view holds (:func:`described`), so a failure shows what was read, not only that it was
    wrong."""
    seqs = [seq for seq, _ in got]
    found = dict(got)
    lost = [seq for seq in acked if found.get(seq) != acked[seq]]
    out = []
    if lost:
        out.append(f"{name}: {len(lost)} acknowledged lost (seq {_ranges(sorted(lost))})")
    if len(seqs) != len(set(seqs)):
        out.append(f"{name}: {len(seqs) - len(set(seqs))} duplicated")
    if seqs != sorted(seqs):
        out.append(f"{name}: out of order")
    if seqs and seqs != list(range(1, seqs[-1] + 1)):
        out.append(f"{name}: numbering not contiguous")
    return [f"{problem}\n    read: {described(got, acked)}" for problem in out]


def described(got: list[tuple[int, str]], acked: dict[int, str]) -> str:
    """A view in one line: how many messages, which seqs, each gap or step back with the
    message ids on both sides, and acknowledged messages held at another seq."""
    if not got:
        return "nothing"
    jumps = [
        f"{a}->{b} ({_id(x)} then {_id(y)})"
        for (a, x), (b, y) in itertools.pairwise(got)
        if b != a + 1
    ]
    where = {content: seq for seq, content in got}
    moved = [
        f"{_id(content)} acknowledged as {seq}, held at {where[content]}"
        for seq, content in sorted(acked.items())
        if content in where and where[content] != seq
    ]
    text = f"{len(got)} messages, seq {got[0][0]}..{got[-1][0]}"
    text += f"; jumps: {', '.join(jumps[:10])}" if jumps else "; no jump"
    if moved:
        text += f"; {len(moved)} held at another seq: {', '.join(moved[:10])}"
    return text


def _id(content: str) -> str:
    return content.split(" ", 1)[0].rsplit("/", 1)[-1]  # "s3#517", without the padding


def _ranges(seqs: list[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` as ``1..3, 7, 9..10`` (at most 10 ranges shown)."""
    runs: list[list[int]] = []
    for seq in seqs:
        if runs and seq == runs[-1][1] + 1:
            runs[-1][1] = seq
        else:
            runs.append([seq, seq])
    shown = [f"{a}..{b}" if a != b else str(a) for a, b in runs[:10]]
    return ", ".join(shown) + (f" (+{len(runs) - 10} more ranges)" if len(runs) > 10 else "")


async def held(
    member: ServerProcess, topic: str
) -> tuple[list[tuple[int, str]], dict[str, Any], dict[str, Any]]:
    """The member's history (fresh connection), the ``subscribed`` frame that answered it, and
    the member's snapshot of ``topic``."""
    reader = await WsClient.connect(member)
    try:
        subscribed, frames = await reader.subscribe_all(topic, history=1000, timeout=30)
        history = [(f["seq"], f["content"]) for f in frames if f.get("type") == "message"]
    finally:
        await reader.close()
    async with member.http() as http:
        response = await http.get(
            "/snapshot", params={"subject": topic}, headers={"accept": "application/json"}
        )
    return history, subscribed, response.json()


@pytest.mark.timeout(150)  # the suite's 90 s is tight for three partitions on a busy machine
async def test_isolating_the_stream_leader_loses_nothing(cluster: NetnsCluster) -> None:
    topics = [f"/partition/{uuid.uuid4().hex[:8]}/s{k}" for k in range(SUBJECTS)]
    readers = [await subscribe_everything(m, topics) for m in cluster.members]
    out = Published()
    stop = asyncio.Event()
    load = [asyncio.create_task(publish_loop(cluster, t, stop, out)) for t in topics]
    isolated: list[int] = []
    try:
        await asyncio.sleep(LOAD_BEFORE)
        for _ in range(CYCLES):
            # The stream leader's member: the one the issue saw skip records (each cycle is
            # another chance for a member to meet its own replica still catching up).
            isolated.append(await asyncio.to_thread(stream_leader, cluster))
            cluster.net.isolate(isolated[-1])
            await asyncio.sleep(ISOLATION)
            cluster.net.heal()
            await asyncio.sleep(SETTLE)
    finally:
        cluster.net.heal()
        stop.set()
        await asyncio.gather(*load, return_exceptions=True)
    try:
        await converge(readers, out)
        wrong = []
        for index, (member, reader) in enumerate(zip(cluster.members, readers, strict=True), 1):
            tag = f"m{index}{' (isolated)' if index in isolated else ''}"
            for topic in topics:
                acked = out.acked[topic]
                got = delivered(reader, topic)
                found = problems(f"{tag} delivered {topic}", got, acked)
                if not found and got != delivered(readers[0], topic):
                    found.append(f"{tag} delivered {topic}: not the numbering m1 delivered")
                wrong += found
                history, subscribed, snapshot = await held(member, topic)
                found = problems(f"{tag} history {topic}", history, acked)
                if found:
                    found[-1] += f"\n    history answered by {subscribed}"
                wrong += found
                if history and (snapshot.get("seq"), snapshot.get("content")) != history[-1]:
                    wrong.append(f"{tag} snapshot {topic}: {snapshot} after {history[-1]}")
        total = sum(len(a) for a in out.acked.values())
        assert total > 0
        assert not wrong, f"{total} acknowledged, {len(out.failed)} failed:\n" + "\n".join(wrong)
    finally:
        for reader in readers:
            with contextlib.suppress(Exception):
                await reader.close()
