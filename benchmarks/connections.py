"""Connection-scale load generator: N subscribed WebSocket connections to one server (issue 31).

    nice -n 5 .venv/bin/python benchmarks/connections.py --port 29600 -n 19000 \\
        --processes 4 --server-pid PID

The spec's C10M shape: every connection subscribes to its own subject, which receives one
``--size``-byte message every ``--interval`` seconds, and ``--hot`` connections (every
``n // hot``-th, so every generator process has its share) also subscribe to one hot subject
published ``--hot-rate`` times a second. One publisher connection
(its own process) paces all publishes; each content starts with the publisher's
``time.time_ns()`` (19 digits), so delivery latency = receive time - publish time on the same
clock (every ``--sample-every``-th message of a process is sampled into its HDR histogram; the
orchestrator merges them). After the publish window each process waits (up to ``--drain``
seconds, or until 3 s pass without a message) for the messages still in flight, so a generator
that falls behind shows as latency, not as loss.

Connections are spread over ``--processes`` generator processes, each below its open-file limit
(``--per-process``, default the hard ``RLIMIT_NOFILE`` less 500) and over source addresses
127.0.2.1, 127.0.2.2, ... (``--per-address`` connections each, default 28,000: the ephemeral
range 32768-60999 holds 28,232 ports per source address and destination). ``plan`` is the pure
part that decides it and refuses a plan that cannot fit.

Reported (one JSON object): connections opened and subscribed, the connection rate (opened per
second from the first connect to the last subscription), p50/p99/max delivery latency, messages
expected and received, memory per connection split into the server's RSS growth (``--server-pid``,
``/proc/PID/status`` VmRSS) and the kernel's slab growth (``/proc/meminfo`` Slab, the whole
machine: other users' activity is noise, say so when comparing), the server's CPU over the
publish window, and the generator's own CPU (every process, user + system). Every generator
process dies with the orchestrator (PR_SET_PDEATHSIG) and by an alarm at ``--timeout``; the
orchestrator closes every connection before it returns.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import math
import multiprocessing as mp
import os
import resource
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import uvloop
from hdrh.histogram import HdrHistogram

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wsload import WSClient, client_socket, harden_child, new_histogram

CONTEXT = mp.get_context("fork")
EPHEMERAL_PORTS = 60999 - 32768 + 1
CONTENT_KEY = b'"content":"'


# --- planning (pure) -------------------------------------------------------------------------


@dataclass(frozen=True)
class Share:
    """One generator process: connections ``start`` .. ``start + count - 1``."""

    start: int
    count: int
    sources: tuple[tuple[str, int], ...]  # (source address, connections from it)


def source_address(index: int, per_address: int, base: str = "127.0.2.") -> str:
    """The source address of connection ``index``: ``per_address`` connections per address."""
    host = index // per_address + 1
    if host > 254:
        raise ValueError(f"connection {index} needs source address #{host}: more than 254")
    return f"{base}{host}"


def plan(n: int, processes: int, per_process: int, per_address: int) -> list[Share]:
    """Spread ``n`` connections evenly over ``processes`` processes and source addresses."""
    if n < 1 or processes < 1 or per_process < 1:
        raise ValueError("-n, --processes and --per-process must be at least 1")
    if not 1 <= per_address <= EPHEMERAL_PORTS:
        raise ValueError(f"--per-address must be 1..{EPHEMERAL_PORTS} (the ephemeral ports)")
    if processes > n:
        raise ValueError(f"--processes {processes} is more than the {n} connections")
    if n > processes * per_process:
        need = math.ceil(n / per_process)
        raise ValueError(
            f"{n} connections over {processes} processes is more than --per-process "
            f"{per_process} each: use --processes {need} or more"
        )
    shares, start = [], 0
    for index in range(processes):
        count = n // processes + (1 if index < n % processes else 0)
        addresses = [source_address(i, per_address) for i in range(start, start + count)]
        sources = tuple((a, len(list(g))) for a, g in itertools.groupby(addresses))
        shares.append(Share(start, count, sources))
        start += count
    return shares


def hot_stride(n: int, hot: int) -> int:
    """Every ``stride``-th connection takes the hot subject: spread over every process."""
    return max(1, n // hot) if hot > 0 else 0


def is_hot(index: int, n: int, hot: int) -> bool:
    stride = hot_stride(n, hot)
    return stride > 0 and index % stride == 0 and index // stride < hot


def share_expected(share: Share, n: int, hot: int, cold_sent: int, hot_sent: int) -> int:
    """Messages the share's connections should receive: their cold ones and the hot ones."""
    cold = max(0, min(share.start + share.count, cold_sent) - share.start)
    hot_here = sum(1 for i in range(share.start, share.start + share.count) if is_hot(i, n, hot))
    return cold + hot_here * hot_sent


def latency_summary(histograms: list[bytes]) -> dict[str, Any]:
    """Merge the processes' encoded HDR histograms (microseconds); percentiles in ms."""
    merged = new_histogram()
    for encoded in histograms:
        merged.add(HdrHistogram.decode(encoded))
    if merged.get_total_count() == 0:
        return {"samples": 0}
    return {
        "samples": merged.get_total_count(),
        "p50_ms": merged.get_value_at_percentile(50) / 1000,
        "p99_ms": merged.get_value_at_percentile(99) / 1000,
        "max_ms": merged.get_max_value() / 1000,
    }


# --- generator processes ---------------------------------------------------------------------


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def raise_nofile() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Tally:
    """What one generator process counts; ``answered`` is set when every subscription is."""

    def __init__(self, subscriptions: int) -> None:
        self.subscriptions = subscriptions
        self.answered = asyncio.Event()
        self.opened = self.subscribed = self.refused = self.lost = self.messages = 0
        self.histogram = new_histogram()
        self.last_subscribed = 0.0


class Subscriber(WSClient):
    def __init__(
        self, host: str, port: int, tally: Tally, subjects: list[str], sample_every: int
    ) -> None:
        super().__init__(host, port, "/")
        self.tally, self.subjects, self.sample_every = tally, subjects, sample_every

    def on_open(self) -> None:
        self.tally.opened += 1
        wanted = ",".join(f'{{"subject":"{s}"}}' for s in self.subjects)
        self.send(1, f'{{"op":"subscribe","id":1,"subjects":[{wanted}]}}'.encode())

    def on_text(self, payload: bytes) -> None:
        if payload.startswith(b'{"type":"message"'):
            self.tally.messages += 1
            if self.tally.messages % self.sample_every == 0:
                at = payload.find(CONTENT_KEY) + len(CONTENT_KEY)
                sent = int(payload[at : at + 19])
                self.tally.histogram.record_value(max(1, (time.time_ns() - sent) // 1000))
        elif payload.startswith(b'{"type":"subscribed"'):
            if b'"status":"allow"' in payload:
                self.tally.subscribed += 1
                self.tally.last_subscribed = time.time()
            else:
                self.tally.refused += 1
            if self.tally.subscribed + self.tally.refused >= self.tally.subscriptions:
                self.tally.answered.set()

    def on_lost(self, exc: Exception | None) -> None:
        self.tally.lost += 1


def subject_of(run: str, index: int) -> str:
    return f"/cs/{run}/{index}"


async def open_share(
    host: str, port: int, run: str, share: Share, config: dict[str, Any], tally: Tally
) -> list[WSClient]:
    n, hot, concurrency = config["n"], config["hot"], config["concurrency"]
    loop = asyncio.get_running_loop()
    gate = asyncio.Semaphore(concurrency)
    clients: list[WSClient] = []

    async def one(index: int, source: str) -> None:
        subjects = [subject_of(run, index)] + ([f"/cs/{run}/hot"] if is_hot(index, n, hot) else [])
        async with gate:
            for attempt in range(5):
                sock = client_socket(source)
                try:
                    sock.connect_ex((host, port))
                    _, proto = await loop.create_connection(
                        lambda: Subscriber(host, port, tally, subjects, config["sample_every"]),
                        sock=sock,
                    )
                    await asyncio.wait_for(proto.opened, 30)
                    clients.append(proto)
                    return
                except (OSError, ConnectionError, TimeoutError):
                    sock.close()
                    await asyncio.sleep(0.2 * (attempt + 1))

    index = share.start
    tasks = []
    for source, count in share.sources:
        for _ in range(count):
            tasks.append(asyncio.ensure_future(one(index, source)))
            index += 1
    await asyncio.gather(*tasks)
    return clients


def generator_main(
    parent: int,
    timeout: float,
    host: str,
    port: int,
    run: str,
    share: Share,
    config: dict[str, Any],
    channel: Connection,
) -> None:
    harden_child(parent, timeout)
    raise_nofile()
    uvloop.install()
    asyncio.run(_generator(host, port, run, share, config, channel))


async def _generator(
    host: str, port: int, run: str, share: Share, config: dict[str, Any], channel: Connection
) -> None:
    tally = Tally(share_expected(share, config["n"], config["hot"], config["n"], 1))
    loop = asyncio.get_running_loop()
    clients = await open_share(host, port, run, share, config, tally)
    with contextlib.suppress(TimeoutError):  # what has not answered in 30 s is reported short
        await asyncio.wait_for(tally.answered.wait(), 30)
    channel.send(
        {
            "opened": tally.opened,
            "subscribed": tally.subscribed,
            "last_subscribed": tally.last_subscribed,
            "cpu": cpu_seconds(),
        }
    )
    expected = await loop.run_in_executor(None, channel.recv)  # messages sent to this share
    deadline, last, still = time.time() + config["drain"], -1, 0
    while tally.messages < expected and time.time() < deadline and still < 6:
        still = still + 1 if tally.messages == last else 0  # 3 s without a message: lost
        last = tally.messages
        await asyncio.sleep(0.5)
    channel.send(
        {
            "messages": tally.messages,
            "refused": tally.refused,
            "lost": tally.lost,
            "histogram": tally.histogram.encode(),
            "cpu": cpu_seconds(),
        }
    )
    await loop.run_in_executor(None, channel.recv)  # "close"
    for client in clients:
        if client.transport is not None:
            client.transport.abort()
    await asyncio.sleep(0.1)


class Publisher(WSClient):
    def __init__(self, host: str, port: int) -> None:
        super().__init__(host, port, "/")
        self.ok = self.failed = 0
        self.sent = -1  # known once the schedule is done
        self.answered = asyncio.Event()

    def expect(self, sent: int) -> None:
        self.sent = sent
        if self.ok + self.failed >= sent:
            self.answered.set()

    def on_text(self, payload: bytes) -> None:
        if payload.startswith(b'{"type":"publish_result"'):
            if b'"result":"ok"' in payload:
                self.ok += 1
            else:
                self.failed += 1
            if self.ok + self.failed == self.sent:
                self.answered.set()


def publisher_main(
    parent: int,
    timeout: float,
    host: str,
    port: int,
    run: str,
    n: int,
    options: dict[str, Any],
    channel: Connection,
) -> None:
    harden_child(parent, timeout)
    uvloop.install()
    asyncio.run(_publish(host, port, run, n, options, channel))


async def _publish(
    host: str, port: int, run: str, n: int, options: dict[str, Any], channel: Connection
) -> None:
    loop = asyncio.get_running_loop()
    _, pub = await loop.create_connection(lambda: Publisher(host, port), host, port)
    await pub.opened
    await loop.run_in_executor(None, channel.recv)  # "go"
    cold_rate, hot_rate = n / options["interval"], options["hot_rate"]
    size, duration, tick = options["size"], options["duration"], 0.01
    start, sent_cold, sent_hot, ids = time.monotonic(), 0, 0, itertools.count(1)
    cpu_before = cpu_seconds()

    def publish(subject: str) -> None:
        content = str(time.time_ns()).ljust(size, "x")
        frame = f'{{"op":"publish","id":{next(ids)},"subject":"{subject}","content":"{content}"}}'
        pub.send(1, frame.encode())

    while True:  # the last pass at exactly ``duration`` completes the schedule
        elapsed = min(time.monotonic() - start, duration)
        while sent_cold < min(n, int(elapsed * cold_rate)):
            publish(subject_of(run, sent_cold))
            sent_cold += 1
        while options["hot"] and sent_hot < int(elapsed * hot_rate):
            publish(f"/cs/{run}/hot")
            sent_hot += 1
        if elapsed >= duration:
            break
        await asyncio.sleep(tick)
    # every publish answered before the count goes out: a server that reads the publisher late
    # shows as latency; what is still unanswered after ``drain`` seconds is reported as such
    pub.expect(sent_cold + sent_hot)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(pub.answered.wait(), options["drain"])
    channel.send(
        {
            "cold": sent_cold,
            "hot": sent_hot,
            "ok": pub.ok,
            "failed": pub.failed,
            "unanswered": sent_cold + sent_hot - pub.ok - pub.failed,
            "cpu": cpu_seconds() - cpu_before,
        }
    )
    if pub.transport is not None:
        pub.transport.close()


# --- orchestrator ----------------------------------------------------------------------------


def slab_kib() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Slab:"):
                return int(line.split()[1])
    raise RuntimeError("no Slab line in /proc/meminfo")


def rss_kib(pid: int | None) -> int | None:
    if pid is None:
        return None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def proc_cpu(pid: int | None) -> float | None:
    if pid is None:
        return None
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_connection(before: int | None, after: int | None, n: int) -> float | None:
    if before is None or after is None or n == 0:
        return None
    return round((after - before) / n, 2)


def start_child(
    target: Any, options: argparse.Namespace, tag: str, *args: Any
) -> tuple[Any, Connection]:
    """``target(our pid, timeout, host, port, tag, *args, pipe end)`` in a started child."""
    ours, theirs = CONTEXT.Pipe()
    common = (os.getpid(), options.timeout, options.host, options.port, tag)
    child = CONTEXT.Process(target=target, args=(*common, *args, theirs))
    child.start()
    return child, ours


def run(options: argparse.Namespace) -> dict[str, Any]:
    shares = plan(options.n, options.processes, options.per_process, options.per_address)
    tag = f"{os.getpid()}x{int(time.time()) % 100000}"
    children: list[Any] = []
    channels: list[Connection] = []
    config = {
        "n": options.n,
        "hot": options.hot,
        "concurrency": options.concurrency,
        "sample_every": options.sample_every,
        "drain": options.drain,
    }
    slab0, rss0 = slab_kib(), rss_kib(options.server_pid)
    started = time.time()
    try:
        for share in shares:
            child, ours = start_child(generator_main, options, tag, share, config)
            children.append(child)
            channels.append(ours)
        ready = [channel.recv() for channel in channels]
        opened = sum(r["opened"] for r in ready)
        subscribed = sum(r["subscribed"] for r in ready)
        settled = max(r["last_subscribed"] for r in ready) or time.time()
        time.sleep(1.0)
        slab1, rss1 = slab_kib(), rss_kib(options.server_pid)
        publisher, pub_ours = start_child(
            publisher_main,
            options,
            tag,
            options.n,
            {
                "interval": options.interval,
                "hot_rate": options.hot_rate,
                "size": options.size,
                "duration": options.duration,
                "drain": options.drain,
                "hot": options.hot,
            },
        )
        children.append(publisher)
        server_cpu0 = proc_cpu(options.server_pid)
        pub_ours.send("go")
        published = pub_ours.recv()
        expected = [
            share_expected(share, options.n, options.hot, published["cold"], published["hot"])
            for share in shares
        ]
        for channel, wanted in zip(channels, expected, strict=True):
            channel.send(wanted)
        reports = [channel.recv() for channel in channels]
        server_cpu1 = proc_cpu(options.server_pid)
        for channel in channels:
            channel.send("close")
    finally:
        for child in children:
            child.join(timeout=10)
            if child.is_alive():
                child.kill()
    return {
        "connections": options.n,
        "processes": len(shares),
        "sources": sorted({a for s in shares for a, _ in s.sources}),
        "opened": opened,
        "subscribed": subscribed,
        "connect_rate_per_s": round(opened / max(settled - started, 1e-3)),
        "published_cold": published["cold"],
        "published_hot": published["hot"],
        "publish_refused": published["failed"],
        "publish_unanswered": published["unanswered"],
        "deliveries_expected": sum(expected),
        "deliveries_received": sum(r["messages"] for r in reports),
        "refused_subscriptions": sum(r["refused"] for r in reports),
        "lost_connections": sum(r["lost"] for r in reports),
        "latency": latency_summary([r["histogram"] for r in reports]),
        "server_rss_kib_per_connection": per_connection(rss0, rss1, opened),
        "slab_kib_per_connection": per_connection(slab0, slab1, opened),
        "server_cpu_s_publish_and_drain": None
        if server_cpu0 is None or server_cpu1 is None
        else round(server_cpu1 - server_cpu0, 2),
        "generator_cpu_s_connect": round(sum(r["cpu"] for r in ready), 2),
        "generator_cpu_s_total": round(sum(r["cpu"] for r in reports) + published["cpu"], 2),
        "publish_window_s": options.duration,
        "load_average": os.getloadavg(),
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("-n", type=int, default=1000, help="subscribed connections")
    parser.add_argument("--processes", type=int, default=2)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    parser.add_argument("--per-process", type=int, default=max(1, hard - 500))
    parser.add_argument("--per-address", type=int, default=28000)
    parser.add_argument("--hot", type=int, default=1000, help="connections on the hot subject")
    parser.add_argument("--hot-rate", type=float, default=100.0)
    parser.add_argument("--interval", type=float, default=60.0, help="s between cold messages")
    parser.add_argument("--duration", type=float, default=60.0, help="publish window, s")
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=200, help="connects in flight/process")
    parser.add_argument("--sample-every", type=int, default=10, help="latency of every Kth")
    parser.add_argument("--drain", type=float, default=60.0, help="s to wait for late messages")
    parser.add_argument("--server-pid", type=int)
    parser.add_argument("--timeout", type=float, default=900.0, help="every process dies by then")
    options = parser.parse_args(argv)
    if options.sample_every < 1:
        parser.error("--sample-every must be at least 1")
    if options.size < 20:
        parser.error("--size must be at least 20 (the 19-digit timestamp)")
    try:
        plan(options.n, options.processes, options.per_process, options.per_address)
    except ValueError as exc:
        parser.error(str(exc))
    return options


def main(argv: list[str] | None = None) -> None:
    print(json.dumps(run(parse(argv))), flush=True)


if __name__ == "__main__":
    main()
