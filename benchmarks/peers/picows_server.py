"""Peer for the fan-out benchmark: the broadcast server the picows documentation leads to.

A ``WSListener`` per connection (``on_ws_connected`` / ``on_ws_frame``), ``ws_create_server`` on
uvloop, and for a publish one ``transport.send(WSMsgType.TEXT, frame)`` per subscriber. It speaks
the same protocol subset and frame shapes as ``benchmarks/reference_server.py`` (welcome,
subscribe -> subscribed, publish -> message + publish_result, ping -> pong).

    .venv/bin/python benchmarks/peers/picows_server.py --port 8901
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import secrets
import time
from collections import defaultdict

import uvloop
from picows import WSFrame, WSListener, WSMsgType, WSTransport, WSUpgradeRequest, ws_create_server

SUBSCRIBERS: defaultdict[str, set[WSTransport]] = defaultdict(set)
SEQ: defaultdict[str, int] = defaultdict(int)
EPOCH = secrets.token_hex(6)
SESSIONS = itertools.count(1)


def frame(type_: str, **fields: object) -> bytes:
    return json.dumps({"type": type_, **fields}, separators=(",", ":")).encode()


class Client(WSListener):
    def __init__(self) -> None:
        self.transport: WSTransport | None = None
        self.mine: set[str] = set()

    def on_ws_connected(self, transport: WSTransport) -> None:
        self.transport = transport
        welcome = frame(
            "welcome",
            server="picows",
            version="0.0.0",
            session=str(next(SESSIONS)),
            keepalive=30.0,
            max_message_size=65536,
            max_subscriptions=10000,
        )
        transport.send(WSMsgType.TEXT, welcome)

    def on_ws_disconnected(self, transport: WSTransport) -> None:
        for subject in self.mine:
            SUBSCRIBERS[subject].discard(transport)

    def on_ws_frame(self, transport: WSTransport, frame_: WSFrame) -> None:
        if frame_.msg_type == WSMsgType.PING:
            transport.send_pong(frame_.get_payload_as_bytes())
            return
        if frame_.msg_type == WSMsgType.CLOSE:
            transport.send_close(frame_.get_close_code())
            transport.disconnect()
            return
        if frame_.msg_type != WSMsgType.TEXT:
            return
        try:
            req = json.loads(frame_.get_payload_as_bytes())
            op, rid = req["op"], req.get("id")
        except (ValueError, TypeError, KeyError):
            transport.send(WSMsgType.TEXT, frame("error", code="invalid_frame", id=None))
            return
        if op == "subscribe":
            for item in req["subjects"]:
                subject = item["subject"]
                SUBSCRIBERS[subject].add(transport)
                self.mine.add(subject)
                reply = frame(
                    "subscribed",
                    subject=subject,
                    status="allow",
                    recovery="none",
                    epoch=EPOCH,
                    seq=SEQ[subject],
                    id=rid,
                    reason=None,
                )
                transport.send(WSMsgType.TEXT, reply)
        elif op == "publish":
            self.publish(transport, req, rid)
        elif op == "ping":
            transport.send(WSMsgType.TEXT, frame("pong", id=rid))

    def publish(self, transport: WSTransport, req: dict[str, object], rid: object) -> None:
        subject = str(req["subject"])
        SEQ[subject] += 1
        message = frame(
            "message",
            kind="update",
            subject=subject,
            content=req["content"],
            fields=req.get("fields", {}),
            epoch=EPOCH,
            seq=SEQ[subject],
            qos=req.get("qos", "guaranteed"),
            retained=req.get("retained", True),
            ts=int(time.time() * 1000),
        )
        for subscriber in SUBSCRIBERS[subject]:
            subscriber.send(WSMsgType.TEXT, message)
        result = frame(
            "publish_result",
            result="ok",
            subject=subject,
            id=rid,
            epoch=EPOCH,
            seq=SEQ[subject],
            code=None,
            reason=None,
        )
        transport.send(WSMsgType.TEXT, result)


def listener_factory(_request: WSUpgradeRequest) -> WSListener:
    return Client()


async def main(host: str, port: int) -> None:
    server = await ws_create_server(listener_factory, host, port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8901)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(main(args.host, args.port))
