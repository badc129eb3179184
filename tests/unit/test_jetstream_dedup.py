"""Guarantee 7 across Guaranteed members (two JetStream engines on one real stream): a msg_id
stored in a batched record (whose Nats-Msg-Id is the member's own, so JetStream cannot
deduplicate it) is still stored once when retried through a member that started later or
that has not delivered the record yet."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from natsserver import delete_streams

from pushgrid.server.cluster.credentials import BusCredentials
from pushgrid.server.cluster.link import ClusterLink
from pushgrid.server.engine.base import Published, PublishRequest
from pushgrid.server.engine.jetstream import JetStreamEngine

# links without a ClusterMembers list: no 2 s wait for peers' hellos (tests/unit/conftest.py)

SUBJECT = "/Orders/EU/1"


def member(url: str, name: str) -> JetStreamEngine:
    link = ClusterLink(name, "guaranteed", None, None, [url], BusCredentials.derive("dedup"))
    return JetStreamEngine(link, stream="DEDUP", replicas=1, publish_timeout=5)


@pytest.fixture
async def first(nats_url: str) -> AsyncIterator[JetStreamEngine]:
    await delete_streams(nats_url)
    engine = member(nats_url, "a")
    await engine.start(lambda message: None)
    yield engine
    await engine.close()


async def batch(engine: JetStreamEngine, ids: list[str]) -> list[Published]:
    """Publishes queued together (one record: the first goes alone, the rest together)."""
    return list(
        await asyncio.gather(
            *(engine.publish(PublishRequest(SUBJECT, i, {}, msg_id=i)) for i in ids)
        )
    )


async def test_a_member_started_later_knows_the_ids_of_batched_records(
    first: JetStreamEngine, nats_url: str
) -> None:
    stored = await batch(first, [f"k{n}" for n in range(8)])
    assert [m.seq for m in stored] == list(range(1, 9))
    later = member(nats_url, "b")
    await later.start(lambda message: None)
    try:
        retries = await batch(later, ["k5", "k6", "new"])
        assert [(m.seq, m.duplicate) for m in retries] == [(6, True), (7, True), (9, False)]
    finally:
        await later.close()


async def test_a_member_behind_the_chain_waits_for_it_before_storing(
    first: JetStreamEngine, nats_url: str
) -> None:
    other = member(nats_url, "b")
    await other.start(lambda message: None)
    try:
        await other.publish(PublishRequest(SUBJECT, "head", {}))  # other caches this head
        async with other._deliver_lock:  # other delivers nothing meanwhile
            stored = await batch(first, [f"k{n}" for n in range(6)])
            retrying = asyncio.ensure_future(
                other.publish(PublishRequest(SUBJECT, "k4", {}, msg_id="k4"))
            )
            while not other._waiters:  # noqa: ASYNC110 - its store was refused; it waits
                await asyncio.sleep(0.01)
            assert not retrying.done()
        retry = await retrying
        original = next(m for m in stored if m.content == "k4")
        assert (retry.seq, retry.duplicate) == (original.seq, True)
        assert (await other.position(SUBJECT))[1] == 7
    finally:
        await other.close()


async def test_a_member_started_later_reads_every_record_of_the_window(
    first: JetStreamEngine, nats_url: str
) -> None:
    for n in range(300):  # more records than one batched read returns
        await first.publish(PublishRequest(SUBJECT if n % 2 else "/Orders/US/1", "x", {}))
    stored = await batch(first, ["a", "b"])  # the last record holds "b" among others
    later = member(nats_url, "b")
    await later.start(lambda message: None)
    try:
        (retry,) = await batch(later, ["b"])
        assert (retry.seq, retry.duplicate) == (stored[1].seq, True)
    finally:
        await later.close()
