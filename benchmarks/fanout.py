"""Fan-out benchmark: N WebSocket subscribers, one publisher, delivered messages/s and latency.

    .venv/bin/python benchmarks/fanout.py --target both --subscribers 1000 --message-size 100

``--target pushgrid|reference|both`` starts the server(s) itself, pinned to one CPU with
``taskset``, while the load generator (one publisher process + ``--procs`` subscriber processes,
see ``wsload.py``) is pinned to the other CPUs. ``--target none`` measures an already running
server at ``--server HOST:PORT`` (pass ``--server-pid`` to get its CPU and memory).

Subscriptions: subscriber i subscribes to subject ``i % S`` (``--subscribe-mode round-robin``,
fan-out N/S per publish) or to all S subjects (``--subscribe-mode all``, fan-out N per publish).
The publisher publishes to the subjects in turn, at ``--rate`` publishes/s in total, or with
``--rate 0`` as fast as the server sustains: it keeps at most ``--max-unacked`` publishes without
a publish_result and at most ``--inflight`` x N deliveries published but not yet received by the
subscribers (end-to-end flow control, so a server that acknowledges early cannot queue without
bound). Every run is bounded by timeouts and kills its processes on exit, Ctrl-C or error.

``--batching-time MS`` / ``--batching-max-size BYTES`` add ``BatchingTime`` /
``BatchingMaxSize`` (spec 5.6) to the configuration of a started pushgrid; they are ignored for
the reference server (which does not batch) and for ``--target none``. ``benchmarks/batching.py``
sweeps them over several publish rates.

Methodology: benchmarks/NOTES.md ("Fan-out"); results: docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import platform
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from hdrh.histogram import HdrHistogram
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
import wsload
from server_metrics import flush_delay_summary, scrape_flush_delay

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_SERVER = Path(__file__).resolve().parent / "reference_server.py"
PICOWS_SERVER = Path(__file__).resolve().parent / "peers" / "picows_server.py"
NODE_SERVER = Path(__file__).resolve().parent / "peers" / "node" / "server.js"
NATS_SERVER = ROOT / ".venv" / "bin" / "nats-server"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

console = Console(highlight=False)
err = Console(stderr=True, highlight=False)
app = typer.Typer(add_completion=False, help=__doc__.split("\n\n")[0])


class Target(StrEnum):
    pushgrid = "pushgrid"
    reference = "reference"
    picows = "picows"
    node = "node"
    nats = "nats"
    both = "both"
    none = "none"


class SubscribeMode(StrEnum):
    round_robin = "round-robin"
    all = "all"


class BenchError(RuntimeError):
    pass


# --- /proc ------------------------------------------------------------------------------------


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def process_tree(pid: int) -> list[int]:
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_times(pids: list[int]) -> tuple[float, float]:
    """(utime, stime) of the given processes (all their threads), in seconds."""
    user = system = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        user += int(fields[11])  # field 14 of proc(5)
        system += int(fields[12])  # field 15
    return user / CLK_TCK, system / CLK_TCK


def write_syscalls(pids: list[int]) -> int:
    """Write-like system calls (write, send, writev...) made by the processes: ``syscw`` of
    /proc/PID/io. Unlike CPU time it does not depend on how much of the core the server got."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("syscw:"):
                    total += int(line.split()[1])
    return total


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu_times(pids))


def run_delay(pids: list[int]) -> float:
    """Seconds the processes' threads were runnable but waiting for a CPU (``/proc/PID/task/
    TID/schedstat``, second field): how much other processes held them back."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                path = f"/proc/{pid}/task/{tid}/schedstat"
                with contextlib.suppress(OSError, ValueError, IndexError), open(path) as f:
                    total += int(f.read().split()[1])
    return total / 1e9


def core_ticks(cores: list[int]) -> dict[int, list[int]]:
    """Per-CPU jiffies from /proc/stat: user nice system idle iowait irq softirq steal."""
    out: dict[int, list[int]] = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                name, *values = line.split()
                core = int(name[3:])
                if core in cores:
                    out[core] = [int(v) for v in values[:8]]
    return out


def core_usage(
    t0: dict[int, list[int]], t1: dict[int, list[int]], window: float
) -> dict[str, float]:
    """Fractions of the given cores' time over the window: busy, softirq+irq, steal."""
    d = [sum(t1[c][i] - t0[c][i] for c in t0) for i in range(8)]
    n = max(1, len(t0)) * window * CLK_TCK
    busy = d[0] + d[1] + d[2] + d[5] + d[6]
    return {
        "busy": busy / n,
        "irq": (d[5] + d[6]) / n,
        "steal": d[7] / n,
        "irq_s": (d[5] + d[6]) / CLK_TCK,
    }


def listen_overflows() -> int:
    """``TcpExtListenOverflows`` (machine-wide): connections dropped because a listener's accept
    queue was full; each costs its client a handshake retransmitted a second or more later."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/net/netstat") as f:
            lines = f.read().splitlines()
        for names, values in zip(lines[::2], lines[1::2], strict=False):
            if names.startswith("TcpExt:"):
                return int(values.split()[names.split().index("ListenOverflows")])
    return 0


def memory_mb(pids: list[int]) -> tuple[float, float]:
    """(VmRSS, VmHWM) summed over the processes, in MiB."""
    rss = hwm = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
                    elif line.startswith("VmHWM:"):
                        hwm += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, hwm / 1024


def machine_info() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem_gib = 0.0
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 1024 / 1024
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "mem_gib": round(mem_gib, 1),
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


# --- servers under test ----------------------------------------------------------------------


def _pdeathsig() -> None:
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # die with the benchmark


#: where :func:`free_port` looks (``run_all.py --ports LO-HI``): on a shared machine each user
#: of the kit keeps to its own range; empty: any port the kernel picks
PORT_RANGE: list[range] = []
_port_cursor = [0]  # the next port to try in PORT_RANGE: a port just handed out is not reused


def parse_port_range(text: str) -> range:
    """``LO-HI`` (inclusive) as a range of ports; a clear error otherwise."""
    lo, sep, hi = text.partition("-")
    try:
        ports = range(int(lo), int(hi) + 1) if sep else range(0)
    except ValueError:
        ports = range(0)
    if not ports or ports.start < 1 or ports.stop > 65536:
        raise ValueError(f"ports {text!r}: want LO-HI, 1 <= LO <= HI <= 65535")
    return ports


def free_port() -> int:
    """A port nothing listens on: the kernel's choice, or the next free one of PORT_RANGE."""
    if not PORT_RANGE:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    ports = PORT_RANGE[0]
    for _ in range(len(ports)):
        port = ports[_port_cursor[0] % len(ports)]
        _port_cursor[0] += 1
        with socket.socket() as s, contextlib.suppress(OSError):
            s.bind(("127.0.0.1", port))
            return port
    raise BenchError(f"no free port in {ports.start}-{ports.stop - 1}")


def ensure_node_peer() -> None:
    """Install the Node.js peer's dependencies (``ws``) with npm on first use."""
    folder = NODE_SERVER.parent
    if (folder / "node_modules" / "ws").is_dir():
        return
    if not shutil.which("npm"):
        raise BenchError("the node peer needs node and npm on PATH")
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--silent"], cwd=folder, check=True
    )


class ServerProcess:
    """A server under test as a subprocess pinned to one CPU; always killed on exit."""

    def __init__(
        self,
        kind: str,
        port: int,
        cpu: int | None,
        workdir: Path,
        extra_config: dict[str, str] | None = None,
        exe: Path | None = None,
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.kind, self.port, self.cpu, self.workdir = kind, port, cpu, workdir
        self.exe = exe  # pushgrid only: another build's executable (run_all.py --base)
        self.extra_config = extra_config or {}  # more pushgrid.conf lines (pushgrid only)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / f"{kind}-{port}.log"
        self.command: list[str] = []
        # NATS: publishers use the plain client port, subscribers the WebSocket one (``port``)
        self.publish_port: int | None = None
        self.client = "nats" if kind == "nats" else "pushgrid"
        # more environment variables for the server (run_all.py's allocator variants)
        self.env: dict[str, str] | None = {**os.environ, **extra_env} if extra_env else None
        # pushgrid only: its /metrics, for the server's own flush delay (server_metrics.py)
        self.metrics_url: str | None = None

    def __enter__(self) -> ServerProcess:
        if self.kind == "pushgrid":
            exe = self.exe or ROOT / ".venv" / "bin" / "pushgrid"
            exe_s = str(exe) if exe.exists() else shutil.which("pushgrid")
            if not exe_s:
                raise BenchError("pushgrid executable not found (.venv/bin/pushgrid)")
            conf = self.workdir / f"pushgrid-{self.port}.conf"
            monitor_port = free_port()  # not 8900: a running server may hold it
            self.metrics_url = f"http://127.0.0.1:{monitor_port}/metrics"
            conf.write_text(
                f"Listen = 127.0.0.1:{self.port}\n"
                "MaxOutboundBufferSize = 67108864\n"
                "KeepaliveInterval = 30\n"
                # /metrics is read twice per run (the flush delay); no archive, no
                # meta-subjects: the benchmark measures fan-out only
                f"MonitorHTTP.Listen = 127.0.0.1:{monitor_port}\n"
                "MetricsArchive =\n"
                "MetaSubjectInterval = 0\n"
                # one load generator address opens every connection and publishes flat out
                "PublishRatePerConnection = 0\n"
                "PublishRatePerAddress = 0\n"
                "MaxPendingConnectionsPerAddress = 100000\n"
                "MaxPendingConnections = 100000\n"
                + "".join(f"{k} = {v}\n" for k, v in self.extra_config.items())
            )
            cmd = [exe_s, "server", "--config", str(conf)]
        elif self.kind == "nats":
            self.publish_port = free_port()
            conf = self.workdir / f"nats-{self.port}.conf"
            conf.write_text(
                f"listen: 127.0.0.1:{self.publish_port}\n"
                f'websocket {{ listen: "127.0.0.1:{self.port}", no_tls: true }}\n'
            )
            cmd = [str(NATS_SERVER), "-c", str(conf)]
            self.env = {**(self.env or os.environ), "GOMAXPROCS": "1"}
        elif self.kind == "node":
            ensure_node_peer()
            cmd = ["node", str(NODE_SERVER), "--port", str(self.port)]
        elif self.kind == "picows":
            cmd = [sys.executable, str(PICOWS_SERVER), "--port", str(self.port)]
        else:
            cmd = [sys.executable, str(REFERENCE_SERVER), "--port", str(self.port)]
        if self.cpu is not None and shutil.which("taskset"):
            cmd = ["taskset", "-c", str(self.cpu), *cmd]
        self.command = cmd
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_pdeathsig,
            cwd=ROOT,
            env=self.env,
        )
        log.close()
        try:
            self._wait_listening(60.0)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(
                    f"{self.kind} exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5),
            ):
                time.sleep(0.3)  # let it finish starting up
                return
            time.sleep(0.1)
        raise BenchError(
            f"{self.kind} not listening on {self.port} after {timeout}s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 25) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __exit__(self, *_: Any) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


# --- one run ---------------------------------------------------------------------------------


@dataclass
class Params:
    subscribers: int
    subjects: int
    subscribe_mode: str
    message_size: int
    rate: float
    duration: float
    warmup: float
    procs: int
    sample_every: int
    read_interval_ms: float
    max_unacked: int
    inflight: float
    max_backlog: int
    qos: str
    retained: bool
    path: str
    server_core: int | None  # the CPU a started server is pinned to (for /proc/stat figures)
    gen_cores: list[int]
    setup_timeout: float
    drain_timeout: float
    connect_concurrency: int
    batching_time: int = 0  # ms, pushgrid's BatchingTime (0 = off)
    batching_max_size: int = 0  # bytes, pushgrid's BatchingMaxSize (0 = off)
    flush_tick: float | None = None  # ms, pushgrid's FlushTick (None = the server's default)
    workers: int = 1  # pushgrid's Workers (processes of the one server; ADR 044)
    # pushgrid as a one-member cluster of this delivery mode ("" = standalone, memory engine):
    # its own nats-server child, counted in the server's CPU (ADR 067)
    cluster: str = ""
    profile_dir: Path | None = None  # py-spy profiles of the server during the window
    # Latency probe: this many of the subscribers (0 = none) in one more process, every message
    # sampled, at nice PROBE_NICE, so the probe reads as soon as a frame arrives instead of
    # queueing behind the bulk readers' backlog on the generator's core.
    probe: int = 0


PROBE_NICE = -5  # the probe's niceness; the bulk readers keep theirs (0 unless run under nice)


def probe_main(
    idx: int, cfg: wsload.SubscriberConfig, counts: Any, phase: Any, conn: Any, parent_pid: int
) -> None:
    """A subscriber process at a higher scheduling priority (lower niceness needs root; if it
    is refused the probe keeps the parent's niceness, and the run records the niceness it got)."""
    with contextlib.suppress(PermissionError):
        os.setpriority(os.PRIO_PROCESS, 0, PROBE_NICE)
    wsload.subscriber_main(idx, cfg, counts, phase, conn, parent_pid)


def batching_config(p: Params) -> dict[str, str]:
    """The pushgrid.conf lines for the batching parameters (none when both are 0)."""
    out = {}
    if p.batching_time:
        out["BatchingTime"] = str(p.batching_time)
    if p.batching_max_size:
        out["BatchingMaxSize"] = str(p.batching_max_size)
    if p.flush_tick is not None:
        out["FlushTick"] = f"{p.flush_tick:g}"
    out["Workers"] = str(p.workers)  # explicit: `auto` would follow the taskset pinning
    if p.cluster:
        out.update(cluster_config(p.cluster))
    return out


def cluster_config(mode: str) -> dict[str, str]:
    """A one-member cluster (``Standard``): the member runs its own nats-server on a free port
    and its next two (the member's route, client and monitoring ports)."""
    port = free_port()
    return {
        "ClusterMembers": f"127.0.0.1:{port}",
        "ClusterMember": "1",
        "ClusterDeliveryMode": mode,
        "ClusterPassword": "benchmark-cluster-secret-0123456789",
    }


def start_profile(p: Params, pid: int, label: str) -> tuple[subprocess.Popen[bytes], Path] | None:
    """py-spy (non-blocking sampling, so the server is not paused) over the measured window;
    collapsed stacks, summarised by ``benchmarks/profile_summary.py``."""
    spy = ROOT / ".venv" / "bin" / "py-spy"
    if p.profile_dir is None or not spy.exists():
        return None
    p.profile_dir.mkdir(parents=True, exist_ok=True)
    out = p.profile_dir / f"{label}-{time.strftime('%H%M%S')}.txt"
    cmd = [
        str(spy),
        "record",
        "--nonblocking",
        "--format",
        "raw",
        "--rate",
        "200",
        "--duration",
        str(int(p.duration)),
        "--pid",
        str(pid),
        "--output",
        str(out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, out


def _recv(conn: Any, what: str, timeout: float, proc: Any) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if conn.poll(0.1):
            tag, value = conn.recv()
            if tag != what:
                raise BenchError(f"expected {what!r} from worker, got {tag!r}")
            return value
        if not proc.is_alive():
            raise BenchError(f"worker {proc.name} died (exit code {proc.exitcode}) before {what!r}")
    raise BenchError(f"worker {proc.name}: no {what!r} after {timeout}s")


def run_once(
    p: Params,
    host: str,
    port: int,
    server_pids: list[int] | None,
    label: str,
    client: str = "pushgrid",
    publish_port: int | None = None,
    metrics_url: str | None = None,
) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    run_id = secrets.token_hex(3)
    subjects = [f"/bench/{run_id}/s{k}" for k in range(p.subjects)]
    if p.subscribe_mode == SubscribeMode.all.value:
        per_sub = [subjects] * p.subscribers
        fanout = [p.subscribers] * p.subjects
    else:
        per_sub = [[subjects[i % p.subjects]] for i in range(p.subscribers)]
        fanout = [len(range(k, p.subscribers, p.subjects)) for k in range(p.subjects)]
    probe = max(0, min(p.probe, p.subscribers - 1))
    bulk = per_sub[probe:]
    procs = max(1, min(p.procs, len(bulk)))
    budget = p.setup_timeout + p.warmup + p.duration + p.drain_timeout + 60
    counts = ctx.RawArray("q", procs + (1 if probe else 0))
    phase = ctx.RawValue("i", 0)
    shared = ctx.RawArray("q", 8)  # publisher: published, expected deliveries, -, -, behind
    workers: list[tuple[Any, Any]] = []
    mine = os.getpid()

    cores = ([p.server_core] if p.server_core is not None else []) + p.gen_cores

    def tree() -> list[int]:
        return [pid for w, _ in workers for pid in [w.pid] if pid]

    try:
        mem_idle = memory_mb(server_pids) if server_pids else (0.0, 0.0)
        cpu_setup = cpu_seconds(server_pids) if server_pids else 0.0
        overflows_setup = listen_overflows()
        waited_setup = run_delay(server_pids) if server_pids else 0.0
        cores_setup = core_ticks(cores)
        t_setup = time.monotonic()
        for idx in range(procs + (1 if probe else 0)):
            is_probe = idx == procs
            parent, child = ctx.Pipe()
            cfg = wsload.SubscriberConfig(
                host=host,
                port=port,
                path=p.path,
                subjects=per_sub[:probe] if is_probe else bulk[idx::procs],
                sample_every=1 if is_probe else p.sample_every,
                read_interval=0 if is_probe else p.read_interval_ms / 1000,
                connect_concurrency=p.connect_concurrency,
                setup_timeout=p.setup_timeout,
                deadline=budget,
                source_host=f"127.0.0.{2 + idx % 250}" if host == "127.0.0.1" else None,
                client=client,
            )
            proc = ctx.Process(
                target=probe_main if is_probe else wsload.subscriber_main,
                name="probe" if is_probe else f"sub{idx}",
                daemon=True,
                args=(idx, cfg, counts, phase, child, mine),
            )
            proc.start()
            child.close()
            workers.append((proc, parent))
        ready = [_recv(conn, "ready", p.setup_timeout + 10, proc) for proc, conn in workers]
        # The niceness each kind of reader actually ran at (the probe's may have been refused).
        nice = {w.name: os.getpriority(os.PRIO_PROCESS, w.pid) for w, _ in workers if w.pid}
        connected = sum(r["connected"] for r in ready)
        subscribed = sum(r["subscribed"] for r in ready)
        denied = sum(r["denied"] for r in ready)
        want = sum(len(s) for s in per_sub)
        if connected != p.subscribers or subscribed != want or denied:
            errors = [e for r in ready for e in r["errors"]][:5]
            raise BenchError(
                f"setup failed: {connected}/{p.subscribers} connected, "
                f"{subscribed}/{want} subscribed, {denied} denied; {errors}"
            )
        setup_s = time.monotonic() - t_setup
        # Server CPU of the connection storm: accept + handshake + welcome + subscribe, all
        # subscribers connecting at once (--connect-concurrency per process).
        cpu_setup = (cpu_seconds(server_pids) - cpu_setup) if server_pids else 0.0
        storm = setup_figures(p, setup_s, cpu_setup, cpu_seconds(tree()), cores_setup)
        # Waiting for a CPU while runnable during the storm (the generator's processes start
        # with it, so all of theirs counts): who was held back by other processes.
        storm["setup_server_wait_s"] = (
            round(run_delay(server_pids) - waited_setup, 3) if server_pids else None
        )
        storm["setup_gen_wait_s"] = round(run_delay(tree()), 3)
        storm["connect_retransmits"] = sum(r.get("connect_retransmits", 0) for r in ready)
        # Machine-wide (every listener, other users' too): read with connect_retransmits.
        storm["listen_overflows_machine"] = listen_overflows() - overflows_setup

        pub_parent, pub_child = ctx.Pipe()
        pcfg = wsload.PublisherConfig(
            host=host,
            port=publish_port or port,
            path=p.path,
            subjects=subjects,
            fanout=fanout,
            message_size=p.message_size,
            rate=p.rate,
            max_unacked=p.max_unacked,
            max_backlog=p.max_backlog,
            qos=p.qos,
            retained=p.retained,
            deadline=budget,
            ack_timeout=p.drain_timeout,
            client=client,
        )
        pub = ctx.Process(
            target=wsload.publisher_main,
            name="publisher",
            daemon=True,
            args=(pcfg, counts, shared, pub_child, mine),
        )
        pub.start()
        pub_child.close()
        workers.append((pub, pub_parent))
        r = _recv(pub_parent, "ready", 40, pub)
        if "error" in r:
            raise BenchError(f"publisher could not connect: {r['error']}")
        time.sleep(0.5)
        mem_connected = memory_mb(server_pids) if server_pids else (0.0, 0.0)

        def alive_check() -> None:
            for proc, _ in workers:
                if not proc.is_alive():
                    raise BenchError(f"worker {proc.name} died (exit code {proc.exitcode})")
            if server_pids and not os.path.exists(f"/proc/{server_pids[0]}"):
                raise BenchError("the server process died")

        def snapshot() -> dict[str, Any]:
            return {
                "t": time.monotonic(),
                "received": sum(counts),
                "published": shared[0],
                "expected": shared[1],
                "server_cpu": cpu_times(server_pids) if server_pids else (0.0, 0.0),
                "server_writes": write_syscalls(server_pids) if server_pids else 0,
                "gen_cpu": cpu_seconds(tree()),
                "cores": core_ticks(cores),
                "flush_delay": scrape_flush_delay(metrics_url) if metrics_url else None,
            }

        pub_parent.send(("go", None))
        end_warmup = time.monotonic() + p.warmup
        while time.monotonic() < end_warmup:
            alive_check()
            time.sleep(min(0.2, max(0.0, end_warmup - time.monotonic())))
        spy = start_profile(p, server_pids[0], label) if server_pids else None
        s0 = snapshot()
        phase.value = 1
        end = s0["t"] + p.duration
        while time.monotonic() < end:
            alive_check()
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))
        s1 = snapshot()
        phase.value = 2
        if spy is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                spy[0].wait(10)
        mem_end = memory_mb(server_pids) if server_pids else (0.0, 0.0)
        pub_parent.send(("stop", None))
        pub_report = _recv(pub_parent, "report", p.drain_timeout + 10, pub)

        # Drain: wait until every expected delivery arrived, or progress stops.
        drain_start = last_change = time.monotonic()
        last = sum(counts)
        while last < pub_report["expected"]:
            now = time.monotonic()
            if now - drain_start > p.drain_timeout or now - last_change > 3.0:
                break
            time.sleep(0.05)
            cur = sum(counts)
            if cur != last:
                last, last_change = cur, time.monotonic()
        drain_s = time.monotonic() - drain_start

        hist = wsload.new_histogram()
        probe_hist = wsload.new_histogram()
        sub_reports = []
        for _, conn in workers[:-1]:
            conn.send(("stop", None))
        for proc, conn in workers[:-1]:
            rep = _recv(conn, "report", 15, proc)
            (probe_hist if proc.name == "probe" else hist).add(HdrHistogram.decode(rep["hist"]))
            sub_reports.append(rep)
    finally:
        # Normally every worker has reported and is exiting; on error or Ctrl-C stop them now.
        phase.value = 2
        for proc, conn in workers:
            with contextlib.suppress(Exception):
                conn.close()
            if proc.is_alive():
                proc.terminate()
        for proc, _ in workers:
            proc.join(timeout=2)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=2)

    window = s1["t"] - s0["t"]
    delivered = s1["received"] - s0["received"]
    server_user = s1["server_cpu"][0] - s0["server_cpu"][0]
    server_sys = s1["server_cpu"][1] - s0["server_cpu"][1]
    server_cpu = server_user + server_sys
    gen_cpu = s1["gen_cpu"] - s0["gen_cpu"]
    received_total = sum(r["count"] for r in sub_reports)
    window_msgs = sum(r["window_msgs"] for r in sub_reports)
    window_frames = sum(r["window_frames"] for r in sub_reports)
    server_core = gen_core = None
    if p.server_core is not None and p.server_core in s0["cores"]:
        c = p.server_core
        server_core = core_usage({c: s0["cores"][c]}, {c: s1["cores"][c]}, window)
        # The server's own CPU time includes the softirq work done in its context (loopback
        # TCP): what is left of the core's busy time went to other processes.
        server_core["others"] = max(0.0, server_core["busy"] - server_cpu / window)
    gcores = [c for c in p.gen_cores if c in s0["cores"]]
    if gcores:
        gen_core = core_usage(
            {c: s0["cores"][c] for c in gcores}, {c: s1["cores"][c] for c in gcores}, window
        )
    close_codes: dict[str, int] = {}
    for rep in sub_reports:
        for code, n in rep["close_codes"].items():
            close_codes[str(code)] = close_codes.get(str(code), 0) + n
    result: dict[str, Any] = {
        "bench": "fanout",
        "target": label,
        "host": f"{host}:{port}",
        "subscribers": p.subscribers,
        "subjects": p.subjects,
        "subscribe_mode": p.subscribe_mode,
        "fanout_per_publish": max(fanout),
        "message_size": p.message_size,
        "rate": p.rate,
        "qos": p.qos,
        "retained": p.retained,
        # pushgrid's batching settings; None: not applied (reference server, --target none)
        "batching_time_ms": p.batching_time if label == "pushgrid" else None,
        "batching_max_size": p.batching_max_size if label == "pushgrid" else None,
        "flush_tick_ms": p.flush_tick if label == "pushgrid" else None,
        "workers": p.workers if label == "pushgrid" else None,
        "cluster": p.cluster if label == "pushgrid" else None,
        "profile": str(spy[1]) if spy is not None else None,
        "duration_s": round(window, 3),
        "warmup_s": p.warmup,
        "procs": procs,
        "read_interval_ms": p.read_interval_ms,
        "inflight_per_subscriber": None if p.rate else p.inflight,
        "max_unacked": p.max_unacked,
        "sample_every": p.sample_every,
        "setup_s": round(setup_s, 2),
        "connections_per_s": round(p.subscribers / setup_s, 1) if setup_s else None,
        "server_cpu_setup_s": round(cpu_setup, 3) if server_pids else None,
        "server_ms_per_connection": round(cpu_setup / p.subscribers * 1000, 4)
        if server_pids
        else None,
        **storm,
        "delivered_per_s": round(delivered / window, 1),
        "published_per_s": round((s1["published"] - s0["published"]) / window, 1),
        "offered_deliveries_per_s": round((s1["expected"] - s0["expected"]) / window, 1),
        "published_total": pub_report["published"],
        "expected_total": pub_report["expected"],
        "received_total": received_total,
        "missing": pub_report["expected"] - received_total,
        "drain_s": round(drain_s, 2),
        "publish_ok": pub_report["acked_ok"],
        "publish_failed": pub_report["acked_failed"],
        "publish_unacked": pub_report["unacked"],
        "publish_first_failure": pub_report["first_failure"],
        "publisher_behind_max": pub_report["behind_max"],
        "latency_samples": hist.get_total_count(),
        "latency_us": latency_summary(hist),
        # Bulk figures above; the probe's subscribers (part of `subscribers`, same subjects,
        # every message sampled, higher priority) below. None without --probe.
        "probe_subscribers": probe,
        "probe_nice": nice.get("probe"),
        "bulk_nice": nice.get("sub0"),
        "probe_latency_samples": probe_hist.get_total_count() if probe else None,
        "probe_latency_us": latency_summary(probe_hist) if probe else None,
        "server_flush_delay_ms": flush_delay_summary(s0["flush_delay"], s1["flush_delay"]),
        "server_cpu_s": round(server_cpu, 3),
        "server_cpu_user_s": round(server_user, 3),
        "server_cpu_sys_s": round(server_sys, 3),
        "server_cpu_util": round(server_cpu / window, 3),
        "server_core": {k: round(v, 3) for k, v in server_core.items()} if server_core else None,
        "gen_cores": {k: round(v, 3) for k, v in gen_core.items()} if gen_core else None,
        "server_us_per_delivery": round(server_cpu / delivered * 1e6, 3) if delivered else None,
        "server_writes_per_delivery": round(
            (s1["server_writes"] - s0["server_writes"]) / delivered, 4
        )
        if delivered and server_pids
        else None,
        "server_rss_mb": {
            "idle": round(mem_idle[0], 1),
            "connected": round(mem_connected[0], 1),
            "end": round(mem_end[0], 1),
            "peak": round(mem_end[1], 1),
        },
        "server_kb_per_connection": round(
            (mem_connected[0] - mem_idle[0]) * 1024 / (p.subscribers + 1), 1
        )
        if server_pids
        else None,
        "gen_cpu_util": round(gen_cpu / window, 3),
        "gen_us_per_delivery": round(gen_cpu / delivered * 1e6, 3) if delivered else None,
        "msgs_per_frame": round(window_msgs / window_frames, 2) if window_frames else None,
        "disconnects": sum(r["lost"] for r in sub_reports),
        "close_codes": close_codes,
        "protocol_errors": sum(r["protocol_errors"] for r in sub_reports),
        "bad_samples": sum(r["bad_samples"] for r in sub_reports),
    }
    result["warnings"] = warnings_for(result, p, bool(server_pids))
    return result


def setup_figures(
    p: Params, setup_s: float, server_cpu: float, gen_cpu: float, ticks: dict[int, list[int]]
) -> dict[str, Any]:
    """The connection storm (every subscriber connecting and subscribing at once): how busy the
    server and the generator were while it lasted, and the generator's CPU per connection (the
    generator must cost well under the server, or the storm measures the generator)."""
    now = core_ticks(list(ticks))
    out: dict[str, Any] = {
        "connect_concurrency": p.connect_concurrency,
        "setup_server_cpu_util": round(server_cpu / setup_s, 3) if setup_s else None,
        "setup_gen_cpu_s": round(gen_cpu, 3),
        "setup_gen_ms_per_connection": round(gen_cpu / p.subscribers * 1000, 4),
        "setup_gen_cpu_util": round(gen_cpu / setup_s, 3) if setup_s else None,
        "setup_server_core": None,
        "setup_gen_cores": None,
    }
    if not setup_s:
        return out
    if p.server_core is not None and p.server_core in ticks:
        c = p.server_core
        core = core_usage({c: ticks[c]}, {c: now[c]}, setup_s)
        core["others"] = max(0.0, core["busy"] - server_cpu / setup_s)
        out["setup_server_core"] = {k: round(v, 3) for k, v in core.items()}
    gcores = [c for c in p.gen_cores if c in ticks]
    if gcores:
        gen = core_usage({c: ticks[c] for c in gcores}, {c: now[c] for c in gcores}, setup_s)
        gen["others"] = max(0.0, gen["busy"] - gen_cpu / setup_s / len(gcores))
        out["setup_gen_cores"] = {k: round(v, 3) for k, v in gen.items()}
    return out


def latency_summary(hist: HdrHistogram) -> dict[str, Any]:
    return {
        "p50": hist.get_value_at_percentile(50),
        "p90": hist.get_value_at_percentile(90),
        "p99": hist.get_value_at_percentile(99),
        "p999": hist.get_value_at_percentile(99.9),
        "max": hist.get_max_value(),
        "mean": round(hist.get_mean_value(), 1),
    }


def warnings_for(r: dict[str, Any], p: Params, have_server: bool) -> list[str]:
    w = []
    if r["missing"] > 0:
        w.append(f"{r['missing']} expected deliveries never arrived")
    elif r["missing"] < 0:
        w.append(f"{-r['missing']} more deliveries than the acknowledged publishes imply")
    if r["disconnects"]:
        w.append(f"{r['disconnects']} subscriber connections closed (codes {r['close_codes']})")
    if r["publish_unacked"]:
        w.append(f"{r['publish_unacked']} publishes never acknowledged (not counted as expected)")
    if r["publish_failed"]:
        w.append(f"{r['publish_failed']} publishes failed: {r['publish_first_failure']}")
    if r["gen_cpu_util"] > 0.9:
        w.append("load generator near 100% of its CPU: the result may be a generator limit")
    core = r["server_core"]
    contended = core and core["others"] + core["steal"] > 0.1 and core["busy"] > 0.9
    if contended and not p.rate:
        w.append(
            f"other processes took {core['others'] * 100:.0f}% (steal {core['steal'] * 100:.0f}%)"
            " of the server's CPU: throughput is understated, compare CPU per delivery"
        )
    elif contended:
        w.append(
            f"the server's CPU was full, {core['others'] * 100:.0f}% of it taken by other "
            "processes: latency may be inflated"
        )
    elif have_server and not p.rate and r["server_cpu_util"] < 0.85:
        w.append("server CPU below 85% at saturation: it is not the bottleneck")
    gcore = r["gen_cores"]
    if gcore and gcore["busy"] > 0.9:
        w.append(f"generator CPUs {gcore['busy'] * 100:.0f}% busy (incl. other processes)")
    if p.rate and r["published_per_s"] < 0.97 * p.rate:
        w.append(f"publisher fell behind the target rate ({r['published_per_s']:.0f}/s)")
    if r["protocol_errors"] or r["bad_samples"]:
        w.append(f"{r['protocol_errors']} protocol errors, {r['bad_samples']} bad samples")
    return w


# --- output ----------------------------------------------------------------------------------


ROWS: list[tuple[str, Any]] = [
    ("delivered msgs/s", lambda r: f"{r['delivered_per_s']:,.0f}"),
    ("publishes/s", lambda r: f"{r['published_per_s']:,.1f}"),
    ("expected / received", lambda r: f"{r['expected_total']:,} / {r['received_total']:,}"),
    ("latency p50 ms", lambda r: f"{r['latency_us']['p50'] / 1000:.2f}"),
    ("latency p99 ms", lambda r: f"{r['latency_us']['p99'] / 1000:.2f}"),
    ("latency max ms", lambda r: f"{r['latency_us']['max'] / 1000:.2f}"),
    ("latency samples", lambda r: f"{r['latency_samples']:,}"),
    ("probe p50 / p99 / max ms", lambda r: _probe(r)),
    ("server flush delay p50 / p99 ms", lambda r: _flush_delay(r)),
    ("server CPU (of 1 core)", lambda r: f"{r['server_cpu_util'] * 100:.0f}%"),
    ("server µs CPU / delivery", lambda r: _fmt(r["server_us_per_delivery"], ".3f")),
    ("server CPU user / sys", lambda r: f"{_share(r, 'user')} / {_share(r, 'sys')}"),
    (
        "server core: others / softirq",
        lambda r: (
            f"{r['server_core']['others'] * 100:.0f}% / {r['server_core']['irq'] * 100:.0f}%"
            if r["server_core"]
            else "-"
        ),
    ),
    (
        "server RSS connected / peak MiB",
        lambda r: f"{r['server_rss_mb']['connected']:.0f} / {r['server_rss_mb']['peak']:.0f}",
    ),
    ("server KiB / connection", lambda r: _fmt(r["server_kb_per_connection"], ".1f")),
    ("generator CPU (of 1 core)", lambda r: f"{r['gen_cpu_util'] * 100:.0f}%"),
    ("generator µs CPU / delivery", lambda r: _fmt(r["gen_us_per_delivery"], ".3f")),
    ("messages per frame (batching)", lambda r: _fmt(r.get("msgs_per_frame"), ".2f")),
    ("disconnects", lambda r: str(r["disconnects"])),
]


def _probe(r: dict[str, Any]) -> str:
    lat = r.get("probe_latency_us")
    if not lat:
        return "-"
    return " / ".join(f"{lat[k] / 1000:.2f}" for k in ("p50", "p99", "max"))


def _flush_delay(r: dict[str, Any]) -> str:
    """Upper bucket bounds (pushgrid's /metrics histogram), so "<= x"."""
    delay = r.get("server_flush_delay_ms")
    if not delay:
        return "-"
    bounds = (delay[k] for k in ("p50", "p99"))
    return " / ".join(f"<={b:g}" if b is not None else ">1000" for b in bounds)


def _share(r: dict[str, Any], kind: str) -> str:
    total = r["server_cpu_s"]
    return f"{r[f'server_cpu_{kind}_s'] / total * 100:.0f}%" if total else "-"


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def print_table(results: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    for r in results:
        table.add_column(r["target"], justify="right")
    for name, get in ROWS:
        table.add_row(name, *(get(r) for r in results))
    console.print(table)
    for r in results:
        for w in r["warnings"]:
            console.print(f"[yellow]warning[/] {r['target']}: {w}")


def emit_json(obj: dict[str, Any], json_out: Path | None) -> None:
    line = json.dumps(obj, separators=(",", ":"))
    print(line, flush=True)
    if json_out is not None:
        with open(json_out, "a") as f:
            f.write(line + "\n")


# --- CLI -------------------------------------------------------------------------------------


@app.command()
def main(
    subscribers: Annotated[
        int, typer.Option("--subscribers", "-n", min=1, help="subscriber connections")
    ] = 1000,
    subjects: Annotated[int, typer.Option("--subjects", "-s", min=1, help="subjects")] = 1,
    subscribe_mode: Annotated[
        SubscribeMode,
        typer.Option(
            help="round-robin: subscriber i -> subject i % S; "
            "all: every subscriber subscribes to every subject"
        ),
    ] = SubscribeMode.round_robin,
    message_size: Annotated[
        int,
        typer.Option(
            "--message-size",
            "-b",
            min=wsload.TS_DIGITS,
            help="content bytes per message (first 19 = send time)",
        ),
    ] = 100,
    rate: Annotated[
        float, typer.Option("--rate", "-r", min=0, help="publishes/s in total; 0 = saturate")
    ] = 0.0,
    duration: Annotated[
        float, typer.Option("--duration", "-d", min=0.5, help="measured seconds")
    ] = 10.0,
    warmup: Annotated[
        float, typer.Option("--warmup", "-w", min=0, help="unmeasured seconds first")
    ] = 3.0,
    server: Annotated[str, typer.Option(help="HOST:PORT with --target none")] = "127.0.0.1:8800",
    server_pid: Annotated[
        int, typer.Option(help="with --target none: PID for server CPU / RSS")
    ] = 0,
    target: Annotated[
        Target, typer.Option(help="start this server (both = back to back)")
    ] = Target.none,
    repeat: Annotated[
        int, typer.Option(min=1, help="runs per target (both: order alternates)")
    ] = 1,
    procs: Annotated[int, typer.Option(min=1, help="subscriber processes")] = 4,
    probe: Annotated[
        int,
        typer.Option(
            min=0,
            help="latency probe: this many of the subscribers in one more process at nice "
            f"{PROBE_NICE}, every message timestamped on arrival; reported apart (0 = off)",
        ),
    ] = 0,
    sample_every: Annotated[
        int,
        typer.Option(
            min=0,
            help="latency sample every Kth message per process "
            "(0 = auto: 100 at saturation, else about 5k samples/s per process)",
        ),
    ] = 0,
    read_interval_ms: Annotated[
        float,
        typer.Option(
            min=0,
            help="subscriber processes run their event loop at most once per this many ms, "
            "so reads batch frames (adds up to this much latency); 0 = off",
        ),
    ] = 1.0,
    max_unacked: Annotated[
        int, typer.Option(min=1, help="publishes without publish_result")
    ] = 1000,
    inflight: Annotated[
        float,
        typer.Option(
            min=0.01,
            help="saturation: deliveries published but not yet received, "
            "per subscriber (end-to-end window)",
        ),
    ] = 20.0,
    qos: Annotated[str, typer.Option(help="guaranteed | standard")] = "guaranteed",
    retained: Annotated[bool, typer.Option(help="publish retained messages")] = True,
    path: Annotated[str, typer.Option(help="WebSocket URL path")] = "/ws",
    server_cpu: Annotated[int, typer.Option(help="CPU for started servers (taskset)")] = 0,
    client_cpus: Annotated[
        str, typer.Option(help="CPUs for the generator, e.g. 1 or 1-3 (ignored on a 1-CPU machine)")
    ] = "1",
    setup_timeout: Annotated[float, typer.Option(help="connect + subscribe time limit (s)")] = 90.0,
    drain_timeout: Annotated[
        float, typer.Option(help="time limit for the last acks, then for the last deliveries (s)")
    ] = 15.0,
    connect_concurrency: Annotated[
        int, typer.Option(min=1, help="parallel connects per process")
    ] = 50,
    batching_time: Annotated[
        int,
        typer.Option(
            "--batching-time",
            min=0,
            metavar="MS",
            help="pushgrid's BatchingTime in ms (0 = off); ignored for the reference server",
        ),
    ] = 0,
    batching_max_size: Annotated[
        int,
        typer.Option(
            "--batching-max-size",
            min=0,
            metavar="BYTES",
            help="pushgrid's BatchingMaxSize in bytes (0 = off); ignored for the reference server",
        ),
    ] = 0,
    flush_tick: Annotated[
        float | None,
        typer.Option(
            "--flush-tick",
            min=0,
            metavar="MS",
            help="pushgrid's FlushTick in ms (default: the server's); ignored for other servers",
        ),
    ] = None,
    profile_dir: Annotated[
        Path | None,
        typer.Option(help="record a py-spy profile of the server's window into this directory"),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(min=1, help="pushgrid's Workers: processes of the one server (ADR 044)"),
    ] = 1,
    cluster: Annotated[
        str,
        typer.Option(help="run pushgrid as a one-member cluster: Standard (ADR 067)"),
    ] = "",
    json_out: Annotated[
        Path | None, typer.Option(help="also append the JSON lines to this file")
    ] = None,
) -> None:
    """Fan-out benchmark; prints a table and one JSON line per run (plus a ratio line)."""
    if qos not in ("guaranteed", "standard"):
        raise typer.BadParameter("--qos must be guaranteed or standard")
    params = Params(
        subscribers=subscribers,
        subjects=subjects,
        subscribe_mode=subscribe_mode.value,
        message_size=message_size,
        rate=rate,
        duration=duration,
        warmup=warmup,
        procs=procs,
        probe=probe,
        sample_every=sample_every
        or _auto_sample_every(rate, subscribers, subjects, subscribe_mode, procs),
        read_interval_ms=read_interval_ms,
        server_core=None,
        gen_cores=[],
        max_unacked=max_unacked,
        inflight=inflight,
        max_backlog=max(1, int(inflight * subscribers)),
        qos=qos,
        retained=retained,
        path=path,
        setup_timeout=setup_timeout,
        drain_timeout=drain_timeout,
        connect_concurrency=connect_concurrency,
        batching_time=batching_time,
        batching_max_size=batching_max_size,
        flush_tick=flush_tick,
        workers=workers,
        cluster=cluster,
        profile_dir=profile_dir,
    )
    pin = prepare_process(params, client_cpus, server_cpu, target is not Target.none)
    info = machine_info()
    console.print(
        f"machine: {info['nproc']} CPUs, {info['cpu_model']}, {info['mem_gib']} GiB; "
        f"server CPU {server_cpu if pin else '-'}, generator CPUs "
        f"{client_cpus if pin else '-'}"
    )
    batching = batching_config(params)
    if batching and target in (Target.reference, Target.both, Target.none):
        which = (
            "a running server (--target none)" if target is Target.none else "the reference server"
        )
        err.print(f"[yellow]--batching-* options are ignored for {which}[/]")
    mode = f"saturation (window {inflight:g}/subscriber)" if not rate else f"{rate:g} publishes/s"
    title = (
        f"fan-out: {subscribers} subscribers, {subjects} subject(s) "
        f"({subscribe_mode.value}), {message_size} B, {mode}, {duration:g}s"
        + (f", pushgrid {', '.join(f'{k}={v}' for k, v in batching.items())}" if batching else "")
    )
    try:
        if target is Target.none:
            host, _, port_s = server.rpartition(":")
            pids = process_tree(server_pid) if server_pid else None
            results = []
            for _ in range(repeat):
                res = run_once(params, host or "127.0.0.1", int(port_s), pids, "server")
                res["machine"] = info
                emit_json(res, json_out)
                results.append(res)
            print_table(results, title)
            return
        kinds = ["pushgrid", "reference"] if target is Target.both else [target.value]
        by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
        with tempfile.TemporaryDirectory(prefix="pushgrid-bench-") as tmp:
            for rep in range(repeat):
                order = kinds if rep % 2 == 0 else kinds[::-1]
                for kind in order:
                    port = free_port()
                    console.print(f"[dim]run {rep + 1}/{repeat}: starting {kind} on :{port}[/]")
                    srv = ServerProcess(
                        kind,
                        port,
                        server_cpu if pin else None,
                        Path(tmp),
                        batching if kind == "pushgrid" else None,
                    )
                    with srv:
                        pids = process_tree(srv.pid)
                        res = run_once(
                            params,
                            "127.0.0.1",
                            port,
                            pids,
                            kind,
                            srv.client,
                            srv.publish_port,
                            srv.metrics_url,
                        )
                        res["server_command"] = " ".join(srv.command)
                    res["machine"] = info
                    res["repeat"] = rep + 1
                    emit_json(res, json_out)
                    by_kind[kind].append(res)
        all_results = [r for k in kinds for r in by_kind[k]]
        print_table(all_results, title)
        if target is Target.both:
            report_ratio(by_kind, params, json_out)
    except BenchError as exc:
        err.print(f"[red]benchmark failed:[/] {exc}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("[red]interrupted[/]: server and generator processes were stopped")
        raise typer.Exit(130) from None


def prepare_process(params: Params, client_cpus: str, server_cpu: int, start_server: bool) -> bool:
    """Pin this process (and so the generator) to ``client_cpus``, raise the fd limit, turn
    SIGTERM / SIGHUP into KeyboardInterrupt; return whether CPUs are pinned (>= 2 CPUs)."""
    ncpu = os.cpu_count() or 1
    pin = ncpu >= 2
    if pin:
        cpus = _parse_cpus(client_cpus)
        os.sched_setaffinity(0, cpus)  # inherited by the generator processes
        params.gen_cores = sorted(cpus)
        if start_server:
            params.server_core = server_cpu
    else:
        err.print("[yellow]one CPU: server and generator share it; no pinning[/]")
    with contextlib.suppress(ValueError, OSError):
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    # SIGTERM / SIGHUP behave like Ctrl-C: unwind through every finally (kills children).
    def _interrupt(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGINT, _interrupt)  # also when started with SIGINT ignored (nohup, &)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    return pin


def report_ratio(
    by_kind: dict[str, list[dict[str, Any]]], p: Params, json_out: Path | None
) -> None:
    pg = [r["delivered_per_s"] for r in by_kind["pushgrid"]]
    ref = [r["delivered_per_s"] for r in by_kind["reference"]]
    pairs = [a / b for a, b in zip(pg, ref, strict=True) if b]
    ratio = statistics.median(pairs) if pairs else None
    cpu_pg = [r["server_us_per_delivery"] for r in by_kind["pushgrid"]]
    cpu_ref = [r["server_us_per_delivery"] for r in by_kind["reference"]]
    cpu_ratio = None
    if all(cpu_pg) and all(cpu_ref):
        cpu_ratio = statistics.median(b / a for a, b in zip(cpu_pg, cpu_ref, strict=True))
    line = {
        "bench": "fanout-ratio",
        "subscribers": p.subscribers,
        "subjects": p.subjects,
        "message_size": p.message_size,
        "rate": p.rate,
        "qos": p.qos,
        "pushgrid_delivered_per_s": pg,
        "reference_delivered_per_s": ref,
        "ratio_delivered": round(ratio, 3) if ratio else None,
        "ratio_per_run": [round(x, 3) for x in pairs],
        "ratio_cpu_efficiency": round(cpu_ratio, 3) if cpu_ratio else None,
    }
    if ratio is not None:
        console.print(
            f"[bold]pushgrid / reference delivered msgs/s: {ratio:.2f}x[/] "
            f"(per run: {', '.join(f'{x:.2f}' for x in pairs)}); server CPU per "
            f"delivery reference / pushgrid: "
            f"{'-' if cpu_ratio is None else f'{cpu_ratio:.2f}x'}"
        )
    emit_json(line, json_out)


def _auto_sample_every(
    rate: float, subscribers: int, subjects: int, mode: SubscribeMode, procs: int
) -> int:
    if not rate:
        return 100
    per_publish = subscribers if mode is SubscribeMode.all else subscribers / subjects
    per_process = rate * per_publish / max(1, min(procs, subscribers))
    return max(1, int(per_process / 5000))  # about 5k samples/s per process


def _parse_cpus(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    available = os.sched_getaffinity(0)
    return (cpus & available) or available


if __name__ == "__main__":
    app()
