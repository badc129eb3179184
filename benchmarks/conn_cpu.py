"""Server CPU per connection (accept + handshake + welcome + subscribe), with a py-spy profile.

    .venv/bin/python benchmarks/conn_cpu.py -n 5000 [--profile FILE] [--rounds 3]

Runs a pushgrid server in this process (default settings, no monitoring, no archive), connects
``-n`` subscribers from a ``benchmarks/wsload.py`` subscriber process (one subscription each,
from 127.0.0.2) and prints this process's CPU time (user + system, i.e. the server's) from the
first connect to the last ``subscribed``, per connection; then the clients disconnect and the
next round starts. ``--profile`` records the rounds with py-spy (collapsed stacks, summarised by
``benchmarks/profile_summary.py``). Unlike the storm of ``run_all.py`` the server is not pinned
and its CPU includes the loopback TCP work of its own sockets: compare runs of one session only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import uvloop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
import wsload  # noqa: E402

from pushgrid.config import load_settings  # noqa: E402
from pushgrid.server.app import PushServer  # noqa: E402


async def one_round(n: int, port: int, source: str) -> tuple[float, float]:
    """CPU seconds of this process and wall seconds for ``n`` connects + subscribes."""
    subscribers = wsload.IdleSubscribers(port, n, "/cpu/s", source, connect_concurrency=200)
    t0, wall0 = time.process_time(), time.monotonic()
    ready = await subscribers.start()
    cpu, wall = time.process_time() - t0, time.monotonic() - wall0
    if ready["subscribed"] != n:
        raise SystemExit(f"only {ready['subscribed']} of {n} subscribed")
    await subscribers.stop()
    await asyncio.sleep(0.5)
    return cpu, wall


async def measure(args: argparse.Namespace) -> None:
    overrides: dict[str, Any] = {
        "Listen": f"127.0.0.1:{args.port}",
        "MonitorHTTP.Listen": "",
        "MetricsArchive": "",
        "MetaSubjectInterval": 0,
    }
    server = PushServer(load_settings(**overrides))
    await server.start()
    await one_round(200, args.port, "127.0.0.9")  # warm-up: imports, caches
    spy = None
    if args.profile:
        spy_bin = Path(sys.executable).parent / "py-spy"  # next to this interpreter
        cmd = [str(spy_bin), "record", "--nonblocking", "--format", "raw", "--rate", "500"]
        cmd += ["--pid", str(os.getpid()), "--output", str(args.profile)]
        spy = await asyncio.create_subprocess_exec(
            *cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        await asyncio.sleep(1.0)
    for r in range(args.rounds):
        cpu, wall = await one_round(args.n, args.port, f"127.0.0.{2 + r}")
        print(
            f"round {r + 1}: {1000 * cpu / args.n:.3f} ms CPU/conn, {args.n / wall:.0f} conn/s"
            f" ({args.n} connections in {wall:.2f} s)",
            flush=True,
        )
    if spy is not None:
        spy.send_signal(2)
        await asyncio.wait_for(spy.wait(), 30)
    await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=18778)
    parser.add_argument("--profile", type=Path)
    uvloop.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
