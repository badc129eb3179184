"""The cluster bus is closed (issue 22 item 1), on real members with their real nats-servers.

Before: ``printf 'CONNECT {}\\r\\nSUB pg.> 1\\r\\nPING\\r\\n' | nc HOST P+1`` read every client's
publish and a forged ``PUB`` reached WebSocket subscribers; a forged heartbeat on
``pg.members`` made the admin API "discover" a member and send it the reporting member's Basic
credentials; ``nats.conf`` (holding the cluster password) was written 0644.
"""

from __future__ import annotations

import asyncio
import json
import socket
import stat
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import msgspec
import nats
import pytest
from nats.aio.client import Client as Nats

from pushgrid.server.cluster.announcement import (
    MEMBERS_SUBJECT,
    Announcement,
    encode_announcement,
)
from pushgrid.server.cluster.credentials import CLIENT_USER, SIGNATURE_HEADER, BusCredentials
from pushgrid.server.engine.nats_wire import STANDARD_PREFIX, subject_token

from .cluster import CLUSTER_PASSWORD, Cluster, cluster_status, free_port_block
from .pgtest import (
    AdminHarness,
    ServerProcess,
    WsClient,
    free_port,
    http_publish,
    self_signed_certificate,
)

pytestmark = pytest.mark.timeout(180)

SECRETS = BusCredentials.derive(CLUSTER_PASSWORD)


def nats_answer(host: str, port: int, connect: dict[str, object], then: str = "") -> str:
    """What a NATS server says to a raw client: INFO, then our CONNECT (+ ``then``) and PING."""
    with socket.create_connection((host, port), timeout=5) as sock:
        received = b""
        while b"\r\n" not in received:
            received += sock.recv(4096)
        sock.sendall(f"CONNECT {json.dumps(connect)}\r\n{then}PING\r\n".encode())
        while b"PONG" not in received and b"-ERR" not in received:
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += chunk
    return received.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes = Cluster(tmp_path_factory.mktemp("bus"), configured=2, mode="Standard")
    try:
        yield nodes.start(1, 2)
    finally:
        nodes.kill_all()


def client_port(cluster: Cluster, index: int) -> int:
    return int(cluster.endpoints[index - 1].rpartition(":")[2]) + 1


@pytest.fixture
async def member_bus(bus: Cluster) -> AsyncIterator[Nats]:
    """A connection with member 1's NATS login (what a member has), for signing tests."""
    nc = await nats.connect(
        f"nats://127.0.0.1:{client_port(bus, 1)}",
        user=CLIENT_USER,
        password=SECRETS.client_password,
        connect_timeout=5,
        max_reconnect_attempts=0,
    )
    try:
        yield nc
    finally:
        await nc.close()


def heartbeat(name: str, monitor_url: str) -> bytes:
    return encode_announcement(
        Announcement(name, 0, "x", ["http://127.0.0.1:1"], [monitor_url], "standard", 0.0)
    )


async def test_anonymous_and_wrong_logins_are_refused_and_a_forged_publish_never_arrives(
    bus: Cluster,
) -> None:
    port = client_port(bus, 1)
    topic = f"/bus/{uuid.uuid4().hex[:8]}"
    forged = msgspec.json.encode({"o": "evil-1", "c": "forged"}).decode()
    pub = f"PUB {STANDARD_PREFIX}{subject_token(topic)} {len(forged)}\r\n{forged}\r\n"
    reader = await WsClient.connect(bus.member(2))
    try:
        await reader.subscribe(topic)
        anonymous = nats_answer("127.0.0.1", port, {}, f"SUB pg.> 1\r\n{pub}")
        wrong = nats_answer("127.0.0.1", port, {"user": CLIENT_USER, "pass": "wrong"}, pub)
        route_user = nats_answer(  # the route login is no client login either
            "127.0.0.1", port, {"user": "pushgrid-route", "pass": SECRETS.route_password}, pub
        )
        for answer in (anonymous, wrong, route_user):
            assert "-ERR 'Authorization Violation'" in answer, answer
            assert "PONG" not in answer
            assert "MSG " not in answer
        # The routes are closed too: an anonymous client on the route port is refused.
        route_port = port - 1
        assert "-ERR" in nats_answer("127.0.0.1", route_port, {}, "")
        # Nothing forged arrived: the first message the subscriber gets is the real one.
        assert (await http_publish(bus.member(1), topic, "real")).status_code == 200
        [first] = await reader.messages(1, topic)
        assert first["content"] == "real"
    finally:
        await reader.close()


async def test_a_heartbeat_without_the_cluster_secret_is_ignored(
    bus: Cluster, member_bus: Nats
) -> None:
    evil = f"evil-{uuid.uuid4().hex[:6]}"
    wrong = BusCredentials.derive("not-the-cluster-password")
    payload = heartbeat(evil, "http://127.0.0.1:9")
    await member_bus.publish(MEMBERS_SUBJECT, payload)  # unsigned
    await member_bus.publish(
        MEMBERS_SUBJECT, payload, headers={SIGNATURE_HEADER: wrong.sign(MEMBERS_SUBJECT, payload)}
    )
    # A correctly signed one after them, on the same connection (NATS keeps its order): once
    # the members list it, they have handled (and dropped) the forgeries before it.
    probe = f"probe-{uuid.uuid4().hex[:6]}"
    signed = heartbeat(probe, "http://127.0.0.1:9")
    await member_bus.publish(
        MEMBERS_SUBJECT, signed, headers={SIGNATURE_HEADER: SECRETS.sign(MEMBERS_SUBJECT, signed)}
    )
    await member_bus.flush()
    for index in (1, 2):
        for _ in range(100):
            names = {m["name"] for m in cluster_status(bus.member(index))["members"]}
            if probe in names:
                break
            await asyncio.sleep(0.1)
        assert probe in names, names
        assert evil not in names, names


def test_the_node_config_is_private_and_the_client_port_loopback(
    tmp_path: Path,
) -> None:
    """A member at 127.0.0.2: its routes bind there, its NATS client port binds 127.0.0.1 only,
    and its nats.conf is 0600 even when a stale 0666 copy was there before."""
    base = free_port_block()
    data = tmp_path / "nats-data"
    stale = data / "pushgrid-m1" / "nats.conf"
    stale.parent.mkdir(parents=True)
    stale.write_text("stale")
    stale.chmod(0o666)
    member = ServerProcess(
        tmp_path,
        {
            "ClusterMembers": f"127.0.0.2:{base}",
            "ClusterMember": 1,
            "ClusterDeliveryMode": "Standard",
            "ClusterPassword": CLUSTER_PASSWORD,
            "ClusterDataDir": str(data),
            "MetricsArchive": "",
            "MetaSubjectInterval": 0,
        },
    )
    try:
        member.start()
        assert stat.S_IMODE(stale.stat().st_mode) == 0o600
        assert stat.S_IMODE(stale.parent.stat().st_mode) == 0o700
        config = json.loads(stale.read_text())
        assert config["host"] == "127.0.0.1"
        assert CLUSTER_PASSWORD not in stale.read_text()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.2", base + 1), timeout=5).close()
        assert "Authorization Violation" in nats_answer("127.0.0.1", base + 1, {})
    finally:
        member.kill()


class CaptureServer:
    """An HTTP server standing in for a stranger's "monitoring port": it records each
    request's Authorization header and answers 401."""

    def __init__(self) -> None:
        self.port = free_port()
        self.authorizations: list[str | None] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> CaptureServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        authorization = None
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.lower() == "authorization":
                authorization = value.strip()
            if name.lower() == "content-length":
                length = int(value)
        await reader.readexactly(length)
        self.authorizations.append(authorization)
        writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()


async def test_the_admin_api_sends_credentials_only_to_allowed_discovered_members(
    bus: Cluster, member_bus: Nats, tmp_path: Path
) -> None:
    """Even a signed heartbeat (a member with the secret but a wrong or hostile monitoring
    URL) does not make the admin API hand out the monitoring password: only URLs on
    Admin.DiscoverAllow get it."""
    async with CaptureServer() as stranger:
        name = f"stranger-{uuid.uuid4().hex[:6]}"
        url = f"http://127.0.0.1:{stranger.port}"
        payload = heartbeat(name, url)
        await member_bus.publish(
            MEMBERS_SUBJECT,
            payload,
            headers={SIGNATURE_HEADER: SECRETS.sign(MEMBERS_SUBJECT, payload)},
        )
        await member_bus.flush()
        for _ in range(100):
            if name in {m["name"] for m in cluster_status(bus.member(1))["members"]}:
                break
            await asyncio.sleep(0.1)
        configured = [f"m1={bus.member(1).monitor_url}"]
        for allow, expected in (([], None), ([f"127.0.0.1:{stranger.port}"], "Basic")):
            admin = AdminHarness(
                tmp_path / f"admin-{len(allow)}",
                configured,
                admin_discover_allow=allow,
                admin_member_username="ops",
                admin_member_password="monitor-secret",
            )
            try:
                stranger.authorizations.clear()
                async with admin.client("viewer") as api:
                    listed = (await api.get("/api/v1/members")).json()["items"]
                row = next(m for m in listed if m["name"] == name)
                assert row["source"] == "discovered"
                assert row["has_credentials"] is (expected is not None)
                assert stranger.authorizations, "the admin API did not read the member"
                for header in stranger.authorizations:
                    if expected is None:
                        assert header is None
                    else:
                        assert header is not None
                        assert header.startswith(expected)
            finally:
                admin.close()


async def test_routes_and_the_client_port_speak_tls_when_configured(tmp_path: Path) -> None:
    """ClusterTLSCertificate/Key/CA: the members form the cluster over mutual-TLS routes and
    reach their own node over TLS; a plain-text client is refused."""
    cert, key = self_signed_certificate(tmp_path / "tls")
    nodes = Cluster(
        tmp_path,
        configured=2,
        mode="Standard",
        ClusterTLSCertificate=str(cert),
        ClusterTLSKey=str(key),
        ClusterTLSCA=str(cert),
    )
    try:
        nodes.start(1, 2)  # both see each other up: the routes work
        topic = f"/tls/{uuid.uuid4().hex[:8]}"
        reader = await WsClient.connect(nodes.member(2))
        try:
            await reader.subscribe(topic)
            assert (await http_publish(nodes.member(1), topic, "over tls")).status_code == 200
            [frame] = await reader.messages(1, topic)
            assert frame["content"] == "over tls"
        finally:
            await reader.close()
        port = client_port(nodes, 1)
        answer = nats_answer(
            "127.0.0.1", port, {"user": CLIENT_USER, "pass": SECRETS.client_password}
        )
        assert "tls_required" in answer.splitlines()[0]  # INFO: TLS first
        assert "PONG" not in answer
    finally:
        nodes.kill_all()
