"""ClusterSettings + EngineLimits -> the cluster engine of this member (its NATS node, link and
delivery mode).

It lives with the engines: the cluster engines build on the cluster package, which imports
nothing of the engines (no package cycle; tests/unit/test_import_rules.py).
"""

from __future__ import annotations

from pushgrid.config import ClusterSettings

from ..cluster.credentials import BusCredentials
from ..cluster.errors import ClusterError
from ..cluster.link import ClusterLink
from ..cluster.natsnode import NatsNode
from ..cluster.topology import BusOptions, Topology
from .base import Engine
from .jetstream import JetStreamEngine
from .limits import EngineLimits
from .standard import StandardClusterEngine


def build_cluster_engine(
    settings: ClusterSettings, limits: EngineLimits, server_name: str
) -> Engine:
    """The cluster engine of this member: its part of the settings, the engine limits (from
    EngineLimitSettings) and its name (ServerName, its tag in the cluster)."""
    topology = None
    if settings.cluster_members and settings.cluster_member is not None:
        topology = Topology.build(
            settings.cluster_members, settings.cluster_member, settings.cluster_seed_member_count
        )
    guaranteed = settings.cluster_delivery_mode == "guaranteed"
    if not settings.cluster_password:  # the settings refuse this already: never anonymous
        raise ClusterError("ClusterPassword is required with a cluster")
    credentials = BusCredentials.derive(settings.cluster_password)
    node = None
    if topology is not None and not settings.nats_servers:
        bus = BusOptions(
            credentials,
            client_host=settings.cluster_client_host,
            tls_certificate=settings.cluster_tls_certificate,
            tls_key=settings.cluster_tls_key,
            tls_ca=settings.cluster_tls_ca,
        )
        node = NatsNode(
            topology,
            settings.cluster_data_dir,
            settings.nats_server_binary,
            bus,
            jetstream=guaranteed,
            sync_interval=settings.cluster_sync_interval,
        )
    link = ClusterLink(
        server_name,
        settings.cluster_delivery_mode,
        topology,
        node,
        list(settings.nats_servers),
        credentials,
    )
    if not guaranteed:
        return StandardClusterEngine(link, limits)
    replicas = settings.cluster_stream_replicas or (
        len(topology.seeds) if topology is not None else 3
    )
    return JetStreamEngine(
        link, limits, replicas=replicas, publish_timeout=settings.cluster_publish_timeout
    )
