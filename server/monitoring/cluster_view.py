"""The cluster as the monitoring views show it: MBean ``pushgrid:type=Cluster``, Prometheus
gauges, the meta-subject ``/pushgrid/<node>/cluster`` and the ``/health`` status.

Every view formats the same :class:`~server.cluster.status.ClusterStatus`; a standalone server
reports a one-member cluster that has its quorum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import msgspec
from prometheus_client.core import GaugeMetricFamily, Metric

from pushgrid.ops import names
from pushgrid.ops.cluster import ClusterDocument, ClusterMember, HealthReason, Replica

from ..cluster.status import ClusterStatus, MemberView
from .mbeans import MBean, ObjectName, document_attributes


class ClusterSource(Protocol):
    def cluster_status(self) -> ClusterStatus: ...


def cluster_member(member: MemberView) -> ClusterMember:
    return ClusterMember(
        name=member.name,
        index=member.index,
        address=member.address,
        seed=member.seed,
        state=member.state,
        is_self=member.is_self,
        client_urls=list(member.client_urls),
        monitor_urls=list(member.monitor_urls),
        last_seen_seconds=member.last_seen_seconds,
    )


def cluster_document(status: ClusterStatus) -> ClusterDocument:
    """The Cluster MBean's document (pushgrid/ops/cluster.py)."""
    return ClusterDocument(
        engine=status.engine,
        mode=status.mode,
        health=status.health,
        health_reasons=[HealthReason(**reason.as_dict()) for reason in status.verdict.reasons],
        quorum=status.quorum,
        quorum_size=status.quorum_size,
        seeds=status.seeds,
        members_up=status.members_up,
        members=[cluster_member(m) for m in status.members],
        nats_connected=status.nats_connected,
        meta_leader=status.meta_leader,
        stream_leader=status.stream_leader,
        replicas=[Replica(r.name, r.current, r.lag) for r in status.replicas],
        stream_messages=status.stream_messages,
        config_mismatch=list(status.config_mismatch),
    )


def status_dict(status: ClusterStatus) -> dict[str, Any]:
    """The same document with camelCase keys, as ``/stats`` shows it."""
    document: dict[str, Any] = msgspec.to_builtins(cluster_document(status))
    return {key[0].lower() + key[1:]: value for key, value in document.items()}


def cluster_bean(source: ClusterSource, wrap: Callable[[Callable[[], Any]], Any]) -> MBean:
    return MBean(
        ObjectName.parse(names.CLUSTER),
        "The cluster as this member sees it",
        document_attributes(
            ClusterDocument, lambda: cluster_document(source.cluster_status()), wrap
        ),
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
