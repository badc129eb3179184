"""Baseline for the fan-out benchmark: the broadcast server a Python developer would write.

Plain ``websockets`` (asyncio API, no compression) on uvloop, speaking the subset of the
pushgrid protocol that ``benchmarks/fanout.py`` uses: welcome, subscribe -> subscribed,
publish -> message (kind update) to the subject's subscribers via ``broadcast()`` and
publish_result to the publisher, ping -> pong. No cache, no recovery, no entitlement.

    .venv/bin/python benchmarks/reference_server.py --port 8900
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
from websockets.asyncio.server import ServerConnection, broadcast, serve

SUBSCRIBERS: defaultdict[str, set[ServerConnection]] = defaultdict(set)
SEQ: defaultdict[str, int] = defaultdict(int)
EPOCH = secrets.token_hex(6)
SESSIONS = itertools.count(1)


def frame(type_: str, **fields: object) -> str:
    """One server frame as compact JSON, "type" first (like pushgrid's frames)."""
    return json.dumps({"type": type_, **fields}, separators=(",", ":"))


async def handler(ws: ServerConnection) -> None:
    mine: set[str] = set()
    session = str(next(SESSIONS))
    await ws.send(
        frame(
            "welcome",
            server="reference",
            version="0.0.0",
            session=session,
            keepalive=30.0,
            max_message_size=65536,
            max_subscriptions=10000,
        )
    )
    try:
        async for raw in ws:
            try:
                req = json.loads(raw)
                op, rid = req["op"], req.get("id")
            except (ValueError, TypeError, KeyError):
                await ws.send(frame("error", code="invalid_frame", message="bad request", id=None))
                continue
            if op == "subscribe":
                for item in req["subjects"]:
                    subject = item["subject"]
                    SUBSCRIBERS[subject].add(ws)
                    mine.add(subject)
                    await ws.send(
                        frame(
                            "subscribed",
                            subject=subject,
                            status="allow",
                            recovery="none",
                            epoch=EPOCH,
                            seq=SEQ[subject],
                            id=rid,
                            reason=None,
                        )
                    )
            elif op == "unsubscribe":
                for subject in req["subjects"]:
                    SUBSCRIBERS[subject].discard(ws)
                    mine.discard(subject)
                    await ws.send(frame("unsubscribed", subject=subject, id=rid))
            elif op == "publish":
                subject = req["subject"]
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
                broadcast(SUBSCRIBERS[subject], message)
                await ws.send(
                    frame(
                        "publish_result",
                        result="ok",
                        subject=subject,
                        id=rid,
                        epoch=EPOCH,
                        seq=SEQ[subject],
                        code=None,
                        reason=None,
                    )
                )
            elif op == "ping":
                await ws.send(frame("pong", id=rid))
            else:
                await ws.send(
                    frame("error", code="unknown_op", message=f"unknown op {op!r}", id=rid)
                )
    finally:
        for subject in mine:
            SUBSCRIBERS[subject].discard(ws)


async def main(host: str, port: int, compression: bool = False) -> None:
    # --compression: the library's permessage-deflate (context takeover both ways, its default;
    # benchmarks/compression.py compares it with pushgrid's)
    async with serve(handler, host, port, compression="deflate" if compression else None) as server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8900)
    parser.add_argument("--compression", action="store_true", help="negotiate permessage-deflate")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        uvloop.run(main(args.host, args.port, args.compression))
