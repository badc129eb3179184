"""The browser client against a scripted WebSocket server: protocol cases a real server does not
produce on demand (a gap in the stream, a silent server, close codes, a bad first frame).

The page comes from the real server (/demo); its client connects to the scripted server, which
plays one coroutine per connection and records every frame the client sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from websockets.asyncio.server import Server, ServerConnection, serve

from .browser import Browser
from .pgtest import DEFAULT_TIMEOUT

S = "/fake/stream"
EPOCH = "e0e0e0"


def welcome(keepalive: float = 30.0) -> dict[str, Any]:
    return {
        "type": "welcome",
        "server": "fake",
        "version": "0.1.0",
        "session": "s1",
        "keepalive": keepalive,
        "max_message_size": 65536,
        "max_subscriptions": 10000,
    }


def subscribed(recovery: str, seq: int, request_id: Any) -> dict[str, Any]:
    return {
        "type": "subscribed",
        "subject": S,
        "status": "allow",
        "recovery": recovery,
        "epoch": EPOCH,
        "seq": seq,
        "id": request_id,
        "reason": None,
    }


def message(seq: int, kind: str = "update") -> dict[str, Any]:
    return {
        "type": "message",
        "kind": kind,
        "subject": S,
        "content": f"c{seq}",
        "fields": {"n": str(seq)},
        "epoch": EPOCH,
        "seq": seq,
        "qos": "guaranteed",
        "retained": True,
        "ts": 1795359512393,
    }


class Conn:
    """One accepted connection as the script sees it."""

    def __init__(self, ws: ServerConnection, log: list[dict[str, Any]]) -> None:
        self.ws = ws
        self.log = log

    async def send(self, frame: Any) -> None:
        await self.ws.send(json.dumps(frame))

    async def recv(self, op: str | None = None) -> dict[str, Any]:
        """The next client frame (of ``op``), skipping others (pings)."""
        while True:
            frame: dict[str, Any] = json.loads(
                await asyncio.wait_for(self.ws.recv(), DEFAULT_TIMEOUT)
            )
            self.log.append(frame)
            if op is None or frame.get("op") == op:
                return frame

    async def drain(self) -> None:
        """Record what the client sends until it closes the connection."""
        with contextlib.suppress(Exception):
            async for data in self.ws:
                self.log.append(json.loads(data))


Script = Callable[[Conn, int], Awaitable[None]]


class FakeServer:
    """A WebSocket server on its own thread's event loop that runs ``script(conn, index)``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections: list[list[dict[str, Any]]] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server: Server = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(
            DEFAULT_TIMEOUT
        )
        self.port = self.server.sockets[0].getsockname()[1]

    async def _start(self) -> Server:
        return await serve(self._handle, "127.0.0.1", 0, compression=None, ping_interval=None)

    async def _handle(self, ws: ServerConnection) -> None:
        log: list[dict[str, Any]] = []
        self.connections.append(log)
        with contextlib.suppress(Exception):
            await self.script(Conn(ws, log), len(self.connections) - 1)

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 3)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def fake() -> Iterator[Callable[[Script], FakeServer]]:
    servers: list[FakeServer] = []

    def make(script: Script) -> FakeServer:
        srv = FakeServer(script)
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.close()


def open_page(browser: Browser, server: Any, fake_server: FakeServer) -> None:
    browser.open_demo(
        server.url,
        server=f"127.0.0.1:{fake_server.port}",
        subject=S,
        transport="websocket",
        backoff="0.2",
    )


def test_gap_triggers_a_resubscribe_with_recovery(server, browser, fake):
    async def script(conn: Conn, index: int) -> None:
        await conn.send(welcome())
        sub = await conn.recv("subscribe")
        await conn.send(subscribed("none", 0, sub["id"]))
        await conn.send([message(1), message(2)])  # a batch
        await conn.send(message(5))  # 3 and 4 are missing
        again = await conn.recv("subscribe")
        await conn.send(
            [
                subscribed("recovered", 5, again["id"]),
                message(3, "recovered"),
                message(4, "recovered"),
                message(5, "recovered"),
            ]
        )
        await conn.send(message(5))  # a late duplicate
        await conn.send(message(6))
        await conn.drain()

    srv = fake(script)
    open_page(browser, server, srv)
    messages = browser.wait_messages(S, 6)
    assert [(m["seq"], m["type"]) for m in messages] == [
        (1, "update"),
        (2, "update"),
        (3, "recovered"),
        (4, "recovered"),
        (5, "recovered"),
        (6, "update"),
    ]
    assert messages[2]["fields"] == {"n": "3"}
    (first, again) = [f for f in srv.connections[0] if f.get("op") == "subscribe"]
    assert first["subjects"] == [{"subject": S, "history": 0, "conflation": 0}]
    assert again["subjects"] == [
        {"subject": S, "history": 0, "conflation": 0, "recover": {"epoch": EPOCH, "seq": 2}}
    ]
    assert [(e["status"], e["detail"]) for e in browser.statuses(subject=S)] == [
        ("subscribe_allow", None),
        ("data_sync", "recovered"),
    ]
    assert len(browser.messages(S)) == 6
    assert not browser.console_errors()


def test_silent_server_is_declared_dead_and_recovery_follows(server, browser, fake):
    async def script(conn: Conn, index: int) -> None:
        if index == 0:
            await conn.send(welcome(keepalive=2.0))
            sub = await conn.recv("subscribe")
            await conn.send(subscribed("none", 0, sub["id"]))
            await conn.send(message(1))
            await conn.drain()  # then silence: no keepalive, no answer to pings
            return
        await conn.send(welcome())
        sub = await conn.recv("subscribe")
        await conn.send([subscribed("recovered", 2, sub["id"]), message(2, "recovered")])
        await conn.drain()

    srv = fake(script)
    open_page(browser, server, srv)
    (down,) = browser.wait_status("server_down")
    assert down["detail"] == "no frame from the server for 2.8 s"
    messages = browser.wait_messages(S, 2)
    assert [(m["seq"], m["type"]) for m in messages] == [(1, "update"), (2, "recovered")]
    browser.wait(lambda: len(srv.connections) >= 2, "reconnected")
    # (with delivery reports on, its clock pings carry ids: they are the keepalive's pings too)
    pings = [f for f in srv.connections[0] if f.get("op") == "ping"]
    assert pings, "the client pings a quiet server"
    (resubscribe,) = [f for f in srv.connections[1] if f.get("op") == "subscribe"]
    assert resubscribe["subjects"][0]["recover"] == {"epoch": EPOCH, "seq": 1}
    assert not browser.console_errors()


def test_close_codes_1001_reconnects_at_once_and_4005_stops(server, browser, fake):
    async def script(conn: Conn, index: int) -> None:
        await conn.send(welcome())
        await conn.recv("subscribe")
        if index == 0:
            await conn.ws.close(1001, "server shutting down")
        else:
            await conn.ws.close(4005, "too many invalid frames")

    srv = fake(script)
    open_page(browser, server, srv)
    (closed,) = browser.wait_status("closed")
    assert closed["closeCode"] == 4005
    downs = browser.statuses("server_down")
    assert [(e["closeCode"], e["retryIn"]) for e in downs] == [(1001, 0), (4005, None)]
    assert downs[0]["closeReason"] == "server shutting down"
    assert browser.client("connected") is False
    assert len(srv.connections) == 2
    result = browser.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.pgDemo.client.publish(arguments[0], 'x').then(done);",
        S,
    )
    assert (result["result"], result["reason"]) == ("failed", "the client is closed")
    assert not browser.console_errors()


def test_a_publish_lost_with_its_connection_is_resent_with_the_same_msg_id(server, browser, fake):
    async def script(conn: Conn, index: int) -> None:
        await conn.send(welcome())
        publish = await conn.recv("publish")
        if index == 0:  # stored, perhaps; the answer never leaves
            await conn.ws.close(1011, "crashed")
            return
        await conn.send(
            {
                "type": "publish_result",
                "result": "ok",
                "subject": S,
                "id": publish["id"],
                "epoch": EPOCH,
                "seq": 5,
                "code": None,
                "reason": None,
                "duplicate": True,
            }
        )
        await conn.drain()

    srv = fake(script)
    open_page(browser, server, srv)
    result = browser.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.pgDemo.client.publish(arguments[0], 'x').then(done);",
        S,
    )
    assert (result["result"], result["seq"], result["duplicate"]) == ("ok", 5, True)
    sent = [[f for f in log if f.get("op") == "publish"] for log in srv.connections]
    (first,), (second,) = sent
    assert first["msg_id"] == second["msg_id"] == result["msgId"]
    assert len(first["msg_id"]) == 32
    assert not browser.console_errors()


def test_a_first_frame_other_than_welcome_is_refused(server, browser, fake):
    async def script(conn: Conn, index: int) -> None:
        if index == 0:
            await conn.send({"type": "pong", "id": None})
            await conn.drain()
            return
        await conn.send(welcome())
        sub = await conn.recv("subscribe")
        await conn.send([subscribed("none", 0, sub["id"]), message(1)])
        await conn.drain()

    srv = fake(script)
    open_page(browser, server, srv)
    (down,) = browser.wait_status("server_down")
    assert down["detail"] == "expected a welcome frame, got pong"
    (msg,) = browser.wait_messages(S, 1)
    assert msg["seq"] == 1
    assert not browser.console_errors()
