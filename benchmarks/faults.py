"""Fault campaign (issue 23 item 6): kill, pause and partition a real 3-member Guaranteed cluster
under a publish load, then check every acknowledged message on every member.

    nice -n 5 .venv/bin/python benchmarks/faults.py                       # every scenario
    nice -n 5 .venv/bin/python benchmarks/faults.py --scenarios partition --faults 3
    nice -n 5 .venv/bin/python benchmarks/faults.py --sync-intervals 2m,always --workers 32

Needs root and ``ip netns`` (and ``nft``: ``make test`` installs it). Each scenario gets a fresh
cluster: three members, each in a network namespace of its own on a bridge
(``tests/integration/netns.py``), clients in the root namespace. The publisher publishes at
``--rate`` messages/s over ``--subjects`` subjects through the members the fault does not touch
(a client that knows which member is down), at most ``--workers`` publishes in flight, each
message once (no retry), with a msg_id as both clients send one (``--no-msg-ids``: without, the
path of a publisher that sends none). One
``PushgridClient`` per member prefers that member (weight 100 vs 1) and subscribes to every
subject; it fails over and recovers by itself. ``--faults`` times, the member leading the stream
gets the fault for ``--fault-time`` seconds, then the cluster must be healthy again and
``--settle`` seconds of load follow:

- ``kill``: SIGKILL of the member (its nats-server dies with it), restarted after the fault time;
- ``pause``: SIGSTOP of the member and its nats-server, SIGCONT after the fault time;
- ``partition``: nft drops every packet between the member and the others and their TCP
  connections are cut (``ss -K``); the partition heals after the fault time.

The table: acknowledged and failed publishes; messages lost (an acknowledged message missing from
a member's history, summed over members, or never delivered to a subscriber), duplicated and
reordered (history or subscriber); data resyncs (a subscriber's recovery refused and a snapshot
sent instead: what it missed counts as lost (delivered)); lost acks (records whose PubAck was
lost in an election and whose retry was re-planned: stored once, answered with the stored
numbers, from the members' logs); seq told twice (two publishes acknowledged with one seq: the
second overwrites the first in the ledger, so one of them also counts as lost); publish outage
(the longest time without any acknowledgement during a fault and its settle time); subscriber
recovery (the longest time from a message's acknowledgement to its delivery, over every
subscriber). Every
acknowledged message some member or subscriber lacks is printed after the scenario (subject, seq,
content, msg_id, the member that acknowledged it, and per member/subscriber what it holds at that
seq and at which seq it holds the content). JSON lines go to ``--json-out`` (default
benchmarks/results/faults.jsonl).

``--sync-intervals 2m,always`` measures the cost of fsync instead: for each
``ClusterSyncInterval``, a fresh cluster and ``--workers`` unpaced HTTP publishers (members in
turn) for ``--sync-seconds`` over 20 subjects, then over one hot subject; acknowledged
publishes per second. ``--sync-workers 64,256`` repeats it with more publishers (bigger
records: the group commit), ``--sync-msg-ids off,on`` without and with a msg_id per publish
(the dedup check's cost).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import platform
import signal
import ssl
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import httpx
import psutil
import typer
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from integration.netns import NetnsCluster, Network, unavailable_reason  # noqa: E402
from integration.pgtest import ServerProcess, WsClient  # noqa: E402

from pushgrid.client import PushgridClient  # noqa: E402
from pushgrid.client.backoff import BackoffPolicy  # noqa: E402
from pushgrid.client.models import Status, StatusEvent  # noqa: E402

console = Console(highlight=False, width=160)
app = typer.Typer(add_completion=False)

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "faults.jsonl"
SCENARIOS = ("kill", "pause", "partition")
HISTORY = 1000  # the most a subscribe asks for: members are checked on each subject's newest
# what a member logs when a record whose acknowledgement was lost turned out stored after all
# (server/engine/jetstream.py, _plan_stored): the table's "lost acks" column
LOST_ACK_LOG = "a lost acknowledgement's record was stored"


@dataclass
class Params:
    rate: float
    subjects: int
    workers: int
    faults: int
    fault_time: float
    settle: float
    warmup: float
    publish_timeout: float
    msg_ids: bool
    sync_interval: str


@dataclass
class Ledger:
    """What the publisher was told, and when: subject -> seq -> (content, ack time); the
    msg_id each content was published with (when ``--msg-ids``), and who answered it."""

    acked: dict[str, dict[int, tuple[str, float]]] = field(default_factory=dict)
    failed: int = 0
    ack_times: list[float] = field(default_factory=list)
    msg_ids: dict[str, str] = field(default_factory=dict)
    answered_by: dict[str, int] = field(default_factory=dict)
    # (subject, seq, content told first, content told later): one seq acknowledged twice
    told_twice: list[tuple[str, int, str, str]] = field(default_factory=list)


@dataclass
class Received:
    """One subscriber's messages: (subject, content, seq, kind, arrival time), and its data
    resyncs (subject, reason): a recovery the server could not give, answered by a snapshot."""

    messages: list[tuple[str, str, int, str, float]] = field(default_factory=list)
    resyncs: list[tuple[str, str]] = field(default_factory=list)


_RESTART_WAIT = 120.0  # s a killed member may take to start again


class Faults:
    """The three faults on one cluster; ``down`` holds the members a client should avoid."""

    def __init__(self, cluster: NetnsCluster) -> None:
        self.cluster = cluster
        self.down: set[int] = set()

    def inject(self, scenario: str, victim: int) -> None:
        self.down.add(victim)
        member = self.cluster.member(victim)
        if scenario == "kill":
            member.kill()
        elif scenario == "pause":
            _signal_tree(member, signal.SIGSTOP)
        else:
            self.cluster.net.isolate(victim)

    def repair(self, scenario: str, victim: int) -> None:
        member = self.cluster.member(victim)
        if scenario == "kill":
            # a member's start (interpreter, imports, its nats-server) took over 20 s at load 20,
            # the harness's start timeout then, and ended the campaign instead of the fault
            member.launch().wait_ready(_RESTART_WAIT)
        elif scenario == "pause":
            _signal_tree(member, signal.SIGCONT)
        else:
            self.cluster.net.heal()
        self.down.discard(victim)

    def reachable(self) -> list[ServerProcess]:
        return [m for i, m in enumerate(self.cluster.members, 1) if i not in self.down]


def _signal_tree(member: ServerProcess, sig: int) -> None:
    """``sig`` to the member and its nats-server child (a whole member pauses)."""
    assert member.proc is not None
    root = psutil.Process(member.proc.pid)
    for process in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(sig)


# --- load ----------------------------------------------------------------------------------------


async def publish(
    faults: Faults, subjects: list[str], params: Params, stop: asyncio.Event, ledger: Ledger
) -> None:
    """Paced publishes, subjects in turn, through the reachable members in turn."""
    slots = asyncio.Semaphore(params.workers)
    tasks: set[asyncio.Task[None]] = set()
    turn = itertools.count()
    async with httpx.AsyncClient(timeout=params.publish_timeout + 10, trust_env=False) as http:
        start = time.monotonic()
        for n in itertools.count():
            if stop.is_set():
                break
            await asyncio.sleep(max(0.0, start + n / params.rate - time.monotonic()))
            await slots.acquire()
            members = faults.reachable()
            member = members[next(turn) % len(members)]
            subject = subjects[n % len(subjects)]
            if params.msg_ids:
                ledger.msg_ids[f"m{n}"] = f"faults-{n}"
            which = faults.cluster.members.index(member) + 1
            task = asyncio.create_task(
                _publish_one(http, (which, member), subject, f"m{n}", ledger)
            )
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            task.add_done_callback(lambda _: slots.release())
        await asyncio.gather(*tasks, return_exceptions=True)


async def _publish_one(
    http: httpx.AsyncClient,
    through: tuple[int, ServerProcess],
    subject: str,
    content: str,
    ledger: Ledger,
) -> None:
    which, member = through
    body = {"subject": subject, "content": content}
    if content in ledger.msg_ids:
        body["msg_id"] = ledger.msg_ids[content]
    try:
        response = await http.post(f"{member.url}/publish", json=body)
    except httpx.HTTPError:
        ledger.failed += 1
        return
    if response.status_code != 200:
        ledger.failed += 1
        return
    now = time.monotonic()
    seq = response.json()["seq"]
    earlier = ledger.acked.setdefault(subject, {}).get(seq)
    if earlier is not None:
        ledger.told_twice.append((subject, seq, earlier[0], content))
    ledger.acked[subject][seq] = (content, now)
    ledger.ack_times.append(now)
    ledger.answered_by[content] = which


async def subscriber(
    servers: list[str], subjects: list[str], into: Received
) -> tuple[PushgridClient, asyncio.Task[None]]:
    fast = BackoffPolicy(base=0.2, quick_retries=50, jitter=0.2, cap=1.0)

    async def on_status(event: StatusEvent) -> None:
        if event.status == Status.DATA_RESYNC:
            into.resyncs.append((str(event.subject), str(event.detail)))

    client = PushgridClient(servers, on_status=on_status, backoff=fast, proxy=None)
    await client.connect(timeout=60)
    await client.subscribe(subjects)

    async def read() -> None:
        async for message in client.messages():
            into.messages.append(
                (message.subject, message.content, message.seq, message.type, time.monotonic())
            )

    return client, asyncio.create_task(read())


# --- checks --------------------------------------------------------------------------------------


@dataclass
class Tally:
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0

    def add(self, view: list[tuple[int, str]], acked: dict[int, tuple[str, float]]) -> None:
        """One member's or subscriber's (seq, content) of one subject against the ledger."""
        contents = [content for _, content in view]
        self.duplicated += len(contents) - len(set(contents))
        held = dict(view)
        self.lost += sum(1 for seq, (content, _) in acked.items() if held.get(seq) != content)
        seqs = [seq for seq, _ in view]
        self.reordered += sum(1 for a, b in itertools.pairwise(seqs) if b <= a)


async def member_history(member: ServerProcess, subject: str) -> list[tuple[int, str]]:
    reader = await WsClient.connect(member, timeout=30)
    try:
        _, frames = await reader.subscribe_all(subject, history=HISTORY, timeout=60)
    finally:
        await reader.close()
    return [(f["seq"], f["content"]) for f in frames if f.get("type") == "message"]


def subscriber_view(received: Received, subject: str) -> list[tuple[int, str]]:
    return [
        (seq, content)
        for name, content, seq, kind, _ in received.messages
        if name == subject and kind != "snapshot"
    ]


def slowest_delivery(received: list[Received], ledger: Ledger) -> float:
    """The longest time from an acknowledgement to the message's first delivery to a subscriber
    (a message never delivered is counted as lost, not here)."""
    ack_at = {
        content: at for per_subject in ledger.acked.values() for content, at in per_subject.values()
    }
    worst = 0.0
    for one in received:
        first: dict[str, float] = {}
        for _, content, _, kind, at in one.messages:
            if kind != "snapshot":
                first.setdefault(content, at)
        for content, at in first.items():
            if content in ack_at:
                worst = max(worst, at - ack_at[content])
    return worst


def longest_outage(windows: list[tuple[float, float]], ack_times: list[float]) -> float:
    """The longest time without an acknowledgement inside any of ``windows``."""
    worst = 0.0
    for start, end in windows:
        points = [start, *sorted(t for t in ack_times if start <= t <= end), end]
        worst = max(worst, *(b - a for a, b in itertools.pairwise(points)))
    return worst


# --- one scenario --------------------------------------------------------------------------------


async def campaign(scenario: str, cluster: NetnsCluster, params: Params) -> dict[str, Any]:
    faults = Faults(cluster)
    tag = uuid.uuid4().hex[:6]
    subjects = [f"/faults/{tag}/s{k}" for k in range(params.subjects)]
    addresses = [m.address for m in cluster.members]
    received = [Received() for _ in cluster.members]
    subscribers = [
        await subscriber(
            [f"{100 if i == k else 1} {a}" for i, a in enumerate(addresses)], subjects, received[k]
        )
        for k in range(len(addresses))
    ]
    ledger = Ledger()
    stop = asyncio.Event()
    load = asyncio.create_task(publish(faults, subjects, params, stop, ledger))
    windows: list[tuple[float, float]] = []
    victims: list[int] = []
    try:
        await asyncio.sleep(params.warmup)
        for _ in range(params.faults):
            victims.append(await asyncio.to_thread(_stream_leader, cluster))
            started = time.monotonic()
            await asyncio.to_thread(faults.inject, scenario, victims[-1])
            await asyncio.sleep(params.fault_time)
            await asyncio.to_thread(faults.repair, scenario, victims[-1])
            await asyncio.to_thread(cluster.wait_healthy, 120)
            await asyncio.sleep(params.settle)
            windows.append((started, time.monotonic()))
    finally:
        stop.set()
        await load
    await _drain(received, ledger, wait=60)
    row = await _check(cluster, subjects, ledger, received)
    for client, task in subscribers:
        await client.close()
        task.cancel()
    return {
        "bench": "faults",
        "scenario": scenario,
        "victims": victims,
        **row,
        "publish_outage_s": round(longest_outage(windows, ledger.ack_times), 2),
        "subscriber_recovery_s": round(slowest_delivery(received, ledger), 2),
        "params": vars(params),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }


def _stream_leader(cluster: NetnsCluster) -> int:
    """The member leading the stream (member 1 when no member names one within 20 s)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for member in cluster.running():
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                status = httpx.get(f"{member.monitor_url}/health", timeout=2, trust_env=False)
                index = cluster.index_of_node(status.json()["cluster"].get("streamLeader"))
                if index is not None:
                    return index
        time.sleep(0.5)
    return 1


async def _drain(received: list[Received], ledger: Ledger, wait: float) -> None:
    """Wait (at most ``wait`` s) until every subscriber holds every acknowledged message."""
    wanted = {content for per in ledger.acked.values() for content, _ in per.values()}
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if all(wanted <= {m[1] for m in one.messages} for one in received):
            return
        await asyncio.sleep(0.5)


async def _check(
    cluster: NetnsCluster, subjects: list[str], ledger: Ledger, received: list[Received]
) -> dict[str, Any]:
    held, delivered = Tally(), Tally()
    missing: list[dict[str, Any]] = []
    for subject in subjects:
        acked = ledger.acked.get(subject, {})
        newest = {seq: v for seq, v in acked.items() if seq > max(acked, default=0) - HISTORY}
        histories = [await member_history(member, subject) for member in cluster.members]
        views = [subscriber_view(one, subject) for one in received]
        for history in histories:
            held.add(history, newest)
        for view in views:
            delivered.add(view, acked)
        missing += _missing(subject, ledger, newest, histories, acked, views)
    return {
        "acked": sum(len(per) for per in ledger.acked.values()),
        "failed": ledger.failed,
        "lost_held": held.lost,
        "lost_delivered": delivered.lost,
        "duplicated": held.duplicated + delivered.duplicated,
        "reordered": held.reordered + delivered.reordered,
        "resyncs": [r for one in received for r in one.resyncs],
        "told_twice": ledger.told_twice,
        "missing": missing,
    }


def _missing(
    subject: str,
    ledger: Ledger,
    newest: dict[int, tuple[str, float]],
    histories: list[list[tuple[int, str]]],
    acked: dict[int, tuple[str, float]],
    views: list[list[tuple[int, str]]],
) -> list[dict[str, Any]]:
    """Each acknowledged (seq, content) some member's history or some subscriber lacks: who
    lacks it, what they hold at that seq instead, and where (which seq) they hold its content."""
    out = []
    for seq, (content, _) in sorted(acked.items()):
        lacking = {
            f"m{k} history": _where(history, seq, content)
            for k, history in enumerate(histories, 1)
            if seq in newest and dict(history).get(seq) != content
        }
        lacking |= {
            f"m{k} subscriber": _where(view, seq, content)
            for k, view in enumerate(views, 1)
            if dict(view).get(seq) != content
        }
        if lacking:
            out.append(
                {
                    "subject": subject,
                    "seq": seq,
                    "content": content,
                    "msg_id": ledger.msg_ids.get(content),
                    "answered_by": f"m{ledger.answered_by.get(content)}",
                    "lacking": lacking,
                }
            )
    return out


def _where(view: list[tuple[int, str]], seq: int, content: str) -> str:
    at_seq = [c for s, c in view if s == seq]
    elsewhere = [s for s, c in view if c == content]
    holds = f"holds {at_seq[0]!r} at {seq}" if at_seq else f"nothing at {seq}"
    found = f", its content at seq {elsewhere}" if elsewhere else ", its content nowhere"
    span = f" (holds seq {view[0][0]}..{view[-1][0]})" if view else " (holds nothing)"
    return holds + found + span


def print_missing(row: dict[str, Any], limit: int = 40) -> None:
    """The acknowledged messages some member or subscriber lacks, one line each."""
    for subject, seq, first, later in row.get("told_twice", []):
        console.print(f"[bold red]{subject} seq {seq} acknowledged to {first} and to {later}[/]")
    missing = row.get("missing", [])
    if not missing:
        return
    console.print(f"[bold red]{row['scenario']}: {len(missing)} acknowledged messages missing[/]")
    for entry in missing[:limit]:
        console.print(
            f"  {entry['subject']} seq {entry['seq']} {entry['content']} "
            f"msg_id={entry['msg_id']} acked by {entry['answered_by']}:"
        )
        for who, what in entry["lacking"].items():
            console.print(f"      {who}: {what}")
    if len(missing) > limit:
        console.print(f"  ... {len(missing) - limit} more in the JSON output")


def run_scenario(scenario: str, params: Params, tmp: Path) -> dict[str, Any]:
    net = Network(3).create()
    cluster = NetnsCluster(
        tmp / scenario,
        net,
        ClusterPublishTimeout=params.publish_timeout,
        MaxCachedMessagesPerSubject=100_000,
        CacheExpireTime=3600,
        **({"ClusterSyncInterval": params.sync_interval} if params.sync_interval else {}),
    )
    try:
        cluster.start()
        row = asyncio.run(campaign(scenario, cluster, params))
        row["lost_acks"] = sum(m.log().count(LOST_ACK_LOG) for m in cluster.members)
        return row
    finally:
        cluster.kill_all()
        net.remove()


# --- the cost of fsync ---------------------------------------------------------------------------


async def throughput(
    cluster: NetnsCluster, subjects: int, workers: int, seconds: float, msg_ids: bool
) -> float:
    """Acknowledged publishes per second, unpaced: ``workers`` publishers, each publishing one
    message after the other on a connection of its own (with a msg_id when ``msg_ids``),
    subjects and members in turn."""
    tag = uuid.uuid4().hex[:6]
    names = [f"/fsync/{tag}/s{k}" for k in range(subjects)]
    refused: dict[str, int] = {}  # answer or error -> count
    done = 0
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(c) for c in publisher_clients(workers)]
        deadline = time.monotonic() + seconds

        async def worker(k: int) -> None:
            nonlocal done
            member, http = cluster.members[k % len(cluster.members)], clients[k]
            for n in itertools.count():
                if time.monotonic() >= deadline:
                    return
                body = {"subject": names[(k + n) % len(names)], "content": f"w{k}.{n}"}
                if msg_ids:
                    body["msg_id"] = f"{tag}-w{k}.{n}"
                try:
                    response = await http.post(f"{member.url}/publish", json=body)
                except httpx.HTTPError as exc:
                    refused[type(exc).__name__] = refused.get(type(exc).__name__, 0) + 1
                    continue
                if response.status_code == 200:
                    done += 1
                else:
                    code = f"{response.status_code} {response.json().get('code', '')}"
                    refused[code] = refused.get(code, 0) + 1

        started = time.monotonic()
        await asyncio.gather(*(worker(k) for k in range(workers)))
    if refused:
        console.print(f"  {workers} publishers, {subjects} subjects: not acknowledged {refused}")
    return done / (time.monotonic() - started)


def publisher_clients(count: int, timeout: float = 30.0) -> list[httpx.AsyncClient]:
    """``count`` HTTP clients (a connection each) sharing one SSL context.

    httpx builds an SSL context per client, loading the CA bundle even for plain http: 0.1 s
    of this one loop on a loaded 2-core machine. Built inside the measurement, 256 clients
    held every publisher's first request for 15-30 s, which read as a server collapse to
    1-12 publishes/s (docs/benchmarks.md "Faults")."""
    context = ssl.create_default_context()
    return [
        httpx.AsyncClient(timeout=timeout, trust_env=False, verify=context) for _ in range(count)
    ]


@dataclass
class Load:
    """One throughput measurement: publishers, and whether each publish carries a msg_id."""

    workers: int
    msg_ids: bool


def run_sync_cost(
    interval: str, loads: list[Load], seconds: float, tmp: Path
) -> list[dict[str, Any]]:
    """Guaranteed publish throughput with ``ClusterSyncInterval = interval`` on a fresh cluster,
    one row per load: over 20 subjects, then over one hot subject."""
    net = Network(3).create()
    cluster = NetnsCluster(tmp / f"sync-{interval}", net, ClusterSyncInterval=interval)
    rows = []
    try:
        cluster.start()
        for load in loads:
            many = asyncio.run(throughput(cluster, 20, load.workers, seconds, load.msg_ids))
            hot = asyncio.run(throughput(cluster, 1, load.workers, seconds, load.msg_ids))
            rows.append(
                {
                    "bench": "faults-fsync",
                    "sync_interval": interval,
                    "workers": load.workers,
                    "msg_ids": load.msg_ids,
                    "seconds": seconds,
                    "publishes_per_s_20_subjects": round(many, 1),
                    "publishes_per_s_1_subject": round(hot, 1),
                    "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                }
            )
    finally:
        cluster.kill_all()
        net.remove()
    return rows


def print_sync_table(rows: list[dict[str, Any]]) -> None:
    """One line per (interval, publishers, msg ids); ratios against the first interval's row
    with the same publishers and msg ids."""
    table = Table(title="Guaranteed publish throughput by ClusterSyncInterval (acknowledged/s)")
    names = ("ClusterSyncInterval", "publishers", "msg ids", "20 subjects", "1 hot subject")
    for name in (*names, "vs first interval"):
        table.add_column(name, justify="left" if name == "ClusterSyncInterval" else "right")
    first = rows[0]["sync_interval"]
    base = {(r["workers"], r["msg_ids"]): r for r in rows if r["sync_interval"] == first}
    for row in rows:
        many, hot = row["publishes_per_s_20_subjects"], row["publishes_per_s_1_subject"]
        ref = base[(row["workers"], row["msg_ids"])]
        ratio = (
            f"{many / ref['publishes_per_s_20_subjects'] - 1:+.0%} / "
            f"{hot / ref['publishes_per_s_1_subject'] - 1:+.0%}"
        )
        ids = "on" if row["msg_ids"] else "off"
        table.add_row(row["sync_interval"], str(row["workers"]), ids, str(many), str(hot), ratio)
    console.print(table)


# --- output --------------------------------------------------------------------------------------


def print_table(rows: list[dict[str, Any]]) -> None:
    table = Table(title="Guaranteed cluster under faults (3 members in network namespaces)")
    columns: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
        ("scenario", lambda r: r["scenario"]),
        ("msg ids", lambda r: "on" if r["params"].get("msg_ids") else "off"),
        ("faults", lambda r: len(r["victims"])),
        ("acked", lambda r: r["acked"]),
        ("failed", lambda r: r["failed"]),
        ("lost (held)", lambda r: r["lost_held"]),
        ("lost (delivered)", lambda r: r["lost_delivered"]),
        ("duplicated", lambda r: r["duplicated"]),
        ("reordered", lambda r: r["reordered"]),
        ("resyncs", lambda r: len(r["resyncs"])),
        ("seq told twice", lambda r: len(r.get("told_twice", []))),
        ("lost acks", lambda r: r.get("lost_acks", "-")),
        ("publish outage s", lambda r: r["publish_outage_s"]),
        ("subscriber recovery s", lambda r: r["subscriber_recovery_s"]),
    ]
    for name, _ in columns:
        table.add_column(name, justify="left" if name in ("scenario", "msg ids") else "right")
    for row in rows:
        table.add_row(*(str(value(row)) for _, value in columns))
    console.print(table)


@app.command()
def main(
    scenarios: Annotated[str, typer.Option(help="comma-separated: kill, pause, partition")] = (
        ",".join(SCENARIOS)
    ),
    rate: Annotated[float, typer.Option(help="publishes per second")] = 100.0,
    subjects: Annotated[int, typer.Option()] = 10,
    workers: Annotated[int, typer.Option(help="publishes in flight at most")] = 64,
    faults: Annotated[int, typer.Option(help="faults per scenario")] = 2,
    fault_time: Annotated[float, typer.Option(help="seconds a fault lasts")] = 12.0,
    settle: Annotated[float, typer.Option(help="seconds of load after each repair")] = 8.0,
    warmup: Annotated[float, typer.Option(help="seconds of load before the first fault")] = 5.0,
    publish_timeout: Annotated[float, typer.Option(help="ClusterPublishTimeout")] = 15.0,
    sync_intervals: Annotated[
        str, typer.Option(help="measure throughput per ClusterSyncInterval instead, e.g. 2m,always")
    ] = "",
    sync_seconds: Annotated[float, typer.Option(help="seconds per throughput run")] = 20.0,
    sync_workers: Annotated[
        str, typer.Option(help="publishers per throughput run, e.g. 64,256 (default --workers)")
    ] = "",
    sync_msg_ids: Annotated[
        str, typer.Option(help="throughput runs with msg ids: on, off or off,on")
    ] = "on",
    msg_ids: Annotated[
        bool, typer.Option(help="send a msg_id with each publish (as both clients do)")
    ] = True,
    sync_interval: Annotated[
        str, typer.Option(help="ClusterSyncInterval of the campaign clusters (default: the key)")
    ] = "",
    json_out: Annotated[Path, typer.Option()] = DEFAULT_JSON,
) -> None:
    reason = unavailable_reason()
    if reason is not None:
        console.print(f"cannot run the fault campaign: {reason}")
        raise typer.Exit(2)
    chosen = [s.strip() for s in scenarios.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        raise typer.BadParameter(f"unknown scenarios {unknown}; choose from {SCENARIOS}")
    params = Params(
        rate,
        subjects,
        workers,
        faults,
        fault_time,
        settle,
        warmup,
        publish_timeout,
        msg_ids,
        sync_interval,
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="pushgrid-faults-") as tmp:
        if sync_intervals:
            loads = [
                Load(int(w), ids == "on")
                for w in (sync_workers or str(workers)).split(",")
                for ids in sync_msg_ids.split(",")
            ]
            for interval in sync_intervals.split(","):
                console.print(f"[bold]ClusterSyncInterval = {interval}[/] ...")
                for row in run_sync_cost(interval.strip(), loads, sync_seconds, Path(tmp)):
                    rows.append(row)
                    _emit(row, json_out)
            print_sync_table(rows)
            return
        for scenario in chosen:
            console.print(f"[bold]{scenario}[/]: {faults} x {fault_time:g} s ...")
            rows.append(run_scenario(scenario, params, Path(tmp)))
            _emit(rows[-1], json_out)
            print_missing(rows[-1])
    print_table(rows)


def _emit(row: dict[str, Any], json_out: Path) -> None:
    json_out.parent.mkdir(parents=True, exist_ok=True)
    with json_out.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    app()
