"""The monitoring part: the monitoring port (Jolokia, /stats, /metrics), meta-subjects, hot
subjects and the per-second metrics archive."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pushgrid.kernel.addresses import parse_address
from pushgrid.protocol.subjects import pattern_error

from .fields import AddressList, NameList, check_addresses


class MonitoringSettings(BaseModel):
    """What the monitoring listeners, the sampler's views and the archive writer need."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    secret_files: ClassVar[tuple[tuple[str, str], ...]] = (
        ("monitor_password_file", "monitor_password"),
    )

    monitor_http_listen: AddressList = Field(default=["127.0.0.1:8900"], alias="MonitorHTTP.Listen")
    monitor_https_listen: AddressList = Field(default=[], alias="MonitorHTTPS.Listen")
    monitor_tls_certificate: Path | None = Field(default=None, alias="MonitorTLSCertificate")
    monitor_tls_key: Path | None = Field(default=None, alias="MonitorTLSKey")
    monitor_username: str | None = Field(default=None, alias="MonitorUsername")
    monitor_password: str | None = Field(default=None, alias="MonitorPassword")
    monitor_password_file: Path | None = Field(default=None, alias="MonitorPasswordFile")
    # failed monitoring logins from one address before a back-off, and the longest back-off
    auth_failures_before_backoff: int = Field(default=10, ge=1, alias="AuthFailuresBeforeBackoff")
    auth_backoff_max: float = Field(default=30.0, gt=0, alias="AuthBackoffMax")
    # The monitoring port is a trust boundary (docs/security.md). Host names a request may
    # name (IP addresses always pass: DNS rebinding needs a name); "*" turns the check off. A
    # browser's request from another origin is refused in any case.
    monitor_allowed_hosts: NameList = Field(default=["localhost"], alias="MonitorAllowedHosts")
    monitor_max_pending_connections: int = Field(
        default=128, ge=1, alias="MonitorMaxPendingConnections"
    )
    monitor_max_pending_connections_per_address: int = Field(
        default=32, ge=1, alias="MonitorMaxPendingConnectionsPerAddress"
    )
    monitor_max_request_body: int = Field(
        default=64 * 1024, ge=1024, le=64 * 1024 * 1024, alias="MonitorMaxRequestBody"
    )
    jolokia_max_bulk_requests: int = Field(default=100, ge=1, alias="JolokiaMaxBulkRequests")
    jolokia_max_answer_bytes: int = Field(
        default=32 * 1024 * 1024, ge=64 * 1024, alias="JolokiaMaxAnswerBytes"
    )
    meta_subject_interval: float = Field(default=5.0, ge=0, alias="MetaSubjectInterval")
    # canaries (server/canary.py, ADR 049): one a second on /pushgrid/canary, followed by every
    # member through its delivery path; off: no canary, no "degraded: delivery"
    canary_enabled: bool = Field(default=True, alias="Canary.Enabled")
    # TEST ONLY (ADR 049): while this file exists the member's delivery callback discards every
    # message (a wedged delivery task that still accepts publishes). Never set it in production.
    test_wedge_delivery_file: Path | None = Field(default=None, alias="Test.WedgeDeliveryFile")
    # the hot-subject rankings: their length, the sketch's memory and the rates' time constant
    hot_subjects_top_n: int = Field(default=20, ge=0, le=1000, alias="HotSubjects.TopN")
    hot_subjects_capacity: int = Field(
        default=1000, ge=10, le=1_000_000, alias="HotSubjects.Capacity"
    )
    hot_subjects_window: float = Field(default=10.0, ge=1, le=3600, alias="HotSubjects.Window")
    # delivery accounting (server/core/accounting.py, ADR 054): rows listed by the views (the
    # most deliveries due) and subjects counted one by one (the totals count every subject)
    accounting_top_subjects: int = Field(default=20, ge=0, le=1000, alias="Accounting.TopSubjects")
    accounting_max_subjects: int = Field(
        default=10_000, ge=10, le=1_000_000, alias="Accounting.MaxSubjects"
    )
    # watched subjects (server/core/watch.py): patterns with statistics of their own, their
    # cap, and how many subjects the subject -> patterns cache holds
    watched_subjects_patterns: NameList = Field(default=[], alias="WatchedSubjects.Patterns")
    watched_subjects_max_patterns: int = Field(
        default=100, ge=0, le=10_000, alias="WatchedSubjects.MaxPatterns"
    )
    watched_subjects_cache_size: int = Field(
        default=100_000, ge=100, le=10_000_000, alias="WatchedSubjects.CacheSize"
    )
    metrics_archive: Path | None = Field(default=Path("data/archive"), alias="MetricsArchive")
    metrics_archive_retention: int = Field(default=35, ge=0, alias="MetricsArchiveRetention")

    @field_validator("monitor_http_listen", "monitor_https_listen")
    @classmethod
    def _monitor_listen(cls, value: list[str]) -> list[str]:
        return check_addresses(value)

    @field_validator("metrics_archive", mode="before")
    @classmethod
    def _empty_path(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.strip() in ("", "none", "off") else value

    @model_validator(mode="after")
    def _monitoring_consistent(self) -> MonitoringSettings:
        if (self.monitor_username is None) != (self.monitor_password is None):
            raise ValueError("set both MonitorUsername and MonitorPassword, or neither")
        _check_watched(self.watched_subjects_patterns, self.watched_subjects_max_patterns)
        return self

    @property
    def monitor_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.monitor_http_listen]

    @property
    def monitor_tls_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.monitor_https_listen]


def _check_watched(patterns: list[str], cap: int) -> None:
    """WatchedSubjects.Patterns: valid, distinct, within WatchedSubjects.MaxPatterns."""
    for pattern in patterns:
        reason = pattern_error(pattern)
        if reason is not None:
            raise ValueError(f"WatchedSubjects.Patterns: {pattern!r}: {reason}")
    if len(set(patterns)) != len(patterns):
        raise ValueError("WatchedSubjects.Patterns lists a pattern twice")
    if len(patterns) > cap:
        raise ValueError(
            f"WatchedSubjects.Patterns lists {len(patterns)} patterns, above"
            f" WatchedSubjects.MaxPatterns ({cap})"
        )
