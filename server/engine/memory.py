"""The embedded single-node engine: everything in this process's memory.

The epoch is drawn at start, so a restarted server has a new epoch for every subject and clients
resynchronise from the snapshot. The cache keeps at most ``max_cached`` guaranteed messages per
subject and forgets those older than ``expire_seconds``.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from pushgrid.protocol.codec import message_size
from pushgrid.protocol.frames import Position, QoS

from .base import (
    Deliver,
    Engine,
    EngineStats,
    Published,
    PublishRequest,
    Recovery,
    Snapshot,
)
from .dedup import DedupTable, Original, duplicate_of


@dataclass(slots=True)
class _Subject:
    seq: int = 0
    content: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    snapshot_ts: int = 0
    snapshot_qos: QoS = "guaranteed"
    cache: deque[Published] = field(default_factory=deque)
    cached_bytes: int = 0


def _message_bytes(message: Published) -> int:
    return message_size(message.content, message.fields)


class MemoryEngine(Engine):
    name = "memory"

    def __init__(
        self,
        max_cached: int = 1000,
        expire_seconds: float = 180.0,
        clock: Callable[[], float] = time.time,
        epoch: str | None = None,
        dedup_window: float = 120.0,
        dedup_max_keys: int = 100_000,
    ) -> None:
        self._max_cached = max_cached
        self._expire_ms = int(expire_seconds * 1000)
        self._clock = clock
        self.epoch = epoch or secrets.token_hex(6)
        self._subjects: dict[str, _Subject] = {}
        self._deliver: Deliver | None = None
        self._cached_messages = 0
        self._cached_bytes = 0
        self._dedup = DedupTable(dedup_window, dedup_max_keys)

    async def start(self, deliver: Deliver) -> None:
        self._deliver = deliver

    async def close(self) -> None:
        self._deliver = None

    async def publish(self, request: PublishRequest) -> Published:
        return self.publish_now(request)

    def publish_now(self, request: PublishRequest) -> Published:
        """Synchronous publish: the memory engine never waits."""
        now = self._now_ms()
        if request.msg_id is not None:
            original = self._dedup.get(request.subject, request.msg_id, now)
            if original is not None:
                return duplicate_of(request, original)
        state = self._subjects.get(request.subject)
        if state is None:
            state = self._subjects[request.subject] = _Subject()
        if request.qos == "guaranteed":
            state.seq += 1
        message = Published(
            subject=request.subject,
            content=request.content,
            fields=request.fields,
            retained=request.retained,
            qos=request.qos,
            epoch=self.epoch,
            seq=state.seq,
            ts=now,
        )
        if request.retained:
            state.content = request.content
            state.fields.update(request.fields)
            state.snapshot_ts = now
            state.snapshot_qos = request.qos
        if request.qos == "guaranteed":
            self._cache(state, message, now)
        if request.msg_id is not None:
            self._dedup.add(
                request.subject, request.msg_id, Original(self.epoch, state.seq, now), now
            )
        if self._deliver is not None:
            self._deliver(message)
        return message

    def _cache(self, state: _Subject, message: Published, now: int) -> None:
        if self._max_cached <= 0:
            return
        state.cache.append(message)
        size = _message_bytes(message)
        state.cached_bytes += size
        self._cached_messages += 1
        self._cached_bytes += size
        while len(state.cache) > self._max_cached:
            self._drop_oldest(state)
        self._expire(state, now)

    def _drop_oldest(self, state: _Subject) -> None:
        old = state.cache.popleft()
        size = _message_bytes(old)
        state.cached_bytes -= size
        self._cached_messages -= 1
        self._cached_bytes -= size

    def _expire(self, state: _Subject, now: int) -> None:
        limit = now - self._expire_ms
        while state.cache and state.cache[0].ts < limit:
            self._drop_oldest(state)

    def sweep(self) -> None:
        """Forget expired cache entries of every subject (called periodically by the server)."""
        now = self._now_ms()
        for state in self._subjects.values():
            self._expire(state, now)
        self._dedup.expire(now)

    async def snapshot(self, subject: str) -> Snapshot | None:
        state = self._subjects.get(subject)
        if state is None or state.content is None:
            return None
        return Snapshot(
            subject=subject,
            content=state.content,
            fields=dict(state.fields),
            epoch=self.epoch,
            seq=state.seq,
            ts=state.snapshot_ts,
            qos=state.snapshot_qos,
        )

    async def position(self, subject: str) -> tuple[str, int]:
        state = self._subjects.get(subject)
        return self.epoch, state.seq if state is not None else 0

    async def recover(self, subject: str, since: Position) -> Recovery:
        state = self._subjects.get(subject)
        seq = state.seq if state is not None else 0
        if since.epoch != self.epoch:
            return Recovery("new_epoch", self.epoch, seq)
        if since.seq == seq:
            return Recovery("up_to_date", self.epoch, seq)
        if state is None or since.seq > seq or since.seq < 0:
            return Recovery("failed", self.epoch, seq)
        self._expire(state, self._now_ms())
        missed = [m for m in state.cache if m.seq > since.seq]
        if not missed or missed[0].seq != since.seq + 1:
            return Recovery("failed", self.epoch, seq)
        return Recovery("recovered", self.epoch, seq, tuple(missed))

    async def history(self, subject: str, limit: int) -> list[Published]:
        state = self._subjects.get(subject)
        if state is None or limit <= 0:
            return []
        self._expire(state, self._now_ms())
        cached = list(state.cache)
        return cached[-limit:]

    def stats(self) -> EngineStats:
        return EngineStats(
            subjects=len(self._subjects),
            cached_messages=self._cached_messages,
            cached_bytes=self._cached_bytes,
        )

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)
