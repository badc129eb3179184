"""The Cluster MBean (``pushgrid:type=Cluster``): the cluster as one member sees it.

The admin API reads every attribute of it to discover members, merge the cluster's picture and
judge each member's health; the entries of ``Members``, ``HealthReasons`` and ``Replicas`` are
typed here too (their keys are camelCase, as ``/stats`` shows them).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from .attributes import LIST, STRING, java


class HealthReason(msgspec.Struct, frozen=True):
    """Why a member is not ``ok`` (docs/monitoring.md, "Health")."""

    code: str
    member: str
    text: str


class ClusterMember(msgspec.Struct, rename="camel", frozen=True, kw_only=True):
    """One entry of ``Members``: a member as this member sees it."""

    name: str
    index: int
    address: str
    seed: bool
    state: str  # up | down | unknown
    is_self: bool = msgspec.field(name="self")
    client_urls: list[str]
    monitor_urls: list[str]
    last_seen_seconds: float | None


class Replica(msgspec.Struct, frozen=True):
    """One JetStream stream replica: whether it is current and its lag in records."""

    name: str
    current: bool
    lag: int


class ClusterDocument(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """Every attribute of the Cluster MBean, in its order."""

    engine: Annotated[str, java(STRING, "memory or nats")]
    mode: Annotated[str, java(STRING, "standalone, standard or guaranteed")]
    health: Annotated[str, java(STRING, "ok, degraded or down")]
    health_reasons: Annotated[
        list[HealthReason],
        java(LIST, "Why not ok: code, member, text (docs/monitoring.md, Health)"),
    ]
    quorum: Annotated[bool, java("boolean", "This member can store messages")]
    quorum_size: Annotated[int, java("int", "Seed members that must be up")]
    seeds: Annotated[int, java("int", "Seed members (JetStream RAFT peers)")]
    members_up: Annotated[int, java("int", "Members whose heartbeats arrive")]
    members: Annotated[list[ClusterMember], java(LIST, "Every member and its state")]
    nats_connected: Annotated[bool, java("boolean", "Connected to NATS")]
    meta_leader: Annotated[str | None, java(STRING, "JetStream meta leader")]
    stream_leader: Annotated[str | None, java(STRING, "JetStream stream leader")]
    replicas: Annotated[list[Replica], java(LIST, "Stream replicas: current, lag")]
    stream_messages: Annotated[int, java("long", "Records in the stream")]
    config_mismatch: Annotated[list[str], java(LIST, "Members with other ClusterMembers")]
