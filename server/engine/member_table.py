"""What a Guaranteed (JetStream) member holds in memory per subject, and its bounds (guarantees
8-10 of :class:`~pushgrid.server.engine.base.Engine`; ADR 022).

The stream is the store: it keeps every subject's last record, so a member's per-subject state
(its head, recent positions and msg_id chain) is a cache of it. :class:`SubjectTable` orders
those subjects least recently published first and evicts idle ones from the front, at most
``sweep_batch`` per call; an evicted subject is read from the stream again when next needed, so
eviction changes no answer (snapshot, position and recovery read the same records). New
subjects beyond ``max_subjects`` and bytes beyond ``max_retained_bytes`` are refused with
:class:`EngineFull` once the idle ones are gone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from pushgrid.protocol.errors import ErrorCode
from pushgrid.protocol.sizes import message_size, utf8_len

from .base import UNBOUNDED_SUBJECTS, EngineFull, PublishRequest
from .nats_wire import Record

#: idle subjects a publish may evict inline when a bound is reached (as the memory engine)
INLINE_EVICTIONS = 16


def _nobody(subject: str) -> bool:
    return False


@dataclass(slots=True)
class _Entry:
    touched: int  # ms of the newest message of the subject this member knows
    snapshot_bytes: int


def snapshot_bytes(record: Record) -> int:
    """The record's snapshot size as MaxMessageSize counts it (0 without a snapshot)."""
    return message_size(record.sc, record.sf) if record.sc is not None else 0


def snapshot_growth(record: Record | None, request: PublishRequest) -> int:
    """How much ``request`` grows the subject's snapshot (on top of ``record``, its last one)."""
    if not request.retained:
        return 0
    if record is None or record.sc is None:
        return request.size
    growth = utf8_len(request.content) - utf8_len(record.sc)
    for name, value in request.fields.items():
        old = record.sf.get(name)
        growth += utf8_len(value) - (utf8_len(old) if old is not None else -utf8_len(name))
    return growth


class SubjectTable:
    """The member's subjects, least recently published first, with their snapshot bytes."""

    def __init__(
        self, *, max_subjects: int, max_bytes: int, expire_ms: int, sweep_batch: int
    ) -> None:
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._max_subjects = max_subjects
        self._max_bytes = max_bytes
        self._expire_ms = expire_ms
        self._sweep_batch = sweep_batch
        self.snapshot_bytes = 0
        self.in_use: Callable[[str], bool] = _nobody

    def __len__(self) -> int:
        return len(self._entries)

    def seen(self, subject: str, record: Record) -> None:
        """The member holds ``record`` as the subject's head now."""
        size = snapshot_bytes(record)
        entry = self._entries.get(subject)
        if entry is None:
            self._entries[subject] = _Entry(record.i[-1].t, size)
        else:
            self.snapshot_bytes -= entry.snapshot_bytes
            entry.snapshot_bytes = size
            entry.touched = max(entry.touched, record.i[-1].t)
            self._entries.move_to_end(subject)
        self.snapshot_bytes += size

    def admit(
        self,
        subject: str,
        growth: int,
        held: Callable[[], int],
        now: int,
        forget: Callable[[str], bool],
    ) -> None:
        """Raise :class:`EngineFull` when a publish on ``subject`` growing the member by
        ``growth`` bytes would break a bound, after evicting idle subjects inline."""
        if subject in UNBOUNDED_SUBJECTS:  # the alerts: never refused (guarantee 8)
            return
        if self._max_subjects and subject not in self._entries:
            if len(self._entries) >= self._max_subjects:
                self.evict_idle(now, INLINE_EVICTIONS, forget)
            if len(self._entries) >= self._max_subjects:
                raise EngineFull(
                    ErrorCode.TOO_MANY_SUBJECTS,
                    f"this member holds MaxSubjects ({self._max_subjects}) subjects",
                )
        if not self._max_bytes or growth <= 0 or held() + growth <= self._max_bytes:
            return
        self.evict_idle(now, INLINE_EVICTIONS, forget)
        if held() + growth > self._max_bytes:
            raise EngineFull(
                ErrorCode.RETAINED_BYTES_EXCEEDED,
                f"this member holds MaxRetainedBytes ({self._max_bytes}) bytes of snapshots "
                "and cached messages",
            )

    def sweep(self, now: int, forget: Callable[[str], bool]) -> int:
        """Evict idle subjects from the front, at most ``sweep_batch`` looked at (guarantee 10)."""
        return self.evict_idle(now, self._sweep_batch, forget)

    def evict_idle(self, now: int, budget: int, forget: Callable[[str], bool]) -> int:
        """Look at up to ``budget`` subjects from the front; evict the idle ones (nothing
        published for the expiry time, no session subscribed) that ``forget`` lets go (it
        drops the member's state of the subject, or says False while the subject is busy).
        Returns how many were evicted."""
        limit = now - self._expire_ms
        entries = self._entries
        evicted = 0
        for _ in range(budget):
            if not entries:
                break
            subject, entry = next(iter(entries.items()))
            if entry.touched >= limit:
                break  # the rest was published more recently (or looked at just now)
            if self.in_use(subject) or not forget(subject):
                entry.touched = now  # looked at: again in an expiry time
                entries.move_to_end(subject)
                continue
            del entries[subject]
            self.snapshot_bytes -= entry.snapshot_bytes
            evicted += 1
        return evicted
