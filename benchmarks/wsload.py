"""Cheap WebSocket load generator for ``fanout.py``: raw asyncio Protocols on uvloop.

The generator must cost much less per received message than the server under test, or it is the
generator that gets measured. So a subscriber does no JSON decoding and no per-frame allocation on
its hot path: it walks the RFC 6455 frame headers of each received chunk (2, 4 or 10 byte
headers; server frames are never masked), counts the text frames whose payload starts with
``{"type":"m`` (message frames), and extracts the publisher's timestamp only from every Kth one.
A server that batches (spec 5.6, docs/protocol.md 4.1) sends one text frame holding a JSON array
of server frames: for those the subscriber counts the occurrences of ``{"type":"message"`` in the
payload (one C scan; a message's content is a JSON string, so it cannot contain that sequence
unescaped) and samples the Kth message inside the array. Everything else (handshake, welcome,
subscribed, ping, close, odd text frames, arrays without messages) goes through a slow, general
path, which also splits arrays into their elements.

Each publish carries ``time.time_ns()`` as the first 19 characters of its ``content``, padded
with ``x`` to the message size, so latency = subscriber receive time - publisher send time on the
same machine clock.

Processes talk to the orchestrator (``fanout.py``) through a Pipe (commands, final report) and
shared-memory counters (received messages per process, publisher totals), which the orchestrator
reads at the edges of the measurement window without messaging.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import ctypes
import errno
import functools
import os
import random
import resource
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import msgspec
import uvloop
from hdrh.histogram import HdrHistogram


def _apply_mask_py(data: bytes, mask: bytes) -> bytes:
    n = len(data)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets ships the C version on CPython/Linux
    apply_mask = _apply_mask_py  # type: ignore[assignment]


time_ns = time.time_ns
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)  # Linux 4.2+
MESSAGE_TAG_BYTE = 0x6D  # payload[9] == "m" for b'{"type":"message"...'
ARRAY_BYTE = 0x5B  # payload[0] == "[": a batch (JSON array of server frames)
MESSAGE_KEY = b'{"type":"message"'
CONTENT_KEY = b'"content":"'
TS_DIGITS = 19
HIST_MAX_US = 120_000_000  # 2 minutes
# Per header length: the offsets checked by the block step (header bytes, then payload[9]).
CHECK_OFFSETS = {h: (*range(h), h + 9) for h in (2, 4, 10)}


def new_histogram() -> HdrHistogram:
    return HdrHistogram(1, HIST_MAX_US, 3)


def split_batch(payload: bytes) -> list[bytes]:
    """The elements of a batch frame's JSON array, as raw JSON (not decoded); [] if invalid."""
    try:
        items = msgspec.json.decode(payload, type=list[msgspec.Raw])
    except msgspec.DecodeError:
        return []
    return [bytes(item) for item in items]


# --- frames ----------------------------------------------------------------------------------


def client_frame(opcode: int, payload: bytes) -> bytes:
    """One final, masked client frame (RFC 6455 5.3: clients must mask)."""
    mask = random.randbytes(4)
    n = len(payload)
    first = 0x80 | opcode
    if n < 126:
        header = bytes((first, 0x80 | n))
    elif n < 1 << 16:
        header = struct.pack("!BBH", first, 0x80 | 126, n)
    else:
        header = struct.pack("!BBQ", first, 0x80 | 127, n)
    return header + mask + apply_mask(payload, mask)


def handshake_request(host: str, port: int, path: str) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        "User-Agent: pushgrid-fanout-bench\r\n\r\n"
    ).encode()


def client_socket(source_host: str | None) -> socket.socket:
    """A non-blocking TCP socket, bound to ``source_host`` if given, the port left to connect().

    ``bind((addr, 0))`` makes the kernel pick a free port for the address alone, a search that
    grows with the ports already in use: with ~5,000 connections per address it took ~75% of a
    generator process's CPU in a storm (``inet_csk_get_port`` in perf). With
    ``IP_BIND_ADDRESS_NO_PORT`` the port is chosen at connect() for the whole 4-tuple, cheaply.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    if source_host:
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind((source_host, 0))
    return sock


TCP_INFO_TOTAL_RETRANS = struct.Struct("=I")  # struct tcp_info: u32 tcpi_total_retrans
TCP_INFO_TOTAL_RETRANS_AT = 100  # 8 bytes of u8 fields, then u32 fields; the 24th


def total_retransmits(sock: socket.socket) -> int:
    """``tcpi_total_retrans`` of a TCP socket (Linux): SYNs and data segments sent again."""
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    except OSError:
        return 0
    if len(info) < TCP_INFO_TOTAL_RETRANS_AT + 4:
        return 0
    return int(TCP_INFO_TOTAL_RETRANS.unpack_from(info, TCP_INFO_TOTAL_RETRANS_AT)[0])


# --- process plumbing ------------------------------------------------------------------------


def harden_child(parent_pid: int, deadline_s: float) -> None:
    """Die with the parent (PR_SET_PDEATHSIG), ignore Ctrl-C (the parent cleans up)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(2)
    # Last-resort watchdog even if the event loop is wedged.
    signal.signal(signal.SIGALRM, lambda *_: os._exit(3))
    signal.alarm(max(1, int(deadline_s)))


class Commands:
    """Reads (cmd, arg) tuples from a multiprocessing Connection inside the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, conn: Any) -> None:
        self.conn = conn
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        loop.add_reader(conn.fileno(), self._readable)

    def _readable(self) -> None:
        try:
            while self.conn.poll():
                self.queue.put_nowait(self.conn.recv())
        except (EOFError, OSError):
            self.queue.put_nowait(("stop", None))

    async def get(self) -> tuple[str, Any]:
        return await self.queue.get()


# --- generic client protocol -----------------------------------------------------------------


class WSClient(asyncio.Protocol):
    """Hand-rolled WebSocket client: HTTP/1.1 upgrade, masked sends, a general frame walker."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self.host, self.port, self.path = host, port, path
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.is_open = False
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.close_code: int | None = None
        self.protocol_errors = 0
        self.lost = False

    # asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's own transport class
        self.transport.write(handshake_request(self.host, self.port, self.path))

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        if not self.is_open:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                self.buf = buf
                if len(buf) > 65536:
                    self._fail("handshake response too long")
                return
            status = buf[: buf.find(b"\r\n")]
            if b" 101" not in status:
                self._fail(f"handshake refused: {status.decode(errors='replace')}")
                return
            self.is_open = True
            buf = buf[end + 4 :]
            if not self.opened.done():
                self.opened.set_result(None)
            self.on_open()
        self.buf = self.walk(buf)

    def connection_lost(self, exc: Exception | None) -> None:
        self.is_open = False
        self.lost = True
        if not self.opened.done():
            self.opened.set_exception(ConnectionError(f"connection lost before open: {exc}"))
        self.on_lost(exc)

    # frames
    def walk(self, buf: bytes) -> bytes:
        n = len(buf)
        i = 0
        while n - i >= 2:
            length = buf[i + 1] & 0x7F
            if length < 126:
                start = i + 2
            elif length == 126:
                if n - i < 4:
                    break
                start = i + 4
                length = (buf[i + 2] << 8) | buf[i + 3]
            else:
                if n - i < 10:
                    break
                start = i + 10
                length = int.from_bytes(buf[i + 2 : start], "big")
            end = start + length
            if end > n:
                break
            self.on_frame(buf[i], buf[start:end])
            i = end
        return buf[i:] if i < n else b""

    def on_frame(self, first: int, payload: bytes) -> None:
        opcode = first & 0x0F
        if not first & 0x80 or opcode == 0:
            self.protocol_errors += 1  # fragmentation: never used by the servers we test
        elif opcode == 1:
            if payload[:1] == b"[":  # a batch: a JSON array of server frames
                items = split_batch(payload)
                if not items:
                    self.protocol_errors += 1
                for item in items:
                    self.on_text(item)
            else:
                self.on_text(payload)
        elif opcode == 9:
            self.send(10, payload)  # pong
        elif opcode == 8:
            self.close_code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
            self.send(8, payload[:2])
            if self.transport is not None:
                self.transport.close()
        elif opcode != 10:
            self.protocol_errors += 1  # binary frames are not part of the protocol

    def send(self, opcode: int, payload: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(client_frame(opcode, payload))

    def _fail(self, why: str) -> None:
        if not self.opened.done():
            self.opened.set_exception(ConnectionError(why))
        if self.transport is not None:
            self.transport.abort()

    # hooks
    def on_open(self) -> None:
        pass

    def on_text(self, payload: bytes) -> None:
        pass

    def on_lost(self, exc: Exception | None) -> None:
        pass


# --- subscribers -----------------------------------------------------------------------------


@dataclass
class SubscriberConfig:
    host: str
    port: int
    path: str
    subjects: list[list[str]]  # the subjects of each connection of this process
    sample_every: int
    read_interval: float  # seconds between event-loop iterations once subscribed; 0 = none
    connect_concurrency: int
    setup_timeout: float
    deadline: float
    # Local address to connect from: with tens of thousands of connections to one port, several
    # source addresses (127.0.0.2, 127.0.0.3...) keep clear of ephemeral-port exhaustion.
    source_host: str | None = None
    client: str = "pushgrid"  # "nats": the NATS text protocol inside WebSocket frames


class SubscriberWorker:
    """Process-wide state shared by this process's subscriber connections."""

    def __init__(self, idx: int, counts: Any, phase: Any, sample_every: int) -> None:
        self.idx = idx
        self.counts = counts  # shared int64 array, one slot per process
        self.phase = phase  # shared int: 0 warm-up, 1 measure, 2 done
        self.every = sample_every
        self.until = sample_every  # messages left before the next latency sample
        self.count = 0
        # During the measured window (phase 1): messages and the frames that carried them
        # (a batch frame counts once), to report messages per frame.
        self.window_msgs = 0
        self.window_frames = 0
        self.hist = new_histogram()
        self.bad_samples = 0
        self.subscribed = 0
        self.denied = 0
        self.errors: list[str] = []
        self.lost = 0
        self.close_codes: dict[int, int] = {}
        self.all_subscribed: asyncio.Future[None] | None = None
        self.paced = False
        self.expected_subscribed = 0

    def record(self, buf: bytes, starts: list[int], now: int) -> None:
        if self.phase.value != 1:
            return
        for start in starts:
            p = buf.find(CONTENT_KEY, start)
            try:
                sent = int(buf[p + len(CONTENT_KEY) : p + len(CONTENT_KEY) + TS_DIGITS])
            except ValueError:
                self.bad_samples += 1
                continue
            us = (now - sent) // 1000
            self.hist.record_value(min(max(us, 1), HIST_MAX_US))

    def on_subscribed(self, ok: bool, why: str = "") -> None:
        self.subscribed += 1
        if not ok:
            self.denied += 1
            if len(self.errors) < 5:
                self.errors.append(why)
        done = self.all_subscribed
        if self.subscribed >= self.expected_subscribed and done is not None and not done.done():
            done.set_result(None)


class Subscriber(WSClient):
    def __init__(self, w: SubscriberWorker, cfg: SubscriberConfig, subjects: list[str]) -> None:
        super().__init__(cfg.host, cfg.port, cfg.path)
        self.w = w
        self.subjects = subjects
        self.pending = len(subjects)
        self.fast = False

    def on_open(self) -> None:
        for i in range(0, len(self.subjects), 1000):
            items = [{"subject": s} for s in self.subjects[i : i + 1000]]
            self.send(1, msgspec.json.encode({"op": "subscribe", "id": i + 1, "subjects": items}))

    def on_text(self, payload: bytes) -> None:
        """Slow path: any text frame before fast mode, and odd frames after it."""
        if self.is_message(payload):
            return
        try:
            obj = msgspec.json.decode(payload)
        except msgspec.DecodeError:
            self.protocol_errors += 1
            return
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "subscribed":
            self.pending -= 1
            ok = obj.get("status") == "allow"
            self.w.on_subscribed(ok, "" if ok else f"{obj.get('subject')}: {obj.get('reason')}")
            if self.pending <= 0:
                self.fast = True
        elif kind == "error" and len(self.w.errors) < 5:
            self.w.errors.append(payload.decode(errors="replace")[:300])

    def is_message(self, payload: bytes) -> bool:
        """Count a message frame met on the slow path (no latency sample there)."""
        if (len(payload) > 9 and payload[9] == MESSAGE_TAG_BYTE) or payload.startswith(
            b'{"type": "message"'
        ):
            self.w.count += 1
            self.w.counts[self.w.idx] = self.w.count
            return True
        return False

    def data_received(self, data: bytes) -> None:
        if not self.fast:
            WSClient.data_received(self, data)
            return
        # Hot path: walk frame headers, count message frames, sample every Kth.
        buf = self.buf + data if self.buf else data
        w = self.w
        n = len(buf)
        i = 0
        cnt = 0
        frames = 0
        target = w.until
        samples: list[int] | None = None
        try_block = True
        while n - i >= 2:
            length = buf[i + 1]
            if length < 126:
                start = i + 2
            elif length == 126:
                if n - i < 4:
                    break
                start = i + 4
                length = (buf[i + 2] << 8) | buf[i + 3]
            else:
                if n - i < 10:
                    break
                start = i + 10
                length = int.from_bytes(buf[i + 2 : start], "big")
            end = start + length
            if end > n:
                break
            if buf[i] == 0x81 and length > 9 and buf[start + 9] == MESSAGE_TAG_BYTE:
                if try_block:
                    # Block step, in C: strided slices of the next k frame slots compared with
                    # this frame's header bytes and payload[9]. The m leading slots that match
                    # are m message frames of this very size (by induction: same header = same
                    # opcode and length, so the next frame starts exactly one size later).
                    # Messages of one subject usually have equal sizes.
                    size = end - i
                    k = (n - i) // size
                    m = k
                    if k > 1:
                        stop = i + k * size
                        for o in CHECK_OFFSETS[start - i]:
                            col = buf[i + o : stop : size]
                            lead = k - len(col.lstrip(col[:1]))
                            if lead < m:
                                m = lead
                                if m < 2:
                                    break
                    if m < 4:
                        try_block = False  # irregular chunk: walk it frame by frame
                    if m > 1:
                        while cnt + m >= target:
                            pos = start + (target - cnt - 1) * size
                            if samples is None:
                                samples = [pos]
                            else:
                                samples.append(pos)
                            target += w.every
                        cnt += m
                        frames += m
                        i += m * size
                        continue
                cnt += 1
                frames += 1
                if cnt >= target:
                    if samples is None:
                        samples = [start]
                    else:
                        samples.append(start)
                    target += w.every
            elif (
                buf[i] == 0x81
                and length > 9
                and buf[start] == ARRAY_BYTE
                and (m := buf.count(MESSAGE_KEY, start, end))
            ):
                # A batch: count its messages in C; if the next latency sample falls inside it,
                # find that very message (the Kth, not the first: the first message of a batch
                # waited longest). Other elements of a batch (rare once subscribed) are ignored.
                if cnt + m >= target:
                    pos = start
                    seen = 0
                    while cnt + m >= target:
                        while seen < target - cnt:
                            pos = buf.find(MESSAGE_KEY, pos, end) + 1
                            seen += 1
                        if samples is None:
                            samples = [pos - 1]
                        else:
                            samples.append(pos - 1)
                        target += w.every
                cnt += m
                frames += 1
            else:
                self.on_frame(buf[i], buf[start:end])
            i = end
        self.buf = buf[i:] if i < n else b""
        if cnt:
            w.count += cnt
            if w.phase.value == 1:
                w.window_msgs += cnt
                w.window_frames += frames
            if not w.paced:  # else pace_reads() publishes the count once per period
                w.counts[w.idx] = w.count
            w.until = target - cnt
            if samples is not None:
                w.record(buf, samples, time_ns())

    def on_lost(self, exc: Exception | None) -> None:
        self.w.lost += 1
        if self.close_code is not None:
            self.w.close_codes[self.close_code] = self.w.close_codes.get(self.close_code, 0) + 1


class NatsSubscriber(Subscriber):
    """A NATS client over WebSocket: CONNECT + SUB + PING in one frame, subscribed at the PONG.

    nats-server's frames carry the protocol as a byte stream, split anywhere. Messages are
    counted as occurrences of ``MSG `` (the payload, a timestamp and ``x`` padding, cannot hold
    it); the last 5 bytes of the stream are kept so a split keyword is found once. A latency
    sample reads the timestamp that starts the payload of the last message of a chunk.
    """

    def __init__(self, w: SubscriberWorker, cfg: SubscriberConfig, subjects: list[str]) -> None:
        super().__init__(w, cfg, subjects)
        self.tail = b""
        self.ready = False

    def on_open(self) -> None:
        subs = b"".join(b"SUB %s %d\r\n" % (s.encode(), i + 1) for i, s in enumerate(self.subjects))
        self.send(
            1, b'CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\n' + subs + b"PING\r\n"
        )

    def data_received(self, data: bytes) -> None:
        WSClient.data_received(self, data)

    def on_frame(self, first: int, payload: bytes) -> None:
        opcode = first & 0x0F
        if opcode in (0, 1, 2):
            self.stream(payload)
        else:
            WSClient.on_frame(self, first, payload)

    def stream(self, payload: bytes) -> None:
        w = self.w
        data = self.tail + payload
        self.tail = data[-5:]
        if not self.ready:
            if b"PONG\r\n" in data:
                self.ready = True
                for _ in self.subjects:
                    w.on_subscribed(True)
            elif b"-ERR" in data:
                w.on_subscribed(False, data.decode(errors="replace")[:200])
        if b"PING\r\n" in data:
            self.send(1, b"PONG\r\n")
        n = data.count(b"MSG ")
        if not n:
            return
        w.count += n
        if w.phase.value == 1:
            w.window_msgs += n
            w.window_frames += 1
            w.until -= n
            if w.until <= 0:
                w.until += w.every
                self.sample(data)
        if not w.paced:
            w.counts[w.idx] = w.count

    def sample(self, data: bytes) -> None:
        start = data.find(b"\r\n", data.rfind(b"MSG ")) + 2
        stamp = data[start : start + TS_DIGITS]
        if start < 2 or len(stamp) < TS_DIGITS or not stamp.isdigit():
            self.w.bad_samples += 1
            return
        us = (time_ns() - int(stamp)) // 1000
        self.w.hist.record_value(min(max(us, 1), HIST_MAX_US))


def pace_reads(loop: asyncio.AbstractEventLoop, interval: float, w: SubscriberWorker) -> None:
    """Run the event loop at most once per ``interval``: sleep away the rest of each period.

    Without this, a server that writes one frame per syscall makes every read return one small
    frame, and the generator pays an epoll wake-up, a recv and a Python callback per message:
    as much CPU per message as the server itself. Letting data accumulate in the kernel for up
    to ``interval`` turns that into one read per connection per period, at the price of up to
    ``interval`` of added latency (mean ``interval`` / 2), which is reported with the results.
    The shared received-count is published here, once per period, instead of once per read.
    """
    w.paced = True
    counts, idx = w.counts, w.idx
    monotonic = time.monotonic
    sleep = time.sleep
    last = monotonic()

    def pace() -> None:
        nonlocal last
        wait = interval - (monotonic() - last)
        counts[idx] = w.count
        if wait > 0:
            sleep(wait)
        last = monotonic()
        loop.call_soon(pace)

    loop.call_soon(pace)


def subscriber_main(
    idx: int, cfg: SubscriberConfig, counts: Any, phase: Any, conn: Any, parent_pid: int
) -> None:
    harden_child(parent_pid, cfg.deadline)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # one file descriptor per connection
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    uvloop.run(_subscriber_async(idx, cfg, counts, phase, conn))
    conn.close()
    os._exit(0)  # skip interpreter teardown: nothing left to flush


class Connector:
    """Opens one process's connections, at most ``limit`` of them in flight at once.

    A connection in flight holds a slot from connect() until its WebSocket opens (the 101) or
    its attempt fails; the next connect starts from that callback. No coroutine, semaphore or
    ``gather`` of ours per connection (they cost as much as the rest of the client's connect
    path): a plain non-blocking socket (:func:`client_socket`, ``connect_ex``) is handed to
    uvloop's ``create_connection(sock=...)``, the only task per connection. A slot ends at the
    101 because until then the connection may sit in the server's accept queue: ``limit`` x
    processes above the server's listen backlog overflows it, and the kernel drops handshakes
    that come back a second later (``TcpExtListenOverflows``). A failed attempt is retried
    twice, after 0.2 s and 0.4 s, then counted in :attr:`errors`.
    """

    ATTEMPTS = 3

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        address: tuple[str, int],
        source_host: str | None,
        limit: int,
        clients: list[Callable[[], WSClient]],
    ) -> None:
        self.loop, self.address, self.source_host = loop, address, source_host
        self.limit = max(1, limit)
        self.todo: collections.deque[tuple[Callable[[], WSClient], int]] = collections.deque(
            (make, 0) for make in reversed(clients)
        )
        self.in_flight = 0
        self.opened: list[Any] = []  # the open clients, for the caller's bookkeeping
        self.errors: list[str] = []
        # Segments the kernel sent again for the open connections, up to their 101: above 0,
        # handshakes were dropped (e.g. a full accept queue) and came back >= 1 s later.
        self.retransmits = 0
        self.done: asyncio.Future[None] = loop.create_future()

    async def run(self) -> None:
        """Connect every client (or give up on it); returns when none is left in flight."""
        self._fill()
        await self.done

    def _fill(self) -> None:
        while self.in_flight < self.limit and self.todo:
            self._start(*self.todo.pop())
        if not self.in_flight and not self.todo and not self.done.done():
            self.done.set_result(None)

    def _start(self, make: Callable[[], WSClient], attempt: int) -> None:
        self.in_flight += 1
        sock = client_socket(self.source_host)
        code = sock.connect_ex(self.address)  # loopback: usually established on return
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            self._settled(make, attempt, OSError(code, os.strerror(code)))
            return
        proto = make()
        proto.opened.add_done_callback(
            lambda f: self._settled(make, attempt, f.exception(), proto, sock)
        )
        task = self.loop.create_task(self.loop.create_connection(lambda: proto, sock=sock))
        task.add_done_callback(lambda t: self._transport_failed(t, sock, proto))

    @staticmethod
    def _transport_failed(task: asyncio.Task[Any], sock: socket.socket, proto: WSClient) -> None:
        exc = task.exception()
        if exc is not None:  # uvloop never called connection_made: settle the attempt here
            sock.close()
            if not proto.opened.done():
                proto.opened.set_exception(exc)

    def _settled(
        self,
        make: Callable[[], WSClient],
        attempt: int,
        exc: BaseException | None,
        proto: WSClient | None = None,
        sock: socket.socket | None = None,
    ) -> None:
        self.in_flight -= 1
        if exc is None:
            self.opened.append(proto)
            if sock is not None:
                self.retransmits += total_retransmits(sock)
        elif attempt + 1 < self.ATTEMPTS:
            self.in_flight += 1  # the slot stays taken until the retry settles
            self.loop.call_later(0.2 * (attempt + 1), self._retry, make, attempt + 1)
            return
        else:
            self.errors.append(repr(exc))
        self._fill()

    def _retry(self, make: Callable[[], WSClient], attempt: int) -> None:
        self.in_flight -= 1
        self._start(make, attempt)


async def _subscriber_async(
    idx: int, cfg: SubscriberConfig, counts: Any, phase: Any, conn: Any
) -> None:
    loop = asyncio.get_running_loop()
    commands = Commands(loop, conn)
    w = SubscriberWorker(idx, counts, phase, cfg.sample_every)
    w.expected_subscribed = sum(len(s) for s in cfg.subjects)
    w.all_subscribed = loop.create_future()
    client_cls = NatsSubscriber if cfg.client == "nats" else Subscriber
    connector = Connector(
        loop,
        (cfg.host, cfg.port),
        cfg.source_host,
        cfg.connect_concurrency,
        [functools.partial(client_cls, w, cfg, s) for s in cfg.subjects],
    )
    protocols = connector.opened
    connect_errors = connector.errors
    t0 = time.monotonic()
    try:
        async with asyncio.timeout(cfg.setup_timeout):
            await connector.run()
            if not connect_errors and w.expected_subscribed:
                await w.all_subscribed
    except TimeoutError:
        connect_errors.append(f"setup timed out after {cfg.setup_timeout}s")
    if cfg.read_interval > 0:
        pace_reads(loop, cfg.read_interval, w)
    conn.send(
        (
            "ready",
            {
                "connected": len(protocols),
                "subscribed": w.subscribed,
                "denied": w.denied,
                "errors": (connect_errors + w.errors)[:5],
                "setup_s": time.monotonic() - t0,
                "connect_retransmits": connector.retransmits,
            },
        )
    )
    while True:
        cmd, _ = await commands.get()
        if cmd == "stop":
            break
    for proto in protocols:
        if proto.transport is not None:
            proto.transport.abort()
    conn.send(
        (
            "report",
            {
                "count": w.count,
                "window_msgs": w.window_msgs,
                "window_frames": w.window_frames,
                "hist": w.hist.encode(),
                "bad_samples": w.bad_samples,
                "lost": w.lost,
                "close_codes": w.close_codes,
                "protocol_errors": sum(p.protocol_errors for p in protocols),
                "errors": w.errors,
            },
        )
    )


# --- publisher -------------------------------------------------------------------------------


@dataclass
class PublisherConfig:
    host: str
    port: int
    path: str
    subjects: list[str]
    fanout: list[int]  # expected deliveries per publish, per subject
    message_size: int
    rate: float  # total publishes per second; 0 = saturate
    max_unacked: int
    max_backlog: int  # deliveries published but not yet received (saturation only)
    qos: str
    retained: bool
    deadline: float
    max_batch: int = 256
    ack_timeout: float = 15.0
    tick: float = 0.001
    client: str = "pushgrid"  # "nats": plain NATS over TCP (host:port is the NATS client port)


class Publisher(WSClient):
    def __init__(self, cfg: PublisherConfig, counts: Any, shared: Any) -> None:
        super().__init__(cfg.host, cfg.port, cfg.path)
        self.cfg = cfg
        self.counts = counts
        self.shared = shared
        retained = b"true" if cfg.retained else b"false"
        self.prefixes = [
            b'{"op":"publish","subject":' + msgspec.json.encode(s) + b',"content":"'
            for s in cfg.subjects
        ]
        self.pad = b"x" * max(0, cfg.message_size - TS_DIGITS)
        self.suffix = b'","qos":"' + cfg.qos.encode() + b'","retained":' + retained + b',"id":'
        self.next_subject = 0
        self.published = 0
        self.expected = 0  # deliveries due for everything sent
        self.expected_acked = 0  # deliveries due for the publishes the server acknowledged ok
        self.inflight_fanout: collections.deque[int] = collections.deque()
        self.unacked = 0
        self.acked_ok = 0
        self.acked_failed = 0
        self.first_failure: str | None = None
        self.running = False
        self.started = 0.0
        self.behind = 0  # rate mode: publishes that were due but blocked by max_unacked
        self.timer: asyncio.TimerHandle | None = None

    def on_text(self, payload: bytes) -> None:
        # A connection's ops are handled in order, so replies come in publish order.
        if b'"publish_result"' in payload:
            self.unacked -= 1
            fanout = self.inflight_fanout.popleft() if self.inflight_fanout else 0
            if b'"result":"ok"' in payload or b'"result": "ok"' in payload:
                self.acked_ok += 1
                self.expected_acked += fanout
            else:
                self._failed(payload)
        elif b'"type":"error"' in payload or b'"type": "error"' in payload:
            if b'"id":null' not in payload and b'"id"' in payload:
                self.unacked -= 1
                if self.inflight_fanout:
                    self.inflight_fanout.popleft()
            self._failed(payload)

    def _failed(self, payload: bytes) -> None:
        self.acked_failed += 1
        if self.first_failure is None:
            self.first_failure = payload.decode(errors="replace")[:300]

    def data_received(self, data: bytes) -> None:
        WSClient.data_received(self, data)
        if self.running and not self.cfg.rate:
            self.pump()

    def start(self) -> None:
        self.running = True
        self.started = time.monotonic()
        self.pump()

    def stop(self) -> None:
        self.running = False
        if self.timer is not None:
            self.timer.cancel()

    def publish_batch(self, k: int) -> None:
        if k <= 0:
            return
        cfg = self.cfg
        parts = []
        ts = b"%019d" % time_ns()
        nsub = len(self.prefixes)
        s = self.next_subject
        for _ in range(k):
            self.published += 1
            payload = self.prefixes[s] + ts + self.pad + self.suffix + b"%d}" % self.published
            parts.append(client_frame(1, payload))
            self.expected += cfg.fanout[s]
            self.inflight_fanout.append(cfg.fanout[s])
            s += 1
            if s == nsub:
                s = 0
        self.next_subject = s
        self.unacked += k
        assert self.transport is not None
        self.transport.write(b"".join(parts))
        self.shared[0] = self.published
        self.shared[1] = self.expected

    def pump(self) -> None:
        if not self.running or self.transport is None or self.transport.is_closing():
            return
        cfg = self.cfg
        room = cfg.max_unacked - self.unacked
        if cfg.rate:
            due = int(cfg.rate * (time.monotonic() - self.started)) - self.published
            k = min(due, room, cfg.max_batch * 16)
            if due > room:
                self.behind = max(self.behind, due - max(room, 0))
                self.shared[4] = self.behind
        else:
            backlog = self.expected - sum(self.counts)
            per = max(1, max(cfg.fanout))
            k = min(room, (cfg.max_backlog - backlog) // per, cfg.max_batch)
        self.publish_batch(k)
        if self.timer is not None:
            self.timer.cancel()
        self.timer = asyncio.get_running_loop().call_later(cfg.tick, self.pump)


class NatsPublisher(Publisher):
    """Publishes with ``PUB`` on a plain NATS TCP connection. NATS has no per-publish result:
    every publish counts as acknowledged, and at stop a ``PING`` / ``PONG`` round trip makes
    sure the server has processed all of them."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.write(b'CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\n')
        self.is_open = True
        self.prefixes = [
            b"PUB %s %d\r\n" % (s.encode(), self.cfg.message_size) for s in self.cfg.subjects
        ]
        if not self.opened.done():
            self.opened.set_result(None)

    def data_received(self, data: bytes) -> None:
        if b"PING\r\n" in data and self.transport is not None:
            self.transport.write(b"PONG\r\n")
        if b"PONG\r\n" in data:
            self.unacked = 0  # the stop PING: everything before it was processed
        if b"-ERR" in data:
            self._failed(data)
        if self.running and not self.cfg.rate:
            self.pump()

    def stop(self) -> None:
        super().stop()
        self.unacked = 1
        if self.transport is not None:
            self.transport.write(b"PING\r\n")

    def publish_batch(self, k: int) -> None:
        if k <= 0:
            return
        cfg = self.cfg
        parts = []
        ts = b"%019d" % time_ns()
        s = self.next_subject
        for _ in range(k):
            self.published += 1
            parts.append(self.prefixes[s] + ts + self.pad + b"\r\n")
            self.expected += cfg.fanout[s]
            self.expected_acked += cfg.fanout[s]
            self.acked_ok += 1
            s = (s + 1) % len(self.prefixes)
        self.next_subject = s
        assert self.transport is not None
        self.transport.write(b"".join(parts))
        self.shared[0] = self.published
        self.shared[1] = self.expected


def publisher_main(
    cfg: PublisherConfig, counts: Any, shared: Any, conn: Any, parent_pid: int
) -> None:
    harden_child(parent_pid, cfg.deadline)
    uvloop.run(_publisher_async(cfg, counts, shared, conn))
    conn.close()
    os._exit(0)


async def _publisher_async(cfg: PublisherConfig, counts: Any, shared: Any, conn: Any) -> None:
    loop = asyncio.get_running_loop()
    commands = Commands(loop, conn)
    try:
        async with asyncio.timeout(30):
            cls = NatsPublisher if cfg.client == "nats" else Publisher
            _, proto = await loop.create_connection(
                lambda: cls(cfg, counts, shared), cfg.host, cfg.port
            )
            await proto.opened
    except (OSError, TimeoutError) as exc:
        conn.send(("ready", {"error": repr(exc)}))
        return
    conn.send(("ready", {}))
    while True:
        cmd, _ = await commands.get()
        if cmd == "go":
            proto.start()
        elif cmd == "stop":
            proto.stop()
            break
    # Let the last publish_results arrive (bounded): only acknowledged publishes are expected
    # to be delivered (a publish still unread by the server when we hang up may be dropped).
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(cfg.ack_timeout):
            while proto.unacked > 0 and not proto.lost:  # noqa: ASYNC110 - cheap bounded poll
                await asyncio.sleep(0.01)
    conn.send(
        (
            "report",
            {
                "published": proto.published,
                "expected": proto.expected_acked,
                "acked_ok": proto.acked_ok,
                "acked_failed": proto.acked_failed,
                "unacked": proto.unacked,
                "first_failure": proto.first_failure,
                "behind_max": proto.behind,
                "lost": proto.lost,
                "close_code": proto.close_code,
            },
        )
    )
    if proto.transport is not None:
        proto.transport.abort()


if __name__ == "__main__":  # pragma: no cover
    sys.exit("this module is used by benchmarks/fanout.py")


class IdleSubscribers:
    """``n`` subscribers of one subject in one forked process, subscribed and then idle.

    The connection benchmarks (conn_cpu.py, conn_memory.py) measure the server around
    :meth:`start`, which returns once every connection is subscribed (the process's ready
    report), and end the process with :meth:`stop`.
    """

    def __init__(
        self, port: int, n: int, subject: str, source_host: str, connect_concurrency: int
    ) -> None:
        import multiprocessing as mp

        self.n = n
        ctx = mp.get_context("fork")
        counts, phase = ctx.RawArray("q", 1), ctx.RawValue("i", 0)
        self._parent, child = ctx.Pipe()
        config = SubscriberConfig(
            host="127.0.0.1",
            port=port,
            path="/ws",
            subjects=[[subject]] * n,
            sample_every=1000,
            read_interval=0.0,
            connect_concurrency=connect_concurrency,
            setup_timeout=120,
            deadline=300,
            source_host=source_host,
        )
        self._process = ctx.Process(
            target=subscriber_main,
            args=(0, config, counts, phase, child, os.getpid()),
            daemon=True,
        )

    async def start(self) -> dict[str, Any]:
        """Fork, connect and subscribe; the ready report (``connected``, ``subscribed``...)."""
        self._process.start()
        loop = asyncio.get_running_loop()
        ready = await loop.run_in_executor(None, self._parent.recv)
        return cast(dict[str, Any], ready[1])

    async def stop(self) -> None:
        self._parent.send(("stop", None))
        await asyncio.get_running_loop().run_in_executor(None, self._parent.recv)
        self._process.join(5)
