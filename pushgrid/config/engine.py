"""The engine limits' part: what every engine is bounded by (server/engine/limits.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EngineLimitSettings(BaseModel):
    """What ``EngineLimits.from_settings`` copies: the cache, deduplication, snapshot and
    memory bounds of the subject table (guarantees 8 and 11); the hub's ``DeltaLimits`` read
    the snapshot and memory bounds too."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    max_cached_messages_per_subject: int = Field(
        default=1000, ge=0, alias="MaxCachedMessagesPerSubject"
    )
    cache_expire_time: float = Field(default=180.0, gt=0, alias="CacheExpireTime")
    # memory bounds of the subject table (docs/configuration.md, docs/security.md); 0: no bound
    max_subjects: int = Field(default=100_000, ge=0, alias="MaxSubjects")
    max_retained_bytes: int = Field(default=256 * 1024 * 1024, ge=0, alias="MaxRetainedBytes")
    # a publish's msg_id is stored once within this window (0: no deduplication), at most
    # PublishDedupMaxKeys remembered per member (docs/protocol.md 5.3)
    publish_dedup_window: float = Field(default=120.0, ge=0, alias="PublishDedupWindow")
    publish_dedup_max_keys: int = Field(default=100_000, ge=0, alias="PublishDedupMaxKeys")
    max_fields_per_subject: int = Field(default=1000, ge=1, alias="MaxFieldsPerSubject")
    max_snapshot_size: int = Field(default=1024 * 1024, ge=1024, alias="MaxSnapshotSize")
