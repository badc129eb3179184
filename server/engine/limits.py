"""What every engine is bounded by, from its settings part (EngineLimitSettings).

The engine builders take this and the cluster's part (ClusterSettings), never the whole
Settings (issue 24 item 6): an engine cannot read the admin API's or the JMX bridge's keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from pushgrid.config import EngineLimitSettings

from .base import DEFAULT_BOUNDS, SnapshotBounds

#: subjects the sweep looks at per call (guarantee 10): a few ms of work at most
SWEEP_BATCH = 2000


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """Every engine takes these whole (``limits=``), never unpacked into keyword arguments: a
    new limit is one field here and one read in the engine that honours it (ADR 036). The
    defaults are the settings' defaults; an engine's own construction details (its clock,
    stream, link) stay separate arguments."""

    max_cached: int = 1000  # MaxCachedMessagesPerSubject
    expire_seconds: float = 180.0  # CacheExpireTime
    dedup_window: float = 120.0  # PublishDedupWindow
    dedup_max_keys: int = 100_000  # PublishDedupMaxKeys
    bounds: SnapshotBounds = DEFAULT_BOUNDS  # MaxFieldsPerSubject, MaxSnapshotSize (guarantee 11)
    max_subjects: int = 0  # MaxSubjects (guarantee 8); 0: unbounded
    max_retained_bytes: int = 0  # MaxRetainedBytes (guarantee 8); 0: unbounded
    sweep_batch: int = SWEEP_BATCH  # guarantee 10 (not a setting: tests lower it)
    # appended to a MaxSubjects / MaxRetainedBytes refusal: whose bound it is when the two
    # are one process's share of the server's (Workers > 1, server/workers/ownership.py)
    share_note: str = ""

    @property
    def expire_ms(self) -> int:
        return int(self.expire_seconds * 1000)

    @classmethod
    def from_settings(cls, settings: EngineLimitSettings) -> EngineLimits:
        return cls(
            max_cached=settings.max_cached_messages_per_subject,
            expire_seconds=settings.cache_expire_time,
            dedup_window=settings.publish_dedup_window,
            dedup_max_keys=settings.publish_dedup_max_keys,
            bounds=SnapshotBounds(settings.max_fields_per_subject, settings.max_snapshot_size),
            max_subjects=settings.max_subjects,
            max_retained_bytes=settings.max_retained_bytes,
        )
