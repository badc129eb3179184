"""WebSocket and event streams on the encrypted client port (ListenEncrypted), real server.

The HTTP connection hands its transport to the WebSocket or event-stream object after the
request (ADR 013, ``transport.set_protocol``); on a TLS listener that transport is uvloop's SSL
transport, so the hand-over is exercised here with real TLS sockets.
"""

from __future__ import annotations

import json
import ssl
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from .pgtest import DEFAULT_TIMEOUT, ServerProcess, free_port, http_publish, self_signed_certificate


@pytest.fixture(scope="module")
def tls_server(
    module_server_factory: Any, tmp_path_factory: Any
) -> tuple[ServerProcess, int, Path]:
    cert, key = self_signed_certificate(tmp_path_factory.mktemp("tls"))
    port = free_port()
    server = module_server_factory(
        ServerName="it-tls",
        ListenEncrypted=f"127.0.0.1:{port}",
        TLSCertificate=str(cert),
        TLSKey=str(key),
        MetaSubjectInterval=0,
    )
    return server, port, cert


def subject() -> str:
    return f"/it/tls/{uuid.uuid4().hex[:8]}"


async def test_websocket_over_tls(tls_server: tuple[ServerProcess, int, Path]) -> None:
    server, port, cert = tls_server
    context = ssl.create_default_context(cafile=str(cert))
    name = subject()
    async with connect(
        f"wss://127.0.0.1:{port}/ws", ssl=context, open_timeout=DEFAULT_TIMEOUT, compression=None
    ) as ws:
        welcome = json.loads(await ws.recv())
        assert welcome["type"] == "welcome"
        await ws.send(json.dumps({"op": "subscribe", "id": 1, "subjects": [{"subject": name}]}))
        subscribed = json.loads(await ws.recv())
        assert subscribed["type"] == "subscribed"
        assert subscribed["status"] == "allow"
        response = await http_publish(server, name, "over tls")
        assert response.status_code == 200, response.text
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] == "message":
                break
        assert frame["subject"] == name
        assert frame["content"] == "over tls"


async def test_event_stream_over_tls(tls_server: tuple[ServerProcess, int, Path]) -> None:
    server, port, cert = tls_server
    name = subject()
    async with (
        httpx.AsyncClient(
            base_url=f"https://127.0.0.1:{port}",
            verify=ssl.create_default_context(cafile=str(cert)),
            trust_env=False,
            timeout=httpx.Timeout(DEFAULT_TIMEOUT, read=DEFAULT_TIMEOUT),
        ) as client,
        client.stream("GET", "/events", params={"subject": name}) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        published = False
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            frame = json.loads(line.removeprefix("data: "))
            if frame["type"] == "subscribed" and not published:
                published = True
                publish = await http_publish(server, name, "sse over tls")
                assert publish.status_code == 200, publish.text
            if frame["type"] == "message":
                assert frame["content"] == "sse over tls"
                break
        assert published
