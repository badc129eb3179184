"""CPU per delivery of the fan-out write path, in one process, per memory allocator.

    .venv/bin/python benchmarks/write_path_cost.py --allocators pymalloc,jemalloc

What one delivery costs the server's own code, without the kernel and without a load generator
(so a loaded machine disturbs it far less than the socket benchmarks): a real
:class:`~pushgrid.server.engine.memory.MemoryEngine` and :class:`~pushgrid.server.core.hub.Hub`,
``--subscribers`` real :class:`~pushgrid.server.transport.websocket.WebSocketConnection` objects
with real sessions and the real :class:`~pushgrid.server.transport.flusher.Flusher`, on a fake
transport that keeps nothing (``transport.write`` is the kernel's part: excluded). Each step
publishes ``--inflight`` retained guaranteed 100-byte messages to the one subject (the engine's
publish, the hub's fan-out into every connection's outbox), then flushes every connection (one
joined write each), as the saturation run of ``benchmarks/run_all.py`` does with
``--inflight`` deliveries in flight per subscriber.

Parts, in ns per delivery: ``publish`` (engine + hub fan-out + ``Connection.send``), ``flush``
(the flusher's pass: join, bounds check, the write call), ``total``. Timed with
``time.process_time`` (this process's CPU): the best of ``--repeat`` rounds per allocator, and
the median over rounds of each allocator's ratio to the first one (robust on a loaded
machine); the allocators interleaved round by round, each in a fresh interpreter started with
the variables ``pushgrid/cli/allocator.py`` would set (``jemalloc:CONF`` adds ``MALLOC_CONF=CONF``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parent.parent
SUBJECT = "/bench/write"
CONTENT = "x" * 100


class NullTransport:
    """What the connection asks of a transport; writes are counted and dropped."""

    def __init__(self) -> None:
        self.bytes = 0
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.bytes += len(data)
        self.writes += 1

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def close(self) -> None:
        pass


async def measure(subscribers: int, inflight: int, steps: int) -> dict[str, float]:
    """One round in this interpreter: ns per delivery of each part."""
    from pushgrid.config import load_settings
    from pushgrid.metrics.counters import Counters
    from pushgrid.protocol.codec import Limits
    from pushgrid.server.core.entitlement import AllowAll
    from pushgrid.server.core.hub import Hub
    from pushgrid.server.core.session import Session, SessionPolicy
    from pushgrid.server.engine.base import PublishRequest
    from pushgrid.server.engine.memory import MemoryEngine
    from pushgrid.server.transport.context import Batching, TransportLimits
    from pushgrid.server.transport.flusher import Flusher
    from pushgrid.server.transport.websocket import WebSocketConnection
    from pushgrid.server.transport.wheel import ConnectionSet

    conf = load_settings(MaxOutboundBufferSize=64 << 20)

    class Context:  # the parts of ConnectionContext a WebSocket connection uses on this path
        limits = TransportLimits.from_settings(
            conf.transport, conf.session.max_frame_size, conf.cluster_publish_timeout
        )
        batching = Batching.from_settings(conf.batching)
        deflate = None
        tick = 0.0
        stopping = False
        counters = Counters()
        flusher = Flusher(asyncio.get_running_loop())  # tick 0: flushed when the loop turns
        connections: ClassVar[ConnectionSet[Any]] = ConnectionSet()
        engine = MemoryEngine()
        hub = Hub(engine, counters)
        policy = SessionPolicy("bench", "0", 30.0, Limits(), 100, True)

        def open_session(self, peer: Any, token: str | None, remote: str) -> Session:
            session = Session(
                f"s{len(self.hub.sessions)}",
                self.hub,
                peer,
                self.policy,
                AllowAll().grant(None),
                remote,
            )
            self.hub.add_session(session)
            return session

    ctx = Context()
    await ctx.engine.start(ctx.hub.deliver)
    transports = []
    for _ in range(subscribers):
        conn = WebSocketConnection(ctx)  # type: ignore[arg-type]
        transport = NullTransport()
        conn.transport = transport  # type: ignore[assignment]
        conn.start(b"", None, b"")
        assert conn.session is not None
        ctx.hub.begin_subscribe(conn.session, SUBJECT)
        ctx.hub.finish_subscribe(conn.session, SUBJECT)
        transports.append(transport)
    await asyncio.sleep(0)  # the welcomes' flush
    request = PublishRequest(SUBJECT, CONTENT, {}, True, "guaranteed")
    publish = ctx.engine.publish_now
    flush = ctx.flusher._flush
    published = flushed = 0.0
    system = os.times().system
    for _ in range(steps):
        started = time.process_time()
        for _ in range(inflight):
            publish(request)
        middle = time.process_time()
        flush()  # what the loop's call_soon would run: every marked connection
        ended = time.process_time()
        published += middle - started
        flushed += ended - middle
    system = os.times().system - system
    deliveries = steps * inflight * subscribers
    assert ctx.counters.messages_out_total == deliveries, "every delivery reached the hub"
    assert sum(t.writes for t in transports) >= steps * subscribers
    return {
        "publish": 1e9 * published / deliveries,
        "flush": 1e9 * flushed / deliveries,
        "total": 1e9 * (published + flushed) / deliveries,
        "system": 1e9 * system / deliveries,  # of the total: the kernel's (page faults)
    }


def environment(allocator: str) -> dict[str, str]:
    """The variables a fresh interpreter runs ``allocator`` with (as pushgrid/cli/allocator.py)."""
    from pushgrid.cli.allocator import find_jemalloc

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONMALLOC", "LD_PRELOAD")}
    env.pop("MALLOC_CONF", None)
    name, _, conf = allocator.partition(":")
    if name == "pymalloc":
        return env
    env["PYTHONMALLOC"] = "malloc"
    if name == "jemalloc":
        library = find_jemalloc()
        if library is None:
            raise SystemExit("libjemalloc2 is not installed")
        env["LD_PRELOAD"] = library
        env["MALLOC_CONF"] = conf  # empty: jemalloc's own defaults
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--allocators",
        default="pymalloc,jemalloc",
        help="separated by ';' (MALLOC_CONF has commas)",
    )
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--inflight", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child round
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if args.one:
        result = asyncio.run(measure(args.subscribers, args.inflight, args.steps))
        print(json.dumps(result))
        return
    allocators = [a.strip() for a in args.allocators.split(";") if a.strip()]
    best: dict[str, dict[str, float]] = {}
    # per round, each allocator's total over the first one's: the rounds run back to back, so a
    # ratio compares allocators under the same load, and its median is the robust number
    ratios: dict[str, list[float]] = {allocator: [] for allocator in allocators}
    for round_ in range(args.repeat):
        totals: dict[str, float] = {}
        for allocator in allocators if round_ % 2 == 0 else allocators[::-1]:
            result = run_child(allocator, args)
            totals[allocator] = result["total"]
            if allocator not in best or result["total"] < best[allocator]["total"]:
                best[allocator] = result
        for allocator, total in totals.items():
            ratios[allocator].append(total / totals[allocators[0]])
    report(allocators, best, ratios, args)


def run_child(allocator: str, args: argparse.Namespace) -> dict[str, float]:
    """One round of ``allocator`` in a fresh interpreter."""
    child = [sys.executable, __file__, "--one", "--subscribers", str(args.subscribers)]
    child += ["--inflight", str(args.inflight), "--steps", str(args.steps)]
    out = subprocess.run(
        child, env=environment(allocator), cwd=ROOT, capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"{allocator}: {out.stderr[-2000:]}")
    result: dict[str, float] = json.loads(out.stdout.splitlines()[-1])
    return result


def report(
    allocators: list[str],
    best: dict[str, dict[str, float]],
    ratios: dict[str, list[float]],
    args: argparse.Namespace,
) -> None:
    load = Path("/proc/loadavg").read_text().split()[:3]
    first = allocators[0]
    print(f"ns per delivery, best of {args.repeat} (load average {' '.join(load)}):")
    print(
        "| allocator | publish + fan-out | flush | total | of it system "
        f"| best / best {first} | median of the rounds' ratios to {first} |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for allocator in allocators:
        r = best[allocator]
        print(
            f"| `{allocator}` | {r['publish']:.0f} | {r['flush']:.0f} | {r['total']:.0f} |"
            f" {r['system']:.0f} | {r['total'] / best[first]['total']:.2f} |"
            f" {statistics.median(ratios[allocator]):.2f} |"
        )
    if args.json_out is not None:
        with args.json_out.open("a") as f:
            record = {"bench": "write_path_cost", "loadavg": load, "best": best, "ratios": ratios}
            f.write(json.dumps({**record, **vars(args)}, default=str) + "\n")


if __name__ == "__main__":
    main()
