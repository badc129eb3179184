"""The publish idempotency table: (subject, msg_id) -> the position the message got.

Each engine keeps one per node (guarantee 7 in base.py). An entry lives ``window`` seconds from
the time the message was accepted, never less: a full table (``max_keys`` live entries, about
200 bytes each, 20 MiB for the default 100,000) refuses publishes with a **new** msg_id
(:meth:`DedupTable.admit`, ``dedup_table_full``) instead of forgetting the oldest. Forgetting
them let one publisher of throw-away ids evict another client's live id, whose retry was then
stored twice (issue 34). A cluster member still notes the ids of messages other members
accepted (they are stored already), so a member's table holds at most ``max_keys`` ids per
member that admits publishes. Pure code: the caller passes the time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from pushgrid.protocol.errors import ErrorCode

from .base import EngineFull, Published, PublishRequest


@dataclass(frozen=True, slots=True)
class Original:
    """Where the first message with a msg_id went: its epoch, seq and receive time (ms)."""

    epoch: str
    seq: int
    ts: int


class DedupTable:
    def __init__(self, window: float, max_keys: int) -> None:
        self.window_ms = int(window * 1000)
        self.max_keys = max_keys
        self._entries: OrderedDict[tuple[str, str], Original] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, subject: str, msg_id: str, now_ms: int) -> Original | None:
        """The original of ``msg_id`` on ``subject`` if it was accepted within the window."""
        original = self._entries.get((subject, msg_id))
        if original is None or original.ts < now_ms - self.window_ms:
            return None
        return original

    def admit(self, subject: str, msg_id: str | None, now_ms: int) -> None:
        """Raise :class:`EngineFull` (``dedup_table_full``) when ``msg_id`` is new and the table
        already holds ``max_keys`` live ids: it could not be remembered for the whole window
        without forgetting someone else's. A repeat of a live id always passes (it is answered
        as a duplicate), and so does a publish without a msg_id."""
        if msg_id is None or self.window_ms <= 0 or self.max_keys <= 0:
            return
        if len(self._entries) < self.max_keys or self.get(subject, msg_id, now_ms) is not None:
            return
        self.expire(now_ms)
        if len(self._entries) >= self.max_keys:
            raise EngineFull(
                ErrorCode.DEDUP_TABLE_FULL,
                f"{len(self._entries)} msg_ids of the last {self.window_ms / 1000:g} s are held "
                "(PublishDedupMaxKeys); retry later or publish without a msg_id",
            )

    def add(self, subject: str, msg_id: str, original: Original, now_ms: int) -> None:
        """Remember ``msg_id``'s original (the first one wins) for the whole window, then
        forget what is too old. Never evicts a live id: :meth:`admit` keeps the table bounded."""
        if self.window_ms <= 0 or self.max_keys <= 0:
            return
        key = (subject, msg_id)
        if self.get(subject, msg_id, now_ms) is None:
            self._entries.pop(key, None)
            self._entries[key] = original
        self.expire(now_ms)

    def expire(self, now_ms: int) -> None:
        """Forget the entries older than the window (they are in insertion order)."""
        limit = now_ms - self.window_ms
        entries = self._entries
        while entries:
            key, original = next(iter(entries.items()))
            if original.ts >= limit:
                return
            del entries[key]


def duplicate_of(request: PublishRequest, original: Original) -> Published:
    """The answer to a repeated msg_id: the request, at its original's position."""
    return Published(
        subject=request.subject,
        content=request.content,
        fields=request.fields,
        retained=request.retained,
        qos=request.qos,
        epoch=original.epoch,
        seq=original.seq,
        ts=original.ts,
        duplicate=True,
    )
