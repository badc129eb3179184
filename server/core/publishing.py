"""The limits every publish passes before the engine sees it, on WebSocket and HTTP alike.

- Meta-subjects (``/pushgrid/...``) are server-owned: no client publishes there, in any
  entitlement mode (they would fake the server's own statistics).
- Rate: a token bucket per connection (PublishRatePerConnection) and one per client address
  (PublishRatePerAddress), both with PublishBurst; a publish beyond them is refused
  ``rate_limited`` and loses nothing else. One fast publisher then cannot crowd the others'
  fan-out out of the event loop.
- Snapshot bounds: a retained publish with fields must leave the subject's snapshot within
  MaxFieldsPerSubject fields and MaxSnapshotSize bytes (UTF-8 of content, names and values).
  The check reads the current snapshot, so two concurrent publishes may overshoot by one
  message at most (bounded by MaxMessageSize).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pushgrid.protocol.codec import message_size
from pushgrid.protocol.errors import ErrorCode

from ..engine.base import Snapshot
from .throttle import AddressBuckets, Clock, TokenBucket

META_PREFIX = "/pushgrid/"


class SnapshotSource(Protocol):
    async def snapshot(self, subject: str) -> Snapshot | None: ...


@dataclass(frozen=True, slots=True)
class PublishLimits:
    max_fields_per_subject: int = 1000
    max_snapshot_size: int = 1024 * 1024
    rate_per_connection: float = 0.0  # publishes a second; 0 = unlimited
    rate_per_address: float = 0.0
    burst: int = 1000


@dataclass(frozen=True, slots=True)
class Refusal:
    code: ErrorCode
    reason: str


class PublishGuard:
    def __init__(
        self, limits: PublishLimits, engine: SnapshotSource, clock: Clock = time.monotonic
    ) -> None:
        self.limits = limits
        self.engine = engine
        self.clock = clock
        self.addresses = AddressBuckets(limits.rate_per_address, limits.burst, clock)

    def connection_bucket(self) -> TokenBucket:
        return TokenBucket(self.limits.rate_per_connection, self.limits.burst, self.clock())

    def reserved(self, subject: str) -> Refusal | None:
        if subject.startswith(META_PREFIX):
            return Refusal(
                ErrorCode.RESERVED_SUBJECT,
                f"subjects under {META_PREFIX} are published by the server only",
            )
        return None

    def rate(self, host: str, bucket: TokenBucket | None) -> Refusal | None:
        """Take a token from the connection's bucket (if any) and the address's."""
        if bucket is not None and not bucket.take(self.clock()):
            return Refusal(
                ErrorCode.RATE_LIMITED,
                f"above PublishRatePerConnection ({self.limits.rate_per_connection:g}/s)",
            )
        if not self.addresses.take(host):
            return Refusal(
                ErrorCode.RATE_LIMITED,
                f"above PublishRatePerAddress ({self.limits.rate_per_address:g}/s)",
            )
        return None

    async def snapshot_bounds(
        self, subject: str, content: str, fields: Mapping[str, str], retained: bool
    ) -> Refusal | None:
        """Whether the snapshot after this publish stays within the bounds."""
        if not retained or not fields:
            return None  # content alone is bounded by MaxMessageSize
        current = await self.engine.snapshot(subject)
        merged = dict(current.fields) if current is not None else {}
        merged.update(fields)
        limits = self.limits
        if len(merged) > limits.max_fields_per_subject:
            return Refusal(
                ErrorCode.TOO_MANY_FIELDS,
                f"the snapshot of {subject} would hold {len(merged)} fields, above "
                f"MaxFieldsPerSubject {limits.max_fields_per_subject}",
            )
        size = message_size(content, merged)
        if size > limits.max_snapshot_size:
            return Refusal(
                ErrorCode.SNAPSHOT_TOO_LARGE,
                f"the snapshot of {subject} would be {size} bytes, above MaxSnapshotSize "
                f"{limits.max_snapshot_size}",
            )
        return None
