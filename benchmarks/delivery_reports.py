"""Cost of delivery reports (issue 33 item 9, ADR 048): bytes and server CPU, reports on vs off.

    nice -n 5 .venv/bin/python benchmarks/delivery_reports.py --port 31000 --subscribers 100

Starts ``pushgrid server`` on 127.0.0.1:``--port`` (monitoring ``--port + 1``), then runs
phases in turn, reports on and off alternately (``--rounds`` of each): every phase starts
``--procs`` subscriber processes holding ``--subscribers`` Python clients in all (one subject,
``report_interval`` 5 s, or ``reports=False``) and one publisher sending ``--rate`` publishes a
second of ``--size`` bytes of content. After ``--warm`` seconds it measures ``--phase`` seconds:
the server's CPU time (psutil), its deliveries (``messages_out_total`` of /stats), and per
subscriber session the bytes it sent (reports, pings) and was sent (the Sessions MBean's
``list()``: ``bytes_in``, ``bytes_out``). Each subscriber process reports its own CPU time.

Output: one JSON line per phase and a summary line: the report bytes as a share of the bytes
delivered (reports on), and the server's CPU per delivery with reports on over off (a ratio of
numbers measured in the same run, on a shared machine: read it with its spread).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pushgrid.client import PushgridClient  # noqa: E402

SUBJECT = "/bench/delivery"


def subscriber_process(address: str, count: int, reports: bool, seconds: float, out: Any) -> None:
    """``count`` clients for ``seconds``; puts its own CPU seconds and latencies seen."""

    async def run() -> tuple[int, int]:
        clients = [
            PushgridClient([address], proxy=None, reports=reports, report_interval=5.0)
            for _ in range(count)
        ]
        for client in clients:
            await client.subscribe(SUBJECT)
            await client.connect()
        await asyncio.sleep(seconds)
        latencies = sum(c._protocol.delivery.latencies for c in clients)
        for client in clients:
            await client.close()
        return count, latencies

    _, latencies = asyncio.run(run())
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.put({"cpu": usage.ru_utime + usage.ru_stime, "latencies": latencies})


async def publisher(address: str, rate: int, size: int, seconds: float) -> int:
    from websockets.asyncio.client import connect

    sent = 0
    async with connect(f"ws://{address}/ws", compression=None) as ws:
        await ws.recv()  # welcome

        async def drain() -> None:
            async for _ in ws:
                pass

        reader = asyncio.create_task(drain())
        start = time.monotonic()
        content = "x" * size
        while (elapsed := time.monotonic() - start) < seconds:
            due = int(elapsed * rate) + 1
            while sent < due:
                frame = {"op": "publish", "subject": SUBJECT, "content": content}
                await ws.send(json.dumps(frame))
                sent += 1
            await asyncio.sleep(1 / rate)
        reader.cancel()
    return sent


def sessions(monitor: str) -> dict[str, dict[str, Any]]:
    body = {"type": "exec", "mbean": "pushgrid:type=Sessions", "operation": "list"}
    answer = httpx.post(f"{monitor}/jolokia", json=body, timeout=30, trust_env=False).json()
    return {s["id"]: s for s in answer["value"]}


def deliveries(monitor: str) -> int:
    stats = httpx.get(f"{monitor}/stats", params={"format": "json"}, timeout=30, trust_env=False)
    return int(stats.json()["totals"]["messages_out_total"])


def phase(args: argparse.Namespace, server: psutil.Process, reports: bool) -> dict[str, Any]:
    address, monitor = f"127.0.0.1:{args.port}", f"http://127.0.0.1:{args.port + 1}"
    queue: Any = multiprocessing.Queue()
    total = args.warm + args.phase + 5
    per = args.subscribers // args.procs
    procs = [
        multiprocessing.Process(
            target=subscriber_process, args=(address, per, reports, total, queue)
        )
        for _ in range(args.procs)
    ]
    for proc in procs:
        proc.start()

    async def measure() -> dict[str, Any]:
        task = asyncio.create_task(publisher(address, args.rate, args.size, total - 2))
        await asyncio.sleep(args.warm)
        before_s, before_d, before_cpu = sessions(monitor), deliveries(monitor), server.cpu_times()
        await asyncio.sleep(args.phase)
        after_s, after_d, after_cpu = sessions(monitor), deliveries(monitor), server.cpu_times()
        await task
        subs = [s for s in after_s.values() if s["id"] in before_s and s["messages_in"] == 0]
        sent = sum(s["bytes_in"] - before_s[s["id"]]["bytes_in"] for s in subs)
        got = sum(s["bytes_out"] - before_s[s["id"]]["bytes_out"] for s in subs)
        cpu = (after_cpu.user + after_cpu.system) - (before_cpu.user + before_cpu.system)
        return {
            "reports": reports,
            "subscribers": len(subs),
            "deliveries": after_d - before_d,
            "server_cpu_s": round(cpu, 3),
            "server_us_per_delivery": round(cpu / max(after_d - before_d, 1) * 1e6, 3),
            "client_bytes_sent": sent,
            "bytes_delivered": got,
            "sent_share_percent": round(100 * sent / max(got, 1), 4),
        }

    result = asyncio.run(measure())
    loads = [queue.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(30)
    result["generator_cpu_s"] = round(sum(x["cpu"] for x in loads), 2)
    result["latencies_measured"] = sum(x["latencies"] for x in loads)
    result["loadavg"] = list(psutil.getloadavg())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=31000)
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--rate", type=int, default=100)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--warm", type=float, default=8.0)
    parser.add_argument("--phase", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="pg-delivery-bench-"))
    conf = workdir / "pushgrid.conf"
    conf.write_text(
        f"Listen = 127.0.0.1:{args.port}\nMonitorHTTP.Listen = 127.0.0.1:{args.port + 1}\n"
        f"MetricsArchive = {workdir / 'archive'}\nWorkers = 1\n",
        encoding="utf-8",
    )
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 - held for the child's life
    child = subprocess.Popen(
        [sys.executable, "-m", "pushgrid", "server", "--config", str(conf)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{args.port}/health", trust_env=False).is_success:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or child.poll() is not None:
                raise SystemExit(f"server did not start: {(workdir / 'server.log').read_text()}")
            time.sleep(0.2)
        server = psutil.Process(child.pid)
        results = []
        for _ in range(args.rounds):
            for reports in (True, False):
                result = phase(args, server, reports)
                print(json.dumps(result), flush=True)
                results.append(result)
        on = [r for r in results if r["reports"]]
        off = [r for r in results if not r["reports"]]
        per_on = [r["server_us_per_delivery"] for r in on]
        per_off = [r["server_us_per_delivery"] for r in off]
        summary = {
            "report_share_percent": [r["sent_share_percent"] for r in on],
            "no_report_share_percent": [r["sent_share_percent"] for r in off],
            "server_us_per_delivery_on": per_on,
            "server_us_per_delivery_off": per_off,
            "cpu_ratio_on_over_off": round(sum(per_on) / max(sum(per_off), 1e-9), 3),
        }
        print(json.dumps(summary), flush=True)
    finally:
        child.terminate()
        child.wait(30)


if __name__ == "__main__":
    main()
