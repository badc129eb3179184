"""Publishes lost when the client's close follows at once (issue 23 item 5), before/after.

    .venv/bin/python benchmarks/close_loss.py [PUSHGRID_BINARY]

Starts ``pushgrid server`` (the given binary, default this environment's), then 20 times: a
raw client sends a publish and a close frame in one write; 50 times: a ``websockets`` client
sends a publish and leaves its ``async with`` at once (fire and forget). Counts the subjects
whose snapshot is missing afterwards (each publish went to its own subject).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from websockets.asyncio.client import connect


def _frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    length = len(payload)
    if length < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    else:
        head = struct.pack("!BBH", 0x80 | opcode, 0xFE, length)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def raw_publish_close(port: int, subject: str) -> None:
    """Upgrade, read the welcome, send a publish and a close in one write, read to the end."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(
            (
                f"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        data = b""
        while b'"welcome"' not in data:
            data += sock.recv(65536)
        publish = {"op": "publish", "id": 1, "subject": subject, "content": "x"}
        sock.sendall(_frame(0x1, json.dumps(publish).encode()) + _frame(0x8, b"\x03\xe8"))
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass


async def fire_and_forget(port: int, subjects: list[str]) -> None:
    for subject in subjects:
        async with connect(f"ws://127.0.0.1:{port}/ws", compression=None) as ws:
            await ws.send(
                json.dumps({"op": "publish", "id": 1, "subject": subject, "content": "x"})
            )


def lost(port: int, subjects: list[str]) -> int:
    url = f"http://127.0.0.1:{port}/snapshot"
    return sum(httpx.get(url, params={"subject": s}).status_code != 200 for s in subjects)


def main() -> None:
    binary = sys.argv[1] if len(sys.argv) > 1 else str(Path(sys.executable).parent / "pushgrid")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    workdir = tempfile.mkdtemp()
    conf = Path(workdir) / "pushgrid.conf"
    conf.write_text(
        f"Listen = 127.0.0.1:{port}\nMonitorHTTP.Listen =\nMetricsArchive =\nWorkers = 1\n"
        "MetaSubjectInterval = 0\n"
    )
    proc = subprocess.Popen(
        [binary, "server", "--config", str(conf)],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        run = uuid.uuid4().hex[:6]
        raw = [f"/loss/{run}/raw/{i}" for i in range(20)]
        for subject in raw:
            raw_publish_close(port, subject)
        forgotten = [f"/loss/{run}/ff/{i}" for i in range(50)]
        asyncio.run(fire_and_forget(port, forgotten))
        print(
            json.dumps(
                {
                    "server": binary,
                    "raw publish+close lost": f"{lost(port, raw)}/20",
                    "websockets fire-and-forget lost": f"{lost(port, forgotten)}/50",
                }
            )
        )
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
