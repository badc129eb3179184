"""The push server's own part: client listeners and TLS, limits, entitlement, the write path."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from pushgrid.kernel.addresses import parse_address

from .fields import AddressList, check_addresses


class ServerSettings(BaseModel):
    """What the push server core (listeners, sessions, hub, transport) is configured with."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    secret_files: ClassVar[tuple[tuple[str, str], ...]] = (
        ("tls_key_password_file", "tls_key_password"),
        ("entitlement_jwt_secret_file", "entitlement_jwt_secret"),
    )

    listen: AddressList = Field(default=["*:8800"], alias="Listen")
    listen_encrypted: AddressList = Field(default=[], alias="ListenEncrypted")
    tls_certificate: Path | None = Field(default=None, alias="TLSCertificate")
    tls_key: Path | None = Field(default=None, alias="TLSKey")
    # the passphrase of an encrypted TLSKey (and MonitorTLSKey): pushgrid never prompts for it
    tls_key_password: SecretStr | None = Field(default=None, alias="TLSKeyPassword")
    tls_key_password_file: Path | None = Field(default=None, alias="TLSKeyPasswordFile")
    tls_ciphers: str | None = Field(default=None, min_length=1, alias="TLSCiphers")
    tls_min_version: Literal["1.2", "1.3"] = Field(default="1.2", alias="TLSMinVersion")
    server_name: str = Field(default_factory=socket.gethostname, alias="ServerName")
    listen_reuse_port: bool = Field(default=False, alias="ListenReusePort")
    # connections the kernel queues per client listener before accept: a member's clients all
    # reconnect at once when another member dies (the kernel caps it at net.core.somaxconn)
    listen_backlog: int = Field(default=4096, ge=1, le=65535, alias="ListenBacklog")
    publish_snapshot_message: bool = Field(default=True, alias="PublishSnapshotMessage")
    max_cached_messages_per_subject: int = Field(
        default=1000, ge=0, alias="MaxCachedMessagesPerSubject"
    )
    cache_expire_time: float = Field(default=180.0, gt=0, alias="CacheExpireTime")
    # memory bounds of the subject table (docs/configuration.md, docs/security.md); 0: no bound
    max_subjects: int = Field(default=100_000, ge=0, alias="MaxSubjects")
    max_retained_bytes: int = Field(default=256 * 1024 * 1024, ge=0, alias="MaxRetainedBytes")
    # the allocator `pushgrid server` runs on: jemalloc gives a flood's memory back (ADR 033)
    allocator: Literal["jemalloc", "malloc", "pymalloc"] = Field(
        default="jemalloc", alias="Allocator"
    )
    # a publish's msg_id is stored once within this window (0: no deduplication), at most
    # PublishDedupMaxKeys remembered per member (docs/protocol.md 5.3)
    publish_dedup_window: float = Field(default=120.0, ge=0, alias="PublishDedupWindow")
    publish_dedup_max_keys: int = Field(default=100_000, ge=0, alias="PublishDedupMaxKeys")
    max_message_size: int = Field(default=64 * 1024, ge=1, alias="MaxMessageSize")
    max_subscriptions_per_connection: int = Field(
        default=10_000, ge=1, alias="MaxSubscriptionsPerConnection"
    )
    max_connections: int = Field(default=100_000, ge=1, alias="MaxConnections")
    # Connection, HTTP, publish and auth limits and the entitlement options harden the client
    # port; every key and its default is in docs/configuration.md and docs/security.md.
    max_pending_connections: int = Field(default=4096, ge=1, alias="MaxPendingConnections")
    max_pending_connections_per_address: int = Field(
        default=2048, ge=1, alias="MaxPendingConnectionsPerAddress"
    )
    http_header_timeout: float = Field(default=10.0, gt=0, alias="HttpHeaderTimeout")
    max_http_header_size: int = Field(default=16 * 1024, ge=1024, alias="MaxHttpHeaderSize")
    max_http_headers: int = Field(default=64, ge=8, alias="MaxHttpHeaders")
    max_subjects_per_stream: int = Field(default=100, ge=1, alias="MaxSubjectsPerStream")
    max_fields_per_subject: int = Field(default=1000, ge=1, alias="MaxFieldsPerSubject")
    max_snapshot_size: int = Field(default=1024 * 1024, ge=1024, alias="MaxSnapshotSize")
    publish_rate_per_connection: float = Field(
        default=10_000.0, ge=0, alias="PublishRatePerConnection"
    )
    publish_rate_per_address: float = Field(default=20_000.0, ge=0, alias="PublishRatePerAddress")
    publish_burst: int = Field(default=10_000, ge=1, alias="PublishBurst")
    entitlement: str = Field(
        default="none", pattern=r"^(none|jwt|custom:[A-Za-z0-9_.-]+)$", alias="Entitlement"
    )
    entitlement_jwt_secret: str | None = Field(default=None, alias="EntitlementJwtSecret")
    entitlement_jwt_secret_file: Path | None = Field(default=None, alias="EntitlementJwtSecretFile")
    entitlement_jwt_public_key_file: Path | None = Field(
        default=None, alias="EntitlementJwtPublicKeyFile"
    )
    entitlement_jwt_require_exp: bool = Field(default=True, alias="EntitlementJwtRequireExp")
    entitlement_custom_timeout: float = Field(default=2.0, gt=0, alias="EntitlementCustomTimeout")
    entitlement_custom_cache_time: float = Field(
        default=30.0, ge=0, alias="EntitlementCustomCacheTime"
    )
    publish_allow: AddressList = Field(default=[], alias="PublishAllow")
    max_outbound_buffer_size: int = Field(
        default=4 * 1024 * 1024, ge=1024, alias="MaxOutboundBufferSize"
    )
    # bytes of received messages a connection may hold before they are handled: past it, its
    # socket is no longer read (and nothing more inflated) until they are (docs/security.md)
    max_inbound_buffer_size: int = Field(default=1024 * 1024, ge=1024, alias="MaxInboundBufferSize")
    # the write path: how long the loop may hold queued frames to share one write (ADR 012)
    flush_tick: float = Field(default=5.0, ge=0, le=1000, alias="FlushTick")
    keepalive_interval: float = Field(default=30.0, gt=0, alias="KeepaliveInterval")
    keepalive_timeout: float = Field(default=75.0, gt=0, alias="KeepaliveTimeout")
    shutdown_timeout: float = Field(default=5.0, ge=0, alias="ShutdownTimeout")
    slow_consumer_close_timeout: float = Field(default=5.0, ge=0, alias="SlowConsumerCloseTimeout")
    batching_time: int = Field(default=0, ge=0, le=60_000, alias="BatchingTime")
    batching_max_size: int = Field(default=0, ge=0, alias="BatchingMaxSize")
    # permessage-deflate (RFC 7692, ADR 028), negotiated when the client offers it
    per_message_deflate: bool = Field(default=True, alias="PerMessageDeflate")
    deflate_server_no_context_takeover: bool = Field(
        default=True, alias="DeflateServerNoContextTakeover"
    )
    deflate_client_no_context_takeover: bool = Field(
        default=True, alias="DeflateClientNoContextTakeover"
    )
    deflate_max_window_bits: int = Field(default=15, ge=9, le=15, alias="DeflateMaxWindowBits")
    deflate_min_size: int = Field(default=128, ge=0, alias="DeflateMinSize")
    deflate_level: int = Field(default=6, ge=1, le=9, alias="DeflateLevel")
    deflate_max_contexts: int = Field(default=1000, ge=0, alias="DeflateMaxContexts")
    # inflated bytes of compressed messages not yet whole, per client address and in all: a
    # fragment past either is refused with 1008 (docs/security.md)
    deflate_max_inflating_per_address: int = Field(
        default=8 * 1024 * 1024, ge=1, alias="DeflateMaxInflatingPerAddress"
    )
    deflate_max_inflating: int = Field(default=64 * 1024 * 1024, ge=1, alias="DeflateMaxInflating")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", alias="LogLevel"
    )

    @field_validator("listen", "listen_encrypted")
    @classmethod
    def _client_listen(cls, value: list[str]) -> list[str]:
        return check_addresses(value)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _server_consistent(self) -> ServerSettings:
        if not self.listen and not self.listen_encrypted:
            raise ValueError("set Listen or ListenEncrypted: the server needs a client port")
        if self.listen_encrypted and (self.tls_certificate is None or self.tls_key is None):
            raise ValueError("ListenEncrypted needs TLSCertificate and TLSKey")
        if self.keepalive_timeout <= self.keepalive_interval:
            raise ValueError("KeepaliveTimeout must be greater than KeepaliveInterval")
        self._inflating_consistent()
        if self.entitlement == "jwt" and not (
            self.entitlement_jwt_secret or self.entitlement_jwt_public_key_file
        ):
            raise ValueError(
                "Entitlement = jwt needs EntitlementJwtSecret or EntitlementJwtPublicKeyFile"
            )
        return self

    def _inflating_consistent(self) -> None:
        """One message of the hard frame limit must fit both inflating bounds: otherwise a
        message the limit allows would be refused by them."""
        limit = self.max_frame_size
        for key, value in (
            ("DeflateMaxInflatingPerAddress", self.deflate_max_inflating_per_address),
            ("DeflateMaxInflating", self.deflate_max_inflating),
        ):
            if value < limit:
                raise ValueError(
                    f"{key} = {value} is below the hard frame limit {limit} "
                    "(max(1 MiB, 8 x MaxMessageSize)): one compressed message must fit in it"
                )
        if self.deflate_max_inflating < self.deflate_max_inflating_per_address:
            raise ValueError(
                f"DeflateMaxInflating = {self.deflate_max_inflating} is below "
                f"DeflateMaxInflatingPerAddress = {self.deflate_max_inflating_per_address}"
            )

    @property
    def max_frame_size(self) -> int:
        """The hard frame limit: a frame may hold a message of MaxMessageSize escaped as JSON
        (up to 6 bytes a character) plus the envelope; above it a message is refused (1009)."""
        return max(1 << 20, 8 * self.max_message_size)

    @property
    def listen_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.listen]

    @property
    def listen_encrypted_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.listen_encrypted]
