"""The occupancy part: cluster-wide subscriber counts, their events and the signed webhook."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pushgrid.protocol.subjects import pattern_error

from .fields import NameList


class OccupancySettings(BaseModel):
    """What the occupancy service (server/occupancy.py) and its webhook sender need."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    secret_files: ClassVar[tuple[tuple[str, str], ...]] = (
        ("occupancy_webhook_secret_file", "occupancy_webhook_secret"),
    )

    # how often a member reports its changed counts to the others (and checks who left)
    occupancy_interval: float = Field(default=0.5, gt=0, le=60, alias="Occupancy.Interval")
    # occupied/vacated events on the meta-subject /pushgrid/occupancy
    occupancy_events: bool = Field(default=True, alias="Occupancy.Events")
    occupancy_webhook: str | None = Field(default=None, alias="Occupancy.Webhook")
    occupancy_webhook_secret: str | None = Field(default=None, alias="Occupancy.WebhookSecret")
    occupancy_webhook_secret_file: Path | None = Field(
        default=None, alias="Occupancy.WebhookSecretFile"
    )
    occupancy_webhook_queue: int = Field(
        default=10_000, ge=1, le=1_000_000, alias="Occupancy.WebhookQueue"
    )
    occupancy_webhook_retries: int = Field(default=5, ge=0, le=20, alias="Occupancy.WebhookRetries")
    occupancy_webhook_timeout: float = Field(
        default=5.0, gt=0, le=120, alias="Occupancy.WebhookTimeout"
    )

    # presence (which sessions, with their client ids) for the subjects matching these patterns
    occupancy_presence_patterns: NameList = Field(default=[], alias="Occupancy.PresencePatterns")
    # sessions listed per subject on each member (beyond: counted, not listed)
    occupancy_presence_max: int = Field(default=100, ge=1, le=10_000, alias="Occupancy.PresenceMax")
    # join/leave events on the meta-subject /pushgrid/presence
    occupancy_presence_events: bool = Field(default=True, alias="Occupancy.PresenceEvents")
    # join/leave events on the occupancy webhook too (Occupancy.Webhook)
    occupancy_presence_webhook: bool = Field(default=False, alias="Occupancy.PresenceWebhook")

    # Validator names are unique across the parts: Settings inherits them all, and a same name in
    # another part would replace the other's validator (tests/unit/test_settings_parts.py).
    @field_validator("occupancy_webhook")
    @classmethod
    def _occupancy_webhook(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if not value.strip().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s):// URL")
        return value.strip()

    @field_validator("occupancy_presence_patterns")
    @classmethod
    def _occupancy_presence_patterns(cls, values: list[str]) -> list[str]:
        for pattern in values:
            reason = pattern_error(pattern)
            if reason is not None:
                raise ValueError(f"Occupancy.PresencePatterns: {pattern!r}: {reason}")
        return values

    @model_validator(mode="after")
    def _occupancy_webhook_signed(self) -> OccupancySettings:
        if self.occupancy_webhook and not self.occupancy_webhook_secret:
            raise ValueError(
                "Occupancy.Webhook needs Occupancy.WebhookSecret (or Occupancy.WebhookSecretFile):"
                " every request is signed"
            )
        return self
