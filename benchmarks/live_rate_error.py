"""How far a live rate is from the truth under a steady load (issue 21 item 1).

Starts one ``pushgrid server`` (the ``--pushgrid`` executable: compare two checkouts), or with
``--members 3`` a Standard-mode cluster of three (subscribers spread over the members, the
cluster's value of a second being the sum of the members', as the admin API's ``/stats/live``
sums them), connects
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
    .venv/bin/python benchmarks/live_rate_error.py --pushgrid .venv/bin/pushgrid --members 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import websockets

from pushgrid.client import PushgridClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from integration.cluster import free_port_block

# a cluster's members authenticate to NATS with it (checkouts that do not know the key ignore
# the variable; a key in the file would stop them)
ENV = {**os.environ, "PUSHGRID_CLUSTERPASSWORD": "live-rate-error-benchmark"}


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


def _configs(members: int) -> list[dict[str, str]]:
    """One member's settings each: standalone for 1, a Standard-mode cluster for more."""
    endpoints = [f"127.0.0.1:{free_port_block()}" for _ in range(members)] if members > 1 else []
    configs = []
    for index in range(1, members + 1):
        config = {
            "ServerName": f"m{index}",
            "Listen": f"127.0.0.1:{_free_port()}",
            "MonitorHTTP.Listen": f"127.0.0.1:{_free_port()}",
            "MetricsArchive": "",
            "Workers": "1",  # one process: its pid is the server measured
            "MetaSubjectInterval": "0",
        }
        if endpoints:
            config.update(
                ClusterMembers=", ".join(endpoints),
                ClusterMember=str(index),
                ClusterDeliveryMode="Standard",
            )
        configs.append(config)
    return configs


async def _cluster_ready(monitors: list[str], deadline: float) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=1.0) as http:
        while True:
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                ups = [
                    (await http.get(f"{m}/health")).json()["cluster"]["membersUp"] for m in monitors
                ]
                if all(up == len(monitors) for up in ups):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster never formed")
            await asyncio.sleep(0.2)


async def measure(args: argparse.Namespace) -> dict[str, object]:
    workdir = Path(tempfile.mkdtemp(prefix="live-rate-"))
    configs = _configs(args.members)
    servers = []
    logs = []
    for config in configs:
        conf = workdir / f"{config['ServerName']}.conf"
        conf.write_text("".join(f"{key} = {value}\n" for key, value in config.items()))
        log = (workdir / f"{config['ServerName']}.log").open("w")
        logs.append(log)
        servers.append(
            await asyncio.create_subprocess_exec(
                args.pushgrid,
                "server",
                "--config",
                str(conf),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=ENV,
            )
        )
    ports = [int(c["Listen"].rsplit(":", 1)[1]) for c in configs]
    monitors = [f"http://{c['MonitorHTTP.Listen']}" for c in configs]
    per_second: Counter[int] = Counter()
    received = 0
    readers: list[asyncio.Task[None]] = []
    try:
        for port in ports:
            await _wait_ready(f"http://127.0.0.1:{port}/health", time.monotonic() + 60)
        await _cluster_ready(monitors, time.monotonic() + 60)
        subjects = [f"/Stocks/NYSE/S{n}" for n in range(args.subjects)]
        request = json.dumps(
            {"op": "subscribe", "id": 1, "subjects": [{"subject": s} for s in subjects]}
        )

        async def subscriber(port: int) -> None:
            nonlocal received
            async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
                await ws.send(request)
                async for frame in ws:
                    text = frame if isinstance(frame, str) else frame.decode()
                    updates = text.count('"kind":"update"')
                    if updates:
                        received += updates
                        per_second[int(time.time())] += updates

        for n in range(args.subscribers):  # spread over the members
            readers.append(asyncio.create_task(subscriber(ports[n % len(ports)])))
        # the publisher runs in its own process: its pace does not wait for the counting
        load = multiprocessing.get_context("spawn").Process(
            target=_publisher, args=(ports[0], subjects, args.rate), daemon=True
        )
        load.start()
        await asyncio.sleep(args.warmup)
        # member -> second -> its outgoing messages/s; the cluster's value of a second is the
        # sum of every member's (what the admin API's /stats/live sums)
        samples: dict[str, dict[int, float]] = {m: {} for m in monitors}
        async with httpx.AsyncClient(trust_env=False, timeout=2.0) as http:
            first = received
            began = time.monotonic()
            while time.monotonic() - began < args.seconds:
                for monitor in monitors:
                    document = (await http.get(f"{monitor}/stats?format=json")).json()
                    value = document["indicators"]["outgoing_messages_per_second"]["current"]
                    samples[monitor][int(document["ts"])] = float(value)
                await asyncio.sleep(0.25)
            truth = (received - first) / (time.monotonic() - began)
        load.terminate()
        began_second = int(time.time() - args.seconds) + 1
        common = set.intersection(*(set(by_ts) for by_ts in samples.values()))
        measured = {
            ts: sum(samples[m][ts] for m in monitors)
            for ts in common
            if ts >= began_second and ts in per_second
        }
        values = sorted(measured.values())
        errors = sorted(abs(v - per_second[ts]) / per_second[ts] for ts, v in measured.items())
        vs_mean = sorted(abs(v - truth) / truth for v in values)
        return {
            "pushgrid": args.pushgrid,
            "members": args.members,
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
        for server in servers:
            server.terminate()
        for server in servers:
            await asyncio.wait_for(server.wait(), 15)
        for log in logs:
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
    parser.add_argument(
        "--members", type=int, default=1, help="members (more than 1: a Standard-mode cluster)"
    )
    print(json.dumps(asyncio.run(measure(parser.parse_args()))))


if __name__ == "__main__":
    main()
