"""What one admin-API refresh costs over JMX (jmxquery) against Jolokia, measured in one run.

Starts a pushgrid server and its JMX bridge (``pushgrid jmx``) on loopback, then times the reads
the admin API makes per member and refresh (the live page: every Indicator MBean) both ways, plus
one operation call (``Sessions.list``) through the bridge's client mode. Wall time is per call;
CPU is the time of the child JVMs (jmxquery, invoke) per call.

    .venv/bin/python benchmarks/jmx_refresh.py --rounds 10
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from pushgrid.admin_api.access import JmxMember
from pushgrid.admin_api.member_client import MemberClient, MemberEndpoint
from pushgrid.server.jmx.bridge import jmx_url

PUSHGRID = [str(Path(sys.executable).with_name("pushgrid"))]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def timed(call: Callable[[], Awaitable[Any]], rounds: int) -> dict[str, float]:
    walls = []
    cpu_before = children_cpu()
    for _ in range(rounds):
        start = time.perf_counter()
        await call()
        walls.append(time.perf_counter() - start)
    return {
        "wall_median_s": statistics.median(walls),
        "wall_max_s": max(walls),
        "child_cpu_per_call_s": (children_cpu() - cpu_before) / rounds,
    }


async def measure_reads(monitor: int, jmx_port: int, rounds: int) -> dict[str, Any]:
    jolokia = MemberEndpoint("a", f"http://127.0.0.1:{monitor}", "config", None, "mon", "m")
    jmx = MemberEndpoint("b", jmx_url("127.0.0.1", jmx_port), "config", None, "ops", "o")
    attributes = ["Current", "SampleTime", "Windows"]
    pattern = "pushgrid:type=Indicator,*"
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        over_jolokia = await timed(
            lambda: MemberClient(http, jolokia).read(pattern, attributes), rounds
        )
    over_jmx = await timed(lambda: JmxMember(jmx).read(pattern, attributes), rounds)
    await JmxMember(jmx).execute("pushgrid:type=Sessions", "list")  # fill the compile cache
    invoke = await timed(lambda: JmxMember(jmx).execute("pushgrid:type=Sessions", "list"), 3)
    return {
        "jolokia_read": over_jolokia,
        "jmx_read": over_jmx,
        "jmx_invoke_compiled": invoke,
        "ratio_wall_jmx_over_jolokia": over_jmx["wall_median_s"] / over_jolokia["wall_median_s"],
    }


def measure(workdir: Path, rounds: int) -> dict[str, Any]:
    monitor, jmx_port = free_port(), free_port()
    conf = workdir / "pushgrid.conf"
    conf.write_text(
        f"Listen = 127.0.0.1:{free_port()}\nMonitorHTTP.Listen = 127.0.0.1:{monitor}\n"
        "MetricsArchive =\nWorkers = 1\nMonitorUsername = mon\nMonitorPassword = m\n"
        f"JmxListen = 127.0.0.1:{jmx_port}\nJmxUsername = ops\nJmxPassword = o\n",
        encoding="utf-8",
    )
    with open(workdir / "log", "wb") as log:
        server = subprocess.Popen([*PUSHGRID, "server", "-c", str(conf)], stdout=log, stderr=log)
        start = time.perf_counter()
        bridge = subprocess.Popen(
            [*PUSHGRID, "jmx", "-c", str(conf)], stdout=log, stderr=log, start_new_session=True
        )
        try:
            while b"connected to" not in (workdir / "log").read_bytes():
                assert time.perf_counter() - start < 120, "bridge not connected in 120 s"
                time.sleep(0.1)
            result: dict[str, Any] = {
                "bridge_start_to_connected_s": round(time.perf_counter() - start, 2)
            }
            result |= asyncio.run(measure_reads(monitor, jmx_port, rounds))
            rss = subprocess.run(
                ["ps", "-o", "rss=", "--ppid", str(bridge.pid)],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.split()
            result["bridge_jvm_rss_mib"] = round(int(rss[0]) / 1024, 1) if rss else None
            return result
        finally:
            os.killpg(bridge.pid, signal.SIGTERM)
            server.terminate()
            bridge.wait(10)
            server.wait(10)


def main() -> None:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 10
    with tempfile.TemporaryDirectory() as workdir:
        result = measure(Path(workdir), rounds)
    result["machine"] = f"{os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}"
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
