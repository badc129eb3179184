"""Cluster ingest (issue 32): acknowledged publishes/s of pushgrid beside the NATS it runs on.

    nice -n 5 .venv/bin/python benchmarks/ingest.py                    # every target, one run
    nice -n 5 .venv/bin/python benchmarks/ingest.py --targets guaranteed,jetstream --subjects 1

Targets, each started fresh on 127.0.0.1 from ``--base-port`` on (100 ports), measured one
after the other in the same invocation so their ratios compare like with like:

- ``single``: one pushgrid member (memory engine);
- ``standard`` / ``guaranteed``: three members (``ClusterDeliveryMode``), each with its nats-server;
- ``nats-core``: three nats-servers, core publish with an echo per publishing connection and one
  subscriber per node (the Standard baseline);
- ``standard-w2`` / ``guaranteed-w2``: the same three members with ``Workers = 2`` each (ADR
  067: worker 0 holds the member's cluster engine, worker 1 forwards to it);
- ``jetstream``: three nats-servers, an R3 file stream with ``sync_interval`` as pushgrid's
  default (``always``), ``js.publish`` with a ``Nats-Msg-Id`` and one ordered push consumer per
  node (the Guaranteed baseline).

The load: ``--processes`` publisher processes x ``--connections`` connections x ``--in-flight``
publishes in flight, spread over the members (nodes), over ``--subjects`` subjects, each publish
with a msg_id; one more process subscribes to every subject on every member (node). Per target:
acknowledged publishes/s, ack latency p50/p99/max, deliveries/s per member, the CPU of the
load processes and of the servers (members with their nats-server children), and the NATS
servers' own ``/varz`` in+out messages per acknowledged publish. ``--profile DIR`` records a
py-spy flame graph of member 1 for each pushgrid target. JSON lines go to ``--json-out``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
import psutil
import typer
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from ingest_load import Job, Report, run  # noqa: E402
from integration.cluster import member_settings  # noqa: E402
from integration.pgtest import ServerProcess  # noqa: E402

TARGETS = (
    "single",
    "standard",
    "guaranteed",
    "standard-w2",
    "guaranteed-w2",
    "nats-core",
    "jetstream",
)
#: the cluster targets whose members run two worker processes (ADR 067)
TWO_WORKERS = "-w2"
NATS_TARGETS = ("nats-core", "jetstream")


@dataclass
class Params:
    processes: int
    connections: int
    in_flight: int
    subjects: int
    size: int
    duration: float
    warmup: float
    base_port: int
    sync_interval: str
    bad_every: int
    profile: Path | None


@dataclass
class Running:
    """A started target: where to publish, which processes are its servers, their /varz."""

    urls: list[str]
    pids: list[int]
    varz: list[str]
    stop: Any
    member_pids: list[int]


# -- targets --------------------------------------------------------------------------------


def start_pushgrid(target: str, p: Params, tmp: Path) -> Running:
    base = p.base_port
    settings: dict[str, Any] = {
        "PublishRatePerConnection": 0,
        "PublishRatePerAddress": 0,
        "MetricsArchive": "",
        "MetaSubjectInterval": 0,
    }
    if target == "single":
        members = [_member(tmp / "m1", base, base + 10, {"ServerName": "m1", **settings})]
    else:
        mode = "Standard" if target.startswith("standard") else "Guaranteed"
        endpoints = [f"127.0.0.1:{base + 20 + 10 * i}" for i in range(3)]
        extra = {**settings, "ClusterSyncInterval": p.sync_interval}
        if target.endswith(TWO_WORKERS):
            extra["Workers"] = 2
        members = [
            _member(
                tmp / f"m{i}", base + i, base + 10 + i, member_settings(endpoints, i, mode, extra)
            )
            for i in (1, 2, 3)
        ]
    try:
        for m in members:
            m.launch()
        for m in members:
            m.wait_ready(120)
        if target != "single":
            _wait_cluster(members)
    except BaseException:
        for m in members:
            m.kill()
        raise
    pids = [m.proc.pid for m in members if m.proc is not None]
    varz = (
        [] if target == "single" else [f"http://127.0.0.1:{base + 22 + 10 * i}" for i in range(3)]
    )

    def stop() -> None:
        for m in members:
            m.stop()

    return Running([m.ws_url for m in members], pids, varz, stop, pids)


def _member(workdir: Path, port: int, monitor: int, settings: dict[str, Any]) -> ServerProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    member = ServerProcess(workdir, settings, port=port)
    member.monitor_port = monitor
    member.settings["MonitorHTTP.Listen"] = f"127.0.0.1:{monitor}"
    return member


def _wait_cluster(members: list[ServerProcess], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            states = [
                httpx.get(f"{m.monitor_url}/health", timeout=2, trust_env=False).json()["cluster"]
                for m in members
            ]
            if all(
                s["quorum"] and sum(x["state"] == "up" for x in s["members"]) == len(members)
                for s in states
            ):
                return
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(0.5)
    raise RuntimeError("the cluster did not become healthy")


def start_nats(target: str, p: Params, tmp: Path) -> Running:
    binary = shutil.which("nats-server") or str(Path(sys.executable).with_name("nats-server"))
    base = p.base_port + 60
    procs: list[subprocess.Popen[bytes]] = []
    for i in range(3):
        port = base + 10 * i
        routes = [f"nats-route://127.0.0.1:{base + 10 * j}" for j in range(3) if j != i]
        config = {
            "server_name": f"n{i + 1}",
            "host": "127.0.0.1",
            "port": port + 1,
            "http": f"127.0.0.1:{port + 2}",
            "cluster": {"name": "bench", "listen": f"127.0.0.1:{port}", "routes": routes},
            "jetstream": {
                "store_dir": str(tmp / f"n{i + 1}"),
                "max_memory_store": 256 * 1024 * 1024,
                "sync_interval": p.sync_interval,
            },
        }
        path = tmp / f"n{i + 1}.conf"
        path.write_text(json.dumps(config))
        log = open(tmp / f"n{i + 1}.log", "wb")  # noqa: SIM115 - the child keeps it
        procs.append(subprocess.Popen([binary, "-c", str(path)], stdout=log, stderr=log))
    urls = [f"nats://127.0.0.1:{base + 10 * i + 1}" for i in range(3)]
    varz = [f"http://127.0.0.1:{base + 10 * i + 2}" for i in range(3)]
    if target == "jetstream":
        _add_stream(urls[0])

    def stop() -> None:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(15)

    return Running(urls, [p.pid for p in procs], varz, stop, [])


def _add_stream(url: str) -> None:
    import asyncio

    import nats
    from nats.js.api import DiscardPolicy, StorageType, StreamConfig

    async def add() -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                nc = await nats.connect(url)
                await nc.jetstream().add_stream(
                    StreamConfig(
                        name="BENCH",
                        subjects=["bench.>"],
                        storage=StorageType.FILE,
                        num_replicas=3,
                        max_msgs_per_subject=1000,
                        discard=DiscardPolicy.OLD,
                        allow_direct=True,
                        duplicate_window=120.0,
                    )
                )
                await nc.close()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)

    asyncio.run(add())


# -- one measurement -----------------------------------------------------------------------


def measure(target: str, p: Params) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"ingest-{target}-") as tmp:
        nats_target = target in NATS_TARGETS
        running = (start_nats if nats_target else start_pushgrid)(target, p, Path(tmp))
        try:
            return _load(target, p, running)
        finally:
            running.stop()


def _load(target: str, p: Params, running: Running) -> dict[str, Any]:
    kind = {"nats-core": "core", "jetstream": "jetstream"}.get(target, "ws")
    subjects = (
        [f"s{i}" for i in range(p.subjects)]
        if kind != "ws"
        else [f"/bench/s{i}" for i in range(p.subjects)]
    )
    start = time.time() + 3.0 + 0.3 * p.processes
    common = dict(
        kind=kind,
        subjects=subjects,
        start=start,
        warmup=p.warmup,
        duration=p.duration,
        size=p.size,
        qos="standard" if target.startswith("standard") else "guaranteed",
    )
    jobs = [
        Job(
            role="publish",
            urls=running.urls,
            connections=p.connections,
            in_flight=p.in_flight,
            index=i,
            bad_every=p.bad_every if kind == "ws" else 0,
            **common,  # type: ignore[arg-type]
        )
        for i in range(p.processes)
    ]
    jobs.append(Job(role="subscribe", urls=running.urls, **common))  # type: ignore[arg-type]
    servers = _processes(running.pids)
    context = multiprocessing.get_context("spawn")
    with context.Pool(len(jobs)) as pool:
        pending = pool.map_async(run, jobs)
        time.sleep(max(0.0, start + p.warmup - time.time()))
        before = _cpu(servers), _varz(running.varz)
        with _profiled(p.profile, target, p.subjects, running.member_pids, p.duration):
            time.sleep(max(0.0, start + p.warmup + p.duration - time.time()))
        after = _cpu(servers), _varz(running.varz)
        reports: list[Report] = pending.get(timeout=p.warmup + p.duration + 120)
    return _row(target, p, reports, before, after)


def _processes(pids: list[int]) -> list[psutil.Process]:
    out: list[psutil.Process] = []
    for pid in pids:
        proc = psutil.Process(pid)
        out.append(proc)
        out.extend(proc.children(recursive=True))
    return out


def _cpu(procs: list[psutil.Process]) -> tuple[float, float]:
    """CPU seconds so far of the (pushgrid, nats-server) processes."""
    python = nats = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
            if "nats-server" in proc.name():
                nats += times.user + times.system
            else:
                python += times.user + times.system
        except psutil.Error:
            pass
    return python, nats


def _varz(urls: list[str]) -> int:
    total = 0
    for url in urls:
        try:
            varz = httpx.get(f"{url}/varz", timeout=5, trust_env=False).json()
            total += int(varz["in_msgs"]) + int(varz["out_msgs"])
        except (httpx.HTTPError, KeyError, ValueError):
            return -1
    return total


@contextmanager
def _profiled(
    directory: Path | None, target: str, subjects: int, pids: list[int], seconds: float
) -> Iterator[None]:
    """py-spy of member 1 over the measurement window (``--profile``)."""
    if directory is None or not pids:
        yield
        return
    directory.mkdir(parents=True, exist_ok=True)
    py_spy = str(Path(sys.executable).with_name("py-spy"))
    out = directory / f"{target}-{subjects}-m1.txt"
    spy = subprocess.Popen(
        [
            py_spy,
            "record",
            "--pid",
            str(pids[0]),
            "--duration",
            str(int(seconds)),
            "--rate",
            "50",
            "--format",
            "raw",
            "--output",
            str(out),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        spy.wait(30)


def _row(
    target: str,
    p: Params,
    reports: list[Report],
    before: tuple[tuple[float, float], int],
    after: tuple[tuple[float, float], int],
) -> dict[str, Any]:
    publishers, subscriber = reports[:-1], reports[-1]
    acked = sum(r.acked for r in publishers)
    latencies = sorted(x for r in publishers for x in r.latencies)
    failed: dict[str, int] = {}
    for r in publishers:
        for k, v in r.failed.items():
            failed[k] = failed.get(k, 0) + v
    rate = acked / p.duration
    member_cpu = after[0][0] - before[0][0]
    nats_cpu = after[0][1] - before[0][1]
    server_cpu = member_cpu + nats_cpu
    nats_msgs = after[1] - before[1] if after[1] >= 0 and before[1] >= 0 else -1
    return {
        "target": target,
        "acked_per_s": round(rate),
        "ack_p50_ms": _pct(latencies, 0.50),
        "ack_p99_ms": _pct(latencies, 0.99),
        "ack_max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
        "delivered_per_s": [round(d / p.duration) for d in subscriber.delivered],
        "failed": failed,
        "bad_answered": sum(r.bad_answered for r in publishers),
        "server_cpu_s": round(server_cpu, 2),
        "server_cpu_ms_per_ack": round(server_cpu * 1000 / acked, 3) if acked else None,
        "member_cpu_ms_per_ack": round(member_cpu * 1000 / acked, 3) if acked else None,
        "nats_cpu_ms_per_ack": round(nats_cpu * 1000 / acked, 3) if acked else None,
        "member_cpu_s": round(member_cpu, 2),
        "nats_cpu_s": round(nats_cpu, 2),
        "nats_msgs_per_ack": round(nats_msgs / acked, 2) if acked and nats_msgs >= 0 else None,
        "generator_cpu_s": round(sum(r.cpu for r in reports), 1),
        "generator_cpu_max_process_s": round(max(r.cpu for r in reports), 1),
        "run_seconds": round(p.warmup + p.duration, 1),
        "subjects": p.subjects,
        "load": f"{p.processes}x{p.connections}x{p.in_flight}",
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{platform.node()} {os.cpu_count()} cores",
        "at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "params": {k: str(v) for k, v in asdict(p).items()},
    }


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1)


def print_table(rows: list[dict[str, Any]]) -> None:
    table = Table(title="Cluster ingest (same run)")
    for col in (
        "target",
        "subjects",
        "acked/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "delivered/s",
        "pushgrid CPU ms/ack",
        "nats-server CPU ms/ack",
        "NATS msgs/ack",
        "generator CPU s",
        "failed",
    ):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["target"],
            str(r["subjects"]),
            str(r["acked_per_s"]),
            str(r["ack_p50_ms"]),
            str(r["ack_p99_ms"]),
            str(r["ack_max_ms"]),
            "/".join(map(str, r["delivered_per_s"])),
            str(r["member_cpu_ms_per_ack"]),
            str(r["nats_cpu_ms_per_ack"]),
            str(r["nats_msgs_per_ack"]),
            f"{r['generator_cpu_s']} (max {r['generator_cpu_max_process_s']})",
            json.dumps(r["failed"]) if r["failed"] else "",
        )
    Console(width=200).print(table)
    by = {(r["target"], r["subjects"]): r for r in rows}
    counts = sorted({r["subjects"] for r in rows}, reverse=True)
    for n in counts:
        _print_ratios({t: r for (t, c), r in by.items() if c == n}, n)
    if len(counts) > 1:
        for target in TARGETS:
            hot, many = by.get((target, counts[-1])), by.get((target, counts[0]))
            if hot and many and many["acked_per_s"]:
                share = hot["acked_per_s"] / many["acked_per_s"]
                print(f"{target}: {counts[-1]} subject(s) / {counts[0]}: {share:.2f}")
    print(f"load average now: {os.getloadavg()}")


def _print_ratios(by: dict[str, dict[str, Any]], subjects: int) -> None:
    ratios = [
        ("guaranteed / jetstream", "guaranteed", "jetstream"),
        ("standard / nats-core", "standard", "nats-core"),
        ("guaranteed Workers = 2 / 1", "guaranteed-w2", "guaranteed"),
        ("standard Workers = 2 / 1", "standard-w2", "standard"),
    ]
    for label, a, b in ratios:
        if a in by and b in by and by[b]["acked_per_s"]:
            rate = by[a]["acked_per_s"] / by[b]["acked_per_s"]
            p99 = (by[a]["ack_p99_ms"] or 0) / (by[b]["ack_p99_ms"] or 1)
            print(f"{subjects} subjects, {label}: throughput {rate:.2f}, ack p99 {p99:.2f}x")


def main(
    targets: Annotated[str, typer.Option(help=f"comma-separated: {', '.join(TARGETS)}")] = ",".join(
        TARGETS
    ),
    processes: Annotated[int, typer.Option(help="publisher processes")] = 2,
    connections: Annotated[int, typer.Option(help="connections per publisher process")] = 8,
    in_flight: Annotated[int, typer.Option(help="publishes in flight per connection")] = 32,
    subjects: Annotated[str, typer.Option(help="subject counts, comma-separated: 100,1")] = "100",
    size: Annotated[int, typer.Option(help="content bytes")] = 100,
    duration: Annotated[float, typer.Option(help="measured seconds")] = 10.0,
    warmup: Annotated[float, typer.Option(help="seconds of load before measuring")] = 3.0,
    base_port: Annotated[int, typer.Option(help="first of 100 ports on 127.0.0.1")] = 27000,
    sync_interval: Annotated[str, typer.Option(help="ClusterSyncInterval / sync_interval")] = (
        "always"
    ),
    bad_every: Annotated[
        int, typer.Option(help="every Nth pushgrid publish is over the size limit (0: none)")
    ] = 0,
    profile: Annotated[Path | None, typer.Option(help="py-spy raw profiles of member 1")] = None,
    json_out: Annotated[Path, typer.Option(help="JSON lines")] = ROOT
    / "benchmarks/results/ingest.jsonl",
) -> None:
    rows: list[dict[str, Any]] = []
    for count in [int(x) for x in subjects.split(",")]:
        params = Params(
            processes,
            connections,
            in_flight,
            count,
            size,
            duration,
            warmup,
            base_port,
            sync_interval,
            bad_every,
            profile,
        )
        for target in targets.split(","):
            if target not in TARGETS:
                raise typer.BadParameter(f"unknown target {target!r}: {', '.join(TARGETS)}")
            row = measure(target, params)
            rows.append(row)
            print(json.dumps(row), flush=True)
            json_out.parent.mkdir(parents=True, exist_ok=True)
            with json_out.open("a") as out:
                out.write(json.dumps(row) + "\n")
    print_table(rows)


if __name__ == "__main__":
    typer.run(main)
