"""How far a live rate is from the truth under a steady load (issue 21 item 1).

Starts one ``pushgrid server`` (the ``--pushgrid`` executable: compare two checkouts), connects
``--subscribers`` clients to every one of ``--subjects`` subjects and publishes ``--rate``
messages a second round-robin on an absolute schedule (a steady load). For ``--seconds`` it reads
``/stats?format=json`` four times a second and keeps every new sample of
``outgoing_messages_per_second``. The truth is the load generator's own count: the deliveries its
subscribers (bare WebSocket clients that only count, so the generator keeps up) received in each
UTC second, and over the whole span divided by its length.

Prints one JSON line: the generator's mean rate, the number of samples, the largest and
95th-percentile relative error of a sample against the generator's count of the same second
(``max_error``, ``p95_error``) and against its mean (``max_error_vs_mean``), and the smallest
and largest sample.

    .venv/bin/python benchmarks/live_rate_error.py --pushgrid .venv/bin/pushgrid --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import websockets

from pushgrid.client import PushgridClient


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _wait_ready(url: str, deadline: float) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=1.0) as http:
        while True:
            try:
                if (await http.get(url)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} never answered")
            await asyncio.sleep(0.1)


async def measure(args: argparse.Namespace) -> dict[str, object]:
    port, monitor = _free_port(), _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="live-rate-"))
    conf = workdir / "pushgrid.conf"
    conf.write_text(
        f"ServerName = rate\nListen = 127.0.0.1:{port}\n"
        f"MonitorHTTP.Listen = 127.0.0.1:{monitor}\nMetricsArchive =\nMetaSubjectInterval = 0\n"
    )
    log = (workdir / "server.log").open("w")
    server = await asyncio.create_subprocess_exec(
        args.pushgrid, "server", "--config", str(conf), stdout=log, stderr=subprocess.STDOUT
    )
    stats_url = f"http://127.0.0.1:{monitor}/stats?format=json"
    per_second: Counter[int] = Counter()
    received = 0
    readers: list[asyncio.Task[None]] = []
    try:
        await _wait_ready(f"http://127.0.0.1:{port}/health", time.monotonic() + 30)
        subjects = [f"/Stocks/NYSE/S{n}" for n in range(args.subjects)]
        request = json.dumps(
            {"op": "subscribe", "id": 1, "subjects": [{"subject": s} for s in subjects]}
        )

        async def subscriber() -> None:
            nonlocal received
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
                await ws.send(request)
                async for frame in ws:
                    text = frame if isinstance(frame, str) else frame.decode()
                    updates = text.count('"kind":"update"')
                    if updates:
                        received += updates
                        per_second[int(time.time())] += updates

        for _ in range(args.subscribers):
            readers.append(asyncio.create_task(subscriber()))
        # the publisher runs in its own process: its pace does not wait for the counting
        load = multiprocessing.get_context("spawn").Process(
            target=_publisher, args=(port, subjects, args.rate), daemon=True
        )
        load.start()
        await asyncio.sleep(args.warmup)
        samples: dict[int, float] = {}
        async with httpx.AsyncClient(trust_env=False, timeout=2.0) as http:
            first = received
            began = time.monotonic()
            while time.monotonic() - began < args.seconds:
                document = (await http.get(stats_url)).json()
                value = document["indicators"]["outgoing_messages_per_second"]["current"]
                samples[int(document["ts"])] = float(value)
                await asyncio.sleep(0.25)
            truth = (received - first) / (time.monotonic() - began)
        load.terminate()
        began_second = int(time.time() - args.seconds) + 1
        measured = {ts: v for ts, v in samples.items() if ts >= began_second and ts in per_second}
        values = sorted(measured.values())
        errors = sorted(abs(v - per_second[ts]) / per_second[ts] for ts, v in measured.items())
        vs_mean = sorted(abs(v - truth) / truth for v in values)
        return {
            "pushgrid": args.pushgrid,
            "seconds": args.seconds,
            "generator_rate": round(truth, 1),
            "samples": len(values),
            "max_error": round(errors[-1], 4),
            "p95_error": round(errors[int(0.95 * (len(errors) - 1))], 4),
            "max_error_vs_mean": round(vs_mean[-1], 4),
            "min_sample": values[0],
            "max_sample": values[-1],
        }
    finally:
        for reader in readers:
            reader.cancel()
        server.terminate()
        await asyncio.wait_for(server.wait(), 15)
        log.close()


def _publisher(port: int, subjects: list[str], rate: float) -> None:
    """``rate`` publishes a second on an absolute schedule, until terminated."""

    async def run() -> None:
        publisher = PushgridClient([f"127.0.0.1:{port}"])
        await publisher.connect(timeout=10)
        pending: set[asyncio.Task[object]] = set()
        start = time.monotonic()
        n = 0
        while True:
            n += 1
            delay = start + n / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(
                publisher.publish(subjects[n % len(subjects)], str(n), qos="standard")
            )
            pending.add(task)
            task.add_done_callback(pending.discard)

    asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pushgrid", default="pushgrid", help="the pushgrid executable")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--subscribers", type=int, default=20)
    parser.add_argument("--subjects", type=int, default=10)
    parser.add_argument("--rate", type=float, default=150.0, help="publishes per second")
    print(json.dumps(asyncio.run(measure(parser.parse_args()))))


if __name__ == "__main__":
    main()
