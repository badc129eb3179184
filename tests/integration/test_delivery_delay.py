"""Issue 33 item 8(b): 50 ms of added delay each way in front of one member's clients shows as
that member's delivery latency, and only that member's, in the admin API.

This kernel has no netem (REFERENCE.md, "Fault injection"): a TCP proxy holds every chunk for
50 ms in both directions (in order, without limiting the throughput: each chunk waits for its
own deadline). A two-member Standard cluster; a publisher on m1; one reporting subscriber on m1
directly and one on m2 through the proxy. The subscriber behind the proxy measures its clock
offset through the proxy too: with the same delay both ways the offset estimate stays right
(an asymmetric delay would bias it by half the difference), so its latency is the message's own
trip plus the 50 ms of the server-to-client direction.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pushgrid.client import BackoffPolicy, Message, PushgridClient

from .cluster import Cluster
from .pgtest import DEFAULT_TIMEOUT, AdminHarness, TcpProxy, WsClient, eventually, member_entry

DELAY = 0.050
N = 40
FAST_RETRY = BackoffPolicy(base=0.05, quick_retries=20, jitter=0.0, cap=0.5, stable_after=0.0)


class DelayingProxy(TcpProxy):
    """A :class:`TcpProxy` that holds each chunk ``delay`` seconds, in both directions."""

    def __init__(self, target_host: str, target_port: int, delay: float) -> None:
        super().__init__(target_host, target_port)
        self.delay = delay

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def release() -> None:
            while True:
                due, data = await held.get()
                await asyncio.sleep(max(0.0, due - loop.time()))
                writer.write(data)
                await writer.drain()
                held.task_done()

        releaser = asyncio.create_task(release())
        try:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await reader.read(65536):
                    held.put_nowait((loop.time() + self.delay, data))
            await held.join()  # what was read before the end still goes, late
        finally:
            releaser.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await releaser


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path_factory.mktemp("delay"), configured=2, mode="Standard")
    try:
        yield nodes.start(1, 2)
    finally:
        nodes.kill_all()


def _subscriber(address: str, received: list[Message]) -> PushgridClient:
    return PushgridClient(
        [address], on_message=received.append, backoff=FAST_RETRY, proxy=None, report_interval=0.5
    )


async def test_delay_before_one_members_clients_shows_on_that_member_only(
    pair: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Phase 1 without delay, phase 2 with 50 ms each way: the clients' own medians and the
    admin API's p50 per member, each phase its own reference (the same proxy, the same paths)."""
    m1, m2 = pair.member(1), pair.member(2)
    proxy = DelayingProxy(m2.host, m2.port, 0.0)
    await proxy.start()
    direct: list[Message] = []
    delayed: list[Message] = []
    clients = [_subscriber(m1.address, direct), _subscriber(proxy.address, delayed)]
    publisher = await WsClient.connect(m1)
    admin = AdminHarness(
        tmp_path_factory.mktemp("delay-admin"), [member_entry("m1", m1), member_entry("m2", m2)]
    )
    try:
        for client in clients:
            await client.subscribe("/delay/x")
            await asyncio.wait_for(client.connect(), DEFAULT_TIMEOUT)
        await eventually(
            lambda: all(c.clock_offset is not None for c in clients), what="clock offsets"
        )
        await asyncio.sleep(1.0)  # both subscriptions live on both members (Standard fan-out)
        before = await _phase(publisher, direct, delayed, N)
        proxy.delay = DELAY
        switched = time.monotonic()
        # three times as many: the members' 60 s window holds both phases, its median the second
        after = await _phase(publisher, direct, delayed, 3 * N)
        members = await _reported(admin, 4 * N)
        shown = time.monotonic() - switched
        p50 = {m["member"]: m["latency"]["p50"] for m in members}
        print(
            f"medians without delay m1 {before['m1'] * 1e3:.2f} ms, m2 {before['m2'] * 1e3:.2f}"
            f" ms; with 50 ms each way m1 {after['m1'] * 1e3:.2f} ms, m2"
            f" {after['m2'] * 1e3:.2f} ms; admin API p50 after {shown:.1f} s: m1"
            f" {p50['m1'] * 1e3:.3f} ms, m2 {p50['m2'] * 1e3:.3f} ms (bucket upper bounds)"
        )
        assert 0.035 <= after["m2"] - before["m2"] <= 0.075, (before, after)
        assert abs(after["m1"] - before["m1"]) <= 0.015, (before, after)
        # bucket upper bounds, ten a decade: m2 in the buckets of 50-80 ms, m1 far below
        assert 0.050 <= p50["m2"] <= 0.080, p50
        assert p50["m1"] < 0.020, p50
        assert shown < 60.0
    finally:
        for client in clients:
            await client.close()
        await publisher.close()
        await proxy.close()
        admin.close()


async def _phase(
    publisher: WsClient, direct: list[Message], delayed: list[Message], count: int
) -> dict[str, float]:
    """Publish ``count`` messages; the median latency each subscriber measured of them."""
    first = len(direct)
    for i in range(count):
        await publisher.publish_ok("/delay/x", f"m{i}")
        await asyncio.sleep(0.01)
    total = first + count
    await eventually(lambda: len(direct) == len(delayed) == total, what=f"{total} messages each")
    return {
        name: statistics.median(m.latency or 0.0 for m in received[first:])
        for name, received in (("m1", direct), ("m2", delayed))
    }


async def _reported(admin: AdminHarness, count: int) -> list[dict[str, Any]]:
    """The members' delivery latency once each has ``count`` latencies of its client."""
    deadline = time.monotonic() + 60.0
    async with admin.client("viewer") as api:
        while True:
            body = (await api.get("/api/v1/delivery/latency")).json()
            members: list[dict[str, Any]] = body["members"]
            if all(m["reachable"] and m["latency"]["count"] == count for m in members):
                return members
            assert time.monotonic() < deadline, body
            await asyncio.sleep(0.2)
