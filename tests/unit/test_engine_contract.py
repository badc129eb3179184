"""The Engine contract (server/engine/base.py, guarantees 1-11), run against every implementation.

Every test here is written against the ``engine`` fixture only (plus ``clock`` and ``delivered``),
never against one implementation's internals. To run the suite against another engine, add one
async factory to ``ENGINE_FACTORIES``: it gets the fake ``clock`` and must build an engine whose
cache keeps at most ``CACHE_LIMIT`` guaranteed messages per subject, forgets them
``EXPIRE_SECONDS`` after their receive time, and reads the time (for ``ts`` and expiry) from
``clock``; its memory bounds (guarantees 8-10) are ``SUBJECT_LIMIT`` subjects, ``BYTES_LIMIT``
retained bytes and ``SWEEP_BATCH`` subjects of sweep work per call; snapshots are bounded by
``BOUNDS`` (guarantee 11).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import pytest
from natsserver import delete_streams

from pushgrid.metrics.counters import Counters
from pushgrid.protocol.codec import Limits
from pushgrid.protocol.errors import ErrorCode
from pushgrid.protocol.frames import Position
from pushgrid.server.cluster.credentials import BusCredentials
from pushgrid.server.cluster.link import ClusterLink
from pushgrid.server.core.entitlement import ALLOW_ALL
from pushgrid.server.core.hub import Hub
from pushgrid.server.core.outgoing import snapshot_frame
from pushgrid.server.core.session import Session, SessionPolicy
from pushgrid.server.engine.base import (
    ALERTS_SUBJECT,
    Engine,
    EngineFull,
    Published,
    PublishRequest,
    Recovery,
    SnapshotBounds,
    SnapshotLimitExceeded,
    SnapshotRemovalUnsupported,
)
from pushgrid.server.engine.jetstream import JetStreamEngine
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.engine.memory import MemoryEngine
from pushgrid.server.engine.standard import StandardClusterEngine
from pushgrid.server.framing.outframe import OutFrame

CACHE_LIMIT = 5
EXPIRE_SECONDS = 60.0
FIELD_LIMIT = 4
SIZE_LIMIT = 16_000  # above the memory-bound tests' 15,000-byte snapshots (guarantee 8)
BOUNDS = SnapshotBounds(max_fields=FIELD_LIMIT, max_bytes=SIZE_LIMIT)
SUBJECT = "/Stocks/NYSE/IBM"
OTHER = "/Stocks/NYSE/MSFT"
SUBJECT_LIMIT = 40
BYTES_LIMIT = 30_000
SWEEP_BATCH = 10
DEDUP_LIMIT = 30  # PublishDedupMaxKeys
DEDUP_WINDOW = 120.0  # PublishDedupWindow
#: every engine takes its limits whole (EngineLimits)
LIMITS = EngineLimits(
    max_cached=CACHE_LIMIT,
    expire_seconds=EXPIRE_SECONDS,
    bounds=BOUNDS,
    max_subjects=SUBJECT_LIMIT,
    max_retained_bytes=BYTES_LIMIT,
    sweep_batch=SWEEP_BATCH,
    dedup_window=DEDUP_WINDOW,
    dedup_max_keys=DEDUP_LIMIT,
)


class FakeClock:
    """Seconds since the Unix epoch, moved only by the test."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    @property
    def ms(self) -> int:
        return int(self.now * 1000)


class Delivered:
    """The ``deliver`` callback: records every message, lets a test wait for a count."""

    def __init__(self) -> None:
        self.messages: list[Published] = []
        self._changed = asyncio.Event()

    def __call__(self, message: Published) -> None:
        self.messages.append(message)
        self._changed.set()

    async def wait_for(self, count: int) -> list[Published]:
        """Wait until at least ``count`` messages arrived (a hang guard, not a timing check)."""

        async def reached() -> None:
            while len(self.messages) < count:
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(reached(), timeout=10)
        # let any duplicate delivery show up before the caller counts
        for _ in range(10):
            await asyncio.sleep(0)
        return self.messages

    def of(self, subject: str) -> list[Published]:
        return [m for m in self.messages if m.subject == subject]


# --- implementations --------------------------------------------------------------------------


async def _memory_engine(clock: FakeClock) -> Engine:
    return MemoryEngine(LIMITS, clock=clock)


async def _jetstream_engine(clock: FakeClock, request: pytest.FixtureRequest) -> Engine:
    """Guaranteed mode on a real one-node JetStream (``nats_url``), in a fresh stream."""
    url: str = request.getfixturevalue("nats_url")
    await delete_streams(url)
    link = ClusterLink(
        "contract", "guaranteed", None, None, [url], BusCredentials.derive("contract")
    )
    return JetStreamEngine(
        link, LIMITS, stream="CONTRACT", replicas=1, publish_timeout=5, clock=clock
    )


async def _standard_engine(clock: FakeClock, request: pytest.FixtureRequest) -> Engine:
    """Standard mode: core NATS fan-out into a local cache."""
    url: str = request.getfixturevalue("nats_url")
    link = ClusterLink("contract", "standard", None, None, [url], BusCredentials.derive("contract"))
    return StandardClusterEngine(link, LIMITS, clock=clock)


async def _memory(clock: FakeClock, request: pytest.FixtureRequest) -> Engine:
    return await _memory_engine(clock)


# name -> async factory(clock, request) -> unstarted Engine.
ENGINE_FACTORIES: dict[str, Callable[[FakeClock, pytest.FixtureRequest], Awaitable[Engine]]] = {
    "memory": _memory,
    "nats-guaranteed": _jetstream_engine,
    "nats-standard": _standard_engine,
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def delivered() -> Delivered:
    return Delivered()


@pytest.fixture(params=list(ENGINE_FACTORIES))
async def engine(
    request: pytest.FixtureRequest,
    clock: FakeClock,
    delivered: Delivered,
) -> AsyncIterator[Engine]:
    instance = await ENGINE_FACTORIES[request.param](clock, request)
    await instance.start(delivered)
    try:
        yield instance
    finally:
        await instance.close()


# --- helpers ----------------------------------------------------------------------------------


async def publish(
    engine: Engine,
    content: str,
    fields: dict[str, str] | None = None,
    *,
    subject: str = SUBJECT,
    retained: bool = True,
    qos: str = "guaranteed",
    msg_id: str | None = None,
) -> Published:
    request = PublishRequest(subject, content, dict(fields or {}), retained, qos, msg_id)  # type: ignore[arg-type]
    return await engine.publish(request)


async def publish_many(engine: Engine, count: int, subject: str = SUBJECT) -> list[Published]:
    return [
        await publish(engine, f"m{i}", {"i": str(i)}, subject=subject) for i in range(1, count + 1)
    ]


def key(message: Published) -> tuple[object, ...]:
    """What identifies a message for clients (ts and frame caches aside)."""
    return (
        message.subject,
        message.content,
        dict(message.fields),
        message.epoch,
        message.seq,
        message.qos,
        message.retained,
    )


def assert_refused(recovery: Recovery, outcome: str, epoch: str, seq: int) -> None:
    assert recovery.outcome == outcome
    assert recovery.messages == ()  # never a partial list
    assert recovery.epoch == epoch
    assert recovery.seq == seq


# --- 1. per-subject order and numbering -------------------------------------------------------


async def test_guaranteed_messages_are_numbered_from_one(engine: Engine) -> None:
    epoch, seq = await engine.position(SUBJECT)
    assert isinstance(epoch, str)
    assert epoch
    assert seq == 0
    published = await publish_many(engine, 4)
    assert [m.seq for m in published] == [1, 2, 3, 4]
    assert {m.epoch for m in published} == {epoch}
    assert await engine.position(SUBJECT) == (epoch, 4)


async def test_numbering_is_per_subject(engine: Engine) -> None:
    a1 = await publish(engine, "a1")
    b1 = await publish(engine, "b1", subject=OTHER)
    a2 = await publish(engine, "a2")
    b2 = await publish(engine, "b2", subject=OTHER)
    b3 = await publish(engine, "b3", subject=OTHER)
    assert (a1.seq, a2.seq) == (1, 2)
    assert (b1.seq, b2.seq, b3.seq) == (1, 2, 3)
    assert (await engine.position(SUBJECT))[1] == 2
    assert (await engine.position(OTHER))[1] == 3
    assert (await engine.position("/never/published"))[1] == 0


async def test_published_carries_the_request(engine: Engine, clock: FakeClock) -> None:
    message = await publish(engine, "193", {"volume": "6.62M"}, retained=False, qos="guaranteed")
    assert message.subject == SUBJECT
    assert message.content == "193"
    assert message.fields == {"volume": "6.62M"}
    assert message.retained is False
    assert message.qos == "guaranteed"
    assert message.ts == clock.ms


async def test_standard_qos_takes_no_seq(engine: Engine) -> None:
    s0 = await publish(engine, "s0", qos="standard")
    assert s0.seq == 0  # nothing guaranteed yet
    g1 = await publish(engine, "g1")
    g2 = await publish(engine, "g2")
    s1 = await publish(engine, "s1", qos="standard")
    s2 = await publish(engine, "s2", qos="standard")
    g3 = await publish(engine, "g3")
    assert (g1.seq, g2.seq, g3.seq) == (1, 2, 3)
    assert (s1.seq, s2.seq) == (2, 2)  # the seq of the last guaranteed message
    assert s1.qos == "standard"
    assert s1.epoch == g1.epoch
    assert (await engine.position(SUBJECT))[1] == 3


async def test_concurrent_publishes_get_distinct_consecutive_seqs(
    engine: Engine, delivered: Delivered
) -> None:
    count = 25
    results = await asyncio.gather(
        *(publish(engine, f"m{i}") for i in range(count)),
        *(publish(engine, f"o{i}", subject=OTHER) for i in range(count)),
    )
    mine = [m for m in results if m.subject == SUBJECT]
    assert sorted(m.seq for m in mine) == list(range(1, count + 1))
    await delivered.wait_for(2 * count)
    assert [m.seq for m in delivered.of(SUBJECT)] == list(range(1, count + 1))
    assert [m.seq for m in delivered.of(OTHER)] == list(range(1, count + 1))
    # numbered in the order accepted: seq n carries the content the engine stored as seq n
    by_seq = {m.seq: m.content for m in mine}
    assert [by_seq[m.seq] for m in delivered.of(SUBJECT)] == [
        m.content for m in delivered.of(SUBJECT)
    ]


async def test_publishes_started_in_order_are_numbered_in_that_order(engine: Engine) -> None:
    """A session starts each publish as a task without waiting for the one before
    (server/core/answers.py): the engine takes a message's place in its subject's order before
    its first suspension, so tasks started in order are numbered in that order."""
    count = 40
    tasks = [asyncio.create_task(publish(engine, f"m{i}")) for i in range(count)]
    results = await asyncio.gather(*tasks)
    assert [m.seq for m in results] == list(range(1, count + 1))
    assert [m.content for m in results] == [f"m{i}" for i in range(count)]


# --- 2. delivery ------------------------------------------------------------------------------


async def test_delivery_once_per_message_in_order(engine: Engine, delivered: Delivered) -> None:
    published = [
        await publish(engine, "g1"),
        await publish(engine, "o1", subject=OTHER),
        await publish(engine, "s", qos="standard"),
        await publish(engine, "g2", retained=False),
        await publish(engine, "o2", subject=OTHER, qos="standard"),
        await publish(engine, "g3"),
    ]
    messages = await delivered.wait_for(len(published))
    assert len(messages) == len(published)  # exactly once each, including standard ones
    assert sorted(map(key, messages), key=repr) == sorted(map(key, published), key=repr)
    assert [m.content for m in delivered.of(SUBJECT)] == ["g1", "s", "g2", "g3"]
    assert [m.seq for m in delivered.of(SUBJECT)] == [1, 1, 2, 3]
    assert [m.content for m in delivered.of(OTHER)] == ["o1", "o2"]


async def test_delivery_carries_the_ingress_time(engine: Engine, delivered: Delivered) -> None:
    """The ingress member's arrival time reaches every member's delivery (ADR 048): the
    end-to-end latency clients measure starts there."""
    for qos, ingress in (
        ("guaranteed", 1_795_359_512_393_104),
        ("standard", 1_795_359_512_400_000),
    ):
        request = PublishRequest(SUBJECT, qos, {}, True, qos, ingress=ingress)  # type: ignore[arg-type]
        published = await engine.publish(request)
        assert published.ingress == ingress
    messages = await delivered.wait_for(2)
    assert [(m.content, m.ingress) for m in messages] == [
        ("guaranteed", 1_795_359_512_393_104),
        ("standard", 1_795_359_512_400_000),
    ]


async def test_delivery_of_many_messages_stays_in_seq_order(
    engine: Engine, delivered: Delivered
) -> None:
    await publish_many(engine, 40)
    messages = await delivered.wait_for(40)
    assert len(messages) == 40
    assert [m.seq for m in messages] == list(range(1, 41))
    assert [m.content for m in messages] == [f"m{i}" for i in range(1, 41)]


async def test_close_is_idempotent(engine: Engine) -> None:
    await engine.close()
    await engine.close()


# --- 3. publish returns after acceptance ------------------------------------------------------


async def test_state_is_visible_as_soon_as_publish_returns(engine: Engine) -> None:
    message = await publish(engine, "v1", {"f": "1"})
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.fields, snapshot.seq) == ("v1", {"f": "1"}, message.seq)
    recovery = await engine.recover(SUBJECT, Position(message.epoch, 0))
    assert recovery.outcome == "recovered"
    assert [key(m) for m in recovery.messages] == [key(message)]
    assert [key(m) for m in await engine.history(SUBJECT, 10)] == [key(message)]


# --- 5. snapshot (spec 4.1.2, Table 4.3) ------------------------------------------------------

TABLE_4_3 = [
    # (content, fields of the message) -> (content, fields of the snapshot)
    (("193", {"volume": "6.62M"}), ("193", {"volume": "6.62M"})),
    (("192", {}), ("192", {"volume": "6.62M"})),
    (("195", {"ask": "190"}), ("195", {"ask": "190", "volume": "6.62M"})),
    (
        ("193", {"bid": "194", "ask": "191"}),
        ("193", {"bid": "194", "ask": "191", "volume": "6.62M"}),
    ),
]


async def test_snapshot_merge_table_4_3(engine: Engine, clock: FakeClock) -> None:
    assert await engine.snapshot(SUBJECT) is None
    for step, ((content, fields), (snap_content, snap_fields)) in enumerate(TABLE_4_3, start=1):
        clock.advance(60 * step)  # 10:12, 10:13, 10:15, 10:20 -- any increasing times
        message = await publish(engine, content, fields)
        snapshot = await engine.snapshot(SUBJECT)
        assert snapshot is not None, f"step {step}"
        assert snapshot.subject == SUBJECT
        assert snapshot.content == snap_content, f"step {step}"
        assert snapshot.fields == snap_fields, f"step {step}"
        assert snapshot.epoch == message.epoch
        assert snapshot.seq == step
        assert snapshot.ts == message.ts == clock.ms


async def test_snapshot_qos_is_that_of_the_last_retained_message(engine: Engine) -> None:
    """A snapshot frame says what the subject's messages are: a subject published with qos
    standard (the meta-subjects) has a standard snapshot, never a guaranteed one."""
    await publish(engine, "s1", qos="standard", subject=OTHER)
    snapshot = await engine.snapshot(OTHER)
    assert snapshot is not None
    assert snapshot.qos == "standard"
    assert b'"qos":"standard"' in snapshot_frame(snapshot).payload
    await publish(engine, "g1")
    await publish(engine, "not retained", qos="standard", retained=False)
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.qos) == ("g1", "guaranteed")
    await publish(engine, "s2", qos="standard")
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.qos) == ("s2", "standard")


async def test_snapshot_of_unknown_subject_is_none(engine: Engine) -> None:
    await publish(engine, "x", subject=OTHER)
    assert await engine.snapshot(SUBJECT) is None


async def test_non_retained_messages_are_not_in_the_snapshot(engine: Engine) -> None:
    await publish(engine, "volatile", {"x": "1"}, retained=False)
    await publish(engine, "volatile-std", {"y": "1"}, retained=False, qos="standard")
    assert await engine.snapshot(SUBJECT) is None

    kept = await publish(engine, "kept", {"a": "1"})
    await publish(engine, "not kept", {"a": "2", "b": "3"}, retained=False)
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert snapshot.content == "kept"
    assert snapshot.fields == {"a": "1"}
    assert snapshot.ts == kept.ts
    # the position is the last guaranteed message's, retained or not
    assert snapshot.seq == 3  # x(1), kept(2), not kept(3); the standard one takes none


async def test_standard_retained_message_updates_snapshot_but_not_its_seq(
    engine: Engine,
) -> None:
    await publish(engine, "g1", {"a": "1"})
    await publish(engine, "g2", {"a": "2"})
    await publish(engine, "s", {"b": "x"}, qos="standard")
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert snapshot.content == "s"
    assert snapshot.fields == {"a": "2", "b": "x"}
    assert snapshot.seq == 2


async def test_snapshots_are_per_subject(engine: Engine) -> None:
    await publish(engine, "a", {"f": "1"})
    await publish(engine, "b", {"g": "2"}, subject=OTHER)
    a = await engine.snapshot(SUBJECT)
    b = await engine.snapshot(OTHER)
    assert a is not None
    assert b is not None
    assert (a.content, a.fields) == ("a", {"f": "1"})
    assert (b.content, b.fields) == ("b", {"g": "2"})


async def test_snapshot_survives_cache_overflow_and_expiry(
    engine: Engine, clock: FakeClock
) -> None:
    await publish(engine, "first", {"only-in-first": "1"})
    await publish_many(engine, CACHE_LIMIT + 1)
    clock.advance(EXPIRE_SECONDS * 10)
    assert await engine.history(SUBJECT, 100) == []
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert snapshot.content == f"m{CACHE_LIMIT + 1}"
    assert snapshot.fields == {"only-in-first": "1", "i": str(CACHE_LIMIT + 1)}
    assert snapshot.seq == CACHE_LIMIT + 2


# --- 4. recovery ------------------------------------------------------------------------------


async def test_recover_exact(engine: Engine) -> None:
    published = await publish_many(engine, 4)
    epoch = published[0].epoch
    recovery = await engine.recover(SUBJECT, Position(epoch, 1))
    assert recovery.outcome == "recovered"
    assert (recovery.epoch, recovery.seq) == (epoch, 4)
    assert [key(m) for m in recovery.messages] == [key(m) for m in published[1:]]
    assert isinstance(recovery.messages, tuple)


async def test_recover_everything_from_zero(engine: Engine) -> None:
    published = await publish_many(engine, CACHE_LIMIT)
    recovery = await engine.recover(SUBJECT, Position(published[0].epoch, 0))
    assert recovery.outcome == "recovered"
    assert [m.seq for m in recovery.messages] == list(range(1, CACHE_LIMIT + 1))
    assert [key(m) for m in recovery.messages] == [key(m) for m in published]


async def test_recover_the_last_message_only(engine: Engine) -> None:
    published = await publish_many(engine, 3)
    recovery = await engine.recover(SUBJECT, Position(published[0].epoch, 2))
    assert recovery.outcome == "recovered"
    assert [key(m) for m in recovery.messages] == [key(published[2])]


async def test_recover_up_to_date(engine: Engine) -> None:
    published = await publish_many(engine, 3)
    epoch = published[0].epoch
    assert_refused(await engine.recover(SUBJECT, Position(epoch, 3)), "up_to_date", epoch, 3)


async def test_recover_up_to_date_after_only_standard_messages(engine: Engine) -> None:
    g = await publish(engine, "g")
    await publish(engine, "s1", qos="standard")
    await publish(engine, "s2", qos="standard")
    assert_refused(await engine.recover(SUBJECT, Position(g.epoch, 1)), "up_to_date", g.epoch, 1)


async def test_recover_unknown_subject_from_zero_is_up_to_date(engine: Engine) -> None:
    epoch, _ = await engine.position(SUBJECT)
    assert_refused(await engine.recover(SUBJECT, Position(epoch, 0)), "up_to_date", epoch, 0)


async def test_recover_skips_standard_messages(engine: Engine) -> None:
    g1 = await publish(engine, "g1")
    await publish(engine, "s1", qos="standard")
    g2 = await publish(engine, "g2", retained=False)
    await publish(engine, "s2", qos="standard")
    g3 = await publish(engine, "g3")
    recovery = await engine.recover(SUBJECT, Position(g1.epoch, 0))
    assert recovery.outcome == "recovered"
    assert [key(m) for m in recovery.messages] == [key(g1), key(g2), key(g3)]
    assert {m.qos for m in recovery.messages} == {"guaranteed"}


async def test_recover_other_epoch(engine: Engine) -> None:
    published = await publish_many(engine, 2)
    epoch = published[0].epoch
    stale = "x" + epoch
    assert_refused(await engine.recover(SUBJECT, Position(stale, 1)), "new_epoch", epoch, 2)
    assert_refused(await engine.recover(SUBJECT, Position(stale, 0)), "new_epoch", epoch, 2)
    assert_refused(await engine.recover(SUBJECT, Position(stale, 2)), "new_epoch", epoch, 2)
    current, _ = await engine.position(OTHER)
    assert_refused(await engine.recover(OTHER, Position(stale, 5)), "new_epoch", current, 0)


async def test_recover_fails_after_cache_overflow(engine: Engine) -> None:
    total = CACHE_LIMIT + 2
    published = await publish_many(engine, total)
    epoch = published[0].epoch
    # seq 1 and 2 were dropped: from 0 or 1 some missed message is gone -> refused, not partial
    assert_refused(await engine.recover(SUBJECT, Position(epoch, 0)), "failed", epoch, total)
    assert_refused(await engine.recover(SUBJECT, Position(epoch, 1)), "failed", epoch, total)
    # from 2 every missed message (3..7) is still cached
    recovery = await engine.recover(SUBJECT, Position(epoch, 2))
    assert recovery.outcome == "recovered"
    assert [key(m) for m in recovery.messages] == [key(m) for m in published[2:]]
    assert len(recovery.messages) == CACHE_LIMIT


async def test_cache_overflow_is_per_subject(engine: Engine) -> None:
    await publish_many(engine, CACHE_LIMIT * 2)
    other = await publish_many(engine, 2, subject=OTHER)
    recovery = await engine.recover(OTHER, Position(other[0].epoch, 0))
    assert recovery.outcome == "recovered"
    assert [key(m) for m in recovery.messages] == [key(m) for m in other]


async def test_recover_fails_after_expiry(engine: Engine, clock: FakeClock) -> None:
    m1 = await publish(engine, "m1")
    epoch = m1.epoch
    clock.advance(EXPIRE_SECONDS / 2)
    m2 = await publish(engine, "m2")
    clock.advance(EXPIRE_SECONDS / 2 + 1)  # m1 is older than EXPIRE_SECONDS, m2 is not
    assert_refused(await engine.recover(SUBJECT, Position(epoch, 0)), "failed", epoch, 2)
    recovery = await engine.recover(SUBJECT, Position(epoch, 1))
    assert recovery.outcome == "recovered"
    assert [key(m) for m in recovery.messages] == [key(m2)]

    clock.advance(EXPIRE_SECONDS)  # now m2 has expired too
    assert_refused(await engine.recover(SUBJECT, Position(epoch, 1)), "failed", epoch, 2)
    # nothing missed: still up to date although the cache is empty
    assert_refused(await engine.recover(SUBJECT, Position(epoch, 2)), "up_to_date", epoch, 2)


async def test_recover_before_expiry_keeps_everything(engine: Engine, clock: FakeClock) -> None:
    published = await publish_many(engine, 3)
    clock.advance(EXPIRE_SECONDS / 2)
    recovery = await engine.recover(SUBJECT, Position(published[0].epoch, 0))
    assert recovery.outcome == "recovered"
    assert [key(m) for m in recovery.messages] == [key(m) for m in published]


async def test_recover_position_ahead_of_the_subject_is_refused(engine: Engine) -> None:
    published = await publish_many(engine, 2)
    epoch = published[0].epoch
    assert_refused(await engine.recover(SUBJECT, Position(epoch, 99)), "failed", epoch, 2)
    assert_refused(await engine.recover(OTHER, Position(epoch, 3)), "failed", epoch, 0)


async def test_recover_does_not_consume_the_cache(engine: Engine) -> None:
    published = await publish_many(engine, 3)
    first = await engine.recover(SUBJECT, Position(published[0].epoch, 0))
    second = await engine.recover(SUBJECT, Position(published[0].epoch, 0))
    assert [key(m) for m in first.messages] == [key(m) for m in second.messages]
    assert len(second.messages) == 3


# --- 6. history -------------------------------------------------------------------------------


async def test_history_most_recent_oldest_first(engine: Engine) -> None:
    published = await publish_many(engine, 4)
    assert [key(m) for m in await engine.history(SUBJECT, 2)] == [key(m) for m in published[2:]]
    assert [key(m) for m in await engine.history(SUBJECT, 1)] == [key(published[3])]
    assert [key(m) for m in await engine.history(SUBJECT, 4)] == [key(m) for m in published]
    assert [key(m) for m in await engine.history(SUBJECT, 100)] == [key(m) for m in published]


async def test_history_limited_by_the_cache(engine: Engine) -> None:
    published = await publish_many(engine, CACHE_LIMIT + 3)
    history = await engine.history(SUBJECT, 100)
    assert [key(m) for m in history] == [key(m) for m in published[-CACHE_LIMIT:]]


async def test_history_holds_only_guaranteed_messages(engine: Engine) -> None:
    g1 = await publish(engine, "g1")
    await publish(engine, "s", qos="standard")
    g2 = await publish(engine, "g2", retained=False)
    assert [key(m) for m in await engine.history(SUBJECT, 10)] == [key(g1), key(g2)]


async def test_history_empty_cases(engine: Engine) -> None:
    assert await engine.history(SUBJECT, 10) == []
    await publish_many(engine, 2)
    assert await engine.history(SUBJECT, 0) == []
    assert await engine.history(SUBJECT, -1) == []
    assert await engine.history(OTHER, 10) == []


async def test_history_forgets_expired_messages(engine: Engine, clock: FakeClock) -> None:
    await publish(engine, "old")
    clock.advance(EXPIRE_SECONDS / 2)
    new = await publish(engine, "new")
    clock.advance(EXPIRE_SECONDS / 2 + 1)
    assert [key(m) for m in await engine.history(SUBJECT, 10)] == [key(new)]


# --- stats ------------------------------------------------------------------------------------


async def test_stats_count_cached_messages(engine: Engine) -> None:
    await publish_many(engine, CACHE_LIMIT + 2)
    await publish(engine, "g", subject=OTHER)
    await publish(engine, "s", subject=OTHER, qos="standard")
    stats = engine.stats()
    assert stats.subjects == 2
    assert stats.cached_messages == CACHE_LIMIT + 1


async def test_stats_cached_bytes_are_utf8_bytes(engine: Engine) -> None:
    # the same measure as MaxMessageSize: UTF-8 bytes of content, field names and values
    await publish(engine, "日本", {"é": "😀"})  # 6 + 2 + 4
    await publish(engine, "abc", {"k": "v"}, subject=OTHER)  # 3 + 1 + 1
    assert engine.stats().cached_bytes == 12 + 5


# --- 7. a message id is stored once -----------------------------------------------------------


async def test_repeated_msg_id_is_stored_once_and_answered_with_the_original(
    engine: Engine, delivered: Delivered
) -> None:
    first = await publish(engine, "193", {"bid": "1"}, msg_id="order-17")
    await publish(engine, "194")
    again = await publish(engine, "193", {"bid": "1"}, msg_id="order-17")
    assert not first.duplicate
    assert again.duplicate
    assert (again.epoch, again.seq, again.ts) == (first.epoch, first.seq, first.ts)
    assert await engine.position(SUBJECT) == (first.epoch, 2)
    await delivered.wait_for(2)
    assert [m.content for m in delivered.of(SUBJECT)] == ["193", "194"]
    assert [m.content for m in await engine.history(SUBJECT, 10)] == ["193", "194"]
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.seq) == ("194", 2)


async def test_a_repeat_never_changes_the_snapshot(engine: Engine) -> None:
    await publish(engine, "a", {"f": "1"}, msg_id="k")
    await publish(engine, "b", {"g": "2"})
    await publish(engine, "a", {"f": "1"}, msg_id="k")
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.fields, snapshot.seq) == ("b", {"f": "1", "g": "2"}, 2)


async def test_msg_ids_are_per_subject_and_distinct_ids_are_distinct_messages(
    engine: Engine,
) -> None:
    a = await publish(engine, "a", msg_id="k1")
    b = await publish(engine, "b", msg_id="k1", subject=OTHER)
    c = await publish(engine, "c", msg_id="k2")
    assert [(m.seq, m.duplicate) for m in (a, b, c)] == [(1, False), (1, False), (2, False)]
    assert (await engine.position(OTHER))[1] == 1


async def test_a_full_dedup_table_refuses_new_ids_and_keeps_every_live_one(
    engine: Engine, clock: FakeClock
) -> None:
    """Issue 34 (2.7): throw-away ids beyond PublishDedupMaxKeys evicted another client's live
    id, whose retry was then stored again. Now a new id is refused while the table is full."""
    first = await publish(engine, "alice", msg_id="alice-1")
    for n in range(DEDUP_LIMIT - 1):
        await publish(engine, "junk", subject=OTHER, retained=False, msg_id=f"junk-{n}")
    with pytest.raises(EngineFull) as refused:
        await publish(engine, "junk", subject=OTHER, retained=False, msg_id="junk-last")
    assert refused.value.code is ErrorCode.DEDUP_TABLE_FULL
    retry = await publish(engine, "alice", msg_id="alice-1")
    assert (retry.duplicate, retry.epoch, retry.seq) == (True, first.epoch, first.seq)
    assert not (await publish(engine, "plain", subject=OTHER, retained=False)).duplicate
    clock.advance(DEDUP_WINDOW + 1)
    assert not (await publish(engine, "later", msg_id="alice-2")).duplicate


async def test_concurrent_repeats_are_stored_once(engine: Engine, delivered: Delivered) -> None:
    answers = await asyncio.gather(
        *(publish(engine, f"m{i % 3}", msg_id=f"k{i % 3}") for i in range(9))
    )
    originals = [m for m in answers if not m.duplicate]
    assert sorted(m.seq for m in originals) == [1, 2, 3]
    by_id = {m.content: (m.epoch, m.seq) for m in originals}
    assert all((m.epoch, m.seq) == by_id[m.content] for m in answers)
    await delivered.wait_for(3)
    assert sorted(m.content for m in delivered.of(SUBJECT)) == ["m0", "m1", "m2"]
    recovery = await engine.recover(SUBJECT, Position(originals[0].epoch, 0))
    assert [m.seq for m in recovery.messages] == [1, 2, 3]


async def test_a_standard_message_with_a_msg_id_is_delivered_once(
    engine: Engine, delivered: Delivered
) -> None:
    await publish(engine, "g")
    first = await publish(engine, "s", qos="standard", msg_id="k")
    again = await publish(engine, "s", qos="standard", msg_id="k")
    assert again.duplicate
    assert (again.epoch, again.seq) == (first.epoch, first.seq) == (first.epoch, 1)
    await publish(engine, "g2")
    await delivered.wait_for(3)
    assert [m.content for m in delivered.of(SUBJECT)] == ["g", "s", "g2"]


# --- 8-10. memory is bounded ------------------------------------------------------------------


def subject_of(i: int) -> str:
    return f"/flood/s{i}"


async def fill_subjects(engine: Engine, count: int, *, retained: bool = True) -> None:
    for i in range(count):
        await publish(engine, "x", subject=subject_of(i), retained=retained)


async def test_a_subject_beyond_max_subjects_is_refused_and_changes_nothing(
    engine: Engine, delivered: Delivered
) -> None:
    await fill_subjects(engine, SUBJECT_LIMIT)
    await delivered.wait_for(SUBJECT_LIMIT)
    with pytest.raises(EngineFull) as refused:
        await publish(engine, "one too many", subject=SUBJECT)
    assert refused.value.code == ErrorCode.TOO_MANY_SUBJECTS
    assert refused.value.retryable
    assert await engine.snapshot(SUBJECT) is None
    assert engine.stats().subjects == SUBJECT_LIMIT
    # a known subject is still served, and the refused message was never delivered
    again = await publish(engine, "y", subject=subject_of(0))
    assert again.seq == 2
    messages = await delivered.wait_for(SUBJECT_LIMIT + 1)
    assert SUBJECT not in {m.subject for m in messages}


async def test_an_idle_subject_makes_room_for_a_new_one(
    engine: Engine, clock: FakeClock, delivered: Delivered
) -> None:
    await fill_subjects(engine, SUBJECT_LIMIT)
    await delivered.wait_for(SUBJECT_LIMIT)
    clock.advance(EXPIRE_SECONDS + 1)
    # no sweep ran: the publish itself evicts an idle subject
    accepted = await publish(engine, "fits", subject=SUBJECT)
    assert accepted.seq == 1
    assert engine.stats().subjects <= SUBJECT_LIMIT


async def test_retained_bytes_beyond_the_bound_are_refused(engine: Engine) -> None:
    half = "x" * (BYTES_LIMIT // 2)
    await publish(engine, half, qos="standard")
    # replacing a snapshot by one of the same size does not grow the node
    await publish(engine, half, qos="standard")
    with pytest.raises(EngineFull) as refused:
        await publish(engine, half + "xx", subject=OTHER, qos="standard")
    assert refused.value.code == ErrorCode.RETAINED_BYTES_EXCEEDED
    assert await engine.snapshot(OTHER) is None
    # cached messages count too: a guaranteed message is held twice (snapshot and cache)
    with pytest.raises(EngineFull):
        await publish(engine, half + "x", subject=SUBJECT)


async def test_an_idle_subject_keeps_its_snapshot_and_position(
    engine: Engine, clock: FakeClock, delivered: Delivered
) -> None:
    """Eviction frees the cache, never the recovery contract: after CacheExpireTime a client
    still gets ``failed`` and the snapshot, and a new publish continues the numbering."""
    first = await publish(engine, "a", {"f": "1"})
    last = await publish(engine, "b", {"g": "2"})
    await delivered.wait_for(2)
    clock.advance(EXPIRE_SECONDS + 1)
    engine.sweep()
    assert engine.stats().cached_messages == 0
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.fields) == ("b", {"f": "1", "g": "2"})
    assert (snapshot.epoch, snapshot.seq) == (last.epoch, last.seq)
    assert await engine.position(SUBJECT) == (last.epoch, last.seq)
    assert await engine.history(SUBJECT, 10) == []
    recovery = await engine.recover(SUBJECT, Position(first.epoch, first.seq))
    assert_refused(recovery, "failed", last.epoch, last.seq)
    up_to_date = await engine.recover(SUBJECT, Position(last.epoch, last.seq))
    assert (up_to_date.outcome, up_to_date.seq) == ("up_to_date", last.seq)
    again = await publish(engine, "c")
    assert (again.epoch, again.seq) == (last.epoch, last.seq + 1)
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.fields) == ("c", {"f": "1", "g": "2"})


async def test_an_idle_subject_without_a_snapshot_is_forgotten(
    engine: Engine, clock: FakeClock, delivered: Delivered
) -> None:
    first = await publish(engine, "a", retained=False)
    await delivered.wait_for(1)
    clock.advance(EXPIRE_SECONDS + 1)
    engine.sweep()
    assert engine.stats().subjects == 0
    assert engine.stats().cached_messages == 0
    assert await engine.history(SUBJECT, 10) == []
    # published again: the old position never names another message
    again = await publish(engine, "b", retained=False)
    if again.epoch == first.epoch:  # the engine's store still knew the subject (a stream)
        assert again.seq == first.seq + 1
    else:  # forgotten: a new epoch
        assert again.seq == 1
        recovery = await engine.recover(SUBJECT, Position(first.epoch, first.seq))
        assert_refused(recovery, "new_epoch", again.epoch, 1)


async def test_a_node_full_of_idle_snapshots_still_takes_a_new_subject(
    engine: Engine, clock: FakeClock, delivered: Delivered
) -> None:
    """The memory engine keeps idle snapshots and gives up the oldest unsubscribed one for
    room (tests/unit/test_memory_bounds.py); a stream keeps them all. Either way a subscribed
    subject's snapshot stays, and no snapshot is ever altered."""
    await fill_subjects(engine, SUBJECT_LIMIT)
    await delivered.wait_for(SUBJECT_LIMIT)
    clock.advance(EXPIRE_SECONDS + 1)
    for _ in range(SUBJECT_LIMIT // SWEEP_BATCH + 1):
        engine.sweep()
    engine.use_interest(lambda subject: subject == subject_of(0))
    accepted = await publish(engine, "fits", subject=SUBJECT)
    assert accepted.seq == 1
    assert engine.stats().subjects <= SUBJECT_LIMIT
    subscribed = await engine.snapshot(subject_of(0))
    assert subscribed is not None
    assert (subscribed.content, subscribed.seq) == ("x", 1)
    for i in range(1, SUBJECT_LIMIT):
        snapshot = await engine.snapshot(subject_of(i))
        assert snapshot is None or (snapshot.content, snapshot.seq) == ("x", 1)


async def test_a_subject_is_not_idle_before_its_cache_expires(
    engine: Engine, clock: FakeClock
) -> None:
    await publish(engine, "a")
    clock.advance(EXPIRE_SECONDS - 1)
    engine.sweep()
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert snapshot.content == "a"


async def test_a_subscribed_subject_is_never_evicted(
    engine: Engine, clock: FakeClock, delivered: Delivered
) -> None:
    """Observable on subjects without a snapshot: the subscribed one stays in the node's memory
    with its position, the other goes."""
    await _kept_while_in_use(engine, clock, delivered, lambda subject: subject == SUBJECT)
    assert await engine.history(SUBJECT, 10) == []  # its cache expired all the same


async def _kept_while_in_use(
    engine: Engine, clock: FakeClock, delivered: Delivered, in_use: Callable[[str], bool]
) -> Published:
    """SUBJECT and OTHER published without a snapshot, idle past their expiry: only SUBJECT
    (in use) stays, with its position; its message is returned."""
    engine.use_interest(in_use)
    kept = await publish(engine, "kept", {"f": "1"}, retained=False)
    await publish(engine, "gone", subject=OTHER, retained=False)
    await delivered.wait_for(2)
    for _ in range(3):
        clock.advance(EXPIRE_SECONDS + 1)
        engine.sweep()
    assert engine.stats().subjects == 1
    assert await engine.position(SUBJECT) == (kept.epoch, kept.seq)
    return kept


class _Peer:
    """A connection that takes every frame (the hub's subscriptions need one)."""

    def send(self, frame: OutFrame) -> None:
        pass

    deliver = send

    def send_all(self, frames: Sequence[OutFrame]) -> None:
        pass

    deliver_all = send_all

    def close(self, code: int, reason: str) -> None:
        pass


_POLICY = SessionPolicy(
    server_name="contract",
    version="0",
    keepalive=30.0,
    limits=Limits(),
    max_subscriptions=10,
    publish_snapshot=True,
)


@pytest.mark.parametrize("kind", ["plain", "delta", "conflated", "pending"])
async def test_every_kind_of_hub_subscription_keeps_its_subject(
    engine: Engine, clock: FakeClock, delivered: Delivered, kind: str
) -> None:
    """The server's "in use" predicate is the hub's (server/app.py): a subject followed only by
    field-delta subscribers (issue 34), only conflated ones, or by one still being set up is as
    subscribed as one with a plain subscriber, and keeps its position."""
    hub = Hub(engine, Counters())
    session = Session("s1", hub, _Peer(), _POLICY, ALLOW_ALL, "127.0.0.1:1")
    hub.add_session(session)
    hub.begin_subscribe(session, SUBJECT)
    if kind != "pending":
        conflation_ms = 500 if kind == "conflated" else 0
        hub.finish_subscribe(session, SUBJECT, conflation_ms, delta=kind == "delta")
    kept = await _kept_while_in_use(engine, clock, delivered, hub.has_subscribers)
    again = await publish(engine, "again", {"f": "2"}, retained=False)
    assert (again.epoch, again.seq) == (kept.epoch, kept.seq + 1)
    hub.remove_session(session)
    assert not hub.has_subscribers(SUBJECT)


async def test_sweep_work_per_call_is_bounded(
    engine: Engine, clock: FakeClock, delivered: Delivered
) -> None:
    count = SWEEP_BATCH * 3 + 5
    await fill_subjects(engine, count, retained=False)  # nothing to keep: all are forgotten
    await delivered.wait_for(count)
    looked: list[str] = []

    def in_use(subject: str) -> bool:
        looked.append(subject)
        return subject == subject_of(0)

    engine.use_interest(in_use)
    clock.advance(EXPIRE_SECONDS + 1)
    remaining = [count]
    while engine.stats().subjects > 1:
        looked.clear()
        engine.sweep()
        assert len(looked) <= SWEEP_BATCH
        left = engine.stats().subjects
        assert remaining[-1] - left <= SWEEP_BATCH
        remaining.append(left)
        assert len(remaining) < count  # progress on every call
    assert remaining[1] == count - SWEEP_BATCH + 1  # the subscribed one was kept, not counted


# --- guarantee 11: snapshots stay within their bounds -------------------------------------------


async def _refused(engine: Engine, fields: dict[str, str], content: str = "c") -> ErrorCode:
    with pytest.raises(SnapshotLimitExceeded) as refused:  # standard: not cached (guarantee 8)
        await publish(engine, content, fields, qos="standard")
    return refused.value.code


async def test_a_publish_beyond_a_snapshot_bound_is_refused_and_changes_nothing(
    engine: Engine, delivered: Delivered
) -> None:
    full = {f"f{i}": "v" for i in range(FIELD_LIMIT)}
    first = await publish(engine, "a", full)
    assert await _refused(engine, {"extra": "v"}) is ErrorCode.TOO_MANY_FIELDS
    assert await _refused(engine, {"f0": "x" * SIZE_LIMIT}) is ErrorCode.SNAPSHOT_TOO_LARGE
    assert await _refused(engine, {}, "x" * SIZE_LIMIT) is ErrorCode.SNAPSHOT_TOO_LARGE
    # what the snapshot already holds may change; a message that is not retained has no bound
    second = await publish(engine, "b", {"f0": "w"})
    loose = await publish(engine, "n", {"x": "1", "y": "2", "z": "3"}, retained=False)
    assert (second.seq, loose.seq) == (first.seq + 1, first.seq + 2)
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.fields) == ("b", {**full, "f0": "w"})
    await delivered.wait_for(3)
    assert [m.content for m in delivered.of(SUBJECT)] == ["a", "b", "n"]
    history = await engine.history(SUBJECT, 10)
    assert [m.content for m in history] == ["a", "b", "n"]


async def test_concurrent_publishes_cannot_overshoot_a_snapshot_bound(
    engine: Engine, delivered: Delivered
) -> None:
    """Each adds a field of its own: a read of the snapshot before the write (the old
    admission check) lets all of them through on a cluster; the engine's merge admits
    exactly as many as the bound holds."""
    answers = await asyncio.gather(
        *(publish(engine, f"m{i}", {f"f{i}": "v"}) for i in range(3 * FIELD_LIMIT)),
        return_exceptions=True,
    )
    accepted = [a for a in answers if isinstance(a, Published)]
    refused = [a for a in answers if isinstance(a, SnapshotLimitExceeded)]
    assert (len(accepted), len(refused)) == (FIELD_LIMIT, 2 * FIELD_LIMIT)
    assert all(r.code is ErrorCode.TOO_MANY_FIELDS for r in refused)
    assert sorted(m.seq for m in accepted) == list(range(1, FIELD_LIMIT + 1))
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert len(snapshot.fields) == FIELD_LIMIT
    await delivered.wait_for(FIELD_LIMIT)
    assert len(delivered.of(SUBJECT)) == FIELD_LIMIT


async def test_the_size_bound_counts_the_merged_snapshot_exactly(engine: Engine) -> None:
    """UTF-8 of content, names and values after the merge: a replaced value no longer counts."""
    big = "ü" * ((SIZE_LIMIT - 4) // 2)  # 2 bytes each
    await publish(engine, "c", {"a": "é" * 100}, qos="standard")  # 1 + 1 + 200 bytes
    await publish(engine, "c", {"a": "x"}, qos="standard")  # 1 + 1 + 1
    await publish(engine, "c", {"b": big}, qos="standard")  # + 1 + the rest: exactly SIZE_LIMIT
    assert await _refused(engine, {}, "cc") is ErrorCode.SNAPSHOT_TOO_LARGE  # one byte over
    await publish(engine, "", {}, qos="standard")  # one byte under
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.fields) == ("", {"a": "x", "b": big})


# --- the alert announcements pass the publishers' bounds (guarantees 8 and 11) -----------------


async def test_alert_announcements_are_never_refused_by_a_bound(
    engine: Engine, delivered: Delivered
) -> None:
    """An alert must get out whole even when the node is full or MaxFieldsPerSubject is below
    the announcement's fields (docs/alerts.md): the bounds are the publishers'."""
    await fill_subjects(engine, SUBJECT_LIMIT)
    await delivered.wait_for(SUBJECT_LIMIT)
    fields = {f"f{i}": "v" for i in range(FIELD_LIMIT * 2)}
    alert = await publish(engine, "node full", fields, subject=ALERTS_SUBJECT, qos="standard")
    again = await publish(
        engine, "resolved", {**fields, "f0": "w"}, subject=ALERTS_SUBJECT, qos="standard"
    )
    messages = await delivered.wait_for(SUBJECT_LIMIT + 2)
    assert [m.fields for m in messages[-2:]] == [alert.fields, again.fields]
    snapshot = await engine.snapshot(ALERTS_SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, len(snapshot.fields)) == ("resolved", FIELD_LIMIT * 2)
    # every other subject is still bounded
    with pytest.raises(EngineFull):
        await publish(engine, "one too many", subject=SUBJECT)


# --- the subject browser: catalog and snapshot removal (ADR 051) --------------------------------


async def test_catalog_lists_each_subject_with_its_snapshot_size_and_last_publish(
    engine: Engine, clock: FakeClock, delivered: Delivered
) -> None:
    await publish(engine, "193", {"volume": "6.62M"}, subject=SUBJECT)
    clock.advance(5)
    await publish(engine, "not kept", subject=OTHER, retained=False)
    await delivered.wait_for(2)
    entries = {entry.subject: entry for entry in engine.catalog()}
    assert set(entries) == {SUBJECT, OTHER}
    assert entries[SUBJECT].snapshot_bytes == len("193") + len("volume") + len("6.62M")
    assert entries[SUBJECT].last_publish == int(clock.now * 1000) - 5000
    other = entries[OTHER]
    assert (other.snapshot_bytes, other.last_publish) == (0, int(clock.now * 1000))


async def test_removing_a_snapshot_keeps_epoch_and_seq(
    engine: Engine, delivered: Delivered
) -> None:
    """The snapshot is gone, the numbering goes on (no new epoch), the cache is still there;
    a Guaranteed stream refuses (every record carries its snapshot)."""
    first = await publish(engine, "193", {"volume": "6.62M"})
    second = await publish(engine, "192")
    await delivered.wait_for(2)
    if engine.delivery_mode == "guaranteed":
        with pytest.raises(SnapshotRemovalUnsupported):
            await engine.remove_snapshot(SUBJECT)
        return
    assert await engine.remove_snapshot(SUBJECT) is True
    assert await engine.snapshot(SUBJECT) is None
    assert await engine.position(SUBJECT) == (second.epoch, 2)
    assert [m.seq for m in await engine.history(SUBJECT, 10)] == [1, 2]
    assert await engine.remove_snapshot(SUBJECT) is False  # nothing left to remove
    assert [e.snapshot_bytes for e in engine.catalog() if e.subject == SUBJECT] == [0]
    third = await publish(engine, "191", {"bid": "190"})
    assert (third.epoch, third.seq) == (first.epoch, 3)
    snapshot = await engine.snapshot(SUBJECT)
    assert snapshot is not None
    assert (snapshot.content, snapshot.fields) == ("191", {"bid": "190"})  # the old fields went
