"""The load processes of ``benchmarks/ingest.py``: publishers with an in-flight window, and one
subscriber per member (or NATS node) counting deliveries. Raw asyncio on uvloop.

A pushgrid publisher connection is a hand-written WebSocket client: it sends each publish as one
masked text frame (a zero mask key: masking is still done, XOR with zero is the identity, so the
frame costs a ``bytes`` join), and since a connection's answers leave in the order of its
requests (docs/protocol.md section 2), the n-th ``publish_result`` answers the n-th publish: the
send times wait in a FIFO and no reply is decoded as JSON. A subscriber counts the
occurrences of ``{"type":"message"`` in the text frames it receives (batched arrays included).

The NATS baselines use nats-py as an application would: ``publish`` + an echo subscription per
connection for core NATS (acknowledged when the message came back through the node, as a
Standard member's own publish is), ``js.publish`` with a ``Nats-Msg-Id`` for JetStream, and one
subscriber (core) or ordered push consumer (JetStream) per node.

Every process measures inside the same window of wall-clock time, [start + warmup, start +
warmup + duration], given by the orchestrator, and reports its own CPU time.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import os
import resource
import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

with contextlib.suppress(ImportError):
    import uvloop


@dataclass
class Job:
    """What one load process does (pickled to it)."""

    kind: str  # "ws" (pushgrid), "core" or "jetstream" (NATS)
    role: str  # "publish" or "subscribe"
    urls: list[str]  # ws://host:port/ws, or nats://host:port; connection i uses urls[i % n]
    subjects: list[str]
    start: float  # wall clock: the warm-up starts
    warmup: float
    duration: float
    connections: int = 8
    in_flight: int = 32
    size: int = 100
    qos: str = "guaranteed"
    index: int = 0  # the process's number (its msg_ids and NATS echo subjects are its own)
    stream: str = "BENCH"
    bad_every: int = 0  # every Nth publish is over the size limit (bad input under load)


@dataclass
class Report:
    acked: int = 0  # acknowledged ok inside the window
    failed: dict[str, int] = field(default_factory=dict)  # answer kind -> count (whole run)
    latencies: list[float] = field(default_factory=list)  # s, acks inside the window
    delivered: list[int] = field(default_factory=list)  # per url: messages inside the window
    cpu: float = 0.0  # s of user + system CPU of this process over the whole run
    bad_answered: int = 0  # oversize publishes answered too_large


def run(job: Job) -> Report:
    """Process entry point."""
    if "uvloop" in globals():
        uvloop.install()
    report = asyncio.run(_main(job))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report.cpu = usage.ru_utime + usage.ru_stime
    return report


async def _main(job: Job) -> Report:
    report = Report()
    window = Window(job.start + job.warmup, job.start + job.warmup + job.duration)
    if job.role == "subscribe":
        report.delivered = [0] * len(job.urls)
        if job.kind == "ws":
            tasks = [_ws_subscriber(job, i, window, report) for i in range(len(job.urls))]
        else:
            tasks = [_nats_subscriber(job, i, window, report) for i in range(len(job.urls))]
    elif job.kind == "ws":
        tasks = [_ws_publisher(job, i, window, report) for i in range(job.connections)]
    else:
        tasks = [_nats_publisher(job, i, window, report) for i in range(job.connections)]
    await asyncio.gather(*tasks)
    return report


@dataclass(frozen=True)
class Window:
    begin: float
    end: float

    def inside(self, t: float) -> bool:
        return self.begin <= t < self.end


def _content(size: int, n: int) -> str:
    return f"{n:020d}".ljust(size, "x")[:size]


def _count(failed: dict[str, int], kind: str) -> None:
    failed[kind] = failed.get(kind, 0) + 1


# -- pushgrid over WebSocket ----------------------------------------------------------------


class WsConnection:
    """A minimal RFC 6455 client: handshake, masked text frames out, server frames in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._buffer = b""

    @classmethod
    async def open(cls, url: str) -> WsConnection:
        host, _, rest = url.removeprefix("ws://").partition("/")
        hostname, _, port = host.rpartition(":")
        reader, writer = await asyncio.open_connection(hostname, int(port), limit=1 << 22)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET /{rest} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"handshake refused by {url}: {head[:200]!r}")
        return cls(reader, writer)

    def send_text(self, payload: bytes) -> None:
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        self.writer.write(header + b"\0\0\0\0" + payload)

    async def texts(self) -> list[bytes]:
        """The payloads of the complete text frames that arrived (at least one chunk read)."""
        chunk = await self.reader.read(1 << 20)
        if not chunk:
            raise ConnectionError("closed by the server")
        data = self._buffer + chunk
        out: list[bytes] = []
        pos = 0
        end = len(data)
        while end - pos >= 2:
            opcode = data[pos] & 0x0F
            length = data[pos + 1] & 0x7F
            start = pos + 2
            if length == 126:
                if end - pos < 4:
                    break
                length = int.from_bytes(data[pos + 2 : pos + 4], "big")
                start = pos + 4
            elif length == 127:
                if end - pos < 10:
                    break
                length = int.from_bytes(data[pos + 2 : pos + 10], "big")
                start = pos + 10
            if end - start < length:
                break
            if opcode == 0x1:
                out.append(data[start : start + length])
            elif opcode == 0x8:
                raise ConnectionError(f"closed by the server: {data[start : start + length]!r}")
            pos = start + length
        self._buffer = data[pos:]
        return out


async def _ws_publisher(job: Job, conn: int, window: Window, report: Report) -> None:
    ws = await WsConnection.open(job.urls[conn % len(job.urls)])
    await ws.texts()  # welcome
    slots = asyncio.Semaphore(job.in_flight)
    sent: collections.deque[tuple[float, bool]] = collections.deque()
    stop = window.end
    n = 0

    async def read() -> None:
        while sent or time.time() < stop:
            for text in await ws.texts():
                for answer in _answers(text):
                    t0, bad = sent.popleft()
                    slots.release()
                    now = time.time()
                    if answer == "ok" and not bad:
                        if window.inside(now):
                            report.acked += 1
                            report.latencies.append(now - t0)
                    elif bad and answer == "too_large":
                        report.bad_answered += 1
                    else:
                        _count(report.failed, answer)

    reader = asyncio.create_task(read())
    await _until(job.start)
    prefix = f"p{job.index}c{conn}-"
    while time.time() < stop and not reader.done():
        await slots.acquire()
        n += 1
        bad = job.bad_every > 0 and n % job.bad_every == 0
        subject = job.subjects[(n * 7919 + conn) % len(job.subjects)]
        content = "x" * 70_000 if bad else _content(job.size, n)
        frame = (
            f'{{"op":"publish","subject":"{subject}","content":"{content}",'
            f'"qos":"{job.qos}","msg_id":"{prefix}{n}"}}'
        )
        sent.append((time.time(), bad))
        ws.send_text(frame.encode())
        if n % 64 == 0:
            await ws.writer.drain()
    with contextlib.suppress(TimeoutError, ConnectionError):
        await asyncio.wait_for(reader, 30)
    ws.writer.close()


def _answers(text: bytes) -> list[str]:
    """The ``result`` of every publish_result in a text frame (one frame or a batched array)."""
    out: list[str] = []
    pos = text.find(b'"publish_result"')
    while pos >= 0:
        at = text.find(b'"result":"', pos) + 10
        out.append(text[at : text.find(b'"', at)].decode())
        pos = text.find(b'"publish_result"', at)
    if not out and b'"type":"error"' in text:
        out.append("error")
    return out


async def _ws_subscriber(job: Job, index: int, window: Window, report: Report) -> None:
    ws = await WsConnection.open(job.urls[index])
    await ws.texts()
    items = ",".join(f'{{"subject":"{s}"}}' for s in job.subjects)
    ws.send_text(f'{{"op":"subscribe","id":1,"subjects":[{items}]}}'.encode())
    stop = window.end + 1.0
    while time.time() < stop:
        with contextlib.suppress(TimeoutError):
            texts = await asyncio.wait_for(ws.texts(), max(0.1, stop - time.time()))
            if window.inside(time.time()):
                report.delivered[index] += sum(t.count(b'{"type":"message"') for t in texts)
    ws.writer.close()


async def _until(t: float) -> None:
    delay = t - time.time()
    if delay > 0:
        await asyncio.sleep(delay)


# -- the NATS baselines ---------------------------------------------------------------------


async def _nats_publisher(job: Job, conn: int, window: Window, report: Report) -> None:
    import nats

    nc = await nats.connect(job.urls[conn % len(job.urls)], max_reconnect_attempts=0)
    slots = asyncio.Semaphore(job.in_flight)
    prefix = f"p{job.index}c{conn}"
    tasks: set[asyncio.Task[None]] = set()
    echoes: dict[str, float] = {}

    def done(t0: float, ok: bool, what: str = "failed") -> None:
        slots.release()
        now = time.time()
        if not ok:
            _count(report.failed, what)
        elif window.inside(now):
            report.acked += 1
            report.latencies.append(now - t0)

    async def on_echo(msg: Any) -> None:
        t0 = echoes.pop(msg.reply, None)  # the reply field carries the message's id
        if t0 is not None:
            done(t0, True)

    if job.kind == "core":
        await nc.subscribe(f"echo.{prefix}.>", cb=on_echo)
    js = nc.jetstream()

    async def one_js(subject: str, payload: bytes, msg_id: str, t0: float) -> None:
        try:
            await js.publish(subject, payload, stream=job.stream, headers={"Nats-Msg-Id": msg_id})
        except Exception as exc:
            done(t0, False, type(exc).__name__)
        else:
            done(t0, True)

    await _until(job.start)
    n = 0
    while time.time() < window.end:
        await slots.acquire()
        n += 1
        token = job.subjects[(n * 7919 + conn) % len(job.subjects)]
        payload = _content(job.size, n).encode()
        t0 = time.time()
        if job.kind == "core":
            msg_id = f"{prefix}-{n}"
            echoes[msg_id] = t0
            await nc.publish(f"echo.{prefix}.{token}", payload, reply=msg_id)
        else:
            task = asyncio.create_task(one_js(f"bench.{token}", payload, f"{prefix}-{n}", t0))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks, timeout=30)
    await asyncio.sleep(1.0)
    for _ in echoes:
        _count(report.failed, "no echo")
    await nc.close()


async def _nats_subscriber(job: Job, index: int, window: Window, report: Report) -> None:
    import nats

    nc = await nats.connect(job.urls[index], max_reconnect_attempts=0)

    async def on_msg(msg: Any) -> None:
        if window.inside(time.time()):
            report.delivered[index] += 1

    if job.kind == "core":
        await nc.subscribe("echo.>", cb=on_msg, pending_msgs_limit=1_000_000)
    else:
        await nc.jetstream().subscribe(
            "bench.>", cb=on_msg, ordered_consumer=True, stream=job.stream
        )
    await _until(window.end + 1.0)
    await nc.close()


def new_run_id() -> str:
    return uuid.uuid4().hex[:8]
