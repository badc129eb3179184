"""Fuzz campaign against a live pushgrid server (``make fuzz``; results in docs/security.md).

    nice -n 10 .venv/bin/python benchmarks/fuzz.py --inputs 1000000 --connections 8

Starts ``pushgrid server`` on a free 127.0.0.1 port (or uses ``--server HOST:PORT`` with
``--server-pid``), then throws protocol inputs at it from ``--connections`` raw WebSocket
connections until ``--inputs`` were sent (or ``--duration`` seconds passed):

- JSON inputs (most): valid frames of every op, mutated (keys dropped or retyped, random and
  invisible Unicode, huge and unsafe integers, deep nesting, truncation, duplicates), each one
  text frame on a long-lived connection; every 200 inputs a ``ping`` must come back as ``pong``
  (the connection still works and nothing is lost in between).
- Framing inputs: broken WebSocket frames (reserved bits, unknown opcodes, unmasked, fragmented
  or oversized control frames, stray continuations, invalid UTF-8); each must end its
  connection with a close frame (1002 / 1007), the worker then reconnects.
- HTTP inputs: malformed or hostile requests (bad versions, huge or many headers, bad methods,
  upgrades by POST, junk); each must get a status line.

It reports inputs tried, server crashes (process gone, a traceback in its log, or /health not
200 at the end), every distinct error code / publish result / close code / HTTP status seen,
inputs that got no answer, and the server's RSS before and after. Exit status 1 on any crash.
Deterministic for a given ``--seed``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SYNC_EVERY = 200
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0, 1, 2, 8, 9, 10

# --- input generators ---------------------------------------------------------------------------

WEIRD = [
    "",
    "/",
    "//",
    "/a",
    "/a/b",
    "/pushgrid/node/overview",
    "/a/\u200b",
    "/a/b\u202e",
    "/\ufeff/x",
    "/a/\x00",
    "/a/\ud7ff",
    "/😀/👨\u200d👩",
    "/" + "x" * 2000 + "/y",
    "/a/" + "é" * 600,
]
NUMBERS: list[Any] = [0, -1, 1, 2**53 - 1, 2**53, -(2**53), 2**63, 2**64, 1e308, -0.0, 1.5, True]


def _valid(rng: random.Random, subject: str) -> dict[str, Any]:
    op = rng.choice(["publish", "publish", "subscribe", "unsubscribe", "ping", "token"])
    frame: dict[str, Any] = {"op": op, "id": rng.randrange(1, 1 << 31)}
    if op == "publish":
        frame.update(subject=subject, content="x" * rng.randrange(0, 200))
        if rng.random() < 0.5:
            frame["fields"] = {f"f{rng.randrange(50)}": str(rng.random())}
        frame["retained"] = rng.random() < 0.5
        frame["qos"] = rng.choice(["standard", "guaranteed"])
    elif op == "subscribe":
        item: dict[str, Any] = {"subject": subject}
        if rng.random() < 0.3:
            item["recover"] = {"epoch": "e" * rng.randrange(0, 20), "seq": rng.randrange(0, 9)}
        if rng.random() < 0.3:
            item["history"] = rng.randrange(0, 20)
        if rng.random() < 0.3:
            item["conflation"] = rng.randrange(0, 2000)
        frame["subjects"] = [item]
    elif op == "unsubscribe":
        frame["subjects"] = [subject]
    elif op == "token":
        frame["token"] = "eyJ" + "a" * rng.randrange(0, 50)
    return frame


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice(NUMBERS)
    if kind == 1:
        return rng.choice(WEIRD)
    if kind == 2:
        return None
    if kind == 3:
        return "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randrange(0, 20)))
    if kind == 4:
        return rng.random() < 0.5
    if kind == 5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {str(_random_value(rng, 3)): _random_value(rng, depth + 1) for _ in range(3)}


def json_input(rng: random.Random, subject: str) -> str:
    """One text-frame payload: a valid frame, mutated 0 to 3 times."""
    frame = _valid(rng, subject)
    for _ in range(rng.randrange(0, 4)):
        roll = rng.random()
        key = rng.choice([*frame, "op", "id", "subjects", "fields", "x"])
        if roll < 0.3:
            frame.pop(key, None)
        elif roll < 0.7:
            frame[key] = _random_value(rng)
        elif roll < 0.8:
            frame["subject"] = rng.choice(WEIRD)
        elif roll < 0.9:
            depth = rng.randrange(10, 3000)
            frame[key] = json.loads("[" * depth + "]" * depth) if depth < 900 else None
            if frame[key] is None:
                return json.dumps(frame)[:-1] + ',"deep":' + "[" * depth + "]" * depth + "}"
        else:
            frame["id"] = rng.choice(NUMBERS)
    text = json.dumps(frame, ensure_ascii=rng.random() < 0.5)
    roll = rng.random()
    if roll < 0.05:
        text = text[: rng.randrange(0, len(text) + 1)]  # truncated
    elif roll < 0.08:
        text = text.replace(":", "::", 1)
    elif roll < 0.1:
        text = rng.choice(["[]", '"x"', "1", "null", "{}", "{" * 5000, "\ufeff{}"])
    return text


def mask_frame(first: int, payload: bytes, masked: bool = True, length: int | None = None) -> bytes:
    size = len(payload) if length is None else length
    flag = 0x80 if masked else 0
    if size < 126:
        head = struct.pack("!BB", first, flag | size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", first, flag | 126, size)
    else:
        head = struct.pack("!BBQ", first, flag | 127, size)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def framing_input(rng: random.Random) -> tuple[str, bytes]:
    """A broken frame that must end the connection with a close frame."""
    kind = rng.randrange(9)
    body = b'{"op":"ping"}'
    if kind == 0:
        return "rsv-bits", mask_frame(0x80 | (rng.choice([1, 2, 4]) << 4) | OP_TEXT, body)
    if kind == 1:
        return "unknown-opcode", mask_frame(0x80 | rng.choice([3, 4, 5, 6, 7, 11, 12, 15]), body)
    if kind == 2:
        return "unmasked", mask_frame(0x80 | OP_TEXT, body, masked=False)
    if kind == 3:
        return "fragmented-control", mask_frame(rng.choice([OP_PING, OP_CLOSE, OP_PONG]), b"x")
    if kind == 4:
        return "stray-continuation", mask_frame(0x80 | OP_CONT, body)
    if kind == 5:
        bad = rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
        return "invalid-utf8", mask_frame(0x80 | OP_TEXT, b'{"op":"' + bad + b'"}')
    if kind == 6:
        return "long-control", mask_frame(0x80 | OP_PING, b"p" * 200)
    if kind == 7:
        first = mask_frame(OP_TEXT, b'{"op":')
        return "text-during-fragment", first + mask_frame(0x80 | OP_TEXT, body)
    return "bad-close-code", mask_frame(
        0x80 | OP_CLOSE, struct.pack("!H", rng.choice([0, 999, 1004, 5000]))
    )


def http_input(rng: random.Random, port: int) -> tuple[str, bytes]:
    host = f"Host: 127.0.0.1:{port}\r\n"
    kind = rng.randrange(8)
    if kind == 0:
        return (
            "bad-version",
            f"GET /health HTTP/{rng.choice(['9.9', '2.0', '0.9', '1.2'])}\r\n{host}\r\n".encode(),
        )
    if kind == 1:
        return "huge-header", f"GET /health HTTP/1.1\r\n{host}X-Big: {'a' * 40000}\r\n\r\n".encode()
    if kind == 2:
        many = "".join(f"X-{i}: v\r\n" for i in range(rng.randrange(100, 3000)))
        return "many-headers", f"GET /health HTTP/1.1\r\n{host}{many}\r\n".encode()
    if kind == 3:
        return "post-upgrade", (
            f"POST /ws HTTP/1.1\r\n{host}Upgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            "Content-Length: 0\r\n\r\n"
        ).encode()
    if kind == 4:
        subjects = "&".join(f"subject=/f/{i}" for i in range(rng.randrange(100, 400)))
        return "events-many-subjects", f"GET /events?{subjects} HTTP/1.1\r\n{host}\r\n".encode()
    if kind == 5:
        return "junk", bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) + b"\r\n\r\n"
    if kind == 6:
        body = json.dumps({"subject": rng.choice(WEIRD), "content": "x", "fields": {"a": "b"}})
        return "publish", (
            f"POST /publish HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
            f"Content-Length: {len(body.encode())}\r\n\r\n{body}"
        ).encode()
    return "bad-method", f"BREW /health HTTP/1.1\r\n{host}\r\n".encode()


# --- the campaign -------------------------------------------------------------------------------


@dataclass
class Tally:
    inputs: int = 0
    json_inputs: int = 0
    framing_inputs: int = 0
    http_inputs: int = 0
    codes: collections.Counter[str] = field(default_factory=collections.Counter)
    unanswered: collections.Counter[str] = field(default_factory=collections.Counter)
    started: float = field(default_factory=time.monotonic)


def parse_frames(data: bytearray) -> list[tuple[int, bytes]]:
    frames = []
    pos = 0
    while len(data) - pos >= 2:
        length, head = data[pos + 1] & 0x7F, 2
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
        frames.append((data[pos] & 0x0F, bytes(data[pos + head : pos + head + length])))
        pos += head + length
    del data[:pos]
    return frames


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.buffer = bytearray()

    @classmethod
    async def open(cls, host: str, port: int) -> Conn:
        reader, writer = await asyncio.open_connection(host, port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(head[:200])
        return cls(reader, writer)

    async def frames_until(self, pred: Any, wait: float) -> list[tuple[int, bytes]]:
        """Read frames until one satisfies ``pred`` (returned list includes it) or EOF."""
        seen: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + wait
        while True:
            for frame in parse_frames(self.buffer):
                seen.append(frame)
                if pred(frame):
                    return seen
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no answer in {wait}s")
            chunk = await asyncio.wait_for(self.reader.read(1 << 16), remaining)
            if not chunk:
                return seen
            self.buffer += chunk

    def close(self) -> None:
        self.writer.close()


def tally_frames(frames: list[tuple[int, bytes]], tally: Tally) -> None:
    for opcode, payload in frames:
        if opcode == OP_CLOSE:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
            tally.codes[f"close:{code}"] += 1
        elif opcode == OP_TEXT:
            try:
                decoded = json.loads(payload)
            except ValueError:
                tally.codes["server-sent-invalid-json"] += 1
                continue
            for frame in decoded if isinstance(decoded, list) else [decoded]:
                kind = frame.get("type")
                if kind == "error":
                    tally.codes[f"error:{frame.get('code')}"] += 1
                elif kind == "publish_result":
                    tally.codes[f"publish_result:{frame.get('code') or frame.get('result')}"] += 1
                elif kind in ("subscribed", "token_result"):
                    tally.codes[f"{kind}:{frame.get('status') or frame.get('result')}"] += 1


async def worker(
    index: int, host: str, port: int, tally: Tally, quota: int, deadline: float, seed: int
) -> None:
    rng = random.Random(seed * 1000 + index)
    subject = f"/fuzz/w{index}"
    conn = await Conn.open(host, port)
    sent = 0
    ping_id = 0
    while sent < quota and time.monotonic() < deadline:
        roll = rng.random()
        if roll < 0.05:
            await _http_one(rng, host, port, tally)
            sent += 1
            continue
        if roll < 0.1:
            name, data = framing_input(rng)
            conn.writer.write(data)
            tally.framing_inputs += 1
            tally.inputs += 1
            sent += 1
            try:
                frames = await conn.frames_until(lambda f: f[0] == OP_CLOSE, 10)
                tally_frames(frames, tally)
                if not any(op == OP_CLOSE for op, _ in frames):
                    tally.unanswered[f"framing:{name}"] += 1
            except (TimeoutError, ConnectionError):
                tally.unanswered[f"framing:{name}"] += 1
            conn.close()
            conn = await Conn.open(host, port)
            continue
        batch = []
        for _ in range(min(SYNC_EVERY, quota - sent)):
            batch.append(
                mask_frame(
                    0x80 | OP_TEXT, json_input(rng, subject).encode("utf-8", "surrogatepass")
                )
            )
        ping_id += 1
        marker = f'"id":{ping_id},'.encode()
        batch.append(mask_frame(0x80 | OP_TEXT, b'{"op":"ping",' + marker[:-1] + b"}"))
        conn.writer.write(b"".join(batch))
        count = len(batch) - 1
        tally.json_inputs += count
        tally.inputs += count
        sent += count
        expected = b'{"type":"pong","id":%d}' % ping_id
        try:
            frames = await conn.frames_until(
                lambda f, pong=expected: f[1] == pong or f[0] == OP_CLOSE, 30
            )
        except (TimeoutError, ConnectionError):
            tally.unanswered["json-batch"] += 1
            frames = []
        tally_frames(frames, tally)
        if not frames or frames[-1][1] != expected:
            conn.close()  # closed (4005, too many errors; or a crash): start over
            conn = await Conn.open(host, port)
    conn.close()


async def _http_one(rng: random.Random, host: str, port: int, tally: Tally) -> None:
    name, data = http_input(rng, port)
    tally.http_inputs += 1
    tally.inputs += 1
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(data)
        line = await asyncio.wait_for(reader.readline(), 15)
        parts = line.split()
        status = parts[1].decode() if len(parts) > 1 and line.startswith(b"HTTP/") else None
        if status is None:
            tally.unanswered[f"http:{name}"] += 1
        else:
            tally.codes[f"http:{status}"] += 1
    except (TimeoutError, ConnectionError):
        tally.unanswered[f"http:{name}"] += 1
    finally:
        writer.close()


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(workdir: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    port = free_port()
    conf = workdir / "pushgrid.conf"
    conf.write_text(
        f"Listen = 127.0.0.1:{port}\nMonitorHTTP.Listen = 127.0.0.1:{free_port()}\n"
        "MetricsArchive =\nWorkers = 1\nMetaSubjectInterval = 0\nServerName = fuzz\n"
    )
    exe = ROOT / ".venv" / "bin" / "pushgrid"
    log = workdir / "server.log"
    proc = subprocess.Popen(
        [
            str(exe) if exe.exists() else shutil.which("pushgrid") or "pushgrid",
            "server",
            "--config",
            str(conf),
        ],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=workdir,
    )
    deadline = time.monotonic() + 30
    while "listening on" not in log.read_text("utf-8", "replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"server did not start:\n{log.read_text()}")
        time.sleep(0.1)
    return proc, port, log


def health(host: str, port: int) -> int | None:
    try:
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.sendall(
                f"GET /health HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
            )
            line = sock.makefile("rb").readline()
            return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None


async def campaign(args: argparse.Namespace, host: str, port: int) -> Tally:
    tally = Tally()
    deadline = time.monotonic() + args.duration
    quota = -(-args.inputs // args.connections)
    workers = [
        worker(i, host, port, tally, quota, deadline, args.seed) for i in range(args.connections)
    ]

    async def progress() -> None:
        while True:
            await asyncio.sleep(30)
            rate = tally.inputs / (time.monotonic() - tally.started)
            print(f"  {tally.inputs:,} inputs ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    reporter = asyncio.get_running_loop().create_task(progress())
    try:
        await asyncio.gather(*workers)
    finally:
        reporter.cancel()
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--duration", type=float, default=3600.0, help="stop after (seconds)")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--server", help="HOST:PORT of a running server (default: start one)")
    parser.add_argument("--server-pid", type=int, help="its pid, for RSS")
    parser.add_argument("--output", type=Path, help="append the JSON result to this file")
    args = parser.parse_args()

    proc = None
    log: Path | None = None
    if args.server:
        host, _, port_text = args.server.rpartition(":")
        port, pid = int(port_text), args.server_pid
    else:
        workdir = Path(tempfile.mkdtemp(prefix="pushgrid-fuzz-"))
        proc, port, log = start_server(workdir)
        host, pid = "127.0.0.1", proc.pid
    rss_before = rss_kib(pid) if pid else None
    try:
        tally = asyncio.run(campaign(args, host, port))
        elapsed = time.monotonic() - tally.started
        status = health(host, port)
        rss_after = rss_kib(pid) if pid else None
        log_text = log.read_text("utf-8", "replace") if log else ""
        crashed = (proc is not None and proc.poll() is not None) or status != 200
        result = {
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": " ".join(sys.argv),
            "machine": f"{os.cpu_count()} cpus",
            "inputs": tally.inputs,
            "json_inputs": tally.json_inputs,
            "framing_inputs": tally.framing_inputs,
            "http_inputs": tally.http_inputs,
            "seconds": round(elapsed, 1),
            "inputs_per_s": round(tally.inputs / elapsed),
            "crashes": int(crashed),
            "tracebacks_in_log": log_text.count("Traceback (most recent call last)"),
            "log_bytes": len(log_text.encode()),
            "health_after": status,
            "rss_before_kib": rss_before,
            "rss_after_kib": rss_after,
            "distinct_codes": dict(sorted(tally.codes.items())),
            "unanswered": dict(tally.unanswered),
        }
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(json.dumps(result, indent=2))
    if args.output:
        with args.output.open("a") as out:
            out.write(json.dumps(result) + "\n")
    bad = result["crashes"] or result["tracebacks_in_log"] or result["unanswered"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
