"""The storm generator's connector (benchmarks/wsload.py ``Connector``): every client opens, never
more than ``limit`` handshakes wait at the server at once, and a refused connect is retried and
then reported, not lost. Against a stub HTTP upgrade responder on loopback, not a pushgrid server:
what is checked is the generator's own bookkeeping."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import wsload

UPGRADED = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"


class Responder:
    """Answers each upgrade request with a 101 after a short pause; counts the requests waiting."""

    def __init__(self) -> None:
        self.waiting = 0
        self.most_waiting = 0
        self.served = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        self.waiting += 1
        self.most_waiting = max(self.most_waiting, self.waiting)
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.sleep(0.002)  # let the other connects pile up if the limit leaks
        self.waiting -= 1
        self.served += 1
        writer.write(UPGRADED)


def clients(port: int, n: int) -> list[Callable[[], wsload.WSClient]]:
    return [lambda: wsload.WSClient("127.0.0.1", port, "/ws")] * n


async def storm(n: int, limit: int) -> tuple[wsload.Connector, Responder]:
    responder = Responder()
    server = await asyncio.start_server(responder.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    connector = wsload.Connector(loop, ("127.0.0.1", port), "127.0.0.2", limit, clients(port, n))
    await asyncio.wait_for(connector.run(), 30)
    for proto in connector.opened:
        proto.transport.abort()
    for writer in responder.writers:
        writer.close()
    server.close()
    await server.wait_closed()
    return connector, responder


def test_every_client_opens_with_at_most_limit_handshakes_waiting() -> None:
    connector, responder = asyncio.run(storm(300, 7))
    assert len(connector.opened) == responder.served == 300
    assert connector.errors == []
    assert 1 < responder.most_waiting <= 7
    assert connector.retransmits == 0  # 7 in flight never fill the stub's accept queue
    assert all(proto.opened.exception() is None for proto in connector.opened)


def test_connects_come_from_the_source_address() -> None:
    sock = wsload.client_socket("127.0.0.3")
    try:
        assert sock.getsockname()[0] == "127.0.0.3"
        assert sock.getsockopt(socket.IPPROTO_IP, wsload.IP_BIND_ADDRESS_NO_PORT) == 1
        assert sock.getsockname()[1] == 0  # the port is chosen at connect()
    finally:
        sock.close()


def test_a_refused_connect_is_retried_then_reported() -> None:
    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]

    async def refused() -> wsload.Connector:
        connector = wsload.Connector(
            asyncio.get_running_loop(), ("127.0.0.1", port), None, 2, clients(port, 3)
        )
        await asyncio.wait_for(connector.run(), 30)
        return connector

    connector = asyncio.run(refused())
    assert connector.opened == []
    assert len(connector.errors) == 3
    assert all("Connection refused" in e or "ECONNREFUSED" in e for e in connector.errors)
    assert connector.in_flight == 0
