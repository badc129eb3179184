"""The meta leader a seed's heartbeat reports, read from its node's /jsz (cluster/natsnode.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from pathlib import Path

from pushgrid.server.cluster.credentials import BusCredentials
from pushgrid.server.cluster.natsnode import NatsNode
from pushgrid.server.cluster.topology import MONITOR_OFFSET, BusOptions, Topology, TopologyMember


async def _jsz_server(leader: str) -> tuple[asyncio.Server, int]:
    """A monitoring port answering every request with a /jsz document naming ``leader``."""
    body = json.dumps({"meta_cluster": {"leader": leader}}).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
        writer.write(head.encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    return server, port


def test_the_heartbeat_reads_the_leader_without_building_an_ssl_context_each_time(
    ssl_contexts_built: list[ssl.SSLContext], tmp_path: Path
) -> None:
    """Each heartbeat (once a second) asks; an SSL context per request loads the CA bundle,
    20-110 ms of the member's event loop, stalling its publishes and deliveries."""
    built = ssl_contexts_built

    async def ask() -> list[str]:
        server, port = await _jsz_server("pushgrid-m2")
        async with server:
            me = TopologyMember(1, "127.0.0.1", port - MONITOR_OFFSET, seed=True)
            bus = BusOptions(BusCredentials.derive("secret"))
            node = NatsNode(Topology((me,), 1), tmp_path, "nats-server", bus, jetstream=True)
            return [await node.meta_leader() for _ in range(5)]

    assert asyncio.run(ask()) == ["pushgrid-m2"] * 5
    assert len(built) <= 1, f"{len(built)} SSL contexts for 5 heartbeats"


def test_no_leader_when_the_monitoring_port_does_not_answer(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    me = TopologyMember(1, "127.0.0.1", port - MONITOR_OFFSET, seed=True)
    node = NatsNode(
        Topology((me,), 1),
        tmp_path,
        "nats-server",
        BusOptions(BusCredentials.derive("s")),
        jetstream=True,
    )
    assert asyncio.run(node.meta_leader()) == ""
