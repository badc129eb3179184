"""What one server on N processes costs: the measurements behind ADR 044 (issue 31).

    nice -n 5 .venv/bin/python benchmarks/workers_ipc.py --port 29510

Three standalone prototypes, each reported as ratios against a reference measured in the same
run (the machine is shared, absolute times are noisy; CPU time is taken with
``time.process_time`` inside each process, so waiting for the CPU does not count):

(a) **Forwarding a published message to another process** over a Unix stream socket, length-
    prefixed msgspec MessagePack ``(subject, epoch, seq, content)`` with a 512-byte content,
    unbatched (one ``send`` per message) and batched (``--batch`` messages per ``send``, as the
    server's write tick would do), to 1 and 3 other processes. Reported: the sender's CPU per
    message per destination, the receiver's CPU per message (decode included), their sum = the
    cost of one forward, and that cost in in-process deliveries: the reference is the current
    ``Hub.deliver`` fan-out to 1,000 subscribers whose send appends to a list (a lower bound of a
    real delivery; the real server, with its socket write, costs more per delivery, so the
    ratio over-states the forward's share) and the same with one ``socket.send`` of the
    frame per delivery (an upper bound: the server coalesces writes per tick).
(b) **SO_REUSEPORT spread**: N processes listen on one port with ``SO_REUSEPORT`` and count the
    connections they accept out of ``--connects`` (from 4 source addresses); with their CPU per
    accepted connection (accept + close).
(c) **Descriptor passing** as the alternative: one acceptor accepts and hands each descriptor to
    one of N-1 workers with ``socket.send_fds`` (SCM_RIGHTS), round robin; the acceptor's and the
    worker's CPU per connection, as a ratio to (b)'s accept cost.

Output: one JSON line per case, then a summary line with the fan-out per process at which
one forward costs 15% of the deliveries it feeds (the issue's "CPU per delivery with 2 processes
within 15% of one process").
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import socket
import struct
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import hub_deliver_cost  # noqa: E402

from pushgrid.server.core import hub as current_hub  # noqa: E402

LENGTH = struct.Struct("!I")
CONTEXT = mp.get_context("fork")


class Forward(msgspec.Struct, array_like=True):
    """One published message as the owner of its subject forwards it."""

    subject: str
    epoch: str
    seq: int
    content: bytes


# --- (a) forwarding --------------------------------------------------------------------------


def _close_inherited(sockets: list[socket.socket]) -> None:
    """A forked child holds copies of the parent's ends: close them, or no EOF ever comes."""
    for sock in sockets:
        sock.close()


def _receive(
    sock: socket.socket, report: Connection, batched: bool, inherited: list[socket.socket]
) -> None:
    """Read length-prefixed frames until EOF; decode every message; report (count, CPU s)."""
    _close_inherited(inherited)
    decoder: msgspec.msgpack.Decoder[Any] = msgspec.msgpack.Decoder(
        list[Forward] if batched else Forward
    )
    start = time.process_time()
    buf = bytearray()
    count = 0
    while True:
        chunk = sock.recv(1 << 18)
        if not chunk:
            break
        buf += chunk
        i = 0
        while len(buf) - i >= 4:
            (n,) = LENGTH.unpack_from(buf, i)
            if len(buf) - i - 4 < n:
                break
            value = decoder.decode(memoryview(buf)[i + 4 : i + 4 + n])
            count += len(value) if batched else 1
            i += 4 + n
        del buf[:i]
    report.send((count, time.process_time() - start))


def _spawn(
    target: Any, count: int, extra: tuple[Any, ...], inherited: list[socket.socket]
) -> tuple[list[socket.socket], list[Connection], list[Any]]:
    """``count`` children ``target(their socket end, report pipe, *extra, to close)``."""
    ends: list[socket.socket] = []
    reports: list[Connection] = []
    children: list[Any] = []
    for _ in range(count):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        report_ours, report_theirs = CONTEXT.Pipe(duplex=False)
        to_close = [*inherited, *ends, ours]
        child = CONTEXT.Process(target=target, args=(theirs, report_theirs, *extra, to_close))
        child.start()
        theirs.close()
        ends.append(ours)
        reports.append(report_ours)
        children.append(child)
    return ends, reports, children


def _finish(
    ends: list[socket.socket], reports: list[Connection], children: list[Any]
) -> list[tuple[int, float]]:
    """Close our ends (the children's EOF), collect their (count, CPU s), reap them."""
    for end in ends:
        end.close()
    results = [report.recv() for report in reports]
    for child in children:
        child.join()
    return results


def forward_cost(destinations: int, messages: int, batch: int) -> dict[str, Any]:
    """Owner -> ``destinations`` processes; CPU per message on each side, in ns."""
    batched = batch > 1
    pairs, reports, children = _spawn(_receive, destinations, (batched,), [])
    encoder = msgspec.msgpack.Encoder()
    content = b"x" * 512
    start = time.process_time()
    pending: list[Forward] = []
    for seq in range(messages):
        message = Forward("/c/42", "e1", seq, content)
        if batched:
            pending.append(message)
            if len(pending) < batch:
                continue
            body, pending = encoder.encode(pending), []
        else:
            body = encoder.encode(message)
        frame = LENGTH.pack(len(body)) + body  # encoded once, sent to every destination
        for sock in pairs:
            sock.sendall(frame)
    sender = time.process_time() - start
    results = _finish(pairs, reports, children)
    received = sum(count for count, _ in results)
    if received != (messages - len(pending)) * destinations:
        raise RuntimeError(
            f"{received} messages decoded, {messages - len(pending)} x {destinations} sent"
        )
    receiver_ns = sum(cpu for _, cpu in results) / received * 1e9
    sender_ns = sender / (messages * destinations) * 1e9
    return {
        "case": "forward",
        "destinations": destinations,
        "batch": batch,
        "messages": messages,
        "sender_ns_per_message_per_destination": round(sender_ns, 1),
        "receiver_ns_per_message": round(receiver_ns, 1),
        "forward_ns": round(sender_ns + receiver_ns, 1),
    }


def _drain(sock: socket.socket, inherited: socket.socket) -> None:
    inherited.close()
    while sock.recv(1 << 18):
        pass


def delivery_cost(deliveries: int, with_send: bool) -> float:
    """ns per delivery of the current hub, fan-out 1,000 on one subject (best of 3)."""
    best = float("inf")
    for _ in range(3):
        hub, messages, sink = hub_deliver_cost.build(current_hub, 1000, 1)
        drain = None
        if with_send:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            drain = CONTEXT.Process(target=_drain, args=(theirs, ours))
            drain.start()
            theirs.close()
            frame = b"x" * 600
            send = ours.sendall
            for subscribers in hub._live.values():
                for key in subscribers:
                    subscribers[key] = lambda _m, send=send, frame=frame: send(frame)
        rounds = max(1, deliveries // 1000)
        cpu = hub_deliver_cost.measure(hub, messages, sink, rounds, 100)
        if drain is not None:
            ours.close()
            drain.join()
        best = min(best, cpu / (rounds * 1000) * 1e9)
    return best


# --- (b) SO_REUSEPORT and (c) SCM_RIGHTS ----------------------------------------------------


def _listener(port: int, reuse: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)
    return sock


def _accept_count(port: int, ready: Any, report: Connection, total: Any) -> None:
    """Accept and close until the shared total reaches its target; report (count, CPU s)."""
    sock = _listener(port, reuse=True)
    sock.settimeout(0.2)
    ready.release()
    count, start = 0, time.process_time()
    while total.value > 0:
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        conn.close()
        count += 1
        with total.get_lock():
            total.value -= 1
    report.send((count, time.process_time() - start))


def _connect_all(port: int, connects: int, inherited: list[socket.socket] | None = None) -> None:
    _close_inherited(inherited or [])
    for index in range(connects):
        client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        client.bind((f"127.0.2.{index % 4 + 1}", 0))
        client.connect(("127.0.0.1", port))
        client.close()


def reuseport_spread(port: int, processes: int, connects: int) -> dict[str, Any]:
    total = CONTEXT.Value("l", connects)
    ready = CONTEXT.Semaphore(0)
    reports, children = [], []
    for _ in range(processes):
        ours, theirs = CONTEXT.Pipe(duplex=False)
        child = CONTEXT.Process(target=_accept_count, args=(port, ready, theirs, total))
        child.start()
        reports.append(ours)
        children.append(child)
    for _ in range(processes):
        ready.acquire()
    _connect_all(port, connects)
    results = [report.recv() for report in reports]
    for child in children:
        child.join()
    counts = [count for count, _ in results]
    return {
        "case": "reuseport",
        "processes": processes,
        "connects": connects,
        "accepted_per_process": counts,
        "max_over_even_share": round(max(counts) / (connects / processes), 3),
        "accept_ns_per_connection": round(sum(c for _, c in results) / sum(counts) * 1e9, 1),
    }


def _fd_worker(channel: socket.socket, report: Connection, inherited: list[socket.socket]) -> None:
    _close_inherited(inherited)
    count, start = 0, time.process_time()
    while True:
        _, fds, _, _ = socket.recv_fds(channel, 16, 1)
        if not fds:
            break
        os.close(fds[0])
        count += 1
    report.send((count, time.process_time() - start))


def fd_passing(port: int, workers: int, connects: int) -> dict[str, Any]:
    listener = _listener(port, reuse=False)
    channels, reports, children = _spawn(_fd_worker, workers, (), [listener])
    connector = CONTEXT.Process(target=_connect_all, args=(port, connects, [listener, *channels]))
    connector.start()
    start = time.process_time()
    for index in range(connects):
        conn, _ = listener.accept()
        socket.send_fds(channels[index % workers], [b"c"], [conn.fileno()])
        conn.close()
    acceptor = time.process_time() - start
    results = _finish(channels, reports, children)
    connector.join()
    listener.close()
    received = sum(count for count, _ in results)
    return {
        "case": "send_fds",
        "workers": workers,
        "connects": connects,
        "passed_per_worker": [count for count, _ in results],
        "acceptor_ns_per_connection": round(acceptor / connects * 1e9, 1),
        "worker_ns_per_connection": round(sum(c for _, c in results) / received * 1e9, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=29510)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--deliveries", type=int, default=1_000_000)
    parser.add_argument("--connects", type=int, default=2000)
    options = parser.parse_args()
    hub_ns = delivery_cost(options.deliveries, with_send=False)
    send_ns = delivery_cost(options.deliveries // 4, with_send=True)
    print(
        json.dumps(
            {
                "case": "in_process_delivery",
                "hub_ns": round(hub_ns, 1),
                "hub_plus_send_ns": round(send_ns, 1),
            }
        ),
        flush=True,
    )
    forwards = []
    for destinations in (1, 3):
        for batch in (1, options.batch):
            line = forward_cost(destinations, options.messages, batch)
            line["forward_in_hub_deliveries"] = round(line["forward_ns"] / hub_ns, 2)
            line["forward_in_send_deliveries"] = round(line["forward_ns"] / send_ns, 2)
            forwards.append(line)
            print(json.dumps(line), flush=True)
    accepts = {}
    for processes in (2, 4):
        line = reuseport_spread(options.port, processes, options.connects)
        accepts[processes] = line["accept_ns_per_connection"]
        print(json.dumps(line), flush=True)
    line = fd_passing(options.port + 1, 2, options.connects)
    passing = line["acceptor_ns_per_connection"] + line["worker_ns_per_connection"]
    line["passing_over_reuseport_accept"] = round(passing / accepts[2], 2)
    print(json.dumps(line), flush=True)
    summary = {"case": "summary"}
    for forward in forwards:
        if forward["destinations"] == 1:
            key = "unbatched" if forward["batch"] == 1 else "batched"
            # publish forwarded to the owner + owner forwards to the other process: 2 forwards
            # per message at worst; within 15% when 2 x forward <= 0.15 x fan-out x delivery
            summary[f"fanout_for_15pct_{key}_hub"] = round(
                2 * forward["forward_ns"] / (0.15 * hub_ns)
            )
            summary[f"fanout_for_15pct_{key}_send"] = round(
                2 * forward["forward_ns"] / (0.15 * send_ns)
            )
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
