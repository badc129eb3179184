"""Cluster topology from the settings: members, seeds, this member, and its NATS node's config.

Pure code: no sockets, no processes. ``ClusterMembers`` is the ordered list of every member's
cluster endpoint (``host:port``), the same on every member. A member at ``host:P`` uses three
ports, as the spec's "up to three other ports for inter-cluster communication":

- ``P``: NATS routes between the members' NATS nodes (must be reachable from the other members);
- ``P+1``: the NATS client port the member itself connects to (bound to loopback unless
  ``ClusterClientHost`` says otherwise; password required);
- ``P+2``: the NATS node's monitoring port (``/healthz``, ``/jsz``, ``/routez``; loopback).

The first ``ClusterSeedMemberCount`` members are seeds: their NATS nodes run JetStream and form
its RAFT quorum. The others join without JetStream, so they can come and go at any time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pushgrid.config import default_seed_count
from pushgrid.kernel.addresses import parse_address, resolve_self

from .credentials import CLIENT_USER, ROUTE_USER, BusCredentials

ROUTE_OFFSET = 0
CLIENT_OFFSET = 1
MONITOR_OFFSET = 2
NATS_CLUSTER_NAME = "pushgrid"


@dataclass(frozen=True, slots=True)
class TopologyMember:
    """One entry of ``ClusterMembers``."""

    index: int  # 1-based position in the list
    host: str
    port: int
    seed: bool

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def node_name(self) -> str:
        """The NATS server name of this member's node (stable: JetStream peers are named)."""
        return f"pushgrid-m{self.index}"

    @property
    def client_url(self) -> str:
        return f"nats://{self.host}:{self.port + CLIENT_OFFSET}"

    @property
    def monitor_url(self) -> str:
        return f"http://{self.host}:{self.port + MONITOR_OFFSET}"


@dataclass(frozen=True, slots=True)
class Topology:
    members: tuple[TopologyMember, ...]
    own_index: int

    @staticmethod
    def build(entries: list[str], own: str, seed_count: int | None) -> Topology:
        seeds = seed_count if seed_count is not None else default_seed_count(len(entries))
        index = resolve_self(entries, own)
        members = tuple(
            TopologyMember(i, *parse_address(entry), seed=i <= seeds)
            for i, entry in enumerate(entries, start=1)
        )
        return Topology(members, index)

    @property
    def me(self) -> TopologyMember:
        return self.members[self.own_index - 1]

    @property
    def seeds(self) -> tuple[TopologyMember, ...]:
        return tuple(m for m in self.members if m.seed)

    @property
    def quorum(self) -> int:
        return len(self.seeds) // 2 + 1

    def fingerprint(self) -> str:
        """Identifies the member list and seed count: members with different ones disagree."""
        text = json.dumps([[m.address for m in self.members], len(self.seeds)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class BusOptions:
    """How this member's NATS node guards the bus (docs/cluster.md, "Authentication")."""

    credentials: BusCredentials
    client_host: str = "127.0.0.1"  # where P+1 binds: loopback unless configured otherwise
    tls_certificate: Path | None = None  # TLS on the routes (and the client port) when set
    tls_key: Path | None = None
    tls_ca: Path | None = None  # the CA the other members' route certificates must chain to


def nats_config(
    topology: Topology,
    store_dir: Path,
    bus: BusOptions,
    jetstream: bool,
    sync_interval: str = "always",
) -> str:
    """The nats-server configuration of this member's node (JSON is valid NATS config).

    Never anonymous: clients (this member) log in as ``pushgrid-member`` and routes as
    ``pushgrid-route``, with passwords derived from ``ClusterPassword`` (hex: safe in a URL).
    ``no_advertise`` keeps the node from telling clients about the other nodes' client ports:
    each member uses its own node only. ``jetstream`` is false in Standard delivery mode,
    which needs no storage at all. ``sync_interval`` is JetStream's fsync policy (``always`` or
    an interval)."""
    me = topology.me
    secrets = bus.credentials
    auth = f"{ROUTE_USER}:{secrets.route_password}@"
    routes = [
        f"nats-route://{auth}{m.host}:{m.port + ROUTE_OFFSET}"
        for m in topology.members
        if m.index != me.index
    ]
    cluster: dict[str, object] = {
        "name": NATS_CLUSTER_NAME,
        "listen": f"{me.host}:{me.port + ROUTE_OFFSET}",
        "routes": routes,
        # Members come and go (elasticity): keep retrying routes to absent ones quietly.
        "connect_retries": 0,
        "no_advertise": True,
        "authorization": {"user": ROUTE_USER, "password": secrets.route_password, "timeout": 2},
    }
    config: dict[str, object] = {
        "server_name": me.node_name,
        "host": bus.client_host,
        "port": me.port + CLIENT_OFFSET,
        "http": f"127.0.0.1:{me.port + MONITOR_OFFSET}",
        "authorization": {
            "users": [{"user": CLIENT_USER, "password": secrets.client_password}],
            "timeout": 2,
        },
        # A subject of 1,024 UTF-8 bytes is 1,366 base64 characters; leave room for headers.
        "max_control_line": 8192,
        "max_payload": 8 * 1024 * 1024,
        "cluster": cluster,
    }
    if bus.tls_certificate is not None and bus.tls_key is not None:
        tls: dict[str, object] = {
            "cert_file": str(bus.tls_certificate),
            "key_file": str(bus.tls_key),
            "timeout": 2,
        }
        if bus.tls_ca is not None:
            tls["ca_file"] = str(bus.tls_ca)
        # Routes verify each other's certificates (mutual TLS) against ClusterTLSCA.
        cluster["tls"] = {**tls, "verify": bus.tls_ca is not None}
        config["tls"] = tls
    if me.seed and jetstream:
        config["jetstream"] = {
            "store_dir": str(store_dir),
            "max_memory_store": 256 * 1024 * 1024,
            "sync_interval": sync_interval,
        }
    return json.dumps(config, indent=2)
