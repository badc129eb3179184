"""The Engine interface and the values it trades in.

The engine returns values (:class:`Published`, :class:`Snapshot`, :class:`Recovery`); it never
builds a wire frame: the hub and the session frame them (``server/core/outgoing.py``, ADR 024).

Transport and core talk to an engine only through :class:`Engine`; the memory engine (one node)
and the NATS JetStream engine (cluster) implement it, and one test suite
(``tests/unit/test_engine_contract.py``) runs against each.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pushgrid.protocol.errors import ErrorCode
from pushgrid.protocol.exceptions import EngineError
from pushgrid.protocol.frames import Position, QoS
from pushgrid.protocol.sizes import message_size, utf8_len

from ..cluster.isolation import Progress
from ..cluster.status import ClusterStatus


@dataclass(frozen=True, slots=True)
class PublishRequest:
    """A validated message on its way into the engine."""

    subject: str
    content: str
    fields: dict[str, str]
    retained: bool = True
    qos: QoS = "guaranteed"
    msg_id: str | None = None  # the client's idempotency key (guarantee 7)
    #: the message's size as MaxMessageSize counts it (protocol/sizes.py), computed once per
    #: publish and carried: the codec's check (``Publish.size``) hands it on, the engine's
    #: memory bounds and the counters read it; computed here when not given (-1)
    size: int = -1
    #: microseconds since the Unix epoch when the publish reached this (the ingress) member;
    #: 0 for the server's own messages (meta-subjects). Carried to every member and on the
    #: wire as the message's ``ingress`` (end-to-end latency, ADR 048)
    ingress: int = 0

    def __post_init__(self) -> None:
        if self.size < 0:
            object.__setattr__(self, "size", message_size(self.content, self.fields))


#: The server's own subjects (meta-subjects, alerts, presence, occupancy): only the server
#: publishes under this prefix (docs/meta-subjects.md).
META_PREFIX = "/pushgrid/"

#: The alert announcements (the admin API publishes them through a member's monitoring port,
#: docs/alerts.md). Only the server publishes there (clients may not publish under
#: ``/pushgrid/``), always the same eight fields, so the bounds meant for
#: publishers (guarantees 8 and 11) never refuse an announcement: an alert that the node is full
#: or that an operator set a very low MaxFieldsPerSubject must still get out.
ALERTS_SUBJECT = "/pushgrid/alerts"
UNBOUNDED_SUBJECTS: frozenset[str] = frozenset({ALERTS_SUBJECT})


@dataclass(frozen=True, slots=True)
class SnapshotBounds:
    """What one subject's snapshot may hold (MaxFieldsPerSubject, MaxSnapshotSize): guarantee 11.

    Each engine checks them inside its own merge, against the snapshot the message is merged
    into (never a copy read earlier), so concurrent publishes cannot overshoot them.
    """

    max_fields: int = 1000
    max_bytes: int = 1024 * 1024

    def check(
        self,
        subject: str,
        content: str,
        fields: dict[str, str],
        update: dict[str, str],
        fields_bytes: int,
    ) -> int:
        """Raise :class:`SnapshotLimitExceeded` when merging a retained message (``content``,
        ``update``) into a snapshot holding ``fields`` (``fields_bytes``: their names and values
        in UTF-8, which the engine keeps) would break a bound; else return the merged fields'
        bytes. Costs the update's size, not the snapshot's (a hot subject's snapshot is large)."""
        added = 0
        delta = 0
        for name, value in update.items():
            old = fields.get(name)
            if old is None:
                added += 1
                delta += utf8_len(name) + utf8_len(value)
            else:
                delta += utf8_len(value) - utf8_len(old)
        count = len(fields) + added
        if subject in UNBOUNDED_SUBJECTS:
            return fields_bytes + delta
        if count > self.max_fields:
            raise SnapshotLimitExceeded(
                ErrorCode.TOO_MANY_FIELDS,
                f"the snapshot of {subject} would hold {count} fields, above "
                f"MaxFieldsPerSubject {self.max_fields}",
            )
        size = utf8_len(content) + fields_bytes + delta
        if size > self.max_bytes:
            raise SnapshotLimitExceeded(
                ErrorCode.SNAPSHOT_TOO_LARGE,
                f"the snapshot of {subject} would be {size} bytes, above MaxSnapshotSize "
                f"{self.max_bytes}",
            )
        return fields_bytes + delta


#: the bounds' defaults (the settings' MaxFieldsPerSubject and MaxSnapshotSize defaults)
DEFAULT_BOUNDS = SnapshotBounds()


@dataclass(slots=True)
class Published:
    """A message after the engine ordered it.

    ``seq`` numbers the guaranteed messages of a subject within ``epoch`` (1, 2, 3, ...). A
    standard-qos message does not take a number of its own: it carries the seq of the last
    guaranteed message, so clients never see a gap because of it and never recover it.
    ``ts`` is the engine's receive time in milliseconds since the Unix epoch.
    """

    subject: str
    content: str
    fields: dict[str, str]
    retained: bool
    qos: QoS
    epoch: str
    seq: int
    ts: int
    #: True on the answer to a repeated msg_id: the original's epoch, seq and ts (guarantee 7)
    duplicate: bool = field(default=False, compare=False)
    #: the request's ``ingress`` (microseconds, 0: unknown), for the latency measurements
    ingress: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Spec 4.1.2: latest retained content and the union of fields with their latest values.

    ``qos`` is the qos of the last retained message (a meta-subject's snapshot is ``standard``).
    """

    subject: str
    content: str
    fields: dict[str, str]
    epoch: str
    seq: int
    ts: int
    qos: QoS = "guaranteed"


RecoveryOutcome = Literal["recovered", "up_to_date", "new_epoch", "failed"]


@dataclass(frozen=True, slots=True)
class Recovery:
    """Answer to :meth:`Engine.recover`.

    ``messages`` holds exactly the missed guaranteed messages in seq order when ``outcome`` is
    ``recovered``; it is empty otherwise. ``epoch``/``seq`` are the subject's current position.
    """

    outcome: RecoveryOutcome
    epoch: str
    seq: int
    messages: tuple[Published, ...] = ()


@dataclass(frozen=True, slots=True)
class SubjectEntry:
    """One subject a node holds (the subject browser, issue 35): its snapshot's size as
    MaxMessageSize counts it (0: no snapshot) and the time of its last publish (ms)."""

    subject: str
    snapshot_bytes: int
    last_publish: int


@dataclass(frozen=True, slots=True)
class EngineStats:
    subjects: int
    cached_messages: int
    cached_bytes: int
    #: dormant snapshots given up to make room for a new subject (MaxSubjects, MaxRetainedBytes;
    #: guarantee 11, ADR 022): their subscribers see ``new_epoch`` on their next recovery. Only
    #: the memory engine gives snapshots up (a JetStream member reads an evicted one again)
    dropped_snapshots: int = 0


Deliver = Callable[[Published], None]


class Engine(abc.ABC):
    """Orders, numbers, caches and (in a cluster) replicates messages.

    Guarantees every implementation gives, checked by the shared contract test suite:

    1. **Per-subject order.** For one subject, messages are numbered in the order the engine
       accepted them: guaranteed messages get seq = previous + 1 within the subject's epoch,
       starting at 1; standard messages carry the current seq without taking one.
    2. **Delivery.** Every accepted message is passed to the ``deliver`` callback given to
       :meth:`start` exactly once on every node, and for one subject in seq order. ``deliver``
       runs on the event loop and must not block.
    3. **Publish returns after acceptance.** When :meth:`publish` returns, the message has its
       (epoch, seq), is in the snapshot (if retained) and in the cache (if guaranteed), and has been
       or will be delivered on every node.
    4. **Recovery is exact or refused.** ``recover(subject, Position(epoch, seq))`` returns the
       guaranteed messages with seq greater than ``seq``, all of them, in order, without
       duplicates (outcome ``recovered``; ``up_to_date`` when there are none). When the epoch
       differs it says ``new_epoch``; when the cache no longer holds every missed message (size
       limit or expiry) it says ``failed``. It never returns a partial list.
    5. **Snapshot** is the merge of all retained messages of the subject (spec 4.1.2), with the
       position of the last guaranteed message at the time it was read.
    6. **History** returns up to ``limit`` most recent cached guaranteed messages, oldest first.
    7. **A message id is stored once.** A publish whose request carries a ``msg_id`` already
       accepted for the same subject less than the dedup window ago (``PublishDedupWindow``)
       is neither numbered, cached, put in the snapshot nor delivered again: :meth:`publish`
       returns the original's epoch, seq and ts with ``duplicate`` set. The memory and
       Guaranteed engines hold this whoever retries (in a Guaranteed cluster through any
       member); a Standard cluster holds it per member (docs/cluster.md). An id is remembered
       for the whole window: a publish with a new ``msg_id`` when ``PublishDedupMaxKeys`` live
       ids are held raises :class:`EngineFull` with ``dedup_table_full`` (nothing changes).
    8. **Memory is bounded.** A publish that would create a subject beyond ``max_subjects``
       (``MaxSubjects``) raises :class:`EngineFull` with ``too_many_subjects``; one that would
       make the node hold more than ``max_retained_bytes`` (``MaxRetainedBytes``: snapshots plus
       cached messages, UTF-8 bytes as MaxMessageSize counts them) raises it with
       ``retained_bytes_exceeded``. A refused publish changes nothing (no seq, snapshot, cache
       or delivery); a cached message is never dropped for a bound. Idle subjects are evicted
       first, so a bound refuses only while the subjects in use really fill it. The subjects of
       :data:`UNBOUNDED_SUBJECTS` (the alert announcements) are never refused by a bound.
    9. **Idle subjects are evicted, the recovery contract stays.** A subject is *idle* when
       nothing was published on it for ``CacheExpireTime`` (so its cache is empty) and no
       session of this node subscribes to it (:meth:`use_interest`). Eviction frees its cache
       and bookkeeping but keeps its retained snapshot, epoch and seq (the memory engine keeps
       them in a compact *dormant* record, counted in both bounds; a stream keeps its last
       record), so a client recovering after ``CacheExpireTime`` gets ``failed`` and the
       snapshot, and a new publish continues the numbering. A subject with no snapshot may be
       forgotten. Only to make room for a publish does the memory engine give up a dormant
       snapshot (least recently published first, never a subscribed one). A subject published
       again after it was forgotten continues its numbering or starts in a new epoch, so no
       (epoch, seq) ever names two messages. A subject with a subscriber is never evicted.
    10. **The sweep is incremental.** :meth:`sweep` does at most ``sweep_batch`` subjects of
        work per call whatever the number of subjects; eviction completes over later calls.
    11. **Snapshots stay within their bounds.** A retained publish whose merge would leave the
        subject's snapshot above ``SnapshotBounds`` (MaxFieldsPerSubject fields, MaxSnapshotSize
        bytes) raises :class:`SnapshotLimitExceeded` and changes nothing: it is neither
        numbered, cached, put in the snapshot nor delivered. The check is part of the engine's
        merge, so it holds for concurrent publishes (through any member of a Guaranteed
        cluster; a Standard cluster's members each hold it for their own snapshot). The
        subjects of :data:`UNBOUNDED_SUBJECTS` are not bounded (their fields are fixed).
    """

    name: str = "engine"
    #: ``standalone`` (one node), or the cluster's ``standard`` / ``guaranteed`` delivery mode.
    delivery_mode: str = "standalone"

    @abc.abstractmethod
    async def start(self, deliver: Deliver) -> None:
        """Connect or start, then deliver every accepted message through ``deliver``."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop delivering and release resources. Idempotent."""

    @abc.abstractmethod
    async def publish(self, request: PublishRequest) -> Published:
        """Accept one message (guarantee 3). Raises :class:`EngineUnavailable` when it cannot.

        Takes the message's place in its subject's order before its first suspension: a
        session starts a connection's publishes as tasks in the order they came, without
        waiting for each other (server/core/answers.py), and relies on it for the order."""

    @abc.abstractmethod
    async def snapshot(self, subject: str) -> Snapshot | None:
        """The subject's snapshot, or None when no retained message was ever published."""

    @abc.abstractmethod
    async def position(self, subject: str) -> tuple[str, int]:
        """The subject's current (epoch, seq); seq 0 when nothing was published in this epoch."""

    @abc.abstractmethod
    async def recover(self, subject: str, since: Position) -> Recovery:
        """Messages after ``since`` (guarantee 4)."""

    @abc.abstractmethod
    async def history(self, subject: str, limit: int) -> list[Published]:
        """Up to ``limit`` most recent cached guaranteed messages, oldest first (guarantee 6)."""

    @abc.abstractmethod
    def stats(self) -> EngineStats:
        """Cheap counts for monitoring."""

    def catalog(self) -> Iterator[SubjectEntry]:
        """The subjects this node holds now (live and dormant), in no particular order; an
        engine that keeps no table lists none."""
        return iter(())

    async def remove_snapshot(self, subject: str) -> bool:
        """Forget ``subject``'s retained snapshot on every node of the cluster (the subject
        browser, ADR 051); False when it had none. Epoch and seq stay as they are: the next
        publish continues the numbering and a recovering client is not told anything. Raises
        :class:`SnapshotRemovalUnsupported` where the engine cannot do it."""
        raise SnapshotRemovalUnsupported(self.name)

    def sweep(self) -> None:  # noqa: B027 - optional hook, nothing to do by default
        """Forget expired entries and idle subjects, a bounded amount per call (guarantee 10);
        the server calls it about once a second."""

    def use_interest(self, in_use: Callable[[str], bool]) -> None:  # noqa: B027
        """``in_use(subject)``: does a session of this node subscribe to it (guarantee 9)."""

    def interest_changed(self, subject: str, present: bool) -> None:  # noqa: B027
        """The hub's first subscriber of ``subject`` arrived (``present``) or its last left: a
        worker of a multi-process server tells the subject's owner (server/workers/engine.py)."""

    def advertise(self, client_urls: list[str], monitor_urls: list[str]) -> None:  # noqa: B027
        """Tell the cluster where this node serves clients and monitoring (once bound)."""

    def cluster_status(self) -> ClusterStatus | None:
        """What this node sees of its cluster; None for a standalone engine."""
        return None

    def stream_progress(self) -> Progress | None:
        """The cluster stream's last sequence this node knows of and the one it has delivered
        through (server/cluster/isolation.py); None without a stream."""
        return None

    def member_bus(self) -> MemberBus | None:
        """Signed messages between the members (occupancy); None for a standalone engine."""
        return None


class MemberBus(Protocol):
    """What the cluster offers the server's cluster-wide services (server/occupancy.py): who is
    up, and signed messages to every member (server/cluster/link.py implements it)."""

    name: str

    def up_members(self) -> list[str]: ...

    async def publish_signed(self, subject: str, data: bytes) -> None: ...

    async def subscribe_signed(
        self, subject: str, handler: Callable[[bytes], Awaitable[None]]
    ) -> None: ...


class EngineRefusal(EngineError):
    """The one shape of the engine's refusals: ``code`` is the ErrorCode the client is answered
    with (a failed ``publish_result``, an error frame, a problem+json), ``reason`` the text that
    goes with it; ``str()`` is the reason. The admission path (server/core/publishing.py) turns
    any of them into its answer the same way."""

    code: ErrorCode

    def __init__(self, code: ErrorCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class SnapshotLimitExceeded(EngineRefusal):
    """A retained publish would leave the snapshot above a bound (guarantee 11); ``code`` is
    ``too_many_fields`` or ``snapshot_too_large``, as the publisher is answered."""


class EngineUnavailable(EngineRefusal):
    """The engine cannot accept messages right now (for example no cluster quorum): retry later."""

    code = ErrorCode.ENGINE_UNAVAILABLE
    retryable = True

    def __init__(self, reason: str) -> None:
        super().__init__(ErrorCode.ENGINE_UNAVAILABLE, reason)


class EngineFull(EngineRefusal):
    """The node holds as much as its memory bounds allow (guarantee 8): the message is refused,
    nothing else changes. ``code`` is ``too_many_subjects`` (``MaxSubjects``) or
    ``retained_bytes_exceeded`` (``MaxRetainedBytes``); retry later, when idle subjects are gone."""

    retryable = True


class SnapshotRemovalUnsupported(EngineError):
    """The engine cannot remove a retained snapshot (a Guaranteed cluster's stream keeps the
    snapshot in every record: ADR 051). Only the admin API's removal meets it (409)."""

    code = "removal_unsupported"

    def __init__(self, engine: str) -> None:
        super().__init__(f"the {engine} engine cannot remove a retained snapshot")
