"""The one Settings object, loaded from ``pushgrid.conf`` and ``PUSHGRID_<KEY>`` variables.

File syntax: one ``Key = value`` per line, ``#`` starts a comment line, lists are comma
separated. Key names follow the spec (``Listen``, ``PublishSnapshotMessage``, ...). The variable
for a key is ``PUSHGRID_`` + the key in upper case with ``.`` replaced by ``_``
(``MonitorHTTP.Listen`` -> ``PUSHGRID_MONITORHTTP_LISTEN``) and wins over the file.
Any unknown key or bad value stops start-up with a :class:`ConfigError` naming where it came
from. Nothing else in pushgrid reads the environment.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from pushgrid.protocol.exceptions import PushgridError

from .addresses import parse_address, resolve_self
from .redaction import redact_setting, redact_text

ENV_PREFIX = "PUSHGRID_"
MEMBER_URL_SCHEMES = ("http://", "https://", "service:jmx:")


class ConfigError(PushgridError):
    """A configuration problem, with the place it came from (file:line or variable)."""

    code = "config"


def _split_list(value: Any) -> Any:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def default_seed_count(members: int) -> int:
    """Spec: 3 seeds for clusters of three and four members, 5 for five and more."""
    return 5 if members >= 5 else 3


def _check_addresses(values: list[str]) -> list[str]:
    for value in values:
        parse_address(value)
    return values


AddressList = Annotated[list[str], BeforeValidator(_split_list)]


class Settings(BaseSettings):
    """Every server setting. The alias is the key in pushgrid.conf (see docs/configuration.md)."""

    model_config = SettingsConfigDict(
        extra="forbid", populate_by_name=True, validate_default=True, frozen=True
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
    engine: Literal["memory", "nats"] | None = Field(default=None, alias="Engine")
    # -- cluster (docs/cluster.md) ---------------------------------------------------------
    cluster_members: AddressList = Field(default=[], alias="ClusterMembers")
    cluster_member: str | None = Field(default=None, alias="ClusterMember")
    cluster_seed_member_count: int | None = Field(default=None, alias="ClusterSeedMemberCount")
    cluster_delivery_mode: Literal["standard", "guaranteed"] = Field(
        default="guaranteed", alias="ClusterDeliveryMode"
    )
    cluster_stream_replicas: int | None = Field(
        default=None, ge=1, le=5, alias="ClusterStreamReplicas"
    )
    cluster_password: str | None = Field(default=None, alias="ClusterPassword")
    # --- the cluster bus is closed (issue 22; docs/cluster.md "Authentication") ---
    cluster_password_file: Path | None = Field(default=None, alias="ClusterPasswordFile")
    cluster_client_host: str = Field(default="127.0.0.1", min_length=1, alias="ClusterClientHost")
    cluster_tls_certificate: Path | None = Field(default=None, alias="ClusterTLSCertificate")
    cluster_tls_key: Path | None = Field(default=None, alias="ClusterTLSKey")
    cluster_tls_ca: Path | None = Field(default=None, alias="ClusterTLSCA")
    # --- end of the cluster bus keys ---
    cluster_data_dir: Path = Field(default=Path("data/cluster"), alias="ClusterDataDir")
    cluster_publish_timeout: float = Field(default=15.0, gt=0, alias="ClusterPublishTimeout")
    # seconds a Guaranteed member may not see its cluster before it closes its clients with
    # 4007 and refuses new ones (server/cluster/isolation.py); 0 never does
    cluster_isolation_timeout: float = Field(default=2.0, ge=0, alias="ClusterIsolationTimeout")
    # JetStream's fsync policy on the seeds: "always" (fsync before each acknowledgement) or an
    # interval ("2m", "10s", "100ms"; nats-server's own default is 2m). docs/cluster.md
    cluster_sync_interval: str = Field(
        default="2m", pattern=r"^(always|[1-9][0-9]*(ms|s|m|h))$", alias="ClusterSyncInterval"
    )
    listen_reuse_port: bool = Field(default=False, alias="ListenReusePort")
    # connections the kernel queues per client listener before accept: a member's clients all
    # reconnect at once when another member dies (the kernel caps it at net.core.somaxconn)
    listen_backlog: int = Field(default=4096, ge=1, le=65535, alias="ListenBacklog")
    nats_servers: AddressList = Field(default=[], alias="NatsServers")
    nats_server_binary: str = Field(default="nats-server", alias="NatsServerBinary")
    publish_snapshot_message: bool = Field(default=True, alias="PublishSnapshotMessage")
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
    max_message_size: int = Field(default=64 * 1024, ge=1, alias="MaxMessageSize")
    max_subscriptions_per_connection: int = Field(
        default=10_000, ge=1, alias="MaxSubscriptionsPerConnection"
    )
    max_connections: int = Field(default=100_000, ge=1, alias="MaxConnections")
    # -- Hardening (issue 13): connection, HTTP, publish and auth limits; entitlement options.
    # Every key and its default is documented in docs/configuration.md and docs/security.md.
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
    entitlement_jwt_require_exp: bool = Field(default=True, alias="EntitlementJwtRequireExp")
    entitlement_custom_timeout: float = Field(default=2.0, gt=0, alias="EntitlementCustomTimeout")
    entitlement_custom_cache_time: float = Field(
        default=30.0, ge=0, alias="EntitlementCustomCacheTime"
    )
    auth_failures_before_backoff: int = Field(default=10, ge=1, alias="AuthFailuresBeforeBackoff")
    auth_backoff_max: float = Field(default=30.0, gt=0, alias="AuthBackoffMax")
    entitlement_jwt_secret_file: Path | None = Field(default=None, alias="EntitlementJwtSecretFile")
    monitor_password_file: Path | None = Field(default=None, alias="MonitorPasswordFile")
    max_outbound_buffer_size: int = Field(
        default=4 * 1024 * 1024, ge=1024, alias="MaxOutboundBufferSize"
    )
    # -- write path performance (issue 12, ADR 012) --
    flush_tick: float = Field(default=5.0, ge=0, le=1000, alias="FlushTick")
    keepalive_interval: float = Field(default=30.0, gt=0, alias="KeepaliveInterval")
    keepalive_timeout: float = Field(default=75.0, gt=0, alias="KeepaliveTimeout")
    shutdown_timeout: float = Field(default=5.0, ge=0, alias="ShutdownTimeout")
    slow_consumer_close_timeout: float = Field(default=5.0, ge=0, alias="SlowConsumerCloseTimeout")
    batching_time: int = Field(default=0, ge=0, le=60_000, alias="BatchingTime")
    batching_max_size: int = Field(default=0, ge=0, alias="BatchingMaxSize")
    entitlement: str = Field(
        default="none", pattern=r"^(none|jwt|custom:[A-Za-z0-9_.-]+)$", alias="Entitlement"
    )
    entitlement_jwt_secret: str | None = Field(default=None, alias="EntitlementJwtSecret")
    entitlement_jwt_public_key_file: Path | None = Field(
        default=None, alias="EntitlementJwtPublicKeyFile"
    )
    publish_allow: AddressList = Field(default=[], alias="PublishAllow")
    monitor_http_listen: AddressList = Field(default=["127.0.0.1:8900"], alias="MonitorHTTP.Listen")
    monitor_https_listen: AddressList = Field(default=[], alias="MonitorHTTPS.Listen")
    monitor_tls_certificate: Path | None = Field(default=None, alias="MonitorTLSCertificate")
    monitor_tls_key: Path | None = Field(default=None, alias="MonitorTLSKey")
    monitor_username: str | None = Field(default=None, alias="MonitorUsername")
    monitor_password: str | None = Field(default=None, alias="MonitorPassword")
    # --- the monitoring port as a trust boundary (issue 22 item 2; docs/security.md) ----------
    # Host names a request may name (IP addresses always pass: DNS rebinding needs a name);
    # "*" turns the check off. A browser's request from another origin is refused in any case.
    monitor_allowed_hosts: Annotated[list[str], BeforeValidator(_split_list)] = Field(
        default=["localhost"], alias="MonitorAllowedHosts"
    )
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
    # --- end of the monitoring port boundary ----------------------------------------------------
    # --- JMX bridge (issue 14; docs/monitoring.md "JMX") ---------------------------------------
    jmx_listen: str = Field(default="127.0.0.1:9010", alias="JmxListen")
    jmx_username: str | None = Field(default=None, alias="JmxUsername")
    jmx_password: str | None = Field(default=None, alias="JmxPassword")
    jmx_password_file: Path | None = Field(default=None, alias="JmxPasswordFile")
    jmx_access_file: Path | None = Field(default=None, alias="JmxAccessFile")
    jmx_refresh_interval: float = Field(default=1.0, gt=0, le=1.0, alias="JmxRefreshInterval")
    jmx_java: str = Field(default="java", alias="JmxJava")
    jmx_tls: bool = Field(default=False, alias="JmxTLS")
    jmx_tls_key_store: Path | None = Field(default=None, alias="JmxTLSKeyStore")
    jmx_tls_key_store_password: str | None = Field(default=None, alias="JmxTLSKeyStorePassword")
    jmx_tls_need_client_auth: bool = Field(default=False, alias="JmxTLSNeedClientAuth")
    jmx_tls_trust_store: Path | None = Field(default=None, alias="JmxTLSTrustStore")
    jmx_tls_trust_store_password: str | None = Field(default=None, alias="JmxTLSTrustStorePassword")

    @field_validator("jmx_listen")
    @classmethod
    def _jmx_address(cls, value: str) -> str:
        _host, port = parse_address(value)
        if port == 0:
            raise ValueError("JmxListen needs a fixed port (JMX clients must know it)")
        return value

    @model_validator(mode="after")
    def _jmx_consistent(self) -> Settings:
        if (self.jmx_username is None) != (self.jmx_password is None):
            raise ValueError("set both JmxUsername and JmxPassword, or neither")
        if self.jmx_tls and (self.jmx_tls_key_store is None or not self.jmx_tls_key_store_password):
            raise ValueError("JmxTLS needs JmxTLSKeyStore and JmxTLSKeyStorePassword")
        if self.jmx_tls_need_client_auth and self.jmx_tls_trust_store is None:
            raise ValueError("JmxTLSNeedClientAuth needs JmxTLSTrustStore")
        return self

    # --- end JMX bridge ------------------------------------------------------------------------
    meta_subject_interval: float = Field(default=5.0, ge=0, alias="MetaSubjectInterval")
    # --- operators' features (issue 17): hot subjects, alert rules, live trace -------------
    hot_subjects_top_n: int = Field(default=20, ge=0, le=1000, alias="HotSubjects.TopN")
    hot_subjects_capacity: int = Field(
        default=1000, ge=10, le=1_000_000, alias="HotSubjects.Capacity"
    )
    hot_subjects_window: float = Field(default=10.0, ge=1, le=3600, alias="HotSubjects.Window")
    alerts_interval: float = Field(default=1.0, gt=0, le=3600, alias="Alerts.Interval")
    alerts_webhook: str | None = Field(default=None, alias="Alerts.Webhook")
    alerts_webhook_retries: int = Field(default=3, ge=0, le=20, alias="Alerts.WebhookRetries")
    alerts_publish: bool = Field(default=True, alias="Alerts.Publish")
    trace_buffer_size: int = Field(default=500, ge=1, le=100_000, alias="Trace.BufferSize")
    trace_max_active: int = Field(default=20, ge=1, le=1000, alias="Trace.MaxActive")
    trace_idle_timeout: float = Field(default=300.0, gt=0, alias="Trace.IdleTimeout")
    # --- end of issue 17 settings -----------------------------------------------------------
    metrics_archive: Path | None = Field(default=Path("data/archive"), alias="MetricsArchive")
    metrics_archive_retention: int = Field(default=35, ge=0, alias="MetricsArchiveRetention")
    database: str = Field(default="sqlite:///data/pushgrid.db", alias="Database")
    stats_warehouse: Path = Field(default=Path("data/warehouse"), alias="StatsWarehouse")
    spark_master: str = Field(default="local[*]", alias="SparkMaster")
    stats_interval: float = Field(default=300.0, ge=0, alias="StatsInterval")
    # --- statistics pipeline on a Spark cluster (issue 16) ---
    # the address executors reach the driver at (a cluster on other hosts needs a routable one)
    spark_driver_host: str = Field(default="127.0.0.1", min_length=1, alias="SparkDriverHost")
    spark_driver_memory: str = Field(
        default="2g", pattern=r"^[1-9][0-9]*[kmgKMG]$", alias="SparkDriverMemory"
    )
    admin_listen: str = Field(default="127.0.0.1:8080", alias="Admin.Listen")
    admin_members: AddressList = Field(
        default=["local=http://127.0.0.1:8900"], alias="Admin.Members"
    )
    admin_member_username: str | None = Field(default=None, alias="Admin.MemberUsername")
    admin_member_password: str | None = Field(default=None, alias="Admin.MemberPassword")
    admin_stale_after: float = Field(default=900.0, gt=0, alias="Admin.StaleAfter")
    # --- admin API trust (issue 22; docs/security.md "Admin API") ---
    # discovered members whose monitoring URL matches get the reporting member's credentials
    admin_discover_allow: Annotated[list[str], BeforeValidator(_split_list)] = Field(
        default=[], alias="Admin.DiscoverAllow"
    )
    # registered members' passwords are encrypted at rest with a key from one of these
    admin_secret_key: str | None = Field(default=None, alias="Admin.SecretKey")
    admin_secret_key_file: Path = Field(
        default=Path("data/admin-secret.key"), alias="Admin.SecretKeyFile"
    )
    # --- end of the admin API trust keys ---
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", alias="LogLevel"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Values come only from load_settings(), which tracks where each one came from.
        return (init_settings,)

    @model_validator(mode="before")
    @classmethod
    def _secrets_from_files(cls, data: Any) -> Any:
        """``EntitlementJwtSecretFile`` / ``MonitorPasswordFile``: the secret is the file's
        content (one trailing newline dropped), so it need not sit in the shared config."""
        if not isinstance(data, dict):
            return data
        for file_key, key in (
            ("entitlement_jwt_secret_file", "entitlement_jwt_secret"),
            ("monitor_password_file", "monitor_password"),
            ("cluster_password_file", "cluster_password"),
            ("tls_key_password_file", "tls_key_password"),
        ):
            path = data.get(file_key)
            if path in (None, ""):
                continue
            fields = cls.model_fields
            file_alias, alias = fields[file_key].alias, fields[key].alias
            if data.get(key) not in (None, ""):
                raise ValueError(f"set {alias} or {file_alias}, not both")
            try:
                secret = Path(path).read_text(encoding="utf-8").removesuffix("\n")
            except (OSError, UnicodeDecodeError) as exc:
                raise ValueError(
                    f"{file_alias} = {path}: cannot read the secret file: {exc}"
                ) from None
            if not secret:
                raise ValueError(f"{file_alias} = {path}: the secret file is empty")
            data = {**data, key: secret}
        return data

    @field_validator("metrics_archive", mode="before")
    @classmethod
    def _empty_path(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.strip() in ("", "none", "off") else value

    @field_validator("alerts_webhook")
    @classmethod
    def _webhook(cls, value: str | None) -> str | None:
        if value is not None and not value.strip().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s):// URL")
        return value.strip() if value is not None and value.strip() else None

    @field_validator("admin_listen")
    @classmethod
    def _admin_address(cls, value: str) -> str:
        parse_address(value)
        return value

    @field_validator("admin_members")
    @classmethod
    def _members(cls, values: list[str]) -> list[str]:
        for value in values:
            name, sep, url = value.partition("=")
            if not sep or not name.strip() or not url.strip().startswith(MEMBER_URL_SCHEMES):
                raise ValueError(
                    f"{value!r} is not name=http(s)://host:port or name=service:jmx:... (a member)"
                )
        return values

    @field_validator("listen", "listen_encrypted", "monitor_http_listen", "monitor_https_listen")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        return _check_addresses(value)

    @field_validator("cluster_delivery_mode", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("cluster_members")
    @classmethod
    def _cluster_addresses(cls, value: list[str]) -> list[str]:
        _check_addresses(value)
        if len({parse_address(v) for v in value}) != len(value):
            raise ValueError("a member is listed twice")
        return value

    @field_validator("nats_servers")
    @classmethod
    def _nats_urls(cls, value: list[str]) -> list[str]:
        for url in value:
            if not url.startswith(("nats://", "tls://")):
                raise ValueError(f"{url!r} is not a nats:// or tls:// URL")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if not self.listen and not self.listen_encrypted:
            raise ValueError("set Listen or ListenEncrypted: the server needs a client port")
        if self.listen_encrypted and (self.tls_certificate is None or self.tls_key is None):
            raise ValueError("ListenEncrypted needs TLSCertificate and TLSKey")
        if self.monitor_https_listen and not (
            (self.monitor_tls_certificate or self.tls_certificate)
            and (self.monitor_tls_key or self.tls_key)
        ):
            raise ValueError("MonitorHTTPS.Listen needs MonitorTLSCertificate and MonitorTLSKey")
        if (self.monitor_username is None) != (self.monitor_password is None):
            raise ValueError("set both MonitorUsername and MonitorPassword, or neither")
        if self.keepalive_timeout <= self.keepalive_interval:
            raise ValueError("KeepaliveTimeout must be greater than KeepaliveInterval")
        if self.entitlement == "jwt" and not (
            self.entitlement_jwt_secret or self.entitlement_jwt_public_key_file
        ):
            raise ValueError(
                "Entitlement = jwt needs EntitlementJwtSecret or EntitlementJwtPublicKeyFile"
            )
        _check_cluster(self)
        return self

    @property
    def engine_name(self) -> str:
        """The engine in use: ``Engine`` if set, else ``nats`` for a cluster, else ``memory``."""
        if self.engine is not None:
            return self.engine
        return "nats" if self.cluster_members or self.nats_servers else "memory"

    @property
    def listen_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.listen]

    @property
    def listen_encrypted_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.listen_encrypted]

    @property
    def monitor_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.monitor_http_listen]

    @property
    def monitor_tls_addresses(self) -> list[tuple[str, int]]:
        return [parse_address(a) for a in self.monitor_https_listen]


def _check_cluster(settings: Settings) -> None:
    """Cluster keys that contradict each other stop start-up, naming the key."""
    members = settings.cluster_members
    seeds = settings.cluster_seed_member_count
    if seeds is not None and seeds not in (3, 5):
        raise ValueError(f"ClusterSeedMemberCount must be 3 or 5, not {seeds}")
    if settings.engine == "memory" and (members or settings.nats_servers):
        raise ValueError("Engine = memory cannot run a cluster: remove ClusterMembers/NatsServers")
    if settings.engine_name != "nats":
        return
    if not members and not settings.nats_servers:
        raise ValueError("Engine = nats needs ClusterMembers (or NatsServers)")
    if members:
        _check_members(settings, members, seeds)
    _check_bus(settings)


def _check_members(settings: Settings, members: list[str], seeds: int | None) -> None:
    if settings.cluster_member is None:
        raise ValueError(
            "ClusterMember: say which entry of ClusterMembers this member is "
            "(its position, 1-based, or its host:port)"
        )
    try:
        resolve_self(members, settings.cluster_member)
    except ValueError as exc:
        raise ValueError(f"ClusterMember: {exc}") from None
    needed = seeds if seeds is not None else default_seed_count(len(members))
    if settings.cluster_delivery_mode == "guaranteed" and len(members) < needed:
        raise ValueError(
            f"ClusterDeliveryMode = Guaranteed needs at least {needed} ClusterMembers "
            f"(the seed members; ClusterSeedMemberCount), got {len(members)}"
        )


def _check_bus(settings: Settings) -> None:
    """The cluster bus's own keys: its secret and its TLS files."""
    if not settings.cluster_password:
        raise ValueError(
            "ClusterPassword: required with ClusterMembers or NatsServers (the same on every "
            "member): members authenticate to NATS and sign their heartbeats with it; set "
            "ClusterPassword or ClusterPasswordFile"
        )
    if (settings.cluster_tls_certificate is None) != (settings.cluster_tls_key is None):
        raise ValueError("set both ClusterTLSCertificate and ClusterTLSKey, or neither")
    if settings.cluster_tls_ca is not None and settings.cluster_tls_certificate is None:
        raise ValueError("ClusterTLSCA needs ClusterTLSCertificate and ClusterTLSKey")


@dataclass(frozen=True)
class _Origin:
    where: str  # "file:line" or "environment variable NAME"


def _keys() -> dict[str, str]:
    """Config key (case-insensitive) -> field name."""
    return {(info.alias or name).lower(): name for name, info in Settings.model_fields.items()}


def env_name(key: str) -> str:
    return ENV_PREFIX + key.upper().replace(".", "_")


def read_config_file(path: Path) -> dict[str, tuple[str, _Origin]]:
    """Parse ``Key = value`` lines; raise :class:`ConfigError` naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text: {exc.reason}") from None
    keys = _keys()
    values: dict[str, tuple[str, _Origin]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{path}:{number}"
        key, sep, value = stripped.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{where}: expected 'Key = value', got {stripped!r}")
        field = keys.get(key.lower())
        if field is None:
            raise ConfigError(f"{where}: unknown key {key!r} (see docs/configuration.md)")
        if field in values:
            raise ConfigError(f"{where}: {key} is set twice (first at {values[field][1].where})")
        values[field] = (value.strip(), _Origin(where))
    return values


def read_environment(environ: Mapping[str, str]) -> dict[str, tuple[str, _Origin]]:
    by_env = {env_name(info.alias or name): name for name, info in Settings.model_fields.items()}
    values: dict[str, tuple[str, _Origin]] = {}
    for variable, value in environ.items():
        if not variable.startswith(ENV_PREFIX):
            continue
        field = by_env.get(variable)
        if field is None:
            raise ConfigError(f"environment variable {variable}: unknown pushgrid setting")
        values[field] = (value, _Origin(f"environment variable {variable}"))
    return values


def load_settings(
    path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Build the Settings: defaults < file < environment < keyword overrides (tests, CLI)."""
    raw: dict[str, tuple[Any, _Origin]] = {}
    if path is not None:
        raw.update(read_config_file(path))
    raw.update(read_environment(os.environ if environ is None else environ))
    for name, value in overrides.items():
        raw[name] = (value, _Origin(f"argument {name}"))
    data = {name: value for name, (value, _) in raw.items()}
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, raw)) from None


def _origin_of(
    message: str, raw: Mapping[str, tuple[Any, _Origin]], aliases: Mapping[str, str]
) -> str:
    """Where the key a cross-key message starts with was set ("configuration" if nowhere)."""
    first = message.split(maxsplit=1)[0].rstrip(":") if message else ""
    for name, alias in aliases.items():
        if alias == first and name in raw:
            return raw[name][1].where
    return "configuration"


def _describe(exc: ValidationError, raw: Mapping[str, tuple[Any, _Origin]]) -> str:
    aliases = {name: info.alias or name for name, info in Settings.model_fields.items()}
    lines = []
    for error in exc.errors():
        loc = error["loc"][0] if error["loc"] else None
        message = error["msg"].removeprefix("Value error, ")
        if isinstance(loc, str) and loc in raw:
            value, origin = raw[loc]
            key = aliases.get(loc, loc)
            shown = redact_setting(key, value)  # an error message is configuration shown too
            if isinstance(value, str) and value and shown != value:
                message = message.replace(value, str(shown))
            lines.append(f"{origin.where}: {key} = {shown!r}: {redact_text(message)}")
        elif isinstance(loc, str) and loc in aliases:
            lines.append(f"{aliases[loc]}: {message}")
        else:
            lines.append(f"{_origin_of(message, raw, aliases)}: {message}")
    return "\n".join(lines)
