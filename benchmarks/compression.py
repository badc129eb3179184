"""Bytes on the wire and server CPU per delivered message, with and without permessage-deflate.

    nice -n 5 .venv/bin/python benchmarks/compression.py [--subscribers 10] [--updates 20]
    nice -n 5 .venv/bin/python benchmarks/compression.py --memory 500

A market-data stream: 200 subjects of 10 fields (bid, ask, last, sizes, volume, high, low,
open, time), each update changing 1-3 of them (seeded, the same stream for every target).
``--subscribers`` WebSocket subscribers each take every subject; one publisher sends
``--updates`` updates per subject. Every subscriber counts the bytes its socket received
(WebSocket frames with their headers; TCP/IP headers not included) and the messages; the
server's CPU time (user + system, from /proc) is read before and after the stream.

Targets (the same stream, the same subscriber code):

- pushgrid with compression off, with the defaults (no context takeover: one compressed frame
  per message, shared), with context takeover both ways; the publisher sending only the
  changed fields (``fields`` holds 2-4 fields); the subscribers asking for field deltas while
  the publisher sends whole records (the server drops the unchanged fields);
- NATS (nats-server, WebSocket listener for the subscribers, ``compression: true`` or not;
  publisher on the plain port), payload ``{"content","fields"}``;
- the ``websockets`` reference server (benchmarks/reference_server.py) with and without its
  permessage-deflate (context takeover both ways).

``--memory N``: N idle pushgrid connections, each subscribed to one subject and sent one
compressed-size message, and the server's RSS growth per connection, deflate off / default /
context takeover.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
from websockets.asyncio.client import ClientConnection, connect
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fanout import NATS_SERVER, ROOT, cpu_seconds, free_port, machine_info, memory_mb

SUBJECTS = 200
FIELD_NAMES = (
    "bid",
    "ask",
    "last",
    "bid_size",
    "ask_size",
    "volume",
    "high",
    "low",
    "open",
    "time",
)


# --- the stream ------------------------------------------------------------------------------


def stream(
    subjects: int, updates: int, seed: int = 7
) -> Iterator[tuple[int, dict[str, str], dict[str, str]]]:
    """(subject index, full record, changed fields) for ``updates`` rounds over the subjects."""
    rng = random.Random(seed)
    records: list[dict[str, str]] = []
    for _ in range(subjects):
        price = rng.uniform(10, 500)
        records.append(
            {
                "bid": f"{price:.2f}",
                "ask": f"{price + 0.02:.2f}",
                "last": f"{price + 0.01:.2f}",
                "bid_size": str(rng.randrange(1, 50) * 100),
                "ask_size": str(rng.randrange(1, 50) * 100),
                "volume": str(rng.randrange(10_000, 5_000_000)),
                "high": f"{price * 1.02:.2f}",
                "low": f"{price * 0.98:.2f}",
                "open": f"{price * 1.001:.2f}",
                "time": "09:30:00.000",
            }
        )
    clock = 9 * 3600 + 30 * 60.0
    for _ in range(updates):
        for index in rng.sample(range(subjects), subjects):
            record = records[index]
            clock += rng.random() / 50
            changed: dict[str, str] = {}
            for name in rng.sample(FIELD_NAMES[:6], rng.randint(1, 3)):
                if name.endswith("size"):
                    changed[name] = str(rng.randrange(1, 50) * 100)
                elif name == "volume":
                    changed[name] = str(int(record["volume"]) + rng.randrange(100, 5000))
                else:
                    changed[name] = f"{float(record[name]) + rng.choice((-0.01, 0.01, 0.02)):.2f}"
            hours, rest = divmod(clock, 3600)
            changed["time"] = f"{int(hours):02d}:{int(rest // 60):02d}:{rest % 60:06.3f}"
            record.update(changed)
            yield index, dict(record), changed


# --- servers ---------------------------------------------------------------------------------


@dataclass
class Target:
    name: str
    kind: str  # pushgrid | nats | reference
    config: dict[str, str]
    offer: bool  # subscribers offer permessage-deflate
    changed_only: bool = False
    delta: bool = False  # subscribers ask for field deltas (docs/protocol.md 5.1.2)


TARGETS = [
    Target("pushgrid, no compression", "pushgrid", {"PerMessageDeflate": "false"}, False),
    Target("pushgrid, deflate (defaults: no context takeover, shared)", "pushgrid", {}, True),
    Target(
        "pushgrid, deflate with context takeover",
        "pushgrid",
        {
            "DeflateServerNoContextTakeover": "false",
            "DeflateClientNoContextTakeover": "false",
            "DeflateMaxContexts": "100000",
        },
        True,
    ),
    Target(
        "pushgrid, changed fields only, no compression",
        "pushgrid",
        {"PerMessageDeflate": "false"},
        False,
        True,
    ),
    Target("pushgrid, changed fields only, deflate (defaults)", "pushgrid", {}, True, True),
    Target(
        "pushgrid, field deltas (subscribe option), no compression",
        "pushgrid",
        {"PerMessageDeflate": "false"},
        False,
        delta=True,
    ),
    Target("pushgrid, field deltas, deflate (defaults)", "pushgrid", {}, True, delta=True),
    Target("NATS, no compression", "nats", {}, False),
    Target("NATS, compression", "nats", {"compression": "true"}, True),
    Target("websockets reference, no compression", "reference", {}, False),
    Target("websockets reference, deflate", "reference", {"compression": "true"}, True),
]


class Server:
    """One server under test in its own process group, killed on exit."""

    def __init__(self, target: Target, workdir: Path) -> None:
        self.target, self.workdir = target, workdir
        self.port = free_port()
        self.publish_port = self.port
        self.proc: subprocess.Popen[bytes] | None = None

    def _command(self) -> list[str]:
        kind, config = self.target.kind, self.target.config
        if kind == "pushgrid":
            conf = self.workdir / f"pushgrid-{self.port}.conf"
            lines = {
                "Listen": f"127.0.0.1:{self.port}",
                "MonitorHTTP.Listen": "",
                "MetricsArchive": "",
                "Workers": "1",  # one process: its pid is the server measured
                "MetaSubjectInterval": "0",
                "PublishRatePerConnection": "0",
                "PublishRatePerAddress": "0",
                "MaxOutboundBufferSize": "67108864",
                "MaxConnections": "100000",
                **config,
            }
            conf.write_text("".join(f"{k} = {v}\n" for k, v in lines.items()))
            return [str(ROOT / ".venv" / "bin" / "pushgrid"), "server", "--config", str(conf)]
        if kind == "nats":
            self.publish_port = free_port()
            conf = self.workdir / f"nats-{self.port}.conf"
            compression = "true" if config.get("compression") else "false"
            conf.write_text(
                f"listen: 127.0.0.1:{self.publish_port}\n"
                f'websocket {{ listen: "127.0.0.1:{self.port}", no_tls: true, '
                f"compression: {compression} }}\n"
            )
            return [str(NATS_SERVER), "-c", str(conf)]
        script = ROOT / "benchmarks" / "reference_server.py"
        extra = ["--compression"] if config.get("compression") else []
        return [sys.executable, str(script), "--port", str(self.port), *extra]

    def __enter__(self) -> Server:
        log = open(self.workdir / f"{self.target.kind}-{self.port}.log", "wb")
        env = {**os.environ, "GOMAXPROCS": "1"}
        self.proc = subprocess.Popen(
            self._command(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
            env=env,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                import socket

                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                time.sleep(0.3)
                return self
            time.sleep(0.1)
        self.__exit__()
        raise RuntimeError(f"{self.target.name}: not listening")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __exit__(self, *_: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


# --- subscribers -----------------------------------------------------------------------------


class CountingConnection(ClientConnection):
    """A websockets connection that counts the bytes its socket received."""

    received = 0

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        super().data_received(data)


async def open_ws(url: str, offer: bool) -> CountingConnection:
    ws = await connect(
        url,
        create_connection=CountingConnection,
        extensions=[ClientPerMessageDeflateFactory()] if offer else None,
        compression=None,
        max_size=None,
        max_queue=None,
        ping_interval=None,
        proxy=None,
    )
    assert isinstance(ws, CountingConnection)
    return ws


def _nats_messages(buffer: bytearray) -> int:
    """Count and consume the whole ``MSG`` records at the start of ``buffer`` (NATS protocol)."""
    count = 0
    while True:
        end = buffer.find(b"\r\n")
        if end < 0:
            return count
        line = bytes(buffer[:end])
        if line.startswith(b"MSG "):
            size = int(line.rsplit(b" ", 1)[1])
            if len(buffer) < end + 2 + size + 2:
                return count
            del buffer[: end + 2 + size + 2]
            count += 1
        else:
            del buffer[: end + 2]


class Subscriber:
    def __init__(self, ws: CountingConnection, kind: str) -> None:
        self.ws, self.kind = ws, kind
        self.messages = 0
        self.base = 0  # bytes received before the stream
        self._buffer = bytearray()

    @classmethod
    async def open(cls, server: Server) -> Subscriber:
        kind = server.target.kind
        ws = await open_ws(f"ws://127.0.0.1:{server.port}", server.target.offer)
        sub = cls(ws, kind)
        if kind == "nats":
            await ws.recv()  # INFO
            await ws.send(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB md.> 1\r\nPING\r\n')
            while b"PONG" not in (await ws.recv()):
                pass
        else:
            await ws.recv()  # welcome
            items = [
                {"subject": f"/md/S{i}", "delta": server.target.delta} for i in range(SUBJECTS)
            ]
            await ws.send(json.dumps({"op": "subscribe", "id": 1, "subjects": items}))
            for _ in range(SUBJECTS):
                await ws.recv()  # subscribed (no snapshot yet: nothing was published)
        sub.base = ws.received
        return sub

    async def read(self, expected: int) -> None:
        while self.messages < expected:
            data = await self.ws.recv()
            if self.kind == "nats":
                self._buffer += data if isinstance(data, bytes) else data.encode()
                self.messages += _nats_messages(self._buffer)
            else:
                frame = json.loads(data)
                self.messages += (
                    len(frame) if isinstance(frame, list) else frame["type"] == "message"
                )

    @property
    def agreed(self) -> str:
        return ", ".join(str(e.name) for e in self.ws.protocol.extensions) or "none"


# --- publishers ------------------------------------------------------------------------------


async def publish_ws(server: Server, updates: int, changed_only: bool) -> None:
    ws = await open_ws(f"ws://127.0.0.1:{server.port}", False)
    await ws.recv()
    window = 0
    for n, (index, record, changed) in enumerate(stream(SUBJECTS, updates)):
        fields = changed if changed_only else record
        op = {
            "op": "publish",
            "id": n,
            "subject": f"/md/S{index}",
            "content": record["last"],
            "fields": fields,
        }
        await ws.send(json.dumps(op, separators=(",", ":")))
        window += 1
        if window == 100:  # bounded in flight: wait for the answers
            while window:
                if json.loads(await ws.recv()).get("type") == "publish_result":
                    window -= 1
    while window:
        if json.loads(await ws.recv()).get("type") == "publish_result":
            window -= 1
    await ws.close()


async def publish_nats(server: Server, updates: int, changed_only: bool) -> None:
    nc = await nats.connect(f"nats://127.0.0.1:{server.publish_port}")
    for n, (index, record, changed) in enumerate(stream(SUBJECTS, updates)):
        fields = changed if changed_only else record
        body = {"content": record["last"], "fields": fields}
        await nc.publish(f"md.S{index}", json.dumps(body, separators=(",", ":")).encode())
        if n % 100 == 99:
            await nc.flush()
    await nc.flush()
    await nc.close()


async def run_target(
    target: Target, subscribers: int, updates: int, workdir: Path
) -> dict[str, Any]:
    with Server(target, workdir) as server:
        subs = [await Subscriber.open(server) for _ in range(subscribers)]
        expected = SUBJECTS * updates
        cpu0 = cpu_seconds([server.pid])
        readers = [asyncio.create_task(s.read(expected)) for s in subs]
        started = time.monotonic()
        if target.kind == "nats":
            await publish_nats(server, updates, target.changed_only)
        else:
            await publish_ws(server, updates, target.changed_only)
        await asyncio.wait_for(asyncio.gather(*readers), 300)
        elapsed = time.monotonic() - started
        cpu = cpu_seconds([server.pid]) - cpu0
        received = sum(s.ws.received - s.base for s in subs)
        deliveries = expected * subscribers
        agreed = subs[0].agreed
        for s in subs:
            await s.ws.close()
    return {
        "target": target.name,
        "extension": agreed,
        "deliveries": deliveries,
        "bytes_per_message": received / deliveries,
        "cpu_us_per_delivery": cpu / deliveries * 1e6,
        "seconds": elapsed,
    }


# --- memory per idle connection --------------------------------------------------------------


async def memory_per_connection(
    name: str, config: dict[str, str], offer: bool, n: int, workdir: Path
) -> dict[str, Any]:
    target = Target(name, "pushgrid", {**config, "DeflateMaxContexts": str(n + 10)}, offer)
    with Server(target, workdir) as server:
        url = f"ws://127.0.0.1:{server.port}"
        rss0 = memory_mb([server.pid])[0]
        conns = []
        for _ in range(n):
            ws = await open_ws(url, offer)
            await ws.recv()
            await ws.send(
                json.dumps({"op": "subscribe", "id": 1, "subjects": [{"subject": "/md/idle"}]})
            )
            await ws.recv()
            conns.append(ws)
        publisher = await open_ws(url, False)
        await publisher.recv()
        record = next(stream(1, 1))[1]
        await publisher.send(
            json.dumps(
                {"op": "publish", "id": 1, "subject": "/md/idle", "content": "x", "fields": record}
            )
        )
        for ws in conns:
            await ws.recv()  # the update: compressed where agreed (a context is now in use)
        await asyncio.sleep(1.0)
        rss = memory_mb([server.pid])[0]
        agreed = ", ".join(e.name for e in conns[0].protocol.extensions) or "none"
        for ws in [*conns, publisher]:
            await ws.close()
    return {
        "target": name,
        "extension": agreed,
        "connections": n,
        "rss_kib_per_connection": (rss - rss0) * 1024 / n,
    }


MEMORY = [
    ("no compression", {"PerMessageDeflate": "false"}, False),
    ("deflate, defaults (no context takeover)", {}, True),
    (
        "deflate, context takeover both ways",
        {"DeflateServerNoContextTakeover": "false", "DeflateClientNoContextTakeover": "false"},
        True,
    ),
    (
        "deflate, context takeover, DeflateMaxWindowBits = 10",
        {
            "DeflateServerNoContextTakeover": "false",
            "DeflateClientNoContextTakeover": "false",
            "DeflateMaxWindowBits": "10",
        },
        True,
    ),
]


async def main(args: argparse.Namespace) -> None:
    print(json.dumps({"machine": machine_info(), "command": " ".join(sys.argv)}))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.memory:
            for name, config, offer in MEMORY:
                print(
                    json.dumps(
                        await memory_per_connection(name, config, offer, args.memory, workdir)
                    ),
                    flush=True,
                )
            return
        for target in TARGETS:
            if args.only and args.only not in target.name:
                continue
            result = await run_target(target, args.subscribers, args.updates, workdir)
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=10)
    parser.add_argument("--updates", type=int, default=20, help="updates per subject")
    parser.add_argument("--memory", type=int, default=0, help="measure N idle connections instead")
    parser.add_argument("--only", default="", help="run the targets whose name contains this")
    asyncio.run(main(parser.parse_args()))
