"""Memory of the subject table (issue 22 item 3): RSS of a real server before and after a flood
of one-shot subjects and after they expire, /health latency meanwhile, and the sweep's cost.

    .venv/bin/python benchmarks/subject_memory.py process -n 200000 --expire 10
    .venv/bin/python benchmarks/subject_memory.py process -n 1000000 --expire 600 --hold 30
    .venv/bin/python benchmarks/subject_memory.py process ... --legacy --pushgrid OTHER/pushgrid
    .venv/bin/python benchmarks/subject_memory.py sweep -n 200000 1000000
    .venv/bin/python benchmarks/subject_memory.py throughput --rounds 3
    .venv/bin/python benchmarks/subject_memory.py compare pymalloc malloc jemalloc --rounds 2
    .venv/bin/python benchmarks/subject_memory.py table -n 200000

``process`` starts ``pushgrid server`` as a child (MaxSubjects above ``-n``, no rate limit, no
meta-subjects), publishes ``-n`` subjects once each over one WebSocket (pipelined, retained, 8
bytes of content and one field; ``--not-retained``: not retained), polls ``/health`` every 20 ms
throughout, and prints the child's RSS (baseline, after the flood, after expiry) with the
/health max and p99 per phase. A retained subject stays *dormant* after expiry (its snapshot,
epoch and seq: ADR 022); a not-retained one is forgotten. Run it with ``PYTHONMALLOC=malloc`` in
the environment to measure the server on the C allocator (the child inherits it).
``--hold S`` measures /health for S seconds with the subjects idle and stops (no expiry wait);
``--pushgrid`` runs another build (``--legacy``: one without MaxSubjects/MaxRetainedBytes).
``sweep`` times ``MemoryEngine.sweep()`` per call with ``-n`` subjects: all fresh (nothing to
evict: the per-tick cost while they exist) and all expired (a full batch evicted per call).
``compare`` runs one fresh server per allocator candidate (``CANDIDATES``: the environment each
runs with; ADR 033), interleaved, the order rotating per round: hot publishes (server CPU per
publish), a flood of ``-n`` not-retained one-shot subjects (CPU per subject), their eviction,
and the RSS over the pre-flood baseline at the peak, 3 s and 3 + ``--settle`` s after eviction.
``throughput`` compares the server on CPython's allocator (pymalloc) and on
``PYTHONMALLOC=malloc`` in the same run, interleaved: each round starts one server per allocator
(order alternating) and publishes ``-m`` messages (100 bytes, pipelined) to 100 subjects, each
delivered to ``--subscribers`` connections, then a flood of ``-n`` one-shot subjects; it prints the
wall time and the server's CPU time per message (``/proc/<pid>/stat``: what the allocator costs,
whatever else the machine runs). ``table`` counts the engine's own allocations per subject
(``tracemalloc``, in-process): live one-shot subjects, the same once evicted (dormant with their
snapshot, or forgotten when not retained). Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT.parent))

from pushgrid.server.engine.base import PublishRequest  # noqa: E402
from pushgrid.server.engine.limits import SWEEP_BATCH  # noqa: E402
from pushgrid.server.engine.memory import MemoryEngine  # noqa: E402

PIPELINE = 2000


def rss_mib(pid: int, key: str = "VmRSS") -> float:
    """The child's resident memory (``VmHWM``: its peak so far)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


class HealthProbe:
    """GET /health every 20 ms; latencies (ms) per phase."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.phase = "baseline"
        self.samples: dict[str, list[float]] = {}

    async def run(self) -> None:
        async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
            while True:
                start = time.perf_counter()
                await http.get(self.url)
                self.samples.setdefault(self.phase, []).append((time.perf_counter() - start) * 1000)
                await asyncio.sleep(0.02)

    def report(self) -> None:
        for phase, values in self.samples.items():
            values = sorted(values)
            p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
            print(
                f"  /health {phase:<14} n={len(values):<5} median={statistics.median(values):.1f} "
                f"p99={p99:.1f} max={values[-1]:.1f} ms"
            )


async def flood(ws_url: str, count: int, retained: bool = True) -> None:
    async with websockets.connect(ws_url, max_size=None) as ws:
        await ws.recv()  # the server's hello
        sent = 0
        while sent < count:
            batch = min(PIPELINE, count - sent)
            for i in range(sent, sent + batch):
                frame = {"op": "publish", "id": i, "subject": f"/flood/s{i}", "content": "12345678"}
                frame["fields"] = {"f": "v"}
                if not retained:
                    frame["retained"] = False
                await ws.send(json.dumps(frame))
            answered = 0
            while answered < batch:
                answer = json.loads(await ws.recv())
                if answer.get("type") == "publish_result":
                    answered += 1
                    if answer.get("result") != "ok":
                        raise SystemExit(f"refused: {answer}")
            sent += batch


def start_server(
    workdir: Path,
    port: int,
    count: int,
    expire: float,
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    conf = workdir / "pushgrid.conf"
    settings = {
        "Listen": f"127.0.0.1:{port}",
        "MonitorHTTP.Listen": f"127.0.0.1:{port + 1}",
        "MetricsArchive": "",
        "Workers": "1",  # one process: its pid is the server measured
        "MetaSubjectInterval": 0,
        "MaxSubjects": count + 1000,
        "MaxRetainedBytes": 0,
        "CacheExpireTime": expire,
        "PublishRatePerConnection": 0,
        "PublishRatePerAddress": 0,
    }
    if getattr(args, "legacy", False):
        del settings["MaxSubjects"], settings["MaxRetainedBytes"]
    conf.write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
    pushgrid = getattr(args, "pushgrid", None) or ROOT / ".venv" / "bin" / "pushgrid"
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 - lives as long as the child
    return subprocess.Popen(
        [str(pushgrid), "server", "--config", str(conf)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )


async def wait_health(url: str) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=2) as http:
        for _ in range(300):
            try:
                if (await http.get(url)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit("server not ready")


async def process(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        child = start_server(Path(tmp), args.port, args.n, args.expire, args)
        try:
            url = f"http://127.0.0.1:{args.port}"
            await _measure(child.pid, url, args.n, args.expire, args.hold, not args.not_retained)
        finally:
            child.terminate()
            child.wait(15)


async def _measure(
    pid: int, url: str, count: int, expire: float, hold: float, retained: bool
) -> None:
    await wait_health(url + "/health")
    probe = HealthProbe(url + "/health")
    task = asyncio.create_task(probe.run())
    await asyncio.sleep(3)
    baseline = rss_mib(pid)
    probe.phase = "flood"
    start = time.perf_counter()
    await flood(url.replace("http", "ws") + "/ws", count, retained)
    took = time.perf_counter() - start
    probe.phase = "idle subjects"
    flooded = rss_mib(pid)
    if hold:
        await asyncio.sleep(hold)
        task.cancel()
        print(f"{count} subjects in {took:.1f} s: RSS {baseline:.1f} -> {flooded:.1f} MiB")
        probe.report()
        return
    await asyncio.sleep(max(0.0, expire - (time.perf_counter() - start) - 1))
    probe.phase = "eviction"
    # the sweep evicts SWEEP_BATCH subjects a tick: count / batch seconds after expiry
    await asyncio.sleep(expire + count / 2000 + 5)
    probe.phase = "after"
    await asyncio.sleep(3)
    after, peak = rss_mib(pid), rss_mib(pid, "VmHWM")
    task.cancel()
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        stats = (
            await http.get(
                url.rsplit(":", 1)[0] + f":{int(url.rsplit(':', 1)[1]) + 1}/stats?format=json"
            )
        ).json()
    print(f"  the server after expiry: {stats['gauges']}")
    print(f"{count} one-shot subjects published in {took:.1f} s, CacheExpireTime {expire} s")
    print(
        f"  RSS baseline {baseline:.1f} MiB, after the flood {flooded:.1f} MiB "
        f"(+{flooded - baseline:.1f}: {(flooded - baseline) * 1024 * 1024 / count:.0f} B/subject), "
        f"after expiry {after:.1f} MiB (+{after - baseline:.1f}); peak {peak:.1f} MiB"
    )
    probe.report()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` (``/proc/<pid>/stat`` fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _count_messages(ws: websockets.ClientConnection, expected: int) -> None:
    got = 0
    while got < expected:
        frame = await ws.recv()
        got += str(frame).count('"type":"message"')


async def hot_publishes(ws_url: str, count: int, subscribers: int, pid: int) -> tuple[float, float]:
    """``count`` publishes to 100 subjects, each delivered to every subscriber connection:
    (wall seconds, server CPU seconds) from the first publish to the last delivery."""
    subjects = [f"/hot/s{i}" for i in range(100)]
    readers = []
    for _ in range(subscribers):
        ws = await websockets.connect(ws_url, max_size=None)
        await ws.recv()  # hello
        items = [{"subject": s} for s in subjects]
        await ws.send(json.dumps({"op": "subscribe", "id": 1, "subjects": items}))
        readers.append(ws)
    await asyncio.sleep(1)  # subscribed (nothing published yet: no snapshots)
    counting = [asyncio.create_task(_count_messages(ws, count)) for ws in readers]
    content = "x" * 100
    async with websockets.connect(ws_url, max_size=None) as pub:
        await pub.recv()
        cpu0, wall0 = cpu_seconds(pid), time.perf_counter()
        sent = 0
        while sent < count:
            batch = min(PIPELINE, count - sent)
            for i in range(sent, sent + batch):
                frame = {"op": "publish", "id": i, "subject": subjects[i % 100], "content": content}
                await pub.send(json.dumps(frame))
            answered = 0
            while answered < batch:
                if '"publish_result"' in str(await pub.recv()):
                    answered += 1
            sent += batch
    await asyncio.gather(*counting)
    took = (time.perf_counter() - wall0, cpu_seconds(pid) - cpu0)
    for ws in readers:
        await ws.close()
    return took


async def _one_allocator(args: argparse.Namespace, malloc: bool, port: int) -> str:
    env = dict(os.environ)
    env.pop("PYTHONMALLOC", None)
    env["PUSHGRID_ALLOCATOR"] = "pymalloc"  # not the default jemalloc (ADR 033): as given
    if malloc:
        env["PYTHONMALLOC"] = "malloc"
    with tempfile.TemporaryDirectory() as tmp:
        child = start_server(Path(tmp), port, args.n, 600, args, env)
        try:
            url = f"http://127.0.0.1:{port}"
            await wait_health(url + "/health")
            ws_url = url.replace("http", "ws") + "/ws"
            hot_wall, hot_cpu = await hot_publishes(ws_url, args.m, args.subscribers, child.pid)
            cpu1, wall1 = cpu_seconds(child.pid), time.perf_counter()
            await flood(ws_url, args.n)
            cpu2, wall2 = cpu_seconds(child.pid), time.perf_counter()
        finally:
            child.terminate()
            child.wait(15)
    name = "malloc  " if malloc else "pymalloc"
    return (
        f"{name} hot: {args.m / hot_wall:8.0f} publishes/s, server CPU "
        f"{hot_cpu / args.m * 1e6:6.1f} us/publish ({args.subscribers} deliveries each) | "
        f"one-shot flood: {args.n / (wall2 - wall1):8.0f} subjects/s, server CPU "
        f"{(cpu2 - cpu1) / args.n * 1e6:6.1f} us/subject"
    )


async def throughput(args: argparse.Namespace) -> None:
    for round_ in range(args.rounds):
        order = (False, True) if round_ % 2 == 0 else (True, False)
        for offset, malloc in enumerate(order):
            line = await _one_allocator(args, malloc, args.port + 2 * offset)
            print(f"round {round_ + 1} {line}", flush=True)


JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
MIMALLOC = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"
#: allocator candidates of ``compare``: the server's extra environment
CANDIDATES: dict[str, dict[str, str]] = {
    "pymalloc": {},
    "pymalloc-notrim": {"_PUSHGRID_MALLOC_TRIM": "0"},
    "malloc": {"PYTHONMALLOC": "malloc"},
    "malloc-notrim": {"PYTHONMALLOC": "malloc", "_PUSHGRID_MALLOC_TRIM": "0"},
    "malloc-tunables": {
        "PYTHONMALLOC": "malloc",
        "_PUSHGRID_MALLOC_TRIM": "0",
        "GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=131072"
        ":glibc.malloc.mmap_threshold=131072",
    },
    "jemalloc": {"PYTHONMALLOC": "malloc", "LD_PRELOAD": JEMALLOC},
    "jemalloc-bg": {
        "PYTHONMALLOC": "malloc",
        "LD_PRELOAD": JEMALLOC,
        "MALLOC_CONF": "background_thread:true",
    },
    "jemalloc-pymalloc": {"LD_PRELOAD": JEMALLOC},
    "mimalloc": {"PYTHONMALLOC": "malloc", "LD_PRELOAD": MIMALLOC},
}


async def _subjects_left(monitor: str) -> int:
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        stats = (await http.get(monitor + "/stats?format=json")).json()
    return int(stats["gauges"]["subjects"])


async def _evicted(monitor: str, deadline: float) -> None:
    """Until the flood's subjects are gone (the 100 hot ones stay: they were subscribed)."""
    for _ in range(int(deadline - time.monotonic()) + 1):
        if await _subjects_left(monitor) <= 100:
            return
        await asyncio.sleep(1)


async def _one_candidate(args: argparse.Namespace, name: str, port: int) -> dict[str, float]:
    """One server on ``name``'s allocator: hot publishes, a flood of not-retained one-shot
    subjects, their eviction; CPU per message and RSS (MiB) before, at the peak and after."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONMALLOC", "LD_PRELOAD")}
    # exactly the candidate's variables: the server does not choose for itself (ADR 033)
    env.update(CANDIDATES[name], PUSHGRID_ALLOCATOR="pymalloc")
    with tempfile.TemporaryDirectory() as tmp:
        child = start_server(Path(tmp), port, args.n, args.expire, args, env)
        try:
            url = f"http://127.0.0.1:{port}"
            monitor = f"http://127.0.0.1:{port + 1}"
            await wait_health(url + "/health")
            ws_url = url.replace("http", "ws") + "/ws"
            _, hot_cpu = await hot_publishes(ws_url, args.m, args.subscribers, child.pid)
            await asyncio.sleep(2)
            base = rss_mib(child.pid)
            cpu1 = cpu_seconds(child.pid)
            await flood(ws_url, args.n, retained=False)
            flood_cpu = cpu_seconds(child.pid) - cpu1
            flooded = rss_mib(child.pid)
            await _evicted(monitor, time.monotonic() + args.expire + args.n / 1000 + 60)
            await asyncio.sleep(3)
            soon = rss_mib(child.pid)
            await asyncio.sleep(args.settle)
            after, peak = rss_mib(child.pid), rss_mib(child.pid, "VmHWM")
        finally:
            child.terminate()
            child.wait(15)
    return {
        "hot_us": hot_cpu / args.m * 1e6,
        "new_us": flood_cpu / args.n * 1e6,
        "base": base,
        "flood": flooded - base,
        "peak": peak - base,
        "soon": soon - base,
        "after": after - base,
    }


async def compare(args: argparse.Namespace) -> None:
    """Every candidate in the same run, interleaved (order rotating each round); ratios
    against the first candidate of each round."""
    results: dict[str, list[dict[str, float]]] = {name: [] for name in args.candidates}
    for round_ in range(args.rounds):
        shift = round_ % len(args.candidates)
        order = args.candidates[shift:] + args.candidates[:shift]
        for index, name in enumerate(order):
            r = await _one_candidate(args, name, args.port + 2 * index)
            results[name].append(r)
            print(
                f"round {round_ + 1} {name:<18} CPU hot {r['hot_us']:6.1f} us/publish, new "
                f"{r['new_us']:6.1f} us/subject | RSS base {r['base']:6.1f} MiB, flood "
                f"+{r['flood']:6.1f}, peak +{r['peak']:6.1f}, evicted+3s +{r['soon']:6.1f}, "
                f"+{3 + args.settle:.0f}s +{r['after']:6.1f}",
                flush=True,
            )
    ref = args.candidates[0]
    print(f"medians over {args.rounds} rounds, ratios of CPU to {ref}:")
    ref_hot = statistics.median(r["hot_us"] for r in results[ref])
    ref_new = statistics.median(r["new_us"] for r in results[ref])
    for name, rs in results.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(
            f"  {name:<18} hot {med['hot_us']:6.1f} us ({med['hot_us'] / ref_hot:.2f}) new "
            f"{med['new_us']:6.1f} us ({med['new_us'] / ref_new:.2f}) | RSS peak "
            f"+{med['peak']:.0f} MiB, after eviction +{med['soon']:.0f} / +{med['after']:.0f} MiB"
        )


def table_bytes(count: int) -> None:
    import tracemalloc

    for retained in (True, False):
        clock = FakeClock()
        engine = MemoryEngine(clock=clock)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            engine.publish_now(PublishRequest(f"/flood/s{i}", "12345678", {"f": "v"}, retained))
        live = tracemalloc.get_traced_memory()[0] - base
        clock.now += 181
        while engine.stats().cached_messages or engine.evictions < count:
            before = engine.evictions
            engine.sweep()
            if engine.evictions == before:
                break
        evicted = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        kind = "retained (dormant after eviction)" if retained else "not retained (forgotten)"
        print(
            f"{count} one-shot subjects, {kind}: live {live / count:.0f} B/subject, "
            f"after eviction {evicted / count:.0f} B/subject "
            f"(subjects {engine.stats().subjects}, cached {engine.stats().cached_messages})"
        )


def sweep_cost(counts: list[int]) -> None:
    for count in counts:
        clock = FakeClock()
        engine = MemoryEngine(clock=clock)
        for i in range(count):
            engine.publish_now(PublishRequest(f"/flood/s{i}", "12345678", {"f": "v"}))
        fresh = _time_sweeps(engine, 50)
        clock.now += 181
        evicting = _time_sweeps(engine, 50)
        print(
            f"{count} subjects: sweep per call (median / max of 50) {fresh} ms while none is "
            f"idle, {evicting} ms while evicting a batch of {SWEEP_BATCH}"
        )


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def _time_sweeps(engine: MemoryEngine, calls: int) -> str:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        engine.sweep()
        times.append((time.perf_counter() - start) * 1000)
    return f"{statistics.median(times):.3f} / {max(times):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    proc = sub.add_parser("process")
    proc.add_argument("-n", type=int, default=200_000)
    proc.add_argument("--expire", type=float, default=10.0)
    proc.add_argument("--port", type=int, default=18_931)
    proc.add_argument("--hold", type=float, default=0.0)
    proc.add_argument("--pushgrid", type=Path, default=None)
    proc.add_argument("--legacy", action="store_true")
    proc.add_argument("--not-retained", action="store_true")
    thr = sub.add_parser("throughput")
    thr.add_argument("--rounds", type=int, default=3)
    thr.add_argument("-m", type=int, default=100_000)
    thr.add_argument("-n", type=int, default=100_000)
    thr.add_argument("--subscribers", type=int, default=4)
    thr.add_argument("--port", type=int, default=18_941)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("candidates", nargs="+", choices=sorted(CANDIDATES))
    cmp_.add_argument("--rounds", type=int, default=2)
    cmp_.add_argument("-m", type=int, default=30_000)
    cmp_.add_argument("-n", type=int, default=100_000)
    cmp_.add_argument("--expire", type=float, default=5.0)
    cmp_.add_argument("--settle", type=float, default=12.0)
    cmp_.add_argument("--subscribers", type=int, default=4)
    cmp_.add_argument("--port", type=int, default=18_951)
    tab = sub.add_parser("table")
    tab.add_argument("-n", type=int, default=200_000)
    sweep = sub.add_parser("sweep")
    sweep.add_argument("-n", type=int, nargs="+", default=[200_000, 1_000_000])
    args = parser.parse_args()
    if args.what == "process":
        asyncio.run(process(args))
    elif args.what == "throughput":
        asyncio.run(throughput(args))
    elif args.what == "compare":
        asyncio.run(compare(args))
    elif args.what == "table":
        table_bytes(args.n)
    else:
        sweep_cost(args.n)


if __name__ == "__main__":
    main()
