"""The cluster's part: the engine, the members, the cluster bus (NATS) and its security."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pushgrid.kernel.addresses import parse_address, resolve_self

from .fields import AddressList, check_addresses


def default_seed_count(members: int) -> int:
    """Spec: 3 seeds for clusters of three and four members, 5 for five and more."""
    return 5 if members >= 5 else 3


class ClusterSettings(BaseModel):
    """What the engine registry, the cluster engines and the member's NATS node need."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    secret_files: ClassVar[tuple[tuple[str, str], ...]] = (
        ("cluster_password_file", "cluster_password"),
    )

    engine: Literal["memory", "nats"] | None = Field(default=None, alias="Engine")
    cluster_members: AddressList = Field(default=[], alias="ClusterMembers")
    cluster_member: str | None = Field(default=None, alias="ClusterMember")
    cluster_seed_member_count: int | None = Field(default=None, alias="ClusterSeedMemberCount")
    cluster_delivery_mode: Literal["standard", "guaranteed"] = Field(
        default="guaranteed", alias="ClusterDeliveryMode"
    )
    cluster_stream_replicas: int | None = Field(
        default=None, ge=1, le=5, alias="ClusterStreamReplicas"
    )
    # The cluster bus is closed: its secret and TLS files (docs/cluster.md "Authentication").
    cluster_password: str | None = Field(default=None, alias="ClusterPassword")
    cluster_password_file: Path | None = Field(default=None, alias="ClusterPasswordFile")
    cluster_client_host: str = Field(default="127.0.0.1", min_length=1, alias="ClusterClientHost")
    cluster_tls_certificate: Path | None = Field(default=None, alias="ClusterTLSCertificate")
    cluster_tls_key: Path | None = Field(default=None, alias="ClusterTLSKey")
    cluster_tls_ca: Path | None = Field(default=None, alias="ClusterTLSCA")
    cluster_data_dir: Path = Field(default=Path("data/cluster"), alias="ClusterDataDir")
    cluster_publish_timeout: float = Field(default=15.0, gt=0, alias="ClusterPublishTimeout")
    # seconds a Guaranteed member may not see its cluster before it closes its clients with
    # 4007 and refuses new ones (server/cluster/isolation.py); 0 never does
    cluster_isolation_timeout: float = Field(default=2.0, ge=0, alias="ClusterIsolationTimeout")
    # JetStream's fsync policy on the seeds: "always" (fsync before each acknowledgement: an
    # "ok" survives a power loss of the seeds; ADR 023) or an interval ("2m", "10s", "100ms";
    # nats-server's own default is 2m). docs/cluster.md, "Durability"
    cluster_sync_interval: str = Field(
        default="always", pattern=r"^(always|[1-9][0-9]*(ms|s|m|h))$", alias="ClusterSyncInterval"
    )
    nats_servers: AddressList = Field(default=[], alias="NatsServers")
    nats_server_binary: str = Field(default="nats-server", alias="NatsServerBinary")

    @field_validator("cluster_delivery_mode", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("cluster_members")
    @classmethod
    def _cluster_addresses(cls, value: list[str]) -> list[str]:
        check_addresses(value)
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

    @model_validator(mode="after")
    def _cluster_consistent(self) -> ClusterSettings:
        check_cluster(self)
        return self

    @property
    def engine_name(self) -> str:
        """The engine in use: ``Engine`` if set, else ``nats`` for a cluster, else ``memory``."""
        if self.engine is not None:
            return self.engine
        return "nats" if self.cluster_members or self.nats_servers else "memory"


def check_cluster(settings: ClusterSettings) -> None:
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


def _check_members(settings: ClusterSettings, members: list[str], seeds: int | None) -> None:
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


def _check_bus(settings: ClusterSettings) -> None:
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
