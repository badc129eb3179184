"""Guaranteed delivery on NATS JetStream: one replicated stream orders, numbers and caches.

How the Engine guarantees hold here (docs/cluster.md, ADR 011):

1. **Per-subject order, one numbering on every member.** A publish reads the subject's last
   record (cached head, else a direct get) and stores the next record with
   ``Nats-Expected-Last-Subject-Sequence`` = that record's stream sequence. JetStream refuses it
   if another record got in first ("wrong last sequence"); the member re-reads the head from the
   stream leader and tries again. So the records of a subject form one chain in the stream, and
   (epoch, seq) is written into each record, identical for every reader. Publishes of one subject
   are serialised inside a member (a lock per subject) so contention is only between members.
2. **Delivery from the stream.** Members never fan out the raw publish subjects (they also carry
   refused attempts). The stream republishes every stored record on ``pg.r.>``; each member
   delivers them in stream order, and fills any gap (a dropped connection, a missed republish)
   from the stream with batched direct gets before going on, and polls the stream's last sequence
   once a second for a gap at the end. A member never skips a record the stream holds: past the
   last record its own replica returns (a replica still catching up after a partition answers
   with what it has), the stream leader is read, and only the leader says a record is gone.
3. **Publish returns after acceptance**: after the PubAck, i.e. once the record is stored on a
   quorum of the seed members. Retries reuse the ``Nats-Msg-Id``, so a retry after a lost ack is
   answered as a duplicate instead of being stored twice, and the publishers are told the
   numbers of the record JetStream holds (a retry may have been re-planned on a newer head).
4. **Recovery** reads the subject's records back from the stream (any member, any replica;
   what the replica does not have yet comes from the stream leader).
5. **Snapshot**: every record carries the subject's merged snapshot after it.
11. **Snapshot bounds** are checked while the record is merged on top of the head it is stored
   on (conditional on that head), so members publishing at once cannot overshoot them.

Reads (position, snapshot, recovery, history) wait until this member has delivered the record
they read, so a subscription never opens at a position its live messages have not reached.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import datetime
import hashlib
import json
import logging
import random
import secrets
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js.api import (
    DiscardPolicy,
    PubAck,
    RePublish,
    StorageType,
    StreamConfig,
    StreamInfo,
)

from pushgrid.protocol.exceptions import EngineError
from pushgrid.protocol.frames import Position

from ..cluster.isolation import Progress
from ..cluster.link import ClusterLink
from ..cluster.status import ClusterStatus, ReplicaView
from .base import (
    Deliver,
    Engine,
    EngineStats,
    EngineUnavailable,
    Published,
    PublishRequest,
    Recovery,
    Snapshot,
    SnapshotLimitExceeded,
    SubjectEntry,
)
from .dedup import DedupTable, Original, duplicate_of
from .limits import EngineLimits
from .member_table import SubjectTable, snapshot_bytes, snapshot_growth
from .memory import DEFAULT_LIMITS
from .nats_wire import (
    GUARANTEED_PREFIX,
    REPUBLISH_PREFIX,
    Record,
    decode_record,
    encode_record,
    item_bytes,
    next_record,
    subject_token,
    token_subject,
)
from .pub_acks import PubAcks

log = logging.getLogger(__name__)

WRONG_LAST_SEQUENCE = (10071, 10164)
# One publish attempt waits 0.5 s, then 1, 1.5, 2 s: an attempt sent to a leader that is just
# stepping down gets no answer, and the retry (same Msg-Id) finds the new one (SIGTERM hand-over
# 0.1-0.4 s); a SIGKILL election takes 5-8 s and is covered by ClusterPublishTimeout.
_ATTEMPT_TIMEOUTS = (0.5, 1.0, 1.5, 2.0)
_CATCH_UP_PERIOD = 1.0
_READ_TIMEOUT = 5.0
_BATCH = 256
_REPLY_TIMEOUT = 1.0  # between two replies of one batched read
_READ_ATTEMPTS = 3
# Records read one by one from the stream leader before this member's replica is asked again
# (it is catching up meanwhile, and answers 256 records per request).
_LEADER_RUN = 64
_START_WAIT = 30.0


@dataclass(frozen=True, slots=True)
class Head:
    """A subject's last record and its stream sequence."""

    stream_seq: int
    record: Record


@dataclass(frozen=True, slots=True)
class StoredRecord:
    stream_seq: int
    subject: str
    record: Record


def epoch_of_stream(info: StreamInfo) -> str:
    """The epoch of subjects that have no record yet: fixed for the life of the stream."""
    created = info.created.isoformat() if info.created is not None else info.config.name or ""
    return hashlib.sha256(created.encode()).hexdigest()[:12]


class JetStreamEngine(Engine):
    name = "nats"
    delivery_mode = "guaranteed"

    def __init__(
        self,
        link: ClusterLink,
        limits: EngineLimits = DEFAULT_LIMITS,
        *,
        stream: str = "PUSHGRID",
        replicas: int = 3,
        publish_timeout: float = 15.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.link = link
        self.limits = limits
        self.stream = stream
        self._bounds = limits.bounds
        self._replicas = replicas
        self._max_cached = limits.max_cached
        self._expire_ms = limits.expire_ms
        self._publish_timeout = publish_timeout
        self._clock = clock
        self._deliver: Deliver | None = None
        self._heads: dict[str, Head] = {}
        self._recent: dict[str, deque[tuple[int, int, int]]] = {}
        self._cached_messages = 0
        self._cached_bytes = 0
        self._queues: dict[str, list[_Queued]] = {}  # subject -> publishes waiting to be stored
        self._drains: set[asyncio.Task[None]] = set()
        self._delivered = 0  # stream sequence delivered through
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._deliver_lock = asyncio.Lock()
        self._info: StreamInfo | None = None
        self._quorum = False
        self.empty_epoch = ""
        self._msg_ids = 0
        self._member_tag = secrets.token_hex(4)
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self._dedup = DedupTable(limits.dedup_window, limits.dedup_max_keys)
        # subject -> stream seq through which this member knows the subject's msg_ids from
        # records it stored itself (delivered records: through ``_delivered``)
        self._chain: dict[str, int] = {}
        self._ids_loader: asyncio.Task[None] | None = None
        self._in_flight: dict[tuple[str, str], asyncio.Future[Published]] = {}
        self._acks = PubAcks()
        # the subjects of _heads/_recent/_chain, for the memory bounds (guarantees 8-10)
        self._table = SubjectTable(
            max_subjects=limits.max_subjects,
            max_bytes=limits.max_retained_bytes,
            expire_ms=self._expire_ms,
            sweep_batch=limits.sweep_batch,
        )

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self, deliver: Deliver) -> None:
        await self.link.start()
        self._deliver = deliver
        await self._acks.start(self.link.nc)
        await self.link.nc.subscribe(
            REPUBLISH_PREFIX + ">",
            cb=self._on_republished,
            pending_msgs_limit=1_000_000,
            pending_bytes_limit=1 << 30,
        )
        try:
            await self._ensure_stream(_START_WAIT)
        except EngineUnavailable as exc:
            log.warning("%s; serving without it until it is (publishes fail meanwhile)", exc)
        self._tasks.append(asyncio.get_running_loop().create_task(self._watch_stream()))

    async def _ensure_stream(self, wait: float) -> None:
        """Find the stream, or create it; waits up to ``wait`` s for JetStream (the seeds elect
        a meta leader about 8 s after they start)."""
        config = StreamConfig(
            name=self.stream,
            subjects=[GUARANTEED_PREFIX + ">"],
            storage=StorageType.FILE,
            num_replicas=self._replicas,
            max_msgs_per_subject=max(1, self._max_cached),
            discard=DiscardPolicy.OLD,
            allow_direct=True,
            # the engine's own retries (same Msg-Id) need ~ClusterPublishTimeout; clients'
            # msg_ids PublishDedupWindow (guarantee 7)
            duplicate_window=max(120.0, self._dedup.window_ms / 1000),
            republish=RePublish(src=GUARANTEED_PREFIX + ">", dest=REPUBLISH_PREFIX + ">"),
        )
        js = self.link.nc.jsm()
        deadline = time.monotonic() + wait
        while True:
            try:
                try:
                    info = await js.stream_info(self.stream)
                except nats.js.errors.NotFoundError:
                    info = await js.add_stream(config)
                break
            except (nats.errors.Error, TimeoutError) as exc:
                if time.monotonic() > deadline:
                    raise EngineUnavailable(
                        f"JetStream stream {self.stream} unavailable: {exc}"
                    ) from exc
                await asyncio.sleep(0.5)
        # Records stored before this member started are history (recovery), not live messages.
        self._delivered = max(self._delivered, info.state.last_seq)
        if self._ids_loader is None and self._dedup.window_ms > 0:
            loader = asyncio.get_running_loop().create_task(self._load_ids(self._delivered))
            self._ids_loader = loader
        self._adopt(info)
        if info.config.max_msgs_per_subject != max(1, self._max_cached):
            log.warning(
                "stream %s keeps %s messages per subject, MaxCachedMessagesPerSubject says %s",
                self.stream,
                info.config.max_msgs_per_subject,
                self._max_cached,
            )

    def _adopt(self, info: StreamInfo) -> None:
        self._info = info
        self._quorum = _has_quorum(info)
        self.empty_epoch = epoch_of_stream(info)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._deliver = None
        if self._ids_loader is not None:
            self._ids_loader.cancel()
        for task in [*self._tasks, *self._drains]:
            task.cancel()
        for _, waiter in self._waiters:
            if not waiter.done():
                waiter.cancel()
        await self.link.close()

    # -- publish ----------------------------------------------------------------------------

    async def publish(self, request: PublishRequest) -> Published:
        """Queue the message behind the subject's record in flight; one record then carries
        everything queued meanwhile (so a hot subject costs one round trip per batch, not per
        message, and the subject's order is the queue's order)."""
        if self._info is None:
            raise EngineUnavailable("the cluster stream is not available yet")
        self._admit(request)
        queue = self._queues.get(request.subject)
        if queue is None:
            queue = self._queues[request.subject] = []
            drain = asyncio.get_running_loop().create_task(self._drain(request.subject, queue))
            self._drains.add(drain)
            drain.add_done_callback(self._drains.discard)
        if request.msg_id is not None:
            return await self._publish_once(request, queue)
        done: asyncio.Future[Published] = asyncio.get_running_loop().create_future()
        queue.append((request, done))
        return await done

    async def _publish_once(self, request: PublishRequest, queue: list[_Queued]) -> Published:
        """A publish with a msg_id already on its way here waits for it and answers its
        position (guarantee 7 inside one batch); otherwise it is queued like any other."""
        assert request.msg_id is not None
        key = (request.subject, request.msg_id)
        earlier = self._in_flight.get(key)
        if earlier is not None:
            first = await asyncio.shield(earlier)
            return duplicate_of(request, Original(first.epoch, first.seq, first.ts))
        done: asyncio.Future[Published] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = done
        done.add_done_callback(lambda _: self._in_flight.pop(key, None))
        queue.append((request, done))
        return await done

    async def _drain(self, subject: str, queue: list[_Queued]) -> None:
        """Store the subject's queued publishes, a batch per record, until none is left."""
        try:
            while queue:
                batch = _take_batch(queue)
                try:
                    stored = await self._store(subject, [request for request, _ in batch])
                except Exception as exc:  # every publisher hears of it; the queue goes on
                    if not isinstance(exc, EngineUnavailable):
                        log.exception("storing %d messages of %s failed", len(batch), subject)
                    for _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                    continue
                for (_, done), answer in zip(batch, stored, strict=True):
                    if done.done():
                        continue
                    if isinstance(answer, EngineError):
                        done.set_exception(answer)
                    else:
                        done.set_result(answer)
        finally:
            del self._queues[subject]

    async def _store(
        self, subject: str, requests: list[PublishRequest]
    ) -> list[Published | EngineError]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._publish_timeout
        msg_id = self._record_msg_id(subject, requests)
        head: Head | None = self._heads.get(subject)
        fresh = head is not None  # else: read it first (directly from any replica)
        from_leader = False
        attempt = 0
        plan: _Plan | None = None
        sent: list[_Plan] = []  # every record sent with msg_id, oldest first
        while True:
            attempt += 1
            try:
                if not fresh:
                    head = await self._read_head(subject, direct=not from_leader)
                    fresh, plan = True, None
                if plan is None:  # built once per head, so a retry resends the same record
                    plan = await self._plan(subject, head, requests)
                if plan.record is None:
                    if sent:  # every msg_id is in the chain now: the lost attempt's record
                        _log_lost_ack(subject, plan.originals)
                        return _unsure_of_refusals(plan.answers([]))
                    return plan.answers([])
                if not sent or sent[-1] is not plan:
                    sent.append(plan)
                ack = await self._send(subject, plan, msg_id, attempt, deadline - loop.time())
                self._quorum = True
                return await self._acknowledged(subject, requests, msg_id, ack, sent)
            except nats.js.errors.APIError as exc:
                if exc.err_code in WRONG_LAST_SEQUENCE or "wrong last" in str(exc).lower():
                    # Another record got in first. Nothing of this attempt was stored; an
                    # earlier attempt whose acknowledgement was lost may have been (a new
                    # leader applied it after checking this one): the re-planned record keeps
                    # the Msg-Id, so JetStream answers it as that one's duplicate.
                    newer = await self._after_conflict(subject, plan, attempt)
                    head, plan, fresh, from_leader = newer or head, None, newer is not None, True
                    continue
                self._give_up_if_late(loop.time(), deadline, exc)
                await asyncio.sleep(_backoff(attempt))
                continue
            except (nats.errors.Error, TimeoutError, OSError, EngineUnavailable) as exc:
                self._give_up_if_late(loop.time(), deadline, exc)
                await asyncio.sleep(_backoff(attempt))
                continue

    async def _after_conflict(self, subject: str, plan: _Plan | None, attempt: int) -> Head | None:
        """After "wrong last sequence": the subject's cached head when it is newer than the one
        ``plan`` was stored on (a stored record, from the republish feed or an
        acknowledgement: the next attempt needs no read from the stream leader), else None
        after a short random pause (the head is then read from the leader)."""
        known = self._heads.get(subject)
        if plan is not None and known is not None and known.stream_seq > plan.expected:
            return known
        await asyncio.sleep(random.uniform(0, 0.002 * min(attempt, 10)))
        return None

    async def _acknowledged(
        self,
        subject: str,
        requests: list[PublishRequest],
        msg_id: str,
        ack: PubAck,
        sent: list[_Plan],
    ) -> list[Published | EngineError]:
        """The answers to a stored record: the numbers of the record JetStream holds."""
        if ack.duplicate and msg_id.startswith(_CLIENT_MSG_ID):
            # a retry of a client's publish stored earlier (through any member)
            return [await self._original_at(subject, ack.seq, requests[0])]
        plan = sent[-1]
        if ack.duplicate and len(sent) > 1:
            plan = await self._plan_stored(subject, ack.seq, sent)
        assert plan.record is not None
        self._stored_own(subject, plan, ack.seq)
        return plan.answers(plan.record.messages(subject))

    async def _plan_stored(self, subject: str, stream_seq: int, sent: list[_Plan]) -> _Plan:
        """Which of the records sent with one ``Nats-Msg-Id`` JetStream stored at
        ``stream_seq``, read from the stream leader.

        An attempt whose acknowledgement was lost (a leader election) may be stored after all,
        and the retry refused "wrong last sequence" (the new leader applied the lost attempt
        first). The record is then re-planned on the new head, with other numbers, and sent
        with the same Msg-Id: JetStream answers it as a duplicate of the earlier record, and
        the publishers must be told the numbers that record holds, not the re-planned ones."""
        try:
            raw = await self.link.nc.jsm().get_msg(self.stream, seq=stream_seq, direct=False)
        except (nats.errors.Error, TimeoutError) as exc:
            raise EngineUnavailable(
                f"cannot read back the stored record (outcome unknown): {exc}"
            ) from exc
        for plan in reversed(sent):
            assert plan.record is not None
            if raw.data == encode_record(plan.record):
                if plan is not sent[-1]:
                    _log_lost_ack(subject, plan.originals, stream_seq)
                return plan
        raise EngineUnavailable(
            f"stream sequence {stream_seq} holds none of the records sent (outcome unknown)"
        )

    async def _send(
        self, subject: str, plan: _Plan, msg_id: str, attempt: int, left: float
    ) -> PubAck:
        assert plan.record is not None
        return await self._acks.publish(
            GUARANTEED_PREFIX + subject_token(subject),
            encode_record(plan.record),
            wait=min(_ATTEMPT_TIMEOUTS[min(attempt, len(_ATTEMPT_TIMEOUTS)) - 1], max(0.1, left)),
            headers={
                "Nats-Msg-Id": msg_id,
                "Nats-Expected-Last-Subject-Sequence": str(plan.expected),
            },
        )

    def _record_msg_id(self, subject: str, requests: list[PublishRequest]) -> str:
        """The record's ``Nats-Msg-Id``: a client's publish alone in its record gets one derived
        from its msg_id, so JetStream (whose duplicate window is stream-wide) answers its retry
        through any member as a duplicate; otherwise one of this member's own, reused by its
        own retries of the record."""
        if len(requests) == 1 and requests[0].msg_id is not None and self._dedup.window_ms > 0:
            return client_msg_id(subject, requests[0].msg_id)
        self._msg_ids += 1
        return f"{self._member_tag}-{self._msg_ids}"

    async def _plan(self, subject: str, head: Head | None, requests: list[PublishRequest]) -> _Plan:
        """The record to store on top of ``head``. Requests whose msg_id the subject's chain
        already holds (up to ``head``: this member waits until it knows every record of the
        subject through it) are answered with the original and left out. The store is
        conditional on ``head``, so no record with that msg_id can get in between."""
        if all(request.msg_id is None for request in requests):
            record, expected, refused = self._next(subject, head, requests)
            return _Plan(record, expected, list(refused))
        await self._ids_known_through(subject, head)
        now = self._now_ms()
        originals: list[Published | SnapshotLimitExceeded | None] = []
        for request in requests:
            original = None
            if request.msg_id is not None:
                found = self._dedup.get(subject, request.msg_id, now)
                original = duplicate_of(request, found) if found is not None else None
            originals.append(original)
        fresh = [r for r, o in zip(requests, originals, strict=True) if o is None]
        if not fresh:
            return _Plan(None, 0, originals)
        record, expected, refused = self._next(subject, head, fresh)
        fresh_answers = iter(refused)  # in the order of ``fresh``: where the originals are None
        answers = [o if o is not None else next(fresh_answers) for o in originals]
        return _Plan(record, expected, answers)

    async def _ids_known_through(self, subject: str, head: Head | None) -> None:
        """Wait until this member's dedup table holds the msg_ids of every record of
        ``subject`` through ``head``: those delivered, those it stored itself, those it read
        from the stream when it started."""
        await self._ids_loaded()
        if head is None or self._ids_known(subject, head.stream_seq):
            return
        await self._caught_up(head.stream_seq)

    async def _ids_loaded(self) -> None:
        """Wait until the msg_ids stored before this member started are known."""
        loader = self._ids_loader
        if loader is None or loader.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(loader), _READ_TIMEOUT)
        except TimeoutError:
            raise EngineUnavailable("still reading the recent msg_ids from the stream") from None

    async def _load_ids(self, through: int) -> None:
        """Read the msg_ids of the records stored within the dedup window before this member
        started (through stream sequence ``through``), retrying until it has them all."""
        attempt = 0
        while True:
            attempt += 1
            try:
                start = await self._first_in_window()
                while start is not None and start <= through:
                    start = await self._load_ids_from(start, through)
                return
            except EngineUnavailable as exc:
                log.debug("reading recent msg_ids: %s", exc)
                await asyncio.sleep(_backoff(attempt))

    async def _load_ids_from(self, start: int, through: int) -> int | None:
        """Note the msg_ids of a batch of records from ``start``; where to go on (None: done).
        This member's replica answers first; past its end (it may be catching up) the next
        record comes from the stream leader, as in :meth:`_fill`."""
        batch = await self._direct_batch(start, _BATCH)
        for stored in batch:
            if stored.stream_seq <= through:
                self._note_ids(stored.subject, stored.record)
        if len(batch) == _BATCH or (batch and batch[-1].stream_seq >= through):
            return batch[-1].stream_seq + 1
        after = batch[-1].stream_seq + 1 if batch else start
        leader = await self._leader_next(after, GUARANTEED_PREFIX + ">")
        if leader is None:
            await self._purged_through(after, through)  # else an old leader: read again
            return None
        if leader.stream_seq > through:
            return None
        self._note_ids(leader.subject, leader.record)
        return leader.stream_seq + 1

    async def _first_in_window(self) -> int | None:
        """The stream sequence of the first record stored within the dedup window, if any."""
        since = (self._now_ms() - self._dedup.window_ms) / 1000
        start_time = datetime.datetime.fromtimestamp(since, datetime.UTC).isoformat()
        try:
            reply = await self.link.nc.request(
                f"$JS.API.DIRECT.GET.{self.stream}",
                json.dumps({"start_time": start_time.replace("+00:00", "Z")}).encode(),
                timeout=_READ_TIMEOUT,
            )
        except (nats.errors.Error, TimeoutError) as exc:
            raise EngineUnavailable(f"cannot read the stream: {exc}") from exc
        headers = reply.headers or {}
        if headers.get("Status") == "404":
            return None
        try:
            return int(headers["Nats-Sequence"])
        except (KeyError, ValueError) as exc:
            raise EngineUnavailable(f"the stream answered {headers}") from exc

    def _ids_known(self, subject: str, stream_seq: int) -> bool:
        return stream_seq <= self._delivered or stream_seq <= self._chain.get(subject, 0)

    def _stored_own(self, subject: str, plan: _Plan, stream_seq: int) -> None:
        """This member's record is stored at ``stream_seq``: on top of ``plan.expected``, with
        nothing of the subject in between, so the subject's known ids run through it when
        they ran through ``plan.expected``."""
        assert plan.record is not None
        if self._ids_known(subject, plan.expected):
            self._chain[subject] = max(self._chain.get(subject, 0), stream_seq)
        self._note_ids(subject, plan.record)
        self._remember(subject, Head(stream_seq, plan.record))

    def _note_ids(self, subject: str, record: Record) -> None:
        now = self._now_ms()
        for item in record.i:
            if item.m is not None:
                self._dedup.add(subject, item.m, Original(record.e, item.s, item.t), now)

    async def _original_at(
        self, subject: str, stream_seq: int, request: PublishRequest
    ) -> Published:
        """The answer to a publish JetStream found a duplicate of: the record at
        ``stream_seq`` holds the original, read from the stream leader unless this member
        already knows its msg_ids (it delivered or stored the record: most often an attempt of
        its own whose acknowledgement came too late, retried with the same Msg-Id)."""
        assert request.msg_id is not None
        known = self._dedup.get(subject, request.msg_id, self._now_ms())
        if known is not None:  # a msg_id is in a subject's chain once: this is the original
            return duplicate_of(request, known)
        try:
            raw = await self.link.nc.jsm().get_msg(self.stream, seq=stream_seq, direct=False)
        except (nats.errors.Error, TimeoutError) as exc:
            raise EngineUnavailable(f"cannot read the original message: {exc}") from exc
        if raw.data is not None:
            record = decode_record(raw.data)
            self._note_ids(subject, record)
        found = self._dedup.get(subject, request.msg_id, self._now_ms())
        if found is None:
            raise EngineUnavailable(
                "stored earlier with this msg_id, but its record is gone from the stream"
            )
        return duplicate_of(request, found)

    def _next(
        self, subject: str, head: Head | None, requests: list[PublishRequest]
    ) -> tuple[Record | None, int, list[SnapshotLimitExceeded | None]]:
        """The record on top of ``head``, its expected stream sequence, and the requests its
        merge refused (guarantee 11: checked against ``head``'s snapshot, which the store is
        conditional on, so members publishing at once cannot overshoot a bound)."""
        # A subject's numbering starts once, in the stream's epoch: its last record is never
        # removed (no max_age, no stream-wide limits; REFERENCE.md: max_age restarts numbering).
        previous = head.record if head is not None else None
        merged = next_record(
            previous, requests, self.empty_epoch, self._now_ms(), self._bounds, subject
        )
        return merged.record, head.stream_seq if head is not None else 0, merged.refused

    def _give_up_if_late(self, now: float, deadline: float, exc: Exception) -> None:
        if now >= deadline:
            self._quorum = False
            # JetStream saying "no responders" means nothing was stored; after a timeout the
            # proposal may still be committed when the quorum returns (a lost acknowledgement).
            refused = isinstance(
                exc, nats.js.errors.NoStreamResponseError | nats.errors.NoRespondersError
            )
            outcome = "not stored" if refused else "outcome unknown: it may still be stored"
            raise EngineUnavailable(
                f"no quorum of seed members within {self._publish_timeout:g} s ({outcome})"
            ) from exc

    # -- delivery ---------------------------------------------------------------------------

    async def _on_republished(self, msg: Msg) -> None:
        headers = msg.headers or {}
        try:
            stream_seq = int(headers["Nats-Sequence"])
        except (KeyError, ValueError):
            log.warning("ignored a republished message without Nats-Sequence")
            return
        subject = token_subject(msg.subject[len(REPUBLISH_PREFIX) :])
        if self._info is None:  # not started on the stream yet: this is history
            return
        async with self._deliver_lock:
            if stream_seq <= self._delivered:
                return
            if stream_seq > self._delivered + 1:
                await self._fill(stream_seq - 1)
            self._handle(StoredRecord(stream_seq, subject, decode_record(msg.data)))

    async def _fill(self, through: int) -> None:
        """Deliver the stored records after ``_delivered`` up to ``through``, from the stream.

        This member's replica answers first (batched direct gets). A record it returns proves
        it applied the stream up to that record, so a sequence it lacks below one it returns
        was removed on every replica (the per-subject limit). Past its last record it may just
        be behind: NATS keeps a replica answering while it catches up after a partition, so
        an empty or short read never means "removed"; the stream leader decides
        (:meth:`_fill_from_leader`)."""
        while self._delivered < through:
            wanted = min(_BATCH, through - self._delivered)
            batch = await self._direct_batch(self._delivered + 1, wanted)
            for stored in batch:
                if stored.stream_seq > through:
                    return
                self._handle(stored)
            if len(batch) < wanted and self._delivered < through:
                await self._fill_from_leader(through)

    async def _fill_from_leader(self, through: int) -> None:
        """Deliver up to ``_LEADER_RUN`` records after ``_delivered`` read from the stream
        leader, or advance to ``through`` when one answer proves the stream holds none of
        them any more."""
        for _ in range(_LEADER_RUN):
            stored = await self._leader_next(self._delivered + 1, GUARANTEED_PREFIX + ">")
            if stored is not None and stored.stream_seq <= through:
                self._handle(stored)
                if self._delivered >= through:
                    return
                continue
            if stored is None:
                await self._purged_through(self._delivered + 1, through)
            # else: the server that answered holds a record past ``through`` and none between
            # (its records are the stream's, in order): they were removed everywhere.
            log.info(
                "stream sequences %d..%d are no longer in the stream (removed by the "
                "per-subject limit or a purge): nothing to deliver there",
                self._delivered + 1,
                through,
            )
            self._advance(through)
            return

    async def _purged_through(self, start: int, through: int) -> None:
        """Raise unless the stream holds no record up to ``through`` any more (a purge moved
        its first sequence past it).

        The server that answered as stream leader holds no record from ``start`` on. The real
        leader always holds the stream's last record (the per-subject limit keeps each
        subject's newest, and nothing here sets ``max_age``), so unless the stream was purged
        that answer came from a server that is behind: a leader cut off by a partition still
        answers as leader until it hears the new one, for a moment after the heal too.
        Another server's word (this stream info may come from the real leader) that it applied
        past ``through`` must not be combined with that "none": it once skipped a whole
        partition's records (docs/cluster.md, "No record skipped"). One answer decides."""
        try:
            info = await self.link.nc.jsm().stream_info(self.stream)
        except (nats.errors.Error, TimeoutError) as exc:
            raise EngineUnavailable(f"cannot ask the stream leader: {exc}") from exc
        if info.state.first_seq <= through:
            raise EngineUnavailable(
                f"a server answering as stream leader holds nothing from {start} on, "
                f"but the stream starts at {info.state.first_seq} <= {through}: it is behind "
                "(an old leader after a partition); read again later"
            )

    async def _leader_next(self, start: int, nats_subject: str) -> StoredRecord | None:
        """The first record at or after ``start`` on ``nats_subject`` (a wildcard for any), read
        from the stream leader (a non-direct get), or None when the leader holds none."""
        try:
            raw = await self.link.nc.jsm().get_msg(
                self.stream, seq=start, subject=nats_subject, next=True, direct=False
            )
        except nats.js.errors.NotFoundError:
            return None
        except (nats.errors.Error, TimeoutError) as exc:
            raise EngineUnavailable(f"cannot read from the stream leader: {exc}") from exc
        if raw.seq is None or raw.subject is None or raw.data is None:
            raise EngineUnavailable(f"the stream leader answered an empty record at {start}")
        return StoredRecord(
            raw.seq, token_subject(raw.subject[len(GUARANTEED_PREFIX) :]), decode_record(raw.data)
        )

    def _handle(self, stored: StoredRecord) -> None:
        _warn_of_gap(self._heads.get(stored.subject), stored)
        self._note_ids(stored.subject, stored.record)
        self._remember(stored.subject, Head(stored.stream_seq, stored.record))
        if self._deliver is not None:
            for message in stored.record.messages(stored.subject):
                self._deliver(message)
        self._advance(stored.stream_seq)

    def _advance(self, stream_seq: int) -> None:
        self._delivered = max(self._delivered, stream_seq)
        if self._waiters:
            ready = [w for s, w in self._waiters if s <= self._delivered]
            self._waiters = [(s, w) for s, w in self._waiters if s > self._delivered]
            for waiter in ready:
                if not waiter.done():
                    waiter.set_result(None)

    async def _watch_stream(self) -> None:
        """Once a second: the stream's state for monitoring, and a gap at the end filled."""
        while True:
            await asyncio.sleep(_CATCH_UP_PERIOD)
            if self._info is None:
                with contextlib.suppress(EngineUnavailable):
                    await self._ensure_stream(0)
                continue
            try:
                info = await self.link.nc.jsm().stream_info(self.stream)
            except Exception as exc:
                self._quorum = False
                log.debug("stream info failed: %s", exc)
                continue
            self._adopt(info)
            if info.state.last_seq > self._delivered:
                with contextlib.suppress(Exception):
                    async with self._deliver_lock:
                        await self._fill(info.state.last_seq)

    async def _caught_up(self, stream_seq: int) -> None:
        """Wait until this member has delivered ``stream_seq`` (reads never run ahead)."""
        if stream_seq <= self._delivered:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((stream_seq, waiter))
        try:
            await asyncio.wait_for(waiter, _READ_TIMEOUT)
        except TimeoutError:
            raise EngineUnavailable("this member is not receiving the cluster's messages") from None

    # -- reads ------------------------------------------------------------------------------

    def _remember(self, subject: str, head: Head) -> None:
        known = self._heads.get(subject)
        if known is None or known.stream_seq < head.stream_seq:
            self._heads[subject] = head
            self._table.seen(subject, head.record)
            if self._max_cached > 0:
                self._note_recent(subject, head)

    def _note_recent(self, subject: str, head: Head) -> None:
        """The newest guaranteed records this member has seen, as (seq, stream seq, bytes):
        where a recovery starts reading in the stream, and the cache size for monitoring."""
        recent = self._recent.get(subject)
        if recent is None:
            recent = self._recent[subject] = deque(maxlen=self._max_cached)
        for item in head.record.i:
            if item.q != "guaranteed":
                continue
            if len(recent) == recent.maxlen:
                self._cached_bytes -= recent[0][2]
            else:
                self._cached_messages += 1
            size = item_bytes(item)
            recent.append((item.s, head.stream_seq, size))
            self._cached_bytes += size

    def _start_of(self, subject: str, seq: int) -> int:
        """A stream sequence at or before the record numbered ``seq`` (1: scan from the start).

        Recovery then reads only what follows it, instead of every record of the subject."""
        recent = self._recent.get(subject)
        if not recent:
            return 1
        index = bisect.bisect_left(recent, seq, key=lambda entry: entry[0])
        if index < len(recent) and recent[index][0] == seq:
            return recent[index][1]
        if len(recent) == recent.maxlen and recent[0][0] > seq:
            # max_cached newer records exist, so the stream no longer holds older ones
            return recent[0][1]
        return 1

    async def _read_head(self, subject: str, *, direct: bool) -> Head | None:
        """The subject's last record: ``direct`` from any replica, else from the stream leader."""
        js = self.link.nc.jsm()
        try:
            raw = await js.get_msg(
                self.stream, subject=GUARANTEED_PREFIX + subject_token(subject), direct=direct
            )
        except nats.js.errors.NotFoundError:
            return None
        except (nats.errors.Error, TimeoutError) as exc:
            raise EngineUnavailable(f"cannot read the subject from the cluster: {exc}") from exc
        if raw.data is None or raw.seq is None:
            return None
        head = Head(raw.seq, decode_record(raw.data))
        self._remember(subject, head)
        return self._heads[subject]

    async def _current(self, subject: str) -> Head | None:
        head = self._heads.get(subject) or await self._read_head(subject, direct=True)
        if head is not None:
            await self._caught_up(head.stream_seq)
        return head

    async def snapshot(self, subject: str) -> Snapshot | None:
        head = await self._current(subject)
        return head.record.snapshot(subject) if head is not None else None

    async def position(self, subject: str) -> tuple[str, int]:
        head = await self._current(subject)
        if head is None:
            return self.empty_epoch, 0
        return head.record.e, head.record.s

    async def recover(self, subject: str, since: Position) -> Recovery:
        head = await self._current(subject)
        if _client_ahead(head, since, self.empty_epoch):
            # The client saw more than this member knows: this member is behind (a replica
            # catching up, a partition), not the stream; the leader knows the real head.
            head = await self._read_head(subject, direct=False)
            if head is not None:
                await self._caught_up(head.stream_seq)
        if head is None:
            return _recover_empty(self.empty_epoch, since)
        epoch, seq = head.record.e, head.record.s
        if since.epoch != epoch:
            return Recovery("new_epoch", epoch, seq)
        if since.seq == seq:
            return Recovery("up_to_date", epoch, seq)
        if since.seq > seq or since.seq < 0 or self._max_cached <= 0:
            return Recovery("failed", epoch, seq)
        found = await self._guaranteed(subject, head, after=since.seq)
        if not _contiguous(found, since.seq):
            return Recovery("failed", epoch, seq)
        return Recovery("recovered", epoch, seq, tuple(found))

    async def history(self, subject: str, limit: int) -> list[Published]:
        if limit <= 0 or self._max_cached <= 0:
            return []
        head = await self._current(subject)
        if head is None:
            return []
        return (await self._guaranteed(subject, head, after=0))[-limit:]

    async def _guaranteed(self, subject: str, head: Head, after: int) -> list[Published]:
        """The subject's cached guaranteed messages of the head's epoch with seq > ``after``."""
        oldest = self._now_ms() - self._expire_ms
        out: list[Published] = []
        start = self._start_of(subject, after + 1)
        for stored in await self._subject_records(subject, start, head.stream_seq):
            if stored.record.e != head.record.e:
                continue
            for item in stored.record.i:
                if item.q == "guaranteed" and item.t >= oldest and item.s > after:
                    out.append(item.published(subject, stored.record.e))
        return out[-self._max_cached :] if self._max_cached > 0 else []

    async def _subject_records(self, subject: str, start: int, through: int) -> list[StoredRecord]:
        """The subject's records from ``start`` through ``through`` (its head, which the stream
        holds: a subject's last record is never removed). A replica still catching up ends its
        answer before the head; the rest then comes from the stream leader, so a recovery is
        never refused for records the stream holds."""
        nats_subject = GUARANTEED_PREFIX + subject_token(subject)
        records: list[StoredRecord] = []
        while start <= through:
            batch = await self._direct_batch(start, _BATCH, nats_subject)
            records.extend(r for r in batch if r.stream_seq <= through)
            if batch and batch[-1].stream_seq >= through:
                return records
            if len(batch) < _BATCH:
                break  # this replica's end, before the head: behind
            start = batch[-1].stream_seq + 1
        start = records[-1].stream_seq + 1 if records else start
        return records + await self._leader_records(nats_subject, start, through)

    async def _leader_records(
        self, nats_subject: str, start: int, through: int
    ) -> list[StoredRecord]:
        """The subject's records from ``start`` through ``through``, one by one from the leader."""
        records: list[StoredRecord] = []
        while start <= through:
            stored = await self._leader_next(start, nats_subject)
            if stored is None:
                raise EngineUnavailable("the stream leader does not hold the subject's head yet")
            if stored.stream_seq > through:
                break
            records.append(stored)
            start = stored.stream_seq + 1
        return records

    async def _direct_batch(
        self, start: int, batch: int, nats_subject: str | None = None
    ) -> list[StoredRecord]:
        """Up to ``batch`` stored records from stream sequence ``start`` on.

        Any replica may answer a direct get; one that is going away (a member stopping) may not
        answer at all, so a read that gets no reply within a second is asked again, and
        another replica is likely to answer it."""
        for _ in range(_READ_ATTEMPTS - 1):
            with contextlib.suppress(_NoReply):
                return await self._direct_batch_once(start, batch, nats_subject)
        try:
            return await self._direct_batch_once(start, batch, nats_subject)
        except _NoReply as exc:
            raise EngineUnavailable("no replica answered a read of the cluster stream") from exc

    async def _direct_batch_once(
        self, start: int, batch: int, nats_subject: str | None
    ) -> list[StoredRecord]:
        """One batched direct get. nats-py has no call for it: the request goes to the JetStream
        API subject, the replies arrive one message each, ended by a ``204`` status
        (REFERENCE.md)."""
        nc = self.link.nc
        request: dict[str, object] = {"seq": start, "batch": batch}
        if nats_subject is not None:
            request["next_by_subj"] = nats_subject
        inbox = nc.new_inbox()
        replies = await nc.subscribe(inbox)
        out: list[StoredRecord] = []
        try:
            await nc.publish(
                f"$JS.API.DIRECT.GET.{self.stream}", json.dumps(request).encode(), reply=inbox
            )
            while True:
                try:
                    msg = await replies.next_msg(timeout=_REPLY_TIMEOUT)
                except TimeoutError as exc:
                    raise _NoReply from exc
                headers = msg.headers or {}
                status = headers.get("Status")
                if status == "204" or status == "404":
                    return out
                if status:
                    raise EngineUnavailable(f"the cluster refused a read: {status}")
                out.append(_stored(headers, msg.data))
                if len(out) >= batch:
                    return out
        except nats.errors.Error as exc:
            raise EngineUnavailable(f"cannot read from the cluster stream: {exc}") from exc
        finally:
            with contextlib.suppress(Exception):
                await replies.unsubscribe()

    # -- memory bounds (guarantees 8-10; server/engine/member_table.py) ---------------------

    def sweep(self) -> None:
        """Evict idle subjects (a bounded number per call) and forget the msg_ids older than
        the dedup window (called about once a second)."""
        now = self._now_ms()
        self._table.sweep(now, self._forget_subject)
        self._dedup.expire(now)

    def use_interest(self, in_use: Callable[[str], bool]) -> None:
        self._table.in_use = in_use

    def _admit(self, request: PublishRequest) -> None:
        self._dedup.admit(request.subject, request.msg_id, self._now_ms())  # guarantee 7
        head = self._heads.get(request.subject)
        growth = snapshot_growth(head.record if head is not None else None, request)
        if request.qos == "guaranteed" and self._max_cached > 0:
            growth += request.size
            recent = self._recent.get(request.subject)
            if recent is not None and len(recent) == recent.maxlen:
                growth -= recent[0][2]
        self._table.admit(
            request.subject, growth, self._held_bytes, self._now_ms(), self._forget_subject
        )

    def _held_bytes(self) -> int:
        return self._table.snapshot_bytes + self._cached_bytes

    def _forget_subject(self, subject: str) -> bool:
        """Drop this member's state of an idle subject; the stream keeps its records, so a
        later read or publish fetches its head again (as for a subject not seen since this
        member started). False while the subject is busy: a publish queued, or a record of
        it not delivered here yet (then its msg_id chain may still matter)."""
        head = self._heads.get(subject)
        if subject in self._queues or (head is not None and head.stream_seq > self._delivered):
            return False
        self._heads.pop(subject, None)
        self._chain.pop(subject, None)  # <= head.stream_seq <= _delivered: adds nothing now
        recent = self._recent.pop(subject, None)
        if recent:
            self._cached_messages -= len(recent)
            self._cached_bytes -= sum(entry[2] for entry in recent)
        return True

    # -- monitoring -------------------------------------------------------------------------

    def catalog(self) -> Iterator[SubjectEntry]:
        """The subjects whose head this member holds (the stream keeps evicted ones; they are
        listed again once read or published). Removal is refused (the base's answer): every
        record carries its snapshot, so removing one is a new kind of record (ADR 051)."""
        for subject, head in list(self._heads.items()):
            yield SubjectEntry(subject, snapshot_bytes(head.record), head.record.i[-1].t)

    def stats(self) -> EngineStats:
        """Subjects and cached messages this member has seen since it started (the stream's
        own totals, standard-qos records included, are in :meth:`cluster_status`)."""
        return EngineStats(
            subjects=len(self._heads),
            cached_messages=self._cached_messages,
            cached_bytes=self._cached_bytes,
        )

    def advertise(self, client_urls: list[str], monitor_urls: list[str]) -> None:
        self.link.advertise(client_urls, monitor_urls)

    def stream_progress(self) -> Progress | None:
        if self._info is None:
            return None
        return Progress(self._info.state.last_seq, self._delivered)

    def member_bus(self) -> ClusterLink:
        return self.link

    def cluster_status(self) -> ClusterStatus:
        cluster = self._info.cluster if self._info is not None else None
        replicas: list[ReplicaView] = []
        if cluster is not None:
            if cluster.leader:
                replicas.append(ReplicaView(cluster.leader, True, 0))
            for peer in cluster.replicas or []:
                replicas.append(
                    ReplicaView(
                        peer.name or "?", bool(peer.current) and not peer.offline, peer.lag or 0
                    )
                )
        topology = self.link.topology
        return ClusterStatus(
            engine=self.name,
            mode=self.delivery_mode,
            members=self.link.members(),
            seeds=len(topology.seeds) if topology is not None else self._replicas,
            quorum_size=topology.quorum if topology is not None else self._replicas // 2 + 1,
            quorum=self._quorum and self.link.connected,
            nats_connected=self.link.connected,
            meta_leader=self.link.meta_leader(),
            stream_leader=cluster.leader if cluster is not None else None,
            replicas=tuple(replicas),
            stream_messages=self._info.state.messages if self._info is not None else 0,
            config_mismatch=self.link.mismatched(),
        )

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


class _NoReply(Exception):
    """A batched read got no reply in time (asked again by :meth:`_direct_batch`)."""


def _stored(headers: dict[str, str], data: bytes) -> StoredRecord:
    subject = headers.get("Nats-Subject", "")
    try:
        return StoredRecord(
            int(headers["Nats-Sequence"]),
            token_subject(subject[len(GUARANTEED_PREFIX) :]),
            decode_record(data),
        )
    except (KeyError, ValueError, msgspec.DecodeError) as exc:
        raise EngineUnavailable(f"unreadable record in the cluster stream: {exc}") from exc


_Queued = tuple[PublishRequest, "asyncio.Future[Published]"]
_CLIENT_MSG_ID = "pg-"


def client_msg_id(subject: str, msg_id: str) -> str:
    """The ``Nats-Msg-Id`` of a client's publish stored alone: the same on every member."""
    digest = hashlib.sha256(f"{subject}\0{msg_id}".encode("utf-8", "surrogatepass"))
    return _CLIENT_MSG_ID + digest.hexdigest()[:40]


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one store sends: ``record`` (None: every request is a duplicate or refused) on top
    of the subject's record ``expected``; ``originals`` answers the duplicates and the requests
    a snapshot bound refused (guarantee 11), in request order; None: stored in ``record``."""

    record: Record | None
    expected: int
    originals: list[Published | SnapshotLimitExceeded | None]

    def answers(self, stored: list[Published]) -> list[Published | EngineError]:
        """One answer per request: its original or refusal, else the next stored message."""
        fresh = iter(stored)
        return [o if o is not None else next(fresh) for o in self.originals]


_BATCH_MESSAGES = 256
_BATCH_BYTES = 256 * 1024


def _take_batch(queue: list[_Queued]) -> list[_Queued]:
    """The oldest queued publishes that fit one record (at least one, whatever its size)."""
    size = 0
    count = 0
    for request, _ in queue:
        size += len(request.content) + sum(len(k) + len(v) for k, v in request.fields.items())
        if count and (count >= _BATCH_MESSAGES or size > _BATCH_BYTES):
            break
        count += 1
    batch = queue[:count]
    del queue[:count]
    return batch


def _warn_of_gap(known: Head | None, stored: StoredRecord) -> None:
    """Log when the numbers this member delivers of a subject jump: ``known`` is the newest
    record of it this member has seen (delivered, stored or read), so a record after it in the
    same epoch continues its numbering, unless records were removed from the stream before
    this member read them (the per-subject limit, a member far behind) or skipped here (a
    fault: issue 34's partition). Either way the operator can see it in the log."""
    if known is None or known.stream_seq >= stored.stream_seq or known.record.e != stored.record.e:
        return
    first = next((item.s for item in stored.record.i if item.q == "guaranteed"), None)
    if first is not None and first > known.record.s + 1:
        log.warning(
            "%s: delivering seq %d after %d: numbers %d..%d were not delivered by this member "
            "(removed from the stream before it read them, or skipped)",
            stored.subject,
            first,
            known.record.s,
            known.record.s + 1,
            first - 1,
        )


def _has_quorum(info: StreamInfo) -> bool:
    """A leader plus enough current replicas to commit: without a quorum a surviving replica
    (even the old leader, for a while) still answers stream info."""
    cluster = info.cluster
    if cluster is None:
        return True  # a one-node JetStream
    if not cluster.leader:
        return False
    peers = cluster.replicas or []
    current = 1 + sum(1 for p in peers if p.current and not p.offline)
    return current >= (1 + len(peers)) // 2 + 1


def _contiguous(messages: list[Published], after: int) -> bool:
    """Exactly the messages after ``after``: none missing at the start or in between."""
    expected = after + 1
    for message in messages:
        if message.seq != expected:
            return False
        expected += 1
    return bool(messages)


def _client_ahead(head: Head | None, since: Position, empty_epoch: str) -> bool:
    """The client's position is past ``head`` in the same epoch."""
    if head is None:
        return since.epoch == empty_epoch and since.seq > 0
    return since.epoch == head.record.e and since.seq > head.record.s


def _recover_empty(empty_epoch: str, since: Position) -> Recovery:
    if since.epoch != empty_epoch:
        return Recovery("new_epoch", empty_epoch, 0)
    if since.seq == 0:
        return Recovery("up_to_date", empty_epoch, 0)
    return Recovery("failed", empty_epoch, 0)


def _unsure_of_refusals(answers: list[Published | EngineError]) -> list[Published | EngineError]:
    """After a lost acknowledgement, a retry whose merge a snapshot bound refused (others'
    records grew the snapshot meanwhile) cannot tell whether the lost attempt stored the
    message: say so instead of "refused"."""
    unsure = EngineUnavailable(
        "an attempt whose acknowledgement was lost may have stored it, and the retry was "
        "refused by a snapshot bound (outcome unknown)"
    )
    return [unsure if isinstance(a, SnapshotLimitExceeded) else a for a in answers]


def _log_lost_ack(subject: str, originals: Sequence[object], at: int = 0) -> None:
    """A record whose acknowledgement was lost turned out stored after all (benchmarks/faults.py
    counts these lines)."""
    where = (
        f" at stream sequence {at}"
        if at
        else " (its msg_ids are in the subject's chain; or a retry stored them through another"
        " member)"
    )
    log.info(
        "%s: a lost acknowledgement's record was stored%s; answering its numbers, not the "
        "retry's (%d messages)",
        subject,
        where,
        len(originals),
    )


def _backoff(attempt: int) -> float:
    return min(1.0, 0.05 * (1 << min(attempt, 5))) * random.uniform(0.5, 1.0)
