"""A member behind the stream never skips records on the word of an old stream leader (issue 34).

What happened (``tests/integration/test_partitions.py``, one run of the full suite on a loaded
machine): the stream leader's member m2 was cut off; the others elected a new leader and stored
~450 records; after the heal m2 delivered none of them (each of the 12 subjects jumped, e.g. seq
17 then 59) while its history, read from the stream, held them all. The nats-server logs show
why it can happen: a leader cut off by a partition keeps answering as stream leader until it
hears the new one (for the whole 10 s partition, and a moment after the heal). The member's gap
fill asked "the stream leader" for the next record after its position (a non-direct get) and got
"none" from the old leader, whose store ends where the partition began; it then asked "the
stream leader" whether it had applied the stream past the gap (stream info), got "yes" from the
new leader, and concluded the records had been removed, skipping them all.

The faults are injected at the NATS boundary (:class:`Healed`): while the old leader answers,
this member's replica and its leader reads end at the record the partition began after
(``stale_end``), and republished records do not arrive while it is cut off; stream info always
comes from the real leader. Everything else is the real engine on a real nats-server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable

import pytest
from nats.aio.msg import Msg
from natsserver import delete_streams

from pushgrid.server.cluster.credentials import BusCredentials
from pushgrid.server.cluster.link import ClusterLink
from pushgrid.server.engine.base import Published, PublishRequest
from pushgrid.server.engine.jetstream import JetStreamEngine, StoredRecord
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.engine.memory import DEFAULT_LIMITS

# links without a ClusterMembers list: no 2 s wait for peers' hellos (tests/unit/conftest.py)

SUBJECT = "/Orders/EU/stale-leader"
STREAM = "STALE"
SETTLE = 30.0  # seconds the member gets to deliver what the stream holds (a loaded machine)


class Healed(JetStreamEngine):
    """A member whose reads are answered, while ``stale_end`` is set, by servers that hold the
    stream only through ``stale_end``: its own replica (catching up) and the old leader, which
    answers ``stale_reads`` more leader reads after the heal (None: until further notice)."""

    cut = False  # republished records do not reach this member (it is cut off)
    stale_end: int | None = None
    stale_reads: int | None = None
    stale_answers = 0  # leader reads the old leader answered with "none" (the fault happened)

    def __init__(
        self, link: ClusterLink, limits: EngineLimits, *, stream: str, replicas: int
    ) -> None:
        super().__init__(link, limits, stream=stream, replicas=replicas, publish_timeout=10)
        self.delivered: list[Published] = []

    async def _on_republished(self, msg: Msg) -> None:
        if not self.cut:
            await super()._on_republished(msg)

    def _stale(self) -> bool:
        return self.stale_end is not None and (self.stale_reads is None or self.stale_reads > 0)

    async def _direct_batch(
        self, start: int, batch: int, nats_subject: str | None = None
    ) -> list[StoredRecord]:
        records = await super()._direct_batch(start, batch, nats_subject)
        if not self._stale():
            return records
        assert self.stale_end is not None
        return [r for r in records if r.stream_seq <= self.stale_end]

    async def _leader_next(self, start: int, nats_subject: str) -> StoredRecord | None:
        stored = await super()._leader_next(start, nats_subject)
        if not self._stale():
            return stored
        assert self.stale_end is not None
        if self.stale_reads is not None:
            self.stale_reads -= 1
        if stored is not None and stored.stream_seq > self.stale_end:
            self.stale_answers += 1
            return None  # the old leader's store ends at stale_end
        return stored


def member(
    url: str, name: str, kind: type[JetStreamEngine], limits: EngineLimits = DEFAULT_LIMITS
) -> JetStreamEngine:
    link = ClusterLink(name, "guaranteed", None, None, [url], BusCredentials.derive("stale"))
    return kind(link, limits, stream=STREAM, replicas=1)


@pytest.fixture
async def engines(nats_url: str) -> AsyncIterator[tuple[JetStreamEngine, Healed]]:
    await delete_streams(nats_url)
    writer = member(nats_url, "a", JetStreamEngine)
    healed = member(nats_url, "b", Healed)
    assert isinstance(healed, Healed)
    await writer.start(lambda message: None)
    await healed.start(healed.delivered.append)
    yield writer, healed
    await writer.close()
    await healed.close()


async def publish(writer: JetStreamEngine, first: int, last: int) -> None:
    for n in range(first, last + 1):
        await writer.publish(PublishRequest(SUBJECT, f"m{n}", {}))


async def until(settled: Callable[[], bool]) -> None:
    """Wait (bounded by ``SETTLE``) until ``settled()``; the caller then judges exactly."""
    deadline = time.monotonic() + SETTLE
    while True:
        if settled() or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.1)


async def settled(healed: Healed, seq: int) -> None:
    """Wait (bounded) until ``healed`` delivered ``seq`` of the subject."""
    await until(lambda: any(m.seq >= seq for m in healed.delivered))


def at_the_end(healed: Healed) -> bool:
    progress = healed.stream_progress()
    return progress is not None and progress.delivered >= progress.stream_last > 0


async def test_an_old_leaders_none_does_not_skip_what_the_new_leader_holds(
    engines: tuple[JetStreamEngine, Healed],
) -> None:
    writer, healed = engines
    await publish(writer, 1, 5)
    await settled(healed, 5)
    progress = healed.stream_progress()
    assert progress is not None
    assert len(healed.delivered) == 5
    # The partition: nothing reaches the member; its replica and the old leader stop here.
    healed.stale_end, healed.cut = progress.delivered, True
    await publish(writer, 6, 30)  # stored by the majority meanwhile
    # The heal: the feed comes back; the old leader answers two more reads before it steps down.
    healed.stale_reads, healed.cut = 2, False
    await publish(writer, 31, 31)
    await settled(healed, 31)
    assert healed.stale_answers >= 1, "the old leader never answered: the fault did not happen"
    got = [(m.seq, m.content) for m in healed.delivered]
    assert got == [(n, f"m{n}") for n in range(1, 32)], f"delivered {got}"


async def test_records_purged_from_the_stream_are_passed_over(
    engines: tuple[JetStreamEngine, Healed],
) -> None:
    """The other side of the same decision: records the stream really no longer holds (an
    operator purged it) do not hold the member up; it reaches the stream's end."""
    writer, healed = engines
    await publish(writer, 1, 3)
    await settled(healed, 3)
    healed.cut = True
    await publish(writer, 4, 10)
    await writer.link.nc.jsm().purge_stream(STREAM)
    healed.cut = False
    await until(lambda: at_the_end(healed))
    progress = healed.stream_progress()
    assert progress is not None
    assert progress.delivered == progress.stream_last > 3, progress
    assert [m.seq for m in healed.delivered] == [1, 2, 3]  # nothing the stream held is invented


async def test_a_member_starting_beside_an_old_leader_learns_every_recent_msg_id(
    nats_url: str,
) -> None:
    """The same "none" ended the reading of the recent msg_ids a member does when it starts
    (guarantee 7): the ids stored after the old leader's end stayed unknown, and a client's
    retry through that member stored its message a second time."""
    await delete_streams(nats_url)
    writer = member(nats_url, "a", JetStreamEngine)
    await writer.start(lambda message: None)
    healed = member(nats_url, "b", Healed)
    assert isinstance(healed, Healed)
    try:
        first = await writer.publish(PublishRequest(SUBJECT, "a", {}, msg_id="a"))
        # b and c wait behind a's record and are stored together, under the writer's own
        # Nats-Msg-Id: only the members' msg_id tables can answer their retries.
        b, c = await asyncio.gather(
            *(writer.publish(PublishRequest(SUBJECT, x, {}, msg_id=x)) for x in "bc")
        )
        info = await writer.link.nc.jsm().stream_info(STREAM)
        assert (first.seq, b.seq, c.seq) == (1, 2, 3)
        assert info.state.last_seq == 2, "b and c were not stored in one record"
        healed.stale_end, healed.stale_reads = 1, 2  # the old leader holds only a's record
        await healed.start(healed.delivered.append)
        retry = await healed.publish(PublishRequest(SUBJECT, "c", {}, msg_id="c"))
        assert healed.stale_answers >= 1, "the old leader never answered: the fault did not happen"
        assert (retry.seq, retry.content) == (3, "c")
        history = [(m.seq, m.content) for m in await healed.history(SUBJECT, 100)]
        assert history == [(1, "a"), (2, "b"), (3, "c")]
    finally:
        await writer.close()
        await healed.close()


async def test_a_jump_in_a_subjects_numbers_is_logged(
    nats_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Numbers a member does not deliver are named in its log, so a skip like the partition's
    is visible where it happens. Here they are legitimately gone: the member was cut off while
    more than ``MaxCachedMessagesPerSubject`` (3) newer messages replaced them in the stream."""
    await delete_streams(nats_url)
    limits = dataclasses.replace(DEFAULT_LIMITS, max_cached=3)
    link = ClusterLink("a", "guaranteed", None, None, [nats_url], BusCredentials.derive("stale"))
    writer = JetStreamEngine(link, limits, stream=STREAM, replicas=1, publish_timeout=10)
    healed = member(nats_url, "b", Healed, limits)
    assert isinstance(healed, Healed)
    await writer.start(lambda message: None)
    await healed.start(healed.delivered.append)
    try:
        await publish(writer, 1, 1)
        await settled(healed, 1)
        healed.cut = True
        await publish(writer, 2, 10)
        healed.cut = False
        with caplog.at_level(logging.WARNING, logger="pushgrid.server.engine.jetstream"):
            await publish(writer, 11, 11)
            await settled(healed, 11)
        seqs = [m.seq for m in healed.delivered]
        first = seqs[1]
        assert seqs == [1, *range(first, 12)], seqs
        assert first > 2  # the per-subject limit removed 2.. before the member read them
        said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        expected = f"{SUBJECT}: delivering seq {first} after 1: numbers 2..{first - 1}"
        assert any(expected in line for line in said), f"no warning {expected!r} in {said}"
    finally:
        await writer.close()
        await healed.close()
