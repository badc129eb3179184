"""The embedded single-node engine: everything in this process's memory.

The epoch is drawn at start, so a restarted server has a new epoch for every subject and clients
resynchronise from the snapshot. The cache keeps at most ``max_cached`` guaranteed messages per
subject and forgets those older than ``expire_seconds``.

Memory is bounded (guarantees 8-10 of :class:`Engine`; ADR 022): live subjects sit in an ordered
table, least recently published first, so the sweep looks only at the front, at most
``sweep_batch`` subjects per call. A subject whose last publish is older than ``expire_seconds``
is evicted there unless a session subscribes (then its cache is cleared and it goes to the back).
Eviction keeps what the recovery contract needs: a subject with a retained snapshot becomes
*dormant* (its snapshot, epoch and seq stay, in a second table, without cache or deque), so a
client recovering after CacheExpireTime still gets ``failed`` and the snapshot; a subject without
one is forgotten. Dormant subjects count in ``max_subjects`` and ``max_retained_bytes``; when a
publish needs room, the least recently published dormant ones give theirs up. A subject created
after anything was forgotten gets a new epoch (``<start epoch>-<n>``), so a position held from
before reads as ``new_epoch``.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pushgrid.protocol.errors import ErrorCode
from pushgrid.protocol.frames import Position, QoS
from pushgrid.protocol.sizes import message_size, utf8_len

from . import trim
from .base import (
    UNBOUNDED_SUBJECTS,
    Deliver,
    Engine,
    EngineFull,
    EngineStats,
    Published,
    PublishRequest,
    Recovery,
    Snapshot,
    SubjectEntry,
)
from .dedup import DedupTable, Original, duplicate_of
from .limits import EngineLimits

#: the settings' defaults (tests and benchmarks build engines without settings)
DEFAULT_LIMITS = EngineLimits()

#: idle subjects a publish may evict inline when a bound is reached
INLINE_EVICTIONS = 16
#: evictions after which the sweep gives the freed heap back to the OS, once eviction paused
TRIM_AFTER = 10_000


def _nobody(subject: str) -> bool:
    return False


@dataclass(slots=True)
class _Subject:
    epoch: str
    seq: int = 0
    content: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    snapshot_ts: int = 0
    snapshot_qos: QoS = "guaranteed"
    cache: deque[Published] | None = None  # made on the first cached message; None when dormant
    cached_bytes: int = 0
    retained_bytes: int = 0  # of the snapshot: content and merged fields
    touched: int = 0  # ms of the last publish (or of the sweep's last look, when subscribed)
    published: int = 0  # ms of the last publish (the subject browser's "last publish")


def _message_bytes(message: Published) -> int:
    return message_size(message.content, message.fields)


class MemoryEngine(Engine):
    name = "memory"

    def __init__(
        self,
        limits: EngineLimits = DEFAULT_LIMITS,
        *,
        clock: Callable[[], float] = time.time,
        epoch: str | None = None,
    ) -> None:
        self.limits = limits
        self._max_cached = limits.max_cached
        self._bounds = limits.bounds
        self._expire_ms = limits.expire_ms
        self._clock = clock
        self.epoch = epoch or secrets.token_hex(6)
        self._max_subjects = limits.max_subjects
        self._max_bytes = limits.max_retained_bytes
        self._sweep_batch = limits.sweep_batch
        # live subjects, least recently published first (the sweep's order)
        self._subjects: OrderedDict[str, _Subject] = OrderedDict()
        # evicted subjects that keep their snapshot, in the order they were evicted
        self._dormant: OrderedDict[str, _Subject] = OrderedDict()
        self._deliver: Deliver | None = None
        self._cached_messages = 0
        self._cached_bytes = 0
        self._retained_bytes = 0
        self._in_use: Callable[[str], bool] = _nobody
        self._current_epoch = self.epoch
        self._generation = 0
        self._evicted = False  # since the current epoch was drawn
        self.evictions = 0  # subjects evicted from the live table (made dormant or forgotten)
        self.dropped_snapshots = 0  # dormant snapshots given up to make room
        self._untrimmed = 0  # evictions since the heap was last trimmed
        self._dedup = DedupTable(limits.dedup_window, limits.dedup_max_keys)

    async def start(self, deliver: Deliver) -> None:
        self._deliver = deliver

    async def close(self) -> None:
        self._deliver = None

    def use_interest(self, in_use: Callable[[str], bool]) -> None:
        self._in_use = in_use

    async def publish(self, request: PublishRequest) -> Published:
        return self.publish_now(request)

    def publish_now(self, request: PublishRequest, *, enforce: bool = True) -> Published:
        """Synchronous publish: the memory engine never waits. ``enforce=False`` skips the
        memory bounds (a cluster member applying a message another member already accepted)."""
        now = self._now_ms()
        if request.msg_id is not None:
            original = self._dedup.get(request.subject, request.msg_id, now)
            if original is not None:
                return duplicate_of(request, original)
        state = self._state(request.subject)
        if request.retained:  # guarantee 11, before anything changes
            self._check_bounds(state, request)
        delta = self._snapshot_delta(state, request)
        if enforce:
            self._admit(state, request, delta, now)
        state = self._touch(request.subject, state, now)
        state.published = now
        if request.qos == "guaranteed":
            state.seq += 1
        message = Published(
            subject=request.subject,
            content=request.content,
            fields=request.fields,
            retained=request.retained,
            qos=request.qos,
            epoch=state.epoch,
            seq=state.seq,
            ts=now,
            ingress=request.ingress,
        )
        if request.retained:
            self._retain(state, request, delta, now)
        if request.qos == "guaranteed":
            self._cache(state, message, now, request.size)
        if request.msg_id is not None:
            self._dedup.add(
                request.subject, request.msg_id, Original(state.epoch, state.seq, now), now
            )
        if self._deliver is not None:
            self._deliver(message)
        return message

    def admit(self, request: PublishRequest) -> None:
        """Raise :class:`EngineFull` when ``request`` would break a memory bound (guarantee 8)."""
        state = self._state(request.subject)
        self._admit(state, request, self._snapshot_delta(state, request), self._now_ms())

    def _state(self, subject: str) -> _Subject | None:
        state = self._subjects.get(subject)
        return state if state is not None else self._dormant.get(subject)

    def _check_bounds(self, state: _Subject | None, request: PublishRequest) -> None:
        """Guarantee 11 on the snapshot ``request`` merges into (its field bytes are the
        snapshot's retained bytes, which guarantee 8 keeps, less its content)."""
        if state is None:
            self._bounds.check(request.subject, request.content, {}, request.fields, 0)
            return
        held = state.retained_bytes - utf8_len(state.content or "")
        self._bounds.check(request.subject, request.content, state.fields, request.fields, held)

    # -- memory bounds ---------------------------------------------------------------------

    @staticmethod
    def _snapshot_delta(state: _Subject | None, request: PublishRequest) -> int:
        """How much ``request`` grows the subject's snapshot (0 when not retained); the work is
        that of the request's own fields, never of the whole snapshot."""
        if not request.retained:
            return 0
        if state is None:
            return request.size
        old_content = state.content or ""
        delta = utf8_len(request.content) - utf8_len(old_content)
        for name, value in request.fields.items():
            old = state.fields.get(name)
            delta += utf8_len(value) - (utf8_len(old) if old is not None else -utf8_len(name))
        return delta

    def _growth(self, state: _Subject | None, request: PublishRequest, delta: int) -> int:
        growth = delta
        if request.qos == "guaranteed" and self._max_cached > 0:
            growth += request.size
            if state is not None and state.cache and len(state.cache) >= self._max_cached:
                growth -= _message_bytes(state.cache[0])
        return growth

    def _admit(
        self,
        state: _Subject | None,
        request: PublishRequest,
        delta: int,
        now: int,
    ) -> None:
        if request.subject in UNBOUNDED_SUBJECTS:  # the alerts: never refused (guarantee 8)
            return
        self._dedup.admit(request.subject, request.msg_id, now)  # guarantee 7 before 8
        if state is None and self._max_subjects and self._count() >= self._max_subjects:
            self._make_room(now, request.subject, need_slot=True)
            if self._count() >= self._max_subjects:
                raise EngineFull(
                    ErrorCode.TOO_MANY_SUBJECTS,
                    f"this node holds MaxSubjects ({self._max_subjects}) subjects"
                    + self.limits.share_note,
                )
        if not self._max_bytes:
            return
        growth = self._growth(state, request, delta)
        if growth > 0 and self._held_bytes() + growth > self._max_bytes:
            self._make_room(now, request.subject, growth=growth)
            if self._held_bytes() + growth > self._max_bytes:
                raise EngineFull(
                    ErrorCode.RETAINED_BYTES_EXCEEDED,
                    f"this node holds MaxRetainedBytes ({self._max_bytes}) bytes of snapshots "
                    "and cached messages" + self.limits.share_note,
                )

    def _held_bytes(self) -> int:
        return self._retained_bytes + self._cached_bytes

    def _count(self) -> int:
        return len(self._subjects) + len(self._dormant)

    def _full(self, need_slot: bool, growth: int) -> bool:
        if need_slot and self._max_subjects and self._count() >= self._max_subjects:
            return True
        return bool(self._max_bytes) and self._held_bytes() + growth > self._max_bytes

    def _make_room(
        self, now: int, publishing: str, *, need_slot: bool = False, growth: int = 0
    ) -> None:
        """Evict idle subjects, then, while still full, give up the least recently published
        dormant snapshots (at most ``INLINE_EVICTIONS`` of each per publish), never the one of
        the subject being published nor of one a session subscribes to."""
        self._evict_idle(now, INLINE_EVICTIONS)
        dormant = self._dormant
        for _ in range(INLINE_EVICTIONS):
            if not dormant or not self._full(need_slot, growth):
                return
            subject, state = next(iter(dormant.items()))
            if subject == publishing or self._in_use(subject):
                dormant.move_to_end(subject)
                continue
            del dormant[subject]
            self._retained_bytes -= state.retained_bytes
            self._evicted = True
            self.dropped_snapshots += 1

    def _touch(self, subject: str, state: _Subject | None, now: int) -> _Subject:
        """The subject's state, created if new, moved to the back of the sweep's order."""
        if state is None:
            if self._evicted:  # a subject evicted before may come back: never reuse its epoch
                self._generation += 1
                self._current_epoch = f"{self.epoch}-{self._generation}"
                self._evicted = False
            state = self._subjects[subject] = _Subject(self._current_epoch)
        elif subject in self._subjects:
            self._subjects.move_to_end(subject)
        else:  # dormant, or evicted by this publish's own room-making: live again, same epoch
            self._dormant.pop(subject, None)
            self._subjects[subject] = state
        state.touched = now
        return state

    def _retain(self, state: _Subject, request: PublishRequest, delta: int, now: int) -> None:
        state.retained_bytes += delta
        self._retained_bytes += delta
        state.content = request.content
        state.fields.update(request.fields)
        state.snapshot_ts = now
        state.snapshot_qos = request.qos

    # -- cache -----------------------------------------------------------------------------

    def _cache(self, state: _Subject, message: Published, now: int, size: int) -> None:
        """Cache ``message`` (``size``: its request's, the same content and fields)."""
        if self._max_cached <= 0:
            return
        if state.cache is None:
            state.cache = deque()
        state.cache.append(message)
        state.cached_bytes += size
        self._cached_messages += 1
        self._cached_bytes += size
        while len(state.cache) > self._max_cached:
            self._drop_oldest(state)
        self._expire(state, now)

    def _drop_oldest(self, state: _Subject) -> None:
        assert state.cache is not None
        old = state.cache.popleft()
        size = _message_bytes(old)
        state.cached_bytes -= size
        self._cached_messages -= 1
        self._cached_bytes -= size

    def _expire(self, state: _Subject, now: int) -> None:
        limit = now - self._expire_ms
        cache = state.cache
        while cache and cache[0].ts < limit:
            self._drop_oldest(state)

    # -- sweep -----------------------------------------------------------------------------

    def sweep(self) -> None:
        """Evict idle subjects from the front of the table, at most ``sweep_batch`` per call
        (guarantees 9 and 10); a busy subject's cache expires on its next publish or read."""
        now = self._now_ms()
        before = self.evictions
        self._evict_idle(now, self._sweep_batch)
        self._dedup.expire(now)
        self._untrimmed += self.evictions - before
        if self._untrimmed >= TRIM_AFTER and self.evictions - before < self._sweep_batch:
            self._untrimmed = 0  # a flood's subjects are gone: give their memory back
            # a dict keeps its largest table after deletions (20,000 evicted: 0.65 MiB of an
            # empty table); a copy is sized for what is left
            self._subjects = OrderedDict(self._subjects)
            self._dormant = OrderedDict(self._dormant)
            trim.release()

    def _evict_idle(self, now: int, budget: int) -> None:
        limit = now - self._expire_ms
        subjects = self._subjects
        for _ in range(budget):
            if not subjects:
                return
            subject, state = next(iter(subjects.items()))
            if state.touched >= limit:
                return  # everything behind was published more recently
            if self._in_use(subject):
                self._expire(state, now)  # every cached message is older than the window
                state.touched = now
                subjects.move_to_end(subject)
            else:
                del subjects[subject]
                self._evict(subject, state)

    def _evict(self, subject: str, state: _Subject) -> None:
        """Drop the cache; keep the snapshot, epoch and seq when there is a snapshot (dormant:
        recovery then says ``failed`` with the snapshot, as before eviction), else forget all."""
        if state.cache is not None:
            self._cached_messages -= len(state.cache)
            self._cached_bytes -= state.cached_bytes
            state.cache = None
            state.cached_bytes = 0
        self.evictions += 1
        if state.content is not None:
            self._dormant[subject] = state
        else:  # nothing to resynchronise from: the subject reads as never published
            self._evicted = True

    # -- reads -----------------------------------------------------------------------------

    async def snapshot(self, subject: str) -> Snapshot | None:
        state = self._state(subject)
        if state is None or state.content is None:
            return None
        return Snapshot(
            subject=subject,
            content=state.content,
            fields=dict(state.fields),
            epoch=state.epoch,
            seq=state.seq,
            ts=state.snapshot_ts,
            qos=state.snapshot_qos,
        )

    async def position(self, subject: str) -> tuple[str, int]:
        state = self._state(subject)
        if state is None:
            return self._current_epoch, 0
        return state.epoch, state.seq

    async def recover(self, subject: str, since: Position) -> Recovery:
        state = self._state(subject)
        epoch, seq = (state.epoch, state.seq) if state is not None else (self._current_epoch, 0)
        if since.epoch != epoch:
            return Recovery("new_epoch", epoch, seq)
        if since.seq == seq:
            return Recovery("up_to_date", epoch, seq)
        if state is None or since.seq > seq or since.seq < 0:
            return Recovery("failed", epoch, seq)
        self._expire(state, self._now_ms())
        missed = [m for m in state.cache or () if m.seq > since.seq]
        if not missed or missed[0].seq != since.seq + 1:
            return Recovery("failed", epoch, seq)
        return Recovery("recovered", epoch, seq, tuple(missed))

    async def history(self, subject: str, limit: int) -> list[Published]:
        state = self._subjects.get(subject)  # a dormant subject has no cache
        if state is None or state.cache is None or limit <= 0:
            return []
        self._expire(state, self._now_ms())
        cached = list(state.cache)
        return cached[-limit:]

    def catalog(self) -> Iterator[SubjectEntry]:
        for table in (self._subjects, self._dormant):
            for subject, state in list(table.items()):
                yield SubjectEntry(subject, state.retained_bytes, state.published)

    async def remove_snapshot(self, subject: str) -> bool:
        return self.remove_snapshot_now(subject)

    def remove_snapshot_now(self, subject: str) -> bool:
        """Drop the snapshot, keep epoch, seq and cache (ADR 051). A dormant subject has nothing
        left then and is forgotten like one evicted without a snapshot: a later publish on it
        starts a new epoch, so no (epoch, seq) ever names two messages (guarantee 9)."""
        state = self._state(subject)
        if state is None or state.content is None:
            return False
        self._retained_bytes -= state.retained_bytes
        state.retained_bytes = 0
        state.content = None
        state.fields = {}
        state.snapshot_ts = 0
        if self._dormant.pop(subject, None) is not None:
            self._evicted = True
        return True

    def stats(self) -> EngineStats:
        return EngineStats(
            subjects=self._count(),
            cached_messages=self._cached_messages,
            cached_bytes=self._cached_bytes,
            dropped_snapshots=self.dropped_snapshots,
        )

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)
