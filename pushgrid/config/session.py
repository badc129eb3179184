"""The session policy's part: what a client session is told and bounded by."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SessionSettings(BaseModel):
    """What ``SessionPolicy`` (welcome, message size, subscriptions), the keepalive timer
    (``KeepalivePolicy``) and the client port's HTTP endpoints read."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    publish_snapshot_message: bool = Field(default=True, alias="PublishSnapshotMessage")
    max_message_size: int = Field(default=64 * 1024, ge=1, alias="MaxMessageSize")
    max_subscriptions_per_connection: int = Field(
        default=10_000, ge=1, alias="MaxSubscriptionsPerConnection"
    )
    max_subjects_per_stream: int = Field(default=100, ge=1, alias="MaxSubjectsPerStream")
    keepalive_interval: float = Field(default=30.0, gt=0, alias="KeepaliveInterval")
    keepalive_timeout: float = Field(default=75.0, gt=0, alias="KeepaliveTimeout")

    @model_validator(mode="after")
    def _keepalive_consistent(self) -> SessionSettings:
        if self.keepalive_timeout <= self.keepalive_interval:
            raise ValueError("KeepaliveTimeout must be greater than KeepaliveInterval")
        return self

    @property
    def max_frame_size(self) -> int:
        """The hard frame limit: a frame may hold a message of MaxMessageSize escaped as JSON
        (up to 6 bytes a character) plus the envelope; above it a message is refused (1009)."""
        return max(1 << 20, 8 * self.max_message_size)
