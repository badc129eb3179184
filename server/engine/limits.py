"""What every engine is bounded by, from the push server's settings part (ServerSettings).

The engine builders take this and the cluster's part (ClusterSettings), never the whole
Settings (issue 24 item 6): an engine cannot read the admin API's or the JMX bridge's keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from pushgrid.config import ServerSettings

from .base import SnapshotBounds


@dataclass(frozen=True, slots=True)
class EngineLimits:
    max_cached: int  # MaxCachedMessagesPerSubject
    expire_seconds: float  # CacheExpireTime
    dedup_window: float  # PublishDedupWindow
    dedup_max_keys: int  # PublishDedupMaxKeys
    bounds: SnapshotBounds  # MaxFieldsPerSubject, MaxSnapshotSize (guarantee 11)
    max_subjects: int  # MaxSubjects (guarantee 8)
    max_retained_bytes: int  # MaxRetainedBytes (guarantee 8)

    @classmethod
    def from_settings(cls, settings: ServerSettings) -> EngineLimits:
        return cls(
            max_cached=settings.max_cached_messages_per_subject,
            expire_seconds=settings.cache_expire_time,
            dedup_window=settings.publish_dedup_window,
            dedup_max_keys=settings.publish_dedup_max_keys,
            bounds=SnapshotBounds(settings.max_fields_per_subject, settings.max_snapshot_size),
            max_subjects=settings.max_subjects,
            max_retained_bytes=settings.max_retained_bytes,
        )
