"""The cluster as the monitoring views show it: MBean ``pushgrid:type=Cluster``, Prometheus
gauges, the meta-subject ``/pushgrid/<node>/cluster`` and the ``/health`` status.

Every view formats the same :class:`~server.cluster.status.ClusterStatus`; a standalone server
reports a one-member cluster that has its quorum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from prometheus_client.core import GaugeMetricFamily, Metric

from ..cluster.status import ClusterStatus, MemberView
from .mbeans import Attribute, MBean, ObjectName


class ClusterSource(Protocol):
    def cluster_status(self) -> ClusterStatus: ...


def member_dict(member: MemberView) -> dict[str, Any]:
    return {
        "name": member.name,
        "index": member.index,
        "address": member.address,
        "seed": member.seed,
        "state": member.state,
        "self": member.is_self,
        "clientUrls": list(member.client_urls),
        "monitorUrls": list(member.monitor_urls),
        "lastSeenSeconds": member.last_seen_seconds,
    }


def status_dict(status: ClusterStatus) -> dict[str, Any]:
    return {
        "engine": status.engine,
        "mode": status.mode,
        "health": status.health,
        "healthReasons": [reason.as_dict() for reason in status.verdict.reasons],
        "quorum": status.quorum,
        "quorumSize": status.quorum_size,
        "seeds": status.seeds,
        "membersUp": status.members_up,
        "members": [member_dict(m) for m in status.members],
        "natsConnected": status.nats_connected,
        "metaLeader": status.meta_leader,
        "streamLeader": status.stream_leader,
        "replicas": [{"name": r.name, "current": r.current, "lag": r.lag} for r in status.replicas],
        "streamMessages": status.stream_messages,
        "configMismatch": list(status.config_mismatch),
    }


def cluster_bean(source: ClusterSource, wrap: Callable[[Callable[[], Any]], Any]) -> MBean:
    def attribute(name: str, type_: str, description: str, key: str) -> Attribute:
        return Attribute(
            name, type_, description, wrap(lambda: status_dict(source.cluster_status())[key])
        )

    return MBean(
        ObjectName.parse("pushgrid:type=Cluster"),
        "The cluster as this member sees it",
        [
            attribute("Engine", "java.lang.String", "memory or nats", "engine"),
            attribute("Mode", "java.lang.String", "standalone, standard or guaranteed", "mode"),
            attribute("Health", "java.lang.String", "ok, degraded or down", "health"),
            attribute(
                "HealthReasons",
                "java.util.List",
                "Why not ok: code, member, text (docs/monitoring.md, Health)",
                "healthReasons",
            ),
            attribute("Quorum", "boolean", "This member can store messages", "quorum"),
            attribute("QuorumSize", "int", "Seed members that must be up", "quorumSize"),
            attribute("Seeds", "int", "Seed members (JetStream RAFT peers)", "seeds"),
            attribute("MembersUp", "int", "Members whose heartbeats arrive", "membersUp"),
            attribute("Members", "java.util.List", "Every member and its state", "members"),
            attribute("NatsConnected", "boolean", "Connected to NATS", "natsConnected"),
            attribute("MetaLeader", "java.lang.String", "JetStream meta leader", "metaLeader"),
            attribute(
                "StreamLeader", "java.lang.String", "JetStream stream leader", "streamLeader"
            ),
            attribute("Replicas", "java.util.List", "Stream replicas: current, lag", "replicas"),
            attribute("StreamMessages", "long", "Records in the stream", "streamMessages"),
            attribute(
                "ConfigMismatch",
                "java.util.List",
                "Members with other ClusterMembers",
                "configMismatch",
            ),
        ],
        [],
    )


def cluster_metrics(status: ClusterStatus) -> Iterator[Metric]:
    info = GaugeMetricFamily(
        "pushgrid_cluster_info",
        "Engine and delivery mode of this member",
        labels=["engine", "mode"],
    )
    info.add_metric([status.engine, status.mode], 1)
    yield info
    yield GaugeMetricFamily(
        "pushgrid_cluster_quorum",
        "1 when this member can store messages (has its quorum or needs none)",
        value=1 if status.quorum else 0,
    )
    yield GaugeMetricFamily(
        "pushgrid_cluster_members", "Members configured or heard", value=len(status.members)
    )
    yield GaugeMetricFamily(
        "pushgrid_cluster_members_up", "Members whose heartbeats arrive", value=status.members_up
    )
    health = GaugeMetricFamily(
        "pushgrid_health",
        "1 for this member's health status (ok, degraded or down), 0 for the others",
        labels=["status"],
    )
    for value in ("ok", "degraded", "down"):
        health.add_metric([value], 1 if status.health == value else 0)
    yield health
    member = GaugeMetricFamily(
        "pushgrid_cluster_member_up", "1 per member that is up", labels=["member", "seed"]
    )
    for view in status.members:
        member.add_metric(
            [view.name, "true" if view.seed else "false"], 1 if view.state == "up" else 0
        )
    yield member
    lag = GaugeMetricFamily(
        "pushgrid_cluster_replica_lag", "Stream replica lag in records", labels=["replica"]
    )
    for replica in status.replicas:
        lag.add_metric([replica.name], replica.lag)
    yield lag


def meta_fields(status: ClusterStatus) -> dict[str, str]:
    """Fields of the meta-subject ``/pushgrid/<node>/cluster`` (content: the health)."""
    verdict = status.verdict
    fields = {
        "health": verdict.status,
        "reasons": "; ".join(reason.text for reason in verdict.reasons),
        "mode": status.mode,
        "quorum": "true" if status.quorum else "false",
        "members_up": str(status.members_up),
        "members": str(len(status.members)),
        "stream_leader": status.stream_leader or "",
        "meta_leader": status.meta_leader or "",
    }
    for view in status.members:
        fields[f"member.{view.name}"] = view.state
    return fields
