# ruff: noqa: ASYNC109  (bounded-wait helpers take an explicit timeout on purpose)
"""Helpers of the integration suite: a real server process, protocol-level clients, a TCP relay.

Everything here talks to a real ``pushgrid server`` process over real sockets on 127.0.0.1.
Every wait is bounded (``DEFAULT_TIMEOUT``) so a broken server fails a test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 10.0
# A readiness wait returns as soon as the server answers /health; on a loaded machine (load
# average 18 on 2 cores, issue 34 item 3) one start-up took over 20 s, at load 34 a Workers = 2
# start-up took over 60 s (its imports get ~6% of a core). A bound for a start that hangs.
START_TIMEOUT = 120.0

_BIN = Path(sys.executable).with_name("pushgrid")
PUSHGRID = [str(_BIN)] if _BIN.exists() else [sys.executable, "-m", "pushgrid"]

Frame = dict[str, Any]


# --- processes --------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port that was free a moment ago (bind to port 0 and read the number back)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env() -> dict[str, str]:
    """The environment for child processes: no PUSHGRID_* settings, no HTTP proxies."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.upper().startswith("PUSHGRID_") and "proxy" not in key.lower()
    }
    env["PYTHONUNBUFFERED"] = "1"
    env["NO_PROXY"] = env["no_proxy"] = "*"
    # The suite runs every server as one process (Workers = 1), whatever `auto` would give on
    # the machine: a test that wants several passes Workers = N (ServerProcess turns it into
    # this variable, which wins over the file). docs/workers.md, "Tests".
    env["PUSHGRID_WORKERS"] = "1"
    return env


# The JIT options of the tests' own Spark session (tests/spark_timeouts.py), for the Spark JVMs
# the tests start as processes: their jobs are small, and the quick JIT tier alone costs less
# CPU (measured: one `pushgrid stats run` over the test archive, 28.4 s -> 21.8 s). The JVM
# announces the variable on stderr ("Picked up JAVA_TOOL_OPTIONS: ...").
SPARK_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_env() -> dict[str, str]:
    """:func:`clean_env` for a process that starts Spark JVMs (they inherit it)."""
    return {**clean_env(), "JAVA_TOOL_OPTIONS": SPARK_JAVA_OPTIONS}


def conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def write_conf(path: Path, settings: dict[str, Any]) -> Path:
    lines = ["# written by tests/integration"]
    lines += [f"{key} = {conf_value(value)}" for key, value in settings.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_cli(
    *args: str, timeout: float = 30.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``pushgrid ARGS`` to completion (bounded) and capture its output."""
    return subprocess.run(
        [*PUSHGRID, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        env={**clean_env(), **(env or {})},
        cwd=REPO,
        check=False,
    )


class ServerProcess:
    """One ``pushgrid server --config FILE`` child process on 127.0.0.1:``port``."""

    host = "127.0.0.1"
    #: runs the server through it (``ip netns exec NS``: a member in a network namespace)
    prefix: tuple[str, ...] = ()

    def __init__(
        self,
        workdir: Path,
        settings: dict[str, Any],
        port: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.env = env or {}
        self.port = port if port is not None else free_port()
        self.monitor_port = free_port()
        self.settings = {
            "Listen": f"{self.host}:{self.port}",
            "MonitorHTTP.Listen": f"{self.host}:{self.monitor_port}",
            "ServerName": "it-node",
            **settings,
        }
        self.config_path = workdir / "pushgrid.conf"
        self.proc: subprocess.Popen[bytes] | None = None
        self.returncodes: list[int] = []
        self.starts = 0
        self._log_paths: list[Path] = []

    # addresses
    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    @property
    def monitor_url(self) -> str:
        return f"http://{self.host}:{self.monitor_port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.address}/ws"

    def http(self, **kwargs: Any) -> httpx.AsyncClient:
        kwargs.setdefault("timeout", DEFAULT_TIMEOUT)
        return httpx.AsyncClient(base_url=self.url, trust_env=False, **kwargs)

    # lifecycle
    def start(self) -> ServerProcess:
        """Start the process and wait until it logged "listening on" and /health answers 200."""
        self.launch()
        return self.wait_ready()

    def launch(self) -> ServerProcess:
        """Start the process without waiting (cluster members must start together)."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        write_conf(self.config_path, self.settings)
        self.starts += 1
        log_path = self.workdir / f"server-{self.starts}.log"
        self._log_paths.append(log_path)
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [*self.prefix, *PUSHGRID, "server", "--config", str(self.config_path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env={**clean_env(), **self._workers_env(), **self.env},
            )
        return self

    def _workers_env(self) -> dict[str, str]:
        """``Workers`` given to this server (clean_env pins every other one to 1)."""
        workers = self.settings.get("Workers")
        return {} if workers is None else {"PUSHGRID_WORKERS": str(workers)}

    def wait_ready(self, timeout: float = START_TIMEOUT) -> ServerProcess:
        """Wait until the launched process logged "listening on" and /health answers 200."""
        assert self.proc is not None
        log_path = self._log_paths[-1]
        deadline = time.monotonic() + timeout
        with httpx.Client(trust_env=False, timeout=2.0) as http:
            while True:
                code = self.proc.poll()
                if code is not None:
                    raise RuntimeError(
                        f"pushgrid server exited with {code} during start-up:\n{self.log()}"
                    )
                if "listening on" in log_path.read_text("utf-8", "replace"):
                    with contextlib.suppress(httpx.HTTPError):
                        if http.get(f"{self.url}/health").status_code == 200:
                            return self
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError(f"pushgrid server not ready in {timeout}s:\n{self.log()}")
                time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Send ``sig`` and wait (bounded) for the process to exit; return its exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"server did not exit within {timeout}s after signal {sig}:\n{self.log()}"
            ) from None
        self.returncodes.append(code)
        return code

    def restart(self, sig: int = signal.SIGKILL) -> ServerProcess:
        """Stop with ``sig`` and start again on the same port (the memory engine forgets all)."""
        self.stop(sig)
        return self.start()

    async def astart(self) -> ServerProcess:
        return await asyncio.to_thread(self.start)

    async def astop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        return await asyncio.to_thread(self.stop, sig, timeout)

    async def arestart(self, sig: int = signal.SIGKILL) -> ServerProcess:
        return await asyncio.to_thread(self.restart, sig)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return "".join(
            f"--- {p.name} ---\n{p.read_text('utf-8', 'replace')}"
            for p in self._log_paths
            if p.exists()
        )


# --- WebSocket client (protocol level) ---------------------------------------------------------


async def open_ws(
    target: ServerProcess | str, token: str | None, timeout: float
) -> ClientConnection:
    """A raw WebSocket to a server (no compression, no library pings, no size limits)."""
    url = target.ws_url if isinstance(target, ServerProcess) else target
    if token is not None:
        url += f"?token={token}"
    return await asyncio.wait_for(
        connect(
            url,
            compression=None,
            proxy=None,
            ping_interval=None,
            max_size=None,
            max_queue=None,
            open_timeout=timeout,
            close_timeout=2,
        ),
        timeout,
    )


class WsClient:
    """A protocol-level client on the ``websockets`` library: JSON frames in, JSON frames out.

    A reader task buffers every frame as it arrives (so the server never sees a slow reader);
    ``keepalive`` frames are counted in ``keepalives`` and kept out of the buffer. ``expect``
    takes the first buffered frame that matches and leaves the others in order.
    """

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.buffer: list[Frame] = []
        self.keepalives = 0
        self.received = 0
        self.close_code: int | None = None
        self.close_reason: str | None = None
        self.closed = asyncio.Event()
        self.welcome: Frame = {}
        self._changed = asyncio.Event()
        self._ids = itertools.count(1000)
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(
        cls, target: ServerProcess | str, token: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> WsClient:
        ws = await open_ws(target, token, timeout)
        client = cls(ws)
        try:
            client.welcome = await client.expect("welcome", timeout=timeout)
        except BaseException:
            await client.close()
            raise
        return client

    async def _read(self) -> None:
        try:
            while True:
                data = await self.ws.recv()
                self.received += 1
                if isinstance(data, bytes):
                    frame: Frame = {"type": "_binary", "data": data}
                else:
                    frame = json.loads(data)
                if frame.get("type") == "keepalive":
                    self.keepalives += 1
                else:
                    self.buffer.append(frame)
                self._changed.set()
        except ConnectionClosed:
            pass
        finally:
            rcvd = self.ws.protocol.close_rcvd
            self.close_code = rcvd.code if rcvd is not None else None
            self.close_reason = rcvd.reason if rcvd is not None else None
            self.closed.set()
            self._changed.set()

    def next_id(self) -> int:
        return next(self._ids)

    # sending
    async def send(self, obj: Any) -> None:
        await self.ws.send(json.dumps(obj))

    async def send_raw(self, data: str | bytes) -> None:
        await self.ws.send(data)

    # receiving
    async def _until(self, cond: Callable[[], Any], timeout: float, what: str) -> Any:
        """Wait (bounded) until ``cond()`` returns something other than None; return it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            result = cond()
            if result is not None:
                return result
            if self.closed.is_set():
                raise AssertionError(
                    f"connection closed ({self.close_code} {self.close_reason!r}) while waiting "
                    f"for {what}; buffered: {self._summary()}"
                )
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"no {what} within {timeout}s; buffered: {self._summary()}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    def _index(self, pred: Callable[[Frame], bool]) -> int | None:
        for index, frame in enumerate(self.buffer):
            if pred(frame):
                return index
        return None

    async def wait_for(
        self, pred: Callable[[Frame], bool], timeout: float = DEFAULT_TIMEOUT, what: str = "frame"
    ) -> Frame:
        """Remove and return the first buffered frame matching ``pred`` (bounded wait)."""
        index = await self._until(lambda: self._index(pred), timeout, what)
        return self.buffer.pop(index)

    async def expect(
        self, type: str | None = None, timeout: float = DEFAULT_TIMEOUT, **match: Any
    ) -> Frame:
        def pred(frame: Frame) -> bool:
            return (type is None or frame.get("type") == type) and all(
                frame.get(k) == v for k, v in match.items()
            )

        return await self.wait_for(pred, timeout, f"{type or 'frame'} {match or ''}".strip())

    async def next(self, timeout: float = DEFAULT_TIMEOUT) -> Frame:
        return await self.wait_for(lambda f: True, timeout, "frame")

    async def messages(
        self, count: int, subject: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[Frame]:
        """The next ``count`` message frames (of ``subject``), in arrival order."""
        out: list[Any] = []
        for _ in range(count):
            out.append(
                await self.wait_for(
                    lambda f: (
                        f.get("type") == "message"
                        and (subject is None or f.get("subject") == subject)
                    ),
                    timeout,
                    f"message #{len(out) + 1} of {count} ({subject})",
                )
            )
        return out

    async def sync(self, timeout: float = DEFAULT_TIMEOUT) -> list[Frame]:
        """Ping and wait for the pong; return (and remove) every frame that came before it.

        The server handles a connection's frames in order and queues its output in order, so
        whatever an earlier request produced arrives before the pong.
        """
        request_id = self.next_id()
        await self.send({"op": "ping", "id": request_id})

        def pong(frame: Frame) -> bool:
            return frame.get("type") == "pong" and frame.get("id") == request_id

        index = await self._until(lambda: self._index(pong), timeout, f"pong {request_id}")
        before = self.buffer[:index]
        del self.buffer[: index + 1]
        return before

    # requests
    async def subscribe(
        self,
        subject: str,
        *,
        recover: dict[str, Any] | None = None,
        history: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Frame:
        """Subscribe to one subject; return its ``subscribed`` frame (the rest stays buffered)."""
        request_id = self.next_id()
        item: dict[str, Any] = {"subject": subject}
        if recover is not None:
            item["recover"] = recover
        if history is not None:
            item["history"] = history
        await self.send({"op": "subscribe", "id": request_id, "subjects": [item]})
        return await self.wait_for(
            lambda f: f.get("id") == request_id and f.get("type") in ("subscribed", "error"),
            timeout,
            f"subscribed {subject}",
        )

    async def subscribe_all(
        self,
        subject: str,
        *,
        recover: dict[str, Any] | None = None,
        history: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> tuple[Frame, list[Frame]]:
        """Subscribe and return (subscribed frame, every frame after it up to a ping's pong).

        Checks the order the protocol promises: the ``subscribed`` frame comes first. Use it on
        a connection with no other traffic in flight.
        """
        request_id = self.next_id()
        item: dict[str, Any] = {"subject": subject}
        if recover is not None:
            item["recover"] = recover
        if history is not None:
            item["history"] = history
        await self.send({"op": "subscribe", "id": request_id, "subjects": [item]})
        frames = await self.sync(timeout)
        assert frames, f"no answer to subscribe {subject}"
        first = frames[0]
        assert (first.get("type"), first.get("id")) == ("subscribed", request_id), (
            f"expected the subscribed frame first, got {frames[:3]}"
        )
        return first, frames[1:]

    async def publish(
        self,
        subject: Any,
        content: Any,
        fields: Any = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        **extra: Any,
    ) -> Frame:
        """Publish; return the ``publish_result`` (or ``error``) frame answering it."""
        request_id = self.next_id()
        frame: dict[str, Any] = {
            "op": "publish",
            "id": request_id,
            "subject": subject,
            "content": content,
        }
        if fields is not None:
            frame["fields"] = fields
        frame.update(extra)
        await self.send(frame)
        return await self.wait_for(
            lambda f: f.get("id") == request_id and f.get("type") in ("publish_result", "error"),
            timeout,
            f"publish_result for {subject!r}",
        )

    async def publish_ok(
        self, subject: str, content: str, fields: Any = None, **extra: Any
    ) -> Frame:
        result = await self.publish(subject, content, fields, **extra)
        assert (result.get("type"), result.get("result")) == ("publish_result", "ok"), result
        return result

    async def wait_closed(self, timeout: float = DEFAULT_TIMEOUT) -> int | None:
        try:
            await asyncio.wait_for(self.closed.wait(), timeout)
        except TimeoutError:
            raise AssertionError(f"connection still open after {timeout}s") from None
        return self.close_code

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 3)
        if not self._reader.done():
            self._reader.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(self._reader, 3)
        with contextlib.suppress(Exception):
            self.ws.transport.abort()

    def _summary(self) -> str:
        text = json.dumps(self.buffer[:8], ensure_ascii=False)
        more = f" ... (+{len(self.buffer) - 8})" if len(self.buffer) > 8 else ""
        return (text[:1500] + "...") if len(text) > 1500 else text + more


# --- raw socket WebSocket client (misbehaving peers) -------------------------------------------

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def encode_client_frame(
    opcode: int, payload: bytes, *, fin: bool = True, rsv1: bool = False
) -> bytes:
    """A masked client frame (RFC 6455 5.2), final unless ``fin`` is False; ``rsv1``: a
    compressed message's first frame (RFC 7692)."""
    length = len(payload)
    first = 0x80 * fin | 0x40 * rsv1 | opcode
    if length < 126:
        header = struct.pack("!BB", first, 0x80 | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", first, 0x80 | 126, length)
    else:
        header = struct.pack("!BBQ", first, 0x80 | 127, length)
    mask = os.urandom(4)
    masked = (
        bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        if length < 4096
        else _mask(payload, mask)
    )
    return header + mask + masked


def _mask(payload: bytes, mask: bytes) -> bytes:
    repeated = (mask * (len(payload) // 4 + 1))[: len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(
        len(payload), "big"
    )


def parse_server_frames(data: bytes) -> tuple[list[tuple[int, bytes]], bytes]:
    """Split unmasked server frames; return (frames, incomplete tail)."""
    frames = []
    pos = 0
    while True:
        if len(data) - pos < 2:
            break
        b0, b1 = data[pos], data[pos + 1]
        length = b1 & 0x7F
        head = 2
        if length == 126:
            if len(data) - pos < 4:
                break
            (length,) = struct.unpack_from("!H", data, pos + 2)
            head = 4
        elif length == 127:
            if len(data) - pos < 10:
                break
            (length,) = struct.unpack_from("!Q", data, pos + 2)
            head = 10
        if len(data) - pos < head + length:
            break
        frames.append((b0 & 0x0F, data[pos + head : pos + head + length]))
        pos += head + length
    return frames, data[pos:]


def close_code_of(frames: Iterable[tuple[int, bytes]]) -> int | None:
    for opcode, payload in frames:
        if opcode == OP_CLOSE and len(payload) >= 2:
            return struct.unpack("!H", payload[:2])[0]
    return None


def rss_mib(pid: int, key: str = "VmRSS") -> float:
    """Resident memory of ``pid`` now (``VmHWM``: its peak so far)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {key} for {pid}")


def reset_peak_rss(pid: int) -> None:
    """Set ``pid``'s VmHWM to its RSS now (Linux: clear_refs 5), to measure a peak from here."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


class RawWs:
    """A WebSocket client on a plain blocking socket that does only what the test says.

    It answers nothing by itself: no pongs, no close replies. Use it (in a thread) for peers
    that stop reading or never answer pings.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        rcvbuf: int | None = None,
        path: str = "/ws",
        timeout: float = DEFAULT_TIMEOUT,
        offer: str | None = None,
        source: str | None = None,
    ) -> None:
        """``offer``: a ``Sec-WebSocket-Extensions`` value; ``source``: the client's address
        (any of 127.0.0.0/8 reaches a server on 127.0.0.1: a second client address)."""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if source is not None:
            self.sock.bind((source, 0))
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        key = base64.b64encode(os.urandom(16)).decode()
        extensions = f"Sec-WebSocket-Extensions: {offer}\r\n" if offer else ""
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"{extensions}\r\n"
        )
        self.sock.sendall(request.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise AssertionError(f"connection closed during the handshake: {data!r}")
            data += chunk
        head, _, self.pending = data.partition(b"\r\n\r\n")
        self.head = head
        status = head.split(b"\r\n", 1)[0]
        assert b" 101" in status, head
        self.frames: list[tuple[int, bytes]] = []

    def send_text(self, text: str) -> None:
        self.sock.sendall(encode_client_frame(OP_TEXT, text.encode("utf-8")))

    def send_json(self, obj: Any) -> None:
        self.send_text(json.dumps(obj))

    def read_frames(self, count: int, timeout: float = DEFAULT_TIMEOUT) -> list[tuple[int, bytes]]:
        """Read until at least ``count`` frames were received in total."""
        deadline = time.monotonic() + timeout
        while len(self.frames) < count:
            self._absorb()
            if len(self.frames) >= count:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"only {len(self.frames)} of {count} frames in {timeout}s")
            self.sock.settimeout(remaining)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError("connection closed")
            self.pending += chunk
        return self.frames

    def read_until_closed(self, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Read everything until the server ends the connection; return "eof" or "reset"."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._absorb()
                raise AssertionError(
                    f"the server did not end the connection within {timeout}s "
                    f"({len(self.frames)} frames read)"
                )
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 20)
            except TimeoutError:
                continue
            except ConnectionResetError:
                self._absorb()
                return "reset"
            if not chunk:
                self._absorb()
                return "eof"
            self.pending += chunk
            if len(self.pending) > 1 << 20:
                self._absorb()

    def _absorb(self) -> None:
        frames, self.pending = parse_server_frames(self.pending)
        self.frames.extend(frames)

    @property
    def close_code(self) -> int | None:
        return close_code_of(self.frames)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


# --- TCP relay --------------------------------------------------------------------------------


class TcpProxy:
    """A byte relay 127.0.0.1:port -> target, to cut a client off the server at will.

    ``drop_all()`` aborts every relayed connection; while ``accepting`` is False new connections
    are closed at once (the client sees a failed attempt and retries).
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.accepting = True
        self.port = 0
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.accepting:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.accepted += 1
        self._writers.update((writer, up_writer))
        pipes = [
            asyncio.create_task(self._pipe(reader, up_writer)),
            asyncio.create_task(self._pipe(up_reader, writer)),
        ]
        self._tasks.update(pipes)
        try:
            await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in (writer, up_writer):
                w.transport.abort()
                self._writers.discard(w)
            for task in pipes:
                task.cancel()
                self._tasks.discard(task)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One direction, chunk by chunk (test_delivery_delay's proxy holds each chunk)."""
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()

    def drop_all(self) -> int:
        writers = list(self._writers)
        for writer in writers:
            writer.transport.abort()
        self._writers.clear()
        return len(writers) // 2

    async def close(self) -> None:
        self.accepting = False
        if self._server is not None:
            self._server.close()
        self.drop_all()
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 3)  # type: ignore[union-attr]


async def eventually(
    check: Callable[[], bool], timeout: float = DEFAULT_TIMEOUT, what: str = "condition"
) -> None:
    """Poll ``check`` until true (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        await asyncio.sleep(0.02)


async def until(
    check: Callable[[], Awaitable[Any]], what: str, timeout: float = DEFAULT_TIMEOUT * 2
) -> Any:
    """Await ``check`` every 0.2 s until it gives something true, and return that (bounded:
    an AssertionError naming ``what`` after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


# --- monitoring port (tests/integration/test_monitoring_*.py) ----------------------------------

PromSamples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def monitor_http(server: ServerProcess, **kwargs: Any) -> httpx.AsyncClient:
    """An HTTP client on the server's plain monitoring listener (MonitorHTTP.Listen)."""
    options: dict[str, Any] = {"trust_env": False, "timeout": DEFAULT_TIMEOUT, **kwargs}
    return httpx.AsyncClient(base_url=server.monitor_url, **options)


def parse_prometheus(text: str) -> PromSamples:
    """Prometheus text exposition -> {(sample name, sorted label pairs): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: PromSamples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in samples, f"duplicate sample {key} in /metrics"
            samples[key] = float(sample.value)
    return samples


def parse_stats_text(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """/stats text -> (header ``key=value`` pairs, {name: value}); checks the line format."""
    lines = text.split("\n")
    assert lines[-1] == "", "the /stats text must end with a newline"
    head, body = lines[0], lines[1:-1]
    assert head.startswith("# pushgrid stats "), head
    header = dict(part.split("=", 1) for part in head.removeprefix("# pushgrid stats ").split())
    values: dict[str, str] = {}
    for line in body:
        parts = line.split(" ")
        assert len(parts) == 2, f"not a 'name value' line: {line!r}"
        name, value = parts
        assert name, f"not a 'name value' line: {line!r}"
        assert value, f"not a 'name value' line: {line!r}"
        assert name not in values, f"{name} appears twice in /stats"
        if value != "U":
            float(value)  # every value is a number or U
        values[name] = value
    return header, values


def self_signed_certificate(directory: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed certificate for ``host`` (IP SAN) and its key: (cert.pem, key.pem)."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "cert.pem", directory / "key.pem"
    with contextlib.suppress(ImportError):
        _cryptography_certificate(cert, key, host)
        return cert, key
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"),
            *("-keyout", str(key), "-out", str(cert), "-subj", f"/CN={host}"),
            *("-addext", f"subjectAltName=IP:{host}"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def _cryptography_certificate(cert: Path, key: Path, host: str) -> None:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(private, hashes.SHA256())
    )
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))


def read_archive(root: Path, node_dir: str) -> list[dict[str, str]]:
    """Every sample line of one node in a metrics archive, oldest file first (closed and open)."""
    from pushgrid.metrics.archive import read_samples

    rows: list[dict[str, str]] = []
    for path in sorted(root.glob(f"*/{node_dir}/samples-*.csv*")):
        rows.extend(read_samples(path))
    return rows


async def jolokia_bulk(
    http: httpx.AsyncClient, requests: list[dict[str, Any]], path: str = "/jolokia"
) -> list[dict[str, Any]]:
    """POST a Jolokia bulk request on the monitoring port; return the answers (one per request)."""
    response = await http.post(path, json=requests)
    assert response.status_code == 200, response.text
    answers = response.json()
    assert isinstance(answers, list), answers
    assert len(answers) == len(requests), answers
    return answers


# --- delivery options: batching, conflation, SSE (test_batching/test_conflation/test_sse) ------


class BatchWsClient(WsClient):
    """A :class:`WsClient` for batching servers (protocol 4.1): a text frame may hold a JSON
    array of server frames. ``raw`` keeps every text frame as received (a dict or a list); the
    buffer gets the frames of an array one by one, in order, so ``expect``/``sync`` still work.
    """

    def __init__(self, ws: ClientConnection) -> None:
        self.raw: list[Any] = []
        self.raw_sizes: list[int] = []  # UTF-8 bytes of each text frame's payload
        super().__init__(ws)

    @classmethod
    async def open(
        cls, target: ServerProcess | str, token: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> BatchWsClient:
        """Open the WebSocket without waiting for the welcome (it may be held by batching)."""
        ws = await open_ws(target, token, timeout)
        return cls(ws)

    async def _read(self) -> None:
        try:
            while True:
                data = await self.ws.recv()
                self.received += 1
                if isinstance(data, bytes):
                    parsed: Any = {"type": "_binary", "data": data}
                else:
                    parsed = json.loads(data)
                self.raw.append(parsed)
                self.raw_sizes.append(len(data if isinstance(data, bytes) else data.encode()))
                for frame in parsed if isinstance(parsed, list) else [parsed]:
                    if frame.get("type") == "keepalive":
                        self.keepalives += 1
                    else:
                        self.buffer.append(frame)
                self._changed.set()
        except ConnectionClosed:
            pass
        finally:
            rcvd = self.ws.protocol.close_rcvd
            self.close_code = rcvd.code if rcvd is not None else None
            self.close_reason = rcvd.reason if rcvd is not None else None
            self.closed.set()
            self._changed.set()


async def subscribe_with(
    client: WsClient,
    subject: str,
    *,
    conflation: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    **item_keys: Any,
) -> Frame:
    """Subscribe ``client`` to one subject with extra item keys (``conflation``, ...); return the
    ``subscribed`` (or ``error``) frame; what follows stays buffered."""
    request_id = client.next_id()
    item: dict[str, Any] = {"subject": subject, **item_keys}
    if conflation is not None:
        item["conflation"] = conflation
    await client.send({"op": "subscribe", "id": request_id, "subjects": [item]})
    return await client.wait_for(
        lambda f: f.get("id") == request_id and f.get("type") in ("subscribed", "error"),
        timeout,
        f"subscribed {subject}",
    )


async def publish_burst(
    publisher: WsClient, subject: str, items: list[tuple[str, dict[str, str]]]
) -> list[Frame]:
    """Send one publish per ``(content, fields)`` without waiting in between, then collect the
    ``publish_result`` answers (all ``ok``), in request order."""
    ids = [publisher.next_id() for _ in items]
    for request_id, (content, fields) in zip(ids, items, strict=True):
        frame = {"op": "publish", "id": request_id, "subject": subject, "content": content}
        await publisher.send({**frame, "fields": fields})
    results = [await publisher.expect("publish_result", id=request_id) for request_id in ids]
    for result in results:
        assert result["result"] == "ok", result
    return results


async def http_publish(
    server: ServerProcess,
    subject: str,
    content: str,
    fields: dict[str, str] | None = None,
    *,
    token: str | None = None,
    **extra: Any,
) -> httpx.Response:
    """``POST /publish`` on the client port (token as ``Authorization: Bearer``)."""
    body: dict[str, Any] = {"subject": subject, "content": content, **extra}
    if fields is not None:
        body["fields"] = fields
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    async with server.http(timeout=30) as http:  # a cluster may wait ClusterPublishTimeout
        return await http.post("/publish", json=body, headers=headers)


async def stats_json(server: ServerProcess) -> dict[str, Any]:
    """``GET /stats?format=json`` on the monitoring port."""
    async with monitor_http(server) as mon:
        response = await mon.get("/stats", params={"format": "json"})
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


async def exported(server: ServerProcess, mbean: str) -> tuple[dict[str, Any], PromSamples, Any]:
    """One number's three views at once: ``/stats`` JSON, ``/metrics`` samples and the
    attributes of ``mbean`` (Jolokia ``read``)."""
    async with monitor_http(server) as mon:
        stats = await mon.get("/stats", params={"format": "json"})
        metrics = await mon.get("/metrics")
        bean = await mon.get(f"/jolokia/read/{mbean}")
    for response in (stats, metrics, bean):
        assert response.status_code == 200, response.text
    return stats.json(), parse_prometheus(metrics.text), bean.json()["value"]


async def jolokia_exec(
    server: ServerProcess, mbean: str, operation: str, arguments: list[Any]
) -> dict[str, Any]:
    """One Jolokia ``exec`` request (POST ``/jolokia`` on the monitoring port); its answer."""
    async with monitor_http(server) as mon:
        response = await mon.post(
            "/jolokia",
            json={"type": "exec", "mbean": mbean, "operation": operation, "arguments": arguments},
        )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


class SseEvent:
    """One Server-Sent Event: ``data`` (the JSON server frame), the ``id`` field of this event
    (None when it had none), ``retry`` (None when absent) and the raw ``data`` text."""

    __slots__ = ("data", "id", "raw", "retry")

    def __init__(self, raw: str, event_id: str | None, retry: int | None) -> None:
        self.raw = raw
        self.id = event_id
        self.retry = retry
        self.data: Frame = json.loads(raw)

    def __repr__(self) -> str:
        return f"SseEvent(id={self.id!r}, data={self.raw[:200]})"


class SseStream:
    """``GET /events`` read with httpx streaming and parsed here (no SSE library).

    ``open()`` sends the request and returns once the response head arrived (``status``,
    ``headers``; for a non-200 answer ``body`` holds the problem document). A reader task
    parses the stream into ``events`` (every event, in order) and ``buffer`` (not yet taken).
    ``ended`` is set when the server ends the stream; ``end_error`` tells how it ended.
    """

    def __init__(
        self,
        server: ServerProcess,
        subjects: Iterable[str],
        *,
        params: Iterable[tuple[str, str]] = (),
        headers: dict[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.server = server
        self.params: list[tuple[str, str | int | float | bool | None]] = [
            ("subject", s) for s in subjects
        ]
        self.params += params
        self.request_headers = {"accept": "text/event-stream", **(headers or {})}
        self.timeout = timeout
        self.status = 0
        self.headers: httpx.Headers = httpx.Headers()
        self.body = b""
        self.events: list[SseEvent] = []
        self.buffer: list[SseEvent] = []
        self.comments: list[str] = []
        self.last_event_id: str | None = None  # as an EventSource would keep it
        self.ended = asyncio.Event()
        self.end_error: str | None = None
        self._changed = asyncio.Event()
        self._http = httpx.AsyncClient(
            base_url=server.url, trust_env=False, timeout=httpx.Timeout(timeout, read=None)
        )
        self._response: httpx.Response | None = None
        self._reader: asyncio.Task[None] | None = None

    async def open(self) -> SseStream:
        request = self._http.build_request(
            "GET", "/events", params=tuple(self.params), headers=self.request_headers
        )
        response = await asyncio.wait_for(self._http.send(request, stream=True), self.timeout)
        self._response = response
        self.status = response.status_code
        self.headers = response.headers
        if response.status_code != 200:
            self.body = await asyncio.wait_for(response.aread(), self.timeout)
            await response.aclose()
            self.ended.set()
            return self
        self._reader = asyncio.create_task(self._read(response))
        return self

    async def _read(self, response: httpx.Response) -> None:
        import codecs

        pending = ""
        data_lines: list[str] | None = None
        event_id: str | None = None
        retry: int | None = None
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            async for chunk in response.aiter_raw():
                pending += decoder.decode(chunk)
                *lines, pending = pending.split("\n")
                for raw_line in lines:  # the server ends lines with \n (\r\n tolerated)
                    line = raw_line.removesuffix("\r")
                    if line == "":
                        if data_lines is not None:
                            event = SseEvent("\n".join(data_lines), event_id, retry)
                            self.events.append(event)
                            self.buffer.append(event)
                            self._changed.set()
                        data_lines, event_id, retry = None, None, None
                        continue
                    if line.startswith(":"):
                        self.comments.append(line[1:])
                        continue
                    name, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    if name == "data":
                        data_lines = [*(data_lines or []), value]
                    elif name == "id":
                        event_id = value
                        self.last_event_id = value
                    elif name == "retry" and value.isdigit():
                        retry = int(value)
            self.end_error = "eof"
        except httpx.HTTPError as exc:
            self.end_error = f"{type(exc).__name__}: {exc}"
        finally:
            self.ended.set()
            self._changed.set()

    def _summary(self) -> str:
        text = ", ".join(e.raw[:160] for e in self.buffer[:8])
        more = f" ... (+{len(self.buffer) - 8})" if len(self.buffer) > 8 else ""
        return text + more

    async def wait_for(
        self,
        pred: Callable[[Frame], bool],
        timeout: float = DEFAULT_TIMEOUT,
        what: str = "event",
    ) -> SseEvent:
        """Remove and return the first buffered event whose data matches ``pred`` (bounded)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for index, event in enumerate(self.buffer):
                if pred(event.data):
                    return self.buffer.pop(index)
            if self.ended.is_set():
                raise AssertionError(
                    f"stream ended ({self.end_error}) while waiting for {what}; "
                    f"buffered: {self._summary()}"
                )
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"no {what} within {timeout}s; buffered: {self._summary()}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def expect(
        self, type: str | None = None, timeout: float = DEFAULT_TIMEOUT, **match: Any
    ) -> SseEvent:
        def pred(frame: Frame) -> bool:
            return (type is None or frame.get("type") == type) and all(
                frame.get(k) == v for k, v in match.items()
            )

        return await self.wait_for(pred, timeout, f"{type or 'event'} {match or ''}".strip())

    async def next(self, timeout: float = DEFAULT_TIMEOUT) -> SseEvent:
        return await self.wait_for(lambda f: True, timeout, "event")

    async def messages(
        self, count: int, subject: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> list[SseEvent]:
        """The next ``count`` message events (of ``subject``), in arrival order."""
        return [
            await self.wait_for(
                lambda f: (
                    f.get("type") == "message" and (subject is None or f.get("subject") == subject)
                ),
                timeout,
                f"message #{i + 1} of {count} ({subject})",
            )
            for i in range(count)
        ]

    async def take_until(
        self, pred: Callable[[Frame], bool], timeout: float = DEFAULT_TIMEOUT, what: str = "event"
    ) -> list[SseEvent]:
        """Wait for the first event matching ``pred``; remove and return it and every buffered
        event before it, in order (the stream's equivalent of ``WsClient.sync``)."""
        marker = await self.wait_for(pred, timeout, what)
        index = self.events.index(marker)
        taken = [e for e in self.events[:index] if e in self.buffer]
        self.buffer = [e for e in self.buffer if e not in taken]
        return [*taken, marker]

    async def wait_ended(self, timeout: float = DEFAULT_TIMEOUT) -> str | None:
        try:
            await asyncio.wait_for(self.ended.wait(), timeout)
        except TimeoutError:
            raise AssertionError(f"stream still open after {timeout}s") from None
        return self.end_error

    async def close(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._reader, 3)
        if self._response is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._response.aclose(), 3)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._http.aclose(), 3)

    async def __aenter__(self) -> SseStream:
        return await self.open()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


# --- admin API (tests/integration/test_admin_*.py) --------------------------------------------

ADMIN_ROLES = ("viewer", "operator", "admin")


class AdminHarness:
    """The admin API (``admin_api.main.create_app``) on its own SQLite file in ``workdir``.

    ``members``: ``Admin.Members`` entries (``name=http://host:port``). One token per role is
    created (``tokens["viewer"]`` ...); member calls time out after ``member_timeout`` seconds.
    ``client(role)`` is an httpx client on the app through
    ``httpx.ASGITransport`` (``role=None``: no Authorization header). The job runner's child
    processes log to ``workdir/admin-stats.log``; ``MetricsArchive`` points at a directory that
    does not exist (a triggered run fails at once, without Spark) unless ``settings`` say else.
    """

    def __init__(
        self,
        workdir: Path,
        members: Iterable[str],
        member_timeout: float = 2.0,
        **settings: Any,
    ) -> None:
        from pushgrid.admin_api.main import create_app
        from pushgrid.admin_api.security import Role
        from pushgrid.admin_api.services.jobs import JobRunner
        from pushgrid.admin_api.services.tokens import TokenService
        from pushgrid.config import load_settings
        from pushgrid.metrics.sqlstore import make_engine, make_session_factory, upgrade

        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.db_path = workdir / "admin.db"
        self.url = f"sqlite:///{self.db_path}"
        upgrade(self.url)
        options: dict[str, Any] = {
            "database": self.url,
            "admin_members": list(members),
            "metrics_archive": str(workdir / "no-archive"),
            "stats_warehouse": str(workdir / "warehouse"),
            "admin_secret_key_file": str(workdir / "admin-secret.key"),
            "log_level": "WARNING",
            **settings,
        }
        self.settings = load_settings(None, environ={}, **options)
        self.engine = make_engine(self.url)
        self.session_factory = make_session_factory(self.engine)
        self.tokens: dict[str, str] = {}
        self.token_ids: dict[str, str] = {}
        with self.session_factory() as session:
            for role in ADMIN_ROLES:
                created = TokenService(session).create(f"test-{role}", Role(role))
                self.tokens[role] = created.token
                self.token_ids[role] = created.id
        self.job_runner = JobRunner(
            self.settings.stats, self.settings.metrics_archive, workdir / "admin-stats.log"
        )
        self.app = create_app(
            self.settings, self.session_factory, self.job_runner, member_timeout=member_timeout
        )

    def headers(self, role: str | None) -> dict[str, str]:
        return {} if role is None else {"authorization": f"Bearer {self.tokens[role]}"}

    def client(
        self, role: str | None = "admin", address: str = "127.0.0.1", **kwargs: Any
    ) -> httpx.AsyncClient:
        """A client of the app in this process, from ``address`` (the throttles key by it)."""
        headers = {**self.headers(role), **kwargs.pop("headers", {})}
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app, client=(address, 50000)),
            base_url="http://admin.test",
            headers=headers,
            timeout=DEFAULT_TIMEOUT * 3,
            **kwargs,
        )

    def close(self) -> None:
        self.job_runner.close()
        self.engine.dispose()


def member_entry(name: str, server: ServerProcess) -> str:
    """An ``Admin.Members`` entry for a test server's monitoring port."""
    return f"{name}={server.monitor_url}"


def down_member_entry(name: str = "down") -> str:
    """An ``Admin.Members`` entry for a port nothing listens on (connection refused)."""
    return f"{name}=http://127.0.0.1:{free_port()}"


def assert_problem(
    response: httpx.Response, status: int, code: str | None = None
) -> dict[str, Any]:
    """Assert an RFC 9457 problem+json answer with this status (and code); return it."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/problem+json"), (
        response.headers,
        response.text,
    )
    problem: dict[str, Any] = response.json()
    assert problem["status"] == status, problem
    assert problem["type"].startswith("urn:pushgrid:admin:"), problem
    assert isinstance(problem["title"], str), problem
    assert problem["title"], problem
    if code is not None:
        assert problem["code"] == code, problem
    return problem


@contextlib.contextmanager
def serve_in_thread(app: Any, port: int, timeout: float = 20.0) -> Iterator[Any]:
    """An ASGI ``app`` under uvicorn on 127.0.0.1:``port`` in a thread, lifespan on (its
    background tasks run); yields the ``uvicorn.Server`` (``should_exit`` stops it early)."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, name="admin-api", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        assert thread.is_alive(), "the admin API did not start"
        assert time.monotonic() < deadline, "the admin API did not start in time"
        time.sleep(0.05)
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(15)


class SilentTcpServer:
    """A TCP server that accepts connections and never answers (a member that hangs)."""

    def __init__(self) -> None:
        self._server: asyncio.AbstractServer | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self.port = 0

    async def start(self) -> SilentTcpServer:
        async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._writers.append(writer)

        self._server = await asyncio.start_server(hold, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def close(self) -> None:
        for writer in self._writers:
            writer.transport.abort()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 3)


#: (length, resolution) of each window in seconds, from the table in docs/monitoring.md
WINDOW_SIZES = {
    "1m": (60, 1), "5m": (300, 1), "15m": (900, 1),
    "1h": (3600, 60), "5h": (18000, 60), "15h": (54000, 60),
    "1d": (86400, 3600), "5d": (432000, 3600), "15d": (1296000, 3600),
    "1mo": (2592000, 86400), "5mo": (12960000, 86400), "15mo": (38880000, 86400),
}  # fmt: skip


def window_coverage(window: str, count: int, as_of: int) -> float:
    """A window's coverage computed here, independently of metrics.window_spec: ``count`` over
    the partial current bucket (``as_of % r + 1`` seconds) plus the ``W / r - 1`` whole ones."""
    length, resolution = WINDOW_SIZES[window]
    return min(1.0, count / (as_of % resolution + 1 + length - resolution)) if count else 0.0
