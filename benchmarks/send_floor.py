"""The kernel's floor under issue 12's target 1: what one core pays for the loopback ``send``
calls alone, with no server, no WebSocket and no JSON.

    .venv/bin/python benchmarks/send_floor.py --sockets 1000 --flushes 100 --seconds 10

To reach 1,000 subscribers within 10 ms, a server must write to each socket at least once per
10 ms: 100 flushes/s x 1,000 sockets = 100,000 ``send`` calls/s. This script does exactly that
and nothing else: a sender process pinned to ``--cpu`` accepts ``--sockets`` loopback TCP
connections from a reader process pinned to ``--reader-cpu`` (which drains them with epoll), then
``--flushes`` times per second writes one ``--frame-bytes`` buffer to every socket in a plain
Python loop. The default frame (600 bytes) is what one flush carries per subscriber at 350
publishes/s of 100-byte messages (3.5 WebSocket frames of ~170 bytes).

Output (one JSON line): the sender's user and system CPU, the busy share of its core from
``/proc/stat`` (this includes the softirq work of loopback delivery, which the kernel may not
charge to the process), µs per ``send``, and the wall time of one flush (p50 / p99 / max): the
time from the first subscriber's ``send`` to the last one's, which no batching can remove.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import socket
import statistics
import sys
import time
from typing import Any


def _core_jiffies(cpu: int) -> tuple[int, int]:
    """(busy, total) jiffies of one core from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as stat:
        for line in stat:
            if line.startswith(f"cpu{cpu} "):
                fields = [int(value) for value in line.split()[1:]]
                idle = fields[3] + fields[4]  # idle + iowait
                return sum(fields) - idle, sum(fields)
    raise RuntimeError(f"no cpu{cpu} in /proc/stat")


def _pin(cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})


def _reader(port: int, sockets: int, cpu: int | None) -> None:
    """Child: connect ``sockets`` clients and drain them until the sender closes them."""
    _pin(cpu)
    poller = select.epoll()
    clients: dict[int, socket.socket] = {}
    for _ in range(sockets):
        client = socket.create_connection(("127.0.0.1", port))
        client.setblocking(False)
        clients[client.fileno()] = client
        poller.register(client.fileno(), select.EPOLLIN)
    while clients:
        for fd, _ in poller.poll(1.0):
            client = clients[fd]
            try:
                data = client.recv(1 << 16)
            except BlockingIOError:
                continue
            if not data:
                poller.unregister(fd)
                client.close()
                del clients[fd]


def _accept(listener: socket.socket, sockets: int) -> list[socket.socket]:
    accepted = []
    for _ in range(sockets):
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setblocking(False)
        accepted.append(conn)
    return accepted


def _flush_loop(
    conns: list[socket.socket], frame: bytes, flushes: int, seconds: float
) -> tuple[list[float], int]:
    """Write ``frame`` to every socket ``flushes`` times per second; return flush durations."""
    period = 1.0 / flushes
    durations: list[float] = []
    short_writes = 0
    deadline = time.monotonic() + seconds
    next_flush = time.monotonic()
    while next_flush < deadline:
        started = time.monotonic()
        for conn in conns:
            if conn.send(frame) != len(frame):
                short_writes += 1  # the reader fell behind: the floor would be understated
        durations.append(time.monotonic() - started)
        next_flush += period
        rest = next_flush - time.monotonic()
        if rest > 0:
            time.sleep(rest)
    return durations, short_writes


def measure(
    sockets: int,
    flushes: int,
    frame_bytes: int,
    seconds: float,
    cpu: int | None,
    reader_cpu: int | None,
) -> dict[str, Any]:
    listener = socket.create_server(("127.0.0.1", 0), backlog=sockets)
    port = listener.getsockname()[1]
    child = os.fork()
    if child == 0:  # never return into the caller (a benchmark run or pytest) from the fork
        code = 1
        try:
            listener.close()
            _reader(port, sockets, reader_cpu)
            code = 0
        finally:
            os._exit(code)
    _pin(cpu)
    conns = _accept(listener, sockets)
    frame = b"x" * frame_bytes
    _flush_loop(conns, frame, flushes, 1.0)  # warm up buffers and caches
    usage0, core0, wall0 = resource.getrusage(resource.RUSAGE_SELF), _core(cpu), time.monotonic()
    durations, short_writes = _flush_loop(conns, frame, flushes, seconds)
    usage1, core1, wall1 = resource.getrusage(resource.RUSAGE_SELF), _core(cpu), time.monotonic()
    for conn in conns:
        conn.close()
    os.waitpid(child, 0)
    window = wall1 - wall0
    sends = len(durations) * sockets
    user = usage1.ru_utime - usage0.ru_utime
    system = usage1.ru_stime - usage0.ru_stime
    ordered = sorted(durations)
    result: dict[str, Any] = {
        "sockets": sockets,
        "flushes_per_s": round(len(durations) / window, 1),
        "frame_bytes": frame_bytes,
        "sends_per_s": round(sends / window),
        "sender_user_util": round(user / window, 3),
        "sender_sys_util": round(system / window, 3),
        "sender_cpu_util": round((user + system) / window, 3),
        "us_per_send": round((user + system) / sends * 1e6, 2),
        "us_sys_per_send": round(system / sends * 1e6, 2),
        "flush_ms_p50": round(statistics.median(durations) * 1e3, 2),
        "flush_ms_p99": round(ordered[int(len(ordered) * 0.99) - 1] * 1e3, 2),
        "flush_ms_max": round(ordered[-1] * 1e3, 2),
        "short_writes": short_writes,
    }
    if core0 is not None and core1 is not None:
        busy = core1[0] - core0[0]
        total = core1[1] - core0[1]
        result["sender_core_busy"] = round(busy / total, 3) if total else None
    return result


def _core(cpu: int | None) -> tuple[int, int] | None:
    return _core_jiffies(cpu) if cpu is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--flushes", type=int, default=100, help="flushes per second")
    parser.add_argument("--frame-bytes", type=int, default=600)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--cpu", type=int, default=0, help="core of the sender (-1: no pin)")
    parser.add_argument("--reader-cpu", type=int, default=1, help="core of the reader")
    args = parser.parse_args(argv)
    if args.sockets < 1 or args.flushes < 1 or args.frame_bytes < 1 or args.seconds <= 0:
        parser.error("--sockets, --flushes, --frame-bytes and --seconds must be positive")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if 2 * args.sockets + 64 > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 2 * args.sockets + 64), hard))
    cpu = None if args.cpu < 0 else args.cpu
    reader_cpu = None if args.reader_cpu < 0 else args.reader_cpu
    result = measure(args.sockets, args.flushes, args.frame_bytes, args.seconds, cpu, reader_cpu)
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
