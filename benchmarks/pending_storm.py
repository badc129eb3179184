"""A connection storm from one address against MaxPendingConnectionsPerAddress (issue 23 item 5).

    .venv/bin/python benchmarks/pending_storm.py -n 2000 --per-address 256 1024 4096

For each value, starts ``pushgrid server`` (a child process, default settings otherwise), opens
``-n`` WebSocket connections from 127.0.0.1 all at once (every client sends its upgrade head as
soon as its TCP connect completes, as clients behind one NAT reconnecting after a member died
do) and counts the answers: 101 (upgraded), 503 (refused: too many pending) or none. Then it
holds ``--idle`` connections that send nothing (slowloris: each stays pending until
HttpHeaderTimeout) and reports the server's RSS per pending connection. Prints one JSON line
per value.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PUSHGRID = [str(Path(sys.executable).parent / "pushgrid")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _client(port: int, results: dict[str, int], hold: list[asyncio.StreamWriter]) -> None:
    key = base64.b64encode(os.urandom(16)).decode()
    head = (
        f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
        writer.write(head.encode())
        line = await asyncio.wait_for(reader.readline(), 30)
    except (OSError, TimeoutError):
        results["none"] += 1
        return
    status = line.split(b" ", 2)[1].decode() if line.count(b" ") >= 1 else "none"
    results[status if status in ("101", "503") else "none"] += 1
    hold.append(writer)  # kept open until every client has its answer


async def storm(port: int, n: int) -> dict[str, float]:
    results = {"101": 0, "503": 0, "none": 0}
    hold: list[asyncio.StreamWriter] = []
    started = time.monotonic()
    await asyncio.gather(*(_client(port, results, hold) for _ in range(n)))
    elapsed = time.monotonic() - started
    for writer in hold:
        writer.close()
    return {**results, "seconds": round(elapsed, 2)}


async def idle(port: int, pid: int, count: int) -> float:
    """Server RSS KiB per pending (silent) connection."""
    await asyncio.sleep(1.0)
    before = _rss_kib(pid)
    socks = []
    for _ in range(count):
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        socks.append(writer)
    await asyncio.sleep(1.0)
    after = _rss_kib(pid)
    for writer in socks:
        writer.close()
    return (after - before) / count


def run(n: int, per_address: int, idle_count: int) -> dict[str, object]:
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "pushgrid.conf"
        conf.write_text(
            f"Listen = 127.0.0.1:{port}\nMonitorHTTP.Listen =\nMetricsArchive =\nWorkers = 1\n"
            f"MetaSubjectInterval = 0\nMaxPendingConnectionsPerAddress = {per_address}\n"
            "HttpHeaderTimeout = 30\n"
        )
        log = open(Path(tmp) / "server.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [*PUSHGRID, "server", "--config", str(conf)], stdout=log, stderr=log, cwd=tmp
        )
        try:
            deadline = time.monotonic() + 30
            while b"listening on" not in (Path(tmp) / "server.log").read_bytes():
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit((Path(tmp) / "server.log").read_text())
                time.sleep(0.05)
            result = asyncio.run(storm(port, n))
            per_conn = asyncio.run(idle(port, proc.pid, min(idle_count, per_address)))
            warnings = [
                line
                for line in (Path(tmp) / "server.log").read_text().splitlines()
                if "WARNING" in line and "503" in line
            ]
        finally:
            proc.terminate()
            proc.wait(15)
            log.close()
    return {
        "clients": n,
        "MaxPendingConnectionsPerAddress": per_address,
        **result,
        "rss_kib_per_pending": round(per_conn, 2),
        "warnings_logged": len(warnings),
        "first_warning": warnings[0].split(": ", 1)[-1] if warnings else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--per-address", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--idle", type=int, default=1000)
    args = parser.parse_args()
    for value in args.per_address:
        print(json.dumps(run(args.n, value, args.idle)), flush=True)


if __name__ == "__main__":
    main()
