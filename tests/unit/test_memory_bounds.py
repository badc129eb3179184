"""The memory engine's own side of guarantees 8-9 (ADR 022), beyond the shared contract: idle
subjects with a snapshot stay *dormant* (snapshot, epoch and seq, no cache), count in the
bounds, and the least recently published unsubscribed ones give up their room when needed."""

from __future__ import annotations

from pushgrid.server.engine.base import Published, PublishRequest
from pushgrid.server.engine.limits import EngineLimits
from pushgrid.server.engine.memory import MemoryEngine

EXPIRE = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _engine(clock: Clock, *, max_subjects: int = 0, max_retained_bytes: int = 0) -> MemoryEngine:
    limits = EngineLimits(
        max_cached=5,
        expire_seconds=EXPIRE,
        max_subjects=max_subjects,
        max_retained_bytes=max_retained_bytes,
    )
    return MemoryEngine(limits, clock=clock)


def _publish(
    engine: MemoryEngine, subject: str, content: str = "x", retained: bool = True
) -> Published:
    return engine.publish_now(PublishRequest(subject, content, {}, retained))


async def test_the_oldest_unsubscribed_dormant_snapshot_makes_room() -> None:
    clock = Clock()
    engine = _engine(clock, max_subjects=3)
    first = {name: _publish(engine, f"/{name}") for name in ("a", "b", "c")}
    clock.now += EXPIRE + 1
    engine.sweep()
    assert engine.stats().subjects == 3  # dormant: snapshots kept
    assert engine.stats().cached_messages == 0
    engine.use_interest(lambda subject: subject == "/a")
    _publish(engine, "/new")
    assert await engine.snapshot("/a") is not None  # subscribed: kept
    assert await engine.snapshot("/b") is None  # least recently published: gave up its room
    assert await engine.snapshot("/c") is not None
    assert engine.dropped_snapshots == 1
    # a dropped subject comes back in a new epoch: its old position never names a new message
    epoch, seq = await engine.position("/b")
    assert (seq, epoch != first["b"].epoch) == (0, True)


async def test_a_dormant_subject_published_again_continues_its_numbering() -> None:
    clock = Clock()
    engine = _engine(clock, max_subjects=10)
    first = _publish(engine, "/a")
    clock.now += EXPIRE + 1
    engine.sweep()
    again = _publish(engine, "/a")
    assert (again.epoch, again.seq) == (first.epoch, 2)
    assert engine.stats().subjects == 1
    assert len(await engine.history("/a", 10)) == 1


async def test_a_publish_whose_own_subject_is_evicted_for_room_goes_on() -> None:
    """Making room may evict the publishing subject itself (idle, nothing retained)."""
    clock = Clock()
    engine = _engine(clock, max_retained_bytes=100)
    first = _publish(engine, "/a", "y" * 60, retained=False)
    clock.now += EXPIRE + 1
    again = _publish(engine, "/a", "z" * 60, retained=False)
    assert again.epoch == first.epoch
    assert again.seq == 2
    assert engine.stats().subjects == 1
    assert engine.stats().cached_bytes == 60


def test_the_engine_gets_the_settings_limits_whole() -> None:
    """The registry hands the engine its EngineLimits whole (ADR 036): every engine key of the
    file reaches the engine, none is re-spelled on the way."""
    from pushgrid.config import Settings
    from pushgrid.server.engine.base import SnapshotBounds
    from pushgrid.server.engine.registry import build_engine

    settings = Settings(
        MaxCachedMessagesPerSubject=7,
        CacheExpireTime=9,
        PublishDedupWindow=11,
        PublishDedupMaxKeys=13,
        MaxFieldsPerSubject=17,
        MaxSnapshotSize=19_000,
        MaxSubjects=23,
        MaxRetainedBytes=29_000,
    )
    engine = build_engine(settings.engine_limits, settings.cluster, settings.server_name)
    assert isinstance(engine, MemoryEngine)
    assert engine.limits == EngineLimits.from_settings(settings.engine_limits)
    assert engine.limits == EngineLimits(
        max_cached=7,
        expire_seconds=9,
        dedup_window=11,
        dedup_max_keys=13,
        bounds=SnapshotBounds(max_fields=17, max_bytes=19_000),
        max_subjects=23,
        max_retained_bytes=29_000,
    )


async def test_a_swept_flood_leaves_tables_sized_for_what_is_left() -> None:
    """A dict keeps its largest table after deletions: once a flood's one-shot subjects are
    evicted the engine copies its tables (docs/security.md, "Subject memory")."""
    import sys

    from pushgrid.server.engine.memory import TRIM_AFTER

    clock = Clock()
    engine = _engine(clock)
    for i in range(TRIM_AFTER + 10):
        _publish(engine, f"/flood/{i}", retained=False)
    _publish(engine, "/kept")
    flooded = sys.getsizeof(engine._subjects)
    clock.now += EXPIRE + 1
    _publish(engine, "/kept")  # published again: not idle
    while engine.stats().subjects > 1:
        engine.sweep()
    engine.sweep()  # the sweep that finds nothing more to evict gives the memory back
    assert sys.getsizeof(engine._subjects) < flooded / 50
    assert await engine.snapshot("/kept") is not None
