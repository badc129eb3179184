"""Does one flooding publisher slow everyone else's delivery? (issue 13, item 5)

    nice -n 10 .venv/bin/python benchmarks/fairness.py --seconds 10

For each configuration a fresh ``pushgrid server`` is started; a *probe* publishes one small
message every 10 ms on its own subject and a probe subscriber measures publish-to-receive
latency. Three phases per configuration: the probe alone (the reference), then with a
*flooder* connection publishing as fast as it can on another subject (pipelined, up to 1,000
publishes without an answer). Configurations: the default publish rate limit
(PublishRatePerConnection = 10,000/s) and no limit (0). Reported: probe latency p50 / p99 in
ms, each as a ratio to the probe-alone reference of the same configuration, and the flooder's
accepted and rate-limited publishes per second. Results append to ``--output`` (JSON lines).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(extra: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    workdir = Path(tempfile.mkdtemp(prefix="pushgrid-fair-"))
    port = free_port()
    conf = workdir / "pushgrid.conf"
    lines = [
        f"Listen = 127.0.0.1:{port}",
        "MonitorHTTP.Listen =",
        "MetricsArchive =",
        "Workers = 1",  # one process: its pid is the server measured
        "MetaSubjectInterval = 0",
        *(f"{k} = {v}" for k, v in extra.items()),
    ]
    conf.write_text("\n".join(lines) + "\n")
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
    )
    deadline = time.monotonic() + 30
    while "listening on" not in log.read_text("utf-8", "replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"server did not start:\n{log.read_text()}")
        time.sleep(0.1)
    return proc, port


async def probe(url: str, seconds: float) -> list[float]:
    """Latencies (ms) of one message every 10 ms, published and received on /fair/probe."""
    async with (
        websockets.connect(url, compression=None, max_size=None) as sub,
        websockets.connect(url, compression=None, max_size=None) as pub,
    ):
        await sub.recv()
        await pub.recv()
        await sub.send(
            json.dumps({"op": "subscribe", "id": 1, "subjects": [{"subject": "/fair/probe"}]})
        )
        latencies: list[float] = []

        async def receive() -> None:
            async for data in sub:
                frame = json.loads(data)
                if frame.get("type") == "message" and frame.get("kind") == "update":
                    latencies.append((time.time_ns() - int(frame["content"])) / 1e6)

        reader = asyncio.get_running_loop().create_task(receive())
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await pub.send(
                json.dumps(
                    {
                        "op": "publish",
                        "subject": "/fair/probe",
                        "content": str(time.time_ns()),
                        "retained": False,
                    }
                )
            )
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)
        reader.cancel()
        return latencies


async def flood(url: str, stop: asyncio.Event, tally: dict[str, int]) -> None:
    async with websockets.connect(url, compression=None, max_size=None) as ws:
        await ws.recv()
        window = asyncio.Semaphore(1000)

        async def read() -> None:
            async for data in ws:
                frame = json.loads(data)
                if frame.get("type") == "publish_result":
                    tally[frame["result"]] = tally.get(frame["result"], 0) + 1
                    window.release()

        reader = asyncio.get_running_loop().create_task(read())
        body = json.dumps(
            {"op": "publish", "subject": "/fair/flood", "content": "x" * 100, "retained": False}
        )
        while not stop.is_set():
            await window.acquire()
            await ws.send(body)
        reader.cancel()


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) >= 2 else float("nan")


async def run(limit: str, seconds: float) -> dict[str, Any]:
    proc, port = start({"PublishRatePerConnection": limit, "PublishRatePerAddress": "0"})
    url = f"ws://127.0.0.1:{port}/ws"
    try:
        alone = await probe(url, seconds)
        stop = asyncio.Event()
        tally: dict[str, int] = {}
        flooder = asyncio.get_running_loop().create_task(flood(url, stop, tally))
        await asyncio.sleep(1.0)
        before = dict(tally)
        flooded = await probe(url, seconds)
        after = dict(tally)
        stop.set()
        flooder.cancel()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    span = seconds + 0.5
    result = {
        "PublishRatePerConnection": float(limit),
        "alone_p50_ms": round(pct(alone, 50), 2),
        "alone_p99_ms": round(pct(alone, 99), 2),
        "flooded_p50_ms": round(pct(flooded, 50), 2),
        "flooded_p99_ms": round(pct(flooded, 99), 2),
        "flooder_ok_per_s": round((after.get("ok", 0) - before.get("ok", 0)) / span),
        "flooder_rate_limited_per_s": round(
            (after.get("rate_limited", 0) - before.get("rate_limited", 0)) / span
        ),
    }
    result["p50_ratio"] = round(result["flooded_p50_ms"] / result["alone_p50_ms"], 1)
    result["p99_ratio"] = round(result["flooded_p99_ms"] / result["alone_p99_ms"], 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    results = []
    for limit in ("10000", "0"):
        result = asyncio.run(run(limit, args.seconds))
        result.update(
            date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            command=" ".join(sys.argv),
            machine=f"{os.cpu_count()} cpus",
        )
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.output:
        with args.output.open("a") as out:
            for result in results:
                out.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
