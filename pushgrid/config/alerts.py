"""The alert rules' and the live traces' parts (both run in the admin API)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class AlertsSettings(BaseModel):
    """What the alert evaluator and its notifiers (webhook, meta-subject) need."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    alerts_interval: float = Field(default=1.0, gt=0, le=3600, alias="Alerts.Interval")
    alerts_webhook: str | None = Field(default=None, alias="Alerts.Webhook")
    alerts_webhook_retries: int = Field(default=3, ge=0, le=20, alias="Alerts.WebhookRetries")
    alerts_publish: bool = Field(default=True, alias="Alerts.Publish")

    @field_validator("alerts_webhook")
    @classmethod
    def _webhook(cls, value: str | None) -> str | None:
        if value is not None and not value.strip().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s):// URL")
        return value.strip() if value is not None and value.strip() else None


class TraceSettings(BaseModel):
    """What the live trace service needs."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    trace_buffer_size: int = Field(default=500, ge=1, le=100_000, alias="Trace.BufferSize")
    trace_max_active: int = Field(default=20, ge=1, le=1000, alias="Trace.MaxActive")
    trace_idle_timeout: float = Field(default=300.0, gt=0, alias="Trace.IdleTimeout")
