"""permessage-deflate (RFC 7692, ADR 028) against a real server, with the ``websockets``
library as the reference client (compression on) and a raw socket for the bytes on the wire.

Each test fails on a server without the extension: no ``Sec-WebSocket-Extensions`` answer, no
RSV1 frame, and an inflated message past the frame limit would not be refused with 1009.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.extensions.permessage_deflate import (
    ClientPerMessageDeflateFactory,
    PerMessageDeflate,
)

from pushgrid.client import PushgridClient

from .pgtest import DEFAULT_TIMEOUT, ServerProcess, WsClient, exported

FIELDS = {f"f{i}": f"{1000 + i}.{i * 7:04d}" for i in range(10)}


@pytest.fixture(scope="module")
def keeping(module_server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    """Server context takeover, at most one connection with a context, and batching."""
    return module_server_factory(
        ServerName="it-deflate-keep",
        DeflateServerNoContextTakeover=False,
        DeflateClientNoContextTakeover=False,
        DeflateMaxContexts=1,
    )


@pytest.fixture(scope="module")
def batching(module_server_factory: Callable[..., ServerProcess]) -> ServerProcess:
    return module_server_factory(ServerName="it-deflate-batch", BatchingTime=50)


async def connect_deflating(target: ServerProcess, **factory: Any) -> ClientConnection:
    return await connect(
        target.ws_url,
        extensions=[ClientPerMessageDeflateFactory(**factory)],
        compression=None,
        proxy=None,
        ping_interval=None,
        max_size=None,
        open_timeout=DEFAULT_TIMEOUT,
        close_timeout=2,
    )


@pytest.fixture
async def deflating() -> AsyncIterator[Callable[..., Awaitable[WsClient]]]:
    clients: list[WsClient] = []

    async def open_client(target: ServerProcess, **factory: Any) -> WsClient:
        client = WsClient(await connect_deflating(target, **factory))
        clients.append(client)
        client.welcome = await client.expect("welcome")
        return client

    yield open_client
    for client in clients:
        await client.close()


def _agreed(client: WsClient) -> PerMessageDeflate:
    extensions = client.ws.protocol.extensions
    assert len(extensions) == 1, "permessage-deflate was not negotiated"
    extension = extensions[0]
    assert isinstance(extension, PerMessageDeflate)
    return extension


async def _stream(publisher: WsClient, readers: list[WsClient], subject: str, n: int) -> None:
    """``n`` updates of a 10-field subject reach every reader whole and in order."""
    for reader in readers:
        assert (await reader.subscribe(subject))["status"] == "allow"
    for i in range(n):
        await publisher.publish_ok(subject, f"tick {i}", {**FIELDS, "f0": str(i)})
    for reader in readers:
        got = await reader.messages(n, subject)
        assert [m["fields"]["f0"] for m in got] == [str(i) for i in range(n)]
        assert got[-1]["fields"]["f9"] == FIELDS["f9"]


async def test_the_reference_client_agrees_and_reads_shared_frames(
    server: ServerProcess,
    deflating: Callable[..., Awaitable[WsClient]],
    connect: Callable[..., Awaitable[WsClient]],
    subject: Callable[[str], str],
) -> None:
    readers = [await deflating(server), await deflating(server, server_max_window_bits=10)]
    first, small = (_agreed(reader) for reader in readers)
    assert first.remote_no_context_takeover
    assert first.local_no_context_takeover
    assert small.remote_max_window_bits == 10
    await _stream(await connect(server), readers, subject("q"), 30)


async def test_context_takeover_and_the_cap_on_contexts(
    keeping: ServerProcess,
    deflating: Callable[..., Awaitable[WsClient]],
    subject: Callable[[str], str],
) -> None:
    kept = await deflating(keeping)
    assert not _agreed(kept).remote_no_context_takeover  # the server keeps its window
    assert not _agreed(kept).local_no_context_takeover
    capped = await deflating(keeping)  # DeflateMaxContexts = 1: this one keeps none
    assert _agreed(capped).remote_no_context_takeover
    assert _agreed(capped).local_no_context_takeover
    # the client keeps its context too: its compressed requests inflate in order
    await _stream(kept, [kept, capped], subject("q"), 30)


async def _deflate_numbers(server: ServerProcess) -> tuple[int, int, int, int]:
    """(contexts, max contexts, uncompressed bytes, compressed bytes), after checking that
    /stats, /metrics and the Compression MBean agree."""
    stats, metrics, bean = await exported(server, "pushgrid:type=Compression")
    gauges, totals = stats["gauges"], stats["totals"]
    numbers = (
        gauges["deflate_contexts"],
        gauges["deflate_max_contexts"],
        totals["deflate_uncompressed_bytes_total"],
        totals["deflate_compressed_bytes_total"],
    )
    in_metrics = tuple(
        int(metrics[(name, ())])
        for name in (
            "pushgrid_deflate_contexts",
            "pushgrid_deflate_max_contexts",
            "pushgrid_deflate_uncompressed_bytes_total",
            "pushgrid_deflate_compressed_bytes_total",
        )
    )
    in_bean = tuple(
        bean[k] for k in ("Contexts", "MaxContexts", "UncompressedBytes", "CompressedBytes")
    )
    assert numbers == in_metrics == in_bean, (numbers, in_metrics, in_bean)
    return numbers


async def _contexts_become(server: ServerProcess, count: int) -> None:
    for _ in range(100):
        if (await _deflate_numbers(server))[0] == count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"deflate contexts never became {count}")


async def test_contexts_in_use_and_bytes_saved_are_exported(
    keeping: ServerProcess,
    deflating: Callable[..., Awaitable[WsClient]],
    subject: Callable[[str], str],
) -> None:
    """The Compression MBean, /stats and /metrics count the connections holding a context
    against DeflateMaxContexts, and the bytes of the frames deflate connections were sent."""
    await _contexts_become(keeping, 0)  # the connections of earlier tests have ended
    before = await _deflate_numbers(keeping)
    kept = await deflating(keeping)
    capped = await deflating(keeping)  # past DeflateMaxContexts = 1: holds none
    assert (await _deflate_numbers(keeping))[:2] == (1, 1)
    await _stream(kept, [kept, capped], subject("q"), 20)
    _, _, plain, sent = await _deflate_numbers(keeping)
    plain, sent = plain - before[2], sent - before[3]
    # 2 readers x 20 updates of ~300 bytes, compressed to well under half
    assert plain > 2 * 20 * 250, plain
    assert 0 < sent < plain / 2, (sent, plain)
    await kept.close()
    await _contexts_become(keeping, 0)


async def test_batches_are_compressed_whole(
    batching: ServerProcess,
    deflating: Callable[..., Awaitable[WsClient]],
    connect: Callable[..., Awaitable[WsClient]],
    subject: Callable[[str], str],
) -> None:
    """With batching, one JSON array of messages is one compressed message."""
    name = subject("q")
    ws = await connect_deflating(batching)
    try:
        assert ws.protocol.extensions, "permessage-deflate was not negotiated"
        await ws.recv()  # the welcome
        await ws.send(json.dumps({"op": "subscribe", "id": 1, "subjects": [{"subject": name}]}))
        await ws.recv()  # subscribed
        publisher = await connect(batching)
        await asyncio.gather(
            *(
                publisher.send(
                    {"op": "publish", "subject": name, "content": str(i), "fields": FIELDS}
                )
                for i in range(40)
            )
        )
        got: list[Any] = []
        batches = 0
        while len(got) < 40:
            frame = json.loads(await asyncio.wait_for(ws.recv(), DEFAULT_TIMEOUT))
            batches += isinstance(frame, list)
            got.extend(frame if isinstance(frame, list) else [frame])
        assert [int(m["content"]) for m in got] == list(range(40))
        assert batches, "no batch arrived"
    finally:
        await ws.close()


async def test_an_inflated_message_past_the_frame_limit_is_refused_1009(
    server: ServerProcess,
    deflating: Callable[..., Awaitable[WsClient]],
    connect: Callable[..., Awaitable[WsClient]],
) -> None:
    """A decompression bomb: 16 MiB of one character, ~16 KiB on the wire (the frame header
    check passes); the server stops inflating at the hard frame limit (1 MiB) and closes."""
    bomb = await deflating(server)
    _agreed(bomb)
    await bomb.send_raw(" " * (16 << 20))
    assert await bomb.wait_closed() == 1009
    assert "frame size limit" in (bomb.close_reason or "")
    other = await connect(server)
    await other.sync()  # the server goes on


async def _raw_handshake(server: ServerProcess, offer: str) -> tuple[Any, Any, bytes]:
    reader, writer = await asyncio.open_connection(server.host, server.port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET / HTTP/1.1\r\nHost: {server.host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Extensions: {offer}\r\n\r\n"
        ).encode()
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), DEFAULT_TIMEOUT)
    return reader, writer, head


async def _frame(reader: Any) -> tuple[int, bytes]:
    first, second = await reader.readexactly(2)
    length = second & 0x7F
    if length == 126:
        length = int.from_bytes(await reader.readexactly(2), "big")
    elif length == 127:
        length = int.from_bytes(await reader.readexactly(8), "big")
    return first, await reader.readexactly(length)


def _masked(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 126
    mask = os.urandom(4)
    return (
        bytes((0x81, 0x80 | len(data))) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    )


async def test_small_frames_are_plain_and_large_ones_compressed_on_the_wire(
    server: ServerProcess,
    connect: Callable[..., Awaitable[WsClient]],
    subject: Callable[[str], str],
) -> None:
    reader, writer, head = await _raw_handshake(server, "permessage-deflate")
    try:
        assert b"sec-websocket-extensions: permessage-deflate; server_no_context_takeover" in head
        first, welcome = await _frame(reader)  # the welcome
        assert (
            json.loads(
                zlib.decompressobj(-15).decompress(welcome + b"\x00\x00\xff\xff")
                if first & 0x40
                else welcome
            )["type"]
            == "welcome"
        )
        name = subject("q")
        writer.write(_masked(json.dumps({"op": "ping", "id": 1})))
        first, pong = await _frame(reader)
        assert first == 0x81
        assert json.loads(pong)["type"] == "pong"
        writer.write(
            _masked(json.dumps({"op": "subscribe", "id": 2, "subjects": [{"subject": name}]}))
        )
        await _frame(reader)  # subscribed
        await (await connect(server)).publish_ok(name, "x", FIELDS)
        first, body = await _frame(reader)
        assert first == 0xC1  # FIN, RSV1, text
        message = json.loads(zlib.decompressobj(-15).decompress(body + b"\x00\x00\xff\xff"))
        assert message["fields"] == FIELDS
        assert len(body) < len(json.dumps(message)) * 0.8
    finally:
        writer.close()


async def test_the_python_client_offers_deflate_and_reads_compressed_messages(
    server: ServerProcess, subject: Callable[[str], str]
) -> None:
    name = subject("q")
    async with PushgridClient([server.address], proxy=None) as client:
        assert client._ws is not None
        assert client._ws.protocol.extensions, "the client did not negotiate permessage-deflate"
        await client.subscribe(name)
        assert (await client.publish(name, "x" * 500, FIELDS)).ok
        message = await asyncio.wait_for(anext(client.messages()), DEFAULT_TIMEOUT)
        assert (message.content, message.fields) == ("x" * 500, FIELDS)
    async with PushgridClient([server.address], proxy=None, compression=False) as plain:
        assert plain._ws is not None
        assert not plain._ws.protocol.extensions


async def test_field_deltas_on_the_wire_and_merged_by_the_python_client(
    server: ServerProcess,
    connect: Callable[..., Awaitable[WsClient]],
    subject: Callable[[str], str],
) -> None:
    """The publisher sends whole 10-field records; a delta subscription gets the whole record
    first, then the changed fields; the Python client hands the application full records."""
    name = subject("q")
    publisher = await connect(server)
    await publisher.publish_ok(name, "0", FIELDS)
    wire = await connect(server)
    request_id = wire.next_id()
    await wire.send(
        {"op": "subscribe", "id": request_id, "subjects": [{"subject": name, "delta": True}]}
    )
    got: list[Any] = []
    async with PushgridClient([server.address], proxy=None) as client:
        await client.subscribe(name, delta=True)
        messages = client.messages()
        snapshot = await asyncio.wait_for(anext(messages), DEFAULT_TIMEOUT)
        assert snapshot.fields == FIELDS
        records = [{**FIELDS, "f1": str(i), "f2": "x" if i % 2 else "y"} for i in range(4)]
        for i, record in enumerate(records):
            await publisher.publish_ok(name, str(i), record)
        for _ in records:
            message = await asyncio.wait_for(anext(messages), DEFAULT_TIMEOUT)
            got.append(message.fields)
    assert got == records
    frames = await wire.messages(5, name)
    assert frames[0]["kind"] == "snapshot"
    assert [f["fields"] for f in frames[1:]] == [
        records[0],  # the first live message is whole
        {"f1": "1", "f2": "x"},
        {"f1": "2", "f2": "y"},
        {"f1": "3", "f2": "x"},
    ]
