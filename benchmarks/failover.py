"""Failover benchmark: a 3-member cluster loses a member every ``--kill-interval`` seconds while a
publisher and failing-over subscribers run; what was lost, duplicated, reordered, and how long
publishing and the clients' recovery stalled. Then Guaranteed vs Standard publish throughput.

    nice -n 5 .venv/bin/python benchmarks/failover.py                      # the issue's run
    nice -n 5 .venv/bin/python benchmarks/failover.py --messages 5000 --kills 1 --kill-interval 5 \
        --no-throughput

Failover run (``--mode guaranteed`` by default): three seed members (``pushgrid server``
processes, each with its own nats-server child, all on 127.0.0.1, started by the integration
suite's ``Cluster`` helper). One subscriber process runs ``--subscribers`` Python clients
(``PushgridClient`` with a fast back-off); client k prefers member k % 3 (weight 100 vs 1) and
subscribes to the subjects s with s % 3 == k % 3, so every subject has several subscribers on
different members. The publisher publishes at ``--rate`` messages/s over ``--subjects``
subjects, members in turn, ``--workers`` publishes at most in flight: ``--transport ws``
(default) through one ``PushgridClient`` per member (that member only; publishes pipelined on
its WebSocket), ``--transport http`` with ``POST /publish`` (httpx; on this 2-core machine it
tops out near 200 publishes/s, the WebSocket publisher does several times that). Each attempt
carries its own id (``<message>.<attempt>``) as content: an attempt is

- ``ok``: the server's ok answer, with the (epoch, seq) the cluster gave it; only these count
  as sent;
- ``maybe``: sent but no answer (client timeout, connection lost after sending) or the
  server's own publish timeout (503 / engine_unavailable "did not store ... within"): it may
  have been stored;
- ``refused``: nothing sent (connection refused, member not connected) or another refusal.

A message that did not get ``ok`` is retried as a new attempt on the next member. Every
``--kill-interval`` seconds the next member (1, 2, 3, 1, ...; seeds included) gets ``--signal``
(KILL or TERM), is restarted after ``--down-time`` seconds, and the cluster must be healthy again
before the next kill. Afterwards each subscriber's messages are compared with the ``ok`` attempts
of its subjects: lost, duplicated, out of order, (epoch, seq) different from the publish answer;
received ``maybe`` / ``refused`` attempts are counted separately.

Per kill: publish unavailability = the longest time without any ``ok`` answer from the kill to
``kill-interval`` later; the JetStream stream-leader election time when the victim led the
stream (kill until a survivor's /health names another leader). Per client and subject:
reconnect-to-recovered = from the client's ``SERVER_DOWN`` event to its ``DATA_SYNC`` event of
that subject.

Throughput (``--throughput``): for Guaranteed and Standard, a fresh cluster, the same
publisher unpaced (``--workers`` in flight) for ``--throughput-duration`` seconds over
``--subjects`` subjects and over one hot subject, once per transport of
``--throughput-transports``, through the first ``--throughput-members`` members; ok
publishes/s, CPU of the cluster and of the publisher, and the ratio Guaranteed / Standard.

Prints tables and JSON lines (``"bench": "failover" | "failover-throughput"``), appended to
``--json-out`` (default benchmarks/results/failover.jsonl). Results: docs/benchmarks.md; every
run: benchmarks/NOTES.md, "Failover (cluster)".
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import multiprocessing as mp
import platform
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
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
from integration.cluster import Cluster  # noqa: E402
from integration.pgtest import ServerProcess  # noqa: E402

from pushgrid.client import PushgridClient  # noqa: E402
from pushgrid.client.backoff import BackoffPolicy  # noqa: E402

console = Console(highlight=False)
app = typer.Typer(add_completion=False)

DEFAULT_JSON = ROOT / "benchmarks" / "results" / "failover.jsonl"
SERVER_TIMEOUT_MARK = "did not store the message within"


# --- pure helpers (tests/unit/test_failover_bench.py) -----------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100, nearest rank: the smallest value with at least q % of the
    values at or below it), None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def longest_gap(start: float, end: float, times: list[float]) -> float:
    """The longest interval in [start, end] without any of ``times`` (sorted or not)."""
    points = [start, *sorted(t for t in times if start <= t <= end), end]
    return max(b - a for a, b in itertools.pairwise(points))


@dataclass
class SubjectCheck:
    """One subscriber's messages of one subject against the publisher's answers."""

    expected: int = 0
    received: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    mismatched: int = 0  # received with another (epoch, seq) than the publish answer
    maybe_received: int = 0
    refused_received: int = 0
    unknown_received: int = 0
    snapshots: int = 0


def check_subject(
    acked: dict[str, tuple[str, int]],
    maybe: set[str],
    refused: set[str],
    received: list[tuple[str, str, int, str]],
) -> SubjectCheck:
    """Compare what one subscriber got for one subject with what the publisher was told.

    ``acked``: attempt id -> (epoch, seq) of the ``ok`` attempts of the subject; ``received``:
    (attempt id, epoch, seq, kind) in arrival order. Snapshots (kind ``snapshot``, sent after a
    resync) are counted apart: they repeat a message and are neither delivered nor duplicates.
    A message is out of order when its seq is not above the last one of the same epoch."""
    result = SubjectCheck(expected=len(acked))
    seen: set[str] = set()
    last: tuple[str, int] | None = None
    for attempt, epoch, seq, kind in received:
        if kind == "snapshot":
            result.snapshots += 1
            continue
        result.received += 1
        if attempt in seen:
            result.duplicated += 1
            continue
        seen.add(attempt)
        if last is not None and last[0] == epoch and seq <= last[1]:
            result.out_of_order += 1
        last = (epoch, seq)
        if attempt in acked:
            if acked[attempt] != (epoch, seq):
                result.mismatched += 1
        elif attempt in maybe:
            result.maybe_received += 1
        elif attempt in refused:
            result.refused_received += 1
        else:
            result.unknown_received += 1
    result.lost = sum(1 for attempt in acked if attempt not in seen)
    return result


def recovery_times(events: list[tuple[float, str, str | None, str | None]]) -> list[float]:
    """Seconds from a client's SERVER_DOWN to each subject's DATA_SYNC after it.

    ``events``: (time, status, subject, detail) of one client in order. The first SERVER_DOWN
    after the client was up starts the outage; each subject's first DATA_SYNC after it is one
    sample."""
    samples: list[float] = []
    down_at: float | None = None
    pending: set[str] = set()
    up = True
    for at, status, subject, _detail in events:
        if status == "server_down":
            if up:
                down_at, pending, up = at, set(), False
        elif status == "server_up":
            up = True
        elif status == "data_sync" and down_at is not None and subject not in pending:
            pending.add(str(subject))
            samples.append(at - down_at)
    return samples


# --- publisher ----------------------------------------------------------------------------------


@dataclass
class Attempt:
    message: int
    attempt: int
    subject: int
    member: int
    outcome: str  # ok | maybe | refused
    started: float
    done: float
    epoch: str = ""
    seq: int = 0
    detail: str = ""

    @property
    def id(self) -> str:
        return f"{self.message}.{self.attempt}"


@dataclass
class PublishLog:
    attempts: list[Attempt] = field(default_factory=list)
    due: dict[int, float] = field(default_factory=dict)
    given_up: int = 0

    def ok(self) -> list[Attempt]:
        return [a for a in self.attempts if a.outcome == "ok"]


class Publisher:
    """Publishes over the members in turn; a message is retried until ``ok``.

    ``transport``: ``http`` (POST /publish, one httpx client per member) or ``ws`` (one
    ``PushgridClient`` per member, that member only, publishes pipelined on its WebSocket)."""

    def __init__(
        self,
        members: list[ServerProcess],
        subjects: list[str],
        workers: int,
        timeout: float,
        transport: str = "http",
        give_up_after: float = 120.0,
    ) -> None:
        self.members = members
        self.subjects = subjects
        self.workers = workers
        self.timeout = timeout
        self.transport = transport
        self.give_up_after = give_up_after
        self.log = PublishLog()
        self._turn = itertools.count()
        self._down_until = [0.0] * len(members)
        self._clients = [
            httpx.AsyncClient(
                base_url=m.url,
                trust_env=False,
                timeout=timeout,
                limits=httpx.Limits(max_connections=workers, max_keepalive_connections=workers),
            )
            for m in members
        ]
        self._ws: list[PushgridClient] = []

    async def open(self) -> Publisher:
        if self.transport == "ws":
            fast = BackoffPolicy(base=0.2, quick_retries=50, jitter=0.2, cap=1.0)
            self._ws = [PushgridClient([m.address], backoff=fast, proxy=None) for m in self.members]
            for client in self._ws:
                await client.connect(timeout=30)
        return self

    async def close(self) -> None:
        for client in self._clients:
            await client.aclose()
        for ws in self._ws:
            await ws.close()

    async def run(self, count: int, rate: float, duration: float | None = None) -> float:
        """Publish messages 0..count-1 (rate 0 = unpaced; ``duration`` stops early).

        Returns the start time (monotonic)."""
        start = time.monotonic()
        numbers = iter(range(count))
        stop_at = start + duration if duration is not None else None

        async def worker() -> None:
            for n in numbers:
                due = start + n / rate if rate > 0 else time.monotonic()
                if stop_at is not None and due >= stop_at:
                    return
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                self.log.due[n] = due
                await self._publish(n)

        await asyncio.gather(*(worker() for _ in range(self.workers)))
        return start

    def _member(self) -> int:
        now = time.monotonic()
        for _ in range(len(self.members)):
            index = next(self._turn) % len(self.members)
            if self._down_until[index] <= now:
                return index
        return next(self._turn) % len(self.members)

    async def _publish(self, n: int) -> None:
        subject_index = n % len(self.subjects)
        first = time.monotonic()
        for attempt in itertools.count():
            member = self._member()
            result = await self._attempt(n, attempt, subject_index, member)
            self.log.attempts.append(result)
            if result.outcome == "ok":
                return
            if result.outcome == "refused" and "connect" in result.detail:
                self._down_until[member] = time.monotonic() + 1.0
            if time.monotonic() - first > self.give_up_after:
                self.log.given_up += 1
                return
            await asyncio.sleep(0.02)

    async def _attempt(self, n: int, attempt: int, subject: int, member: int) -> Attempt:
        record = Attempt(n, attempt, subject, member + 1, "refused", time.monotonic(), 0.0)
        if self.transport == "ws":
            await self._attempt_ws(record, member)
        else:
            await self._attempt_http(record, member)
        record.done = time.monotonic()
        return record

    async def _attempt_ws(self, record: Attempt, member: int) -> None:
        client = self._ws[member]
        if not client.connected:
            record.detail = "connect: not connected"
            return
        result = await client.publish(
            self.subjects[record.subject], record.id, timeout=self.timeout
        )
        if result.ok:
            record.outcome, record.epoch, record.seq = "ok", result.epoch or "", result.seq or 0
            return
        record.detail = result.reason or result.result.value
        if record.detail.startswith("not connected"):
            record.detail = "connect: " + record.detail
        elif not record.detail.startswith("engine_unavailable") or (
            SERVER_TIMEOUT_MARK in record.detail
        ):
            record.outcome = "maybe"  # no answer, connection lost, or the server's own timeout

    async def _attempt_http(self, record: Attempt, member: int) -> None:
        body = {"subject": self.subjects[record.subject], "content": record.id}
        try:
            response = await self._clients[member].post("/publish", json=body)
        except httpx.ConnectError as exc:
            record.detail = f"connect: {exc!r}"
        except httpx.HTTPError as exc:  # sent, answer lost or late: maybe stored
            record.outcome, record.detail = "maybe", repr(exc)
        else:
            if response.status_code == 200:
                data = response.json()
                record.outcome, record.epoch, record.seq = "ok", data["epoch"], data["seq"]
            else:
                record.detail = f"{response.status_code} {response.text[:200]}"
                if response.status_code == 503 and SERVER_TIMEOUT_MARK in response.text:
                    record.outcome = "maybe"


# --- subscribers (a separate process) -----------------------------------------------------------


@dataclass
class SubscriberPlan:
    addresses: list[str]
    subjects: list[str]
    clients: int
    result_path: str

    def client_subjects(self, k: int) -> list[int]:
        share = min(3, self.clients)
        return [s for s in range(len(self.subjects)) if s % share == k % share]

    def client_servers(self, k: int) -> list[str]:
        preferred = k % len(self.addresses)
        return [
            f"{100 if i == preferred else 1} {address}" for i, address in enumerate(self.addresses)
        ]


def subscriber_main(plan: SubscriberPlan, ready: Any, stop: Any, progress: Any) -> None:
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    asyncio.run(_subscribers(plan, ready, stop, progress))


async def _subscribers(plan: SubscriberPlan, ready: Any, stop: Any, progress: Any) -> None:
    from pushgrid.client.models import StatusEvent

    fast = BackoffPolicy(base=0.2, quick_retries=50, jitter=0.2, cap=1.0)
    messages: list[list[tuple[int, str, str, int, str]]] = [[] for _ in range(plan.clients)]
    events: list[list[tuple[float, str, str | None, str | None]]] = [
        [] for _ in range(plan.clients)
    ]
    index = {subject: i for i, subject in enumerate(plan.subjects)}

    def on_status(k: int) -> Any:
        async def record(event: StatusEvent) -> None:
            events[k].append((time.monotonic(), event.status.value, event.subject, event.detail))

        return record

    clients = [
        PushgridClient(plan.client_servers(k), on_status=on_status(k), backoff=fast, proxy=None)
        for k in range(plan.clients)
    ]

    async def read(k: int) -> None:
        async for message in clients[k].messages():
            messages[k].append(
                (index[message.subject], message.content, message.epoch, message.seq, message.type)
            )
            progress.value += 1

    readers = []
    for k, client in enumerate(clients):
        await client.connect(timeout=60)
        await client.subscribe([plan.subjects[s] for s in plan.client_subjects(k)])
        readers.append(asyncio.create_task(read(k)))
    async with asyncio.timeout(60):
        while not all(  # noqa: ASYNC110 - counting status events
            sum(1 for e in events[k] if e[1] == "subscribe_allow") >= len(plan.client_subjects(k))
            for k in range(plan.clients)
        ):
            await asyncio.sleep(0.1)
    ready.set()
    while not stop.is_set():  # noqa: ASYNC110 - a multiprocessing Event
        await asyncio.sleep(0.2)
    for client in clients:
        await client.close()
    for task in readers:
        task.cancel()
    Path(plan.result_path).write_text(  # noqa: ASYNC240 - the loop's last act
        json.dumps(
            {
                "subjects": [plan.client_subjects(k) for k in range(plan.clients)],
                "messages": messages,
                "events": events,
            }
        )
    )


# --- killer ------------------------------------------------------------------------------------


@dataclass
class Kill:
    member: int
    signal: str
    at: float
    was_leader: bool
    exited: float = 0.0
    elected: float | None = None
    restarted: float = 0.0
    healthy: float = 0.0


def stream_leader_in(jsz: dict[str, Any], stream: str = "PUSHGRID") -> str | None:
    """The leader of ``stream`` in a nats-server ``/jsz?streams=true`` answer, or None."""
    for account in jsz.get("account_details") or []:
        for detail in account.get("stream_detail") or []:
            if detail.get("name") == stream:
                leader = (detail.get("cluster") or {}).get("leader")
                return str(leader) if leader else None
    return None


async def stream_leader(http: httpx.AsyncClient, endpoints: list[str]) -> str | None:
    """The stream leader as the first answering member's nats-server reports it (its
    monitoring port is the member's port + 2, see server/cluster/topology.py)."""
    for endpoint in endpoints:
        host, _, port = endpoint.rpartition(":")
        url = f"http://{host}:{int(port) + 2}/jsz?streams=true"
        with contextlib.suppress(httpx.HTTPError, ValueError):
            leader = stream_leader_in((await http.get(url, timeout=1.0)).json())
            if leader:
                return leader
    return None


async def kill_loop(
    cluster: Cluster,
    sig: signal.Signals,
    interval: float,
    down_time: float,
    max_kills: int | None,
    done: asyncio.Event,
    kills: list[Kill],
    guaranteed: bool,
) -> None:
    """Every ``interval`` s: signal the next member, restart it, wait for a healthy cluster."""
    async with httpx.AsyncClient(trust_env=False) as http:
        await _kill_loop(
            cluster, sig, interval, down_time, max_kills, done, kills, guaranteed, http
        )


async def _kill_loop(
    cluster: Cluster,
    sig: signal.Signals,
    interval: float,
    down_time: float,
    max_kills: int | None,
    done: asyncio.Event,
    kills: list[Kill],
    guaranteed: bool,
    http: httpx.AsyncClient,
) -> None:
    next_at = time.monotonic() + interval
    for turn in itertools.count():
        if max_kills is not None and turn >= max_kills:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), max(0.0, next_at - time.monotonic()))
        if done.is_set():
            return
        index = turn % 3 + 1
        victim = cluster.member(index)
        others = [e for i, e in enumerate(cluster.endpoints[:3], start=1) if i != index]
        leader = await stream_leader(http, others) if guaranteed else None
        kill = Kill(index, sig.name, time.monotonic(), leader == f"pushgrid-m{index}")
        console.print(f"[bold]kill[/] m{index} with {sig.name} (stream leader: {leader})")
        election = (
            asyncio.create_task(_wait_election(http, others, leader, kill))
            if kill.was_leader
            else None
        )
        proc = victim.proc
        assert proc is not None
        proc.send_signal(sig)
        victim.returncodes.append(await asyncio.to_thread(proc.wait, 30.0))
        kill.exited = time.monotonic()
        await asyncio.sleep(down_time)
        await asyncio.to_thread(victim.start)
        kill.restarted = time.monotonic()
        if election is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(election, 30)
        await asyncio.to_thread(cluster.wait_healthy, 120.0)
        kill.healthy = time.monotonic()
        kills.append(kill)
        next_at = max(kill.at + interval, time.monotonic())


async def _wait_election(
    http: httpx.AsyncClient, others: list[str], old: str | None, kill: Kill
) -> None:
    while True:
        leader = await stream_leader(http, others)
        if leader is not None and leader != old:
            kill.elected = time.monotonic()
            return
        await asyncio.sleep(0.05)


# --- runs --------------------------------------------------------------------------------------


def start_cluster(tmp: Path, mode: str, publish_timeout: float) -> Cluster:
    cluster = Cluster(
        tmp, configured=3, mode=mode.capitalize(), ClusterPublishTimeout=publish_timeout
    )
    try:
        return cluster.start(1, 2, 3)
    except BaseException:
        cluster.kill_all()
        raise


@dataclass
class FailoverParams:
    messages: int
    rate: float
    subjects: int
    subscribers: int
    workers: int
    kill_interval: float
    down_time: float
    kills: int | None
    sig: signal.Signals
    mode: str
    timeout: float
    cluster_publish_timeout: float
    drain_timeout: float
    transport: str


async def _drive(
    cluster: Cluster, params: FailoverParams, subjects: list[str]
) -> tuple[PublishLog, list[Kill], float, float]:
    publisher = await Publisher(
        cluster.members[:3], subjects, params.workers, params.timeout, params.transport
    ).open()
    done = asyncio.Event()
    kills: list[Kill] = []
    killer = asyncio.create_task(
        kill_loop(
            cluster,
            params.sig,
            params.kill_interval,
            params.down_time,
            params.kills,
            done,
            kills,
            params.mode == "guaranteed",
        )
    )
    try:
        start = await publisher.run(params.messages, params.rate)
        end = time.monotonic()
        done.set()
        await killer  # a kill in progress finishes: its member is back before we compare
    finally:
        killer.cancel()
        await publisher.close()
    return publisher.log, kills, start, end


def run_failover(params: FailoverParams, tmp: Path) -> dict[str, Any]:
    run_id = secrets.token_hex(3)
    subjects = [f"/failover/{run_id}/s{s}" for s in range(params.subjects)]
    cluster = start_cluster(tmp / "failover", params.mode, params.cluster_publish_timeout)
    ctx = mp.get_context("spawn")
    ready, stop, progress = ctx.Event(), ctx.Event(), ctx.Value("q", 0, lock=False)
    plan = SubscriberPlan(
        [m.address for m in cluster.members[:3]],
        subjects,
        params.subscribers,
        str(tmp / "subscribers.json"),
    )
    proc = ctx.Process(target=subscriber_main, args=(plan, ready, stop, progress), daemon=True)
    proc.start()
    try:
        if not ready.wait(90):
            raise RuntimeError("subscribers not subscribed within 90 s")
        console.print(f"cluster up, {params.subscribers} subscribers ready; publishing")
        log, kills, start, end = asyncio.run(_drive(cluster, params, subjects))
        ok_by_subject = Counter(a.subject for a in log.ok())
        expected = sum(
            ok_by_subject[s] for k in range(params.subscribers) for s in plan.client_subjects(k)
        )
        _drain(progress, expected, params.drain_timeout)
        stop.set()
        proc.join(60)
        data = json.loads(Path(plan.result_path).read_text())
    finally:
        if proc.is_alive():
            proc.kill()
        cluster.kill_all()
    return summarize(params, log, kills, data, start, end)


def _drain(progress: Any, expected: int, timeout: float) -> None:
    """Wait until the subscribers hold ``expected`` messages, or nothing came for 5 s."""
    deadline = time.monotonic() + timeout
    last, still_since = -1, time.monotonic()
    while time.monotonic() < deadline and progress.value < expected:
        if progress.value != last:
            last, still_since = progress.value, time.monotonic()
        elif time.monotonic() - still_since > 5:
            return
        time.sleep(0.2)


def summarize(
    params: FailoverParams,
    log: PublishLog,
    kills: list[Kill],
    data: dict[str, Any],
    start: float,
    end: float,
) -> dict[str, Any]:
    acked: dict[int, dict[str, tuple[str, int]]] = defaultdict(dict)
    maybe: set[str] = set()
    refused: set[str] = set()
    for a in log.attempts:
        if a.outcome == "ok":
            acked[a.subject][a.id] = (a.epoch, a.seq)
        elif a.outcome == "maybe":
            maybe.add(a.id)
        else:
            refused.add(a.id)
    totals = SubjectCheck()
    for k, subject_list in enumerate(data["subjects"]):
        by_subject: dict[int, list[tuple[str, str, int, str]]] = defaultdict(list)
        for s, content, epoch, seq, kind in data["messages"][k]:
            by_subject[s].append((content, epoch, seq, kind))
        for s in subject_list:
            check = check_subject(acked[s], maybe, refused, by_subject[s])
            for name in vars(totals):
                setattr(totals, name, getattr(totals, name) + getattr(check, name))
    ok_times = [a.done for a in log.attempts if a.outcome == "ok"]
    per_kill: list[dict[str, Any]] = []
    for kill in kills:
        window_end = min(kill.at + params.kill_interval, end)
        per_kill.append(
            {
                "member": kill.member,
                "signal": kill.signal,
                "was_leader": kill.was_leader,
                "unavailable_s": round(longest_gap(kill.at, window_end, ok_times), 3),
                "election_s": round(kill.elected - kill.at, 3) if kill.elected else None,
                "exit_s": round(kill.exited - kill.at, 3),
                "healthy_s": round(kill.healthy - kill.at, 3),
            }
        )
    samples = [t for events in data["events"] for t in recovery_times(events)]
    statuses = Counter(
        (e[1], e[3]) for events in data["events"] for e in events if e[1].startswith("data_")
    )
    all_statuses = Counter(e[1] for events in data["events"] for e in events)
    errors = Counter(
        (e[3] or "")[:60] for events in data["events"] for e in events if e[1] == "error"
    )
    unavailable: list[float] = [k["unavailable_s"] for k in per_kill]
    outcomes = Counter(a.outcome for a in log.attempts)
    published = len({a.message for a in log.attempts if a.outcome == "ok"})
    return {
        "bench": "failover",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(),
        "cpus": _cpus(),
        "command": " ".join(sys.argv),
        "mode": params.mode,
        "signal": params.sig.name,
        "rate": params.rate,
        "subjects": params.subjects,
        "subscribers": params.subscribers,
        "kill_interval_s": params.kill_interval,
        "messages": params.messages,
        "published_ok": published,
        "given_up": log.given_up,
        "duration_s": round(end - start, 1),
        "achieved_rate": round(published / (end - start), 1),
        "attempts": dict(outcomes),
        "expected_deliveries": totals.expected,
        "received": totals.received,
        "lost": totals.lost,
        "duplicated": totals.duplicated,
        "out_of_order": totals.out_of_order,
        "mismatched": totals.mismatched,
        "maybe": outcomes.get("maybe", 0),
        "maybe_received": totals.maybe_received,
        "refused_received": totals.refused_received,
        "unknown_received": totals.unknown_received,
        "snapshots": totals.snapshots,
        "data_events": {f"{s}:{d}": n for (s, d), n in sorted(statuses.items())},
        "client_events": dict(sorted(all_statuses.items())),
        "client_errors": dict(errors.most_common(5)),
        "recovery_over_5s": sum(1 for t in samples if t > 5),
        "kills": per_kill,
        "unavailable_p50_s": percentile(unavailable, 50),
        "unavailable_max_s": max(unavailable) if unavailable else None,
        "recovery_samples": len(samples),
        "recovery_p50_s": _round(percentile(samples, 50)),
        "recovery_p99_s": _round(percentile(samples, 99)),
        "publish_latency_p99_s": _round(_latency_p99(log)),
    }


def _latency_p99(log: PublishLog) -> float | None:
    return percentile([a.done - log.due[a.message] for a in log.ok()], 99)


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


def cluster_cpu_seconds(cluster: Cluster) -> float:
    """CPU time (user + system) of the members and their nats-server children so far."""
    total = 0.0
    for member in cluster.members:
        if member.proc is None or member.proc.poll() is not None:
            continue
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(member.proc.pid)
            for p in [proc, *proc.children(recursive=True)]:
                times = p.cpu_times()
                total += times.user + times.system
    return total


def run_throughput(
    mode: str,
    tmp: Path,
    runs: list[tuple[str, int]],
    duration: float,
    workers: int,
    timeout: float,
    through: int = 3,
) -> list[dict[str, Any]]:
    """Unpaced publishes on a fresh cluster of ``mode``: ok publishes/s for each (transport,
    subject count) of ``runs``, one after the other on that cluster, fresh subjects each."""
    cluster = start_cluster(tmp / f"tput-{mode}", mode, timeout)
    try:
        return [
            asyncio.run(
                _throughput_once(
                    cluster.members[:through],
                    cluster,
                    mode,
                    transport,
                    n,
                    duration,
                    workers,
                    timeout,
                )
            )
            for transport, n in runs
        ]
    finally:
        cluster.kill_all()


async def _throughput_once(
    targets: list[ServerProcess],
    cluster: Cluster,
    mode: str,
    transport: str,
    subjects: int,
    duration: float,
    workers: int,
    publish_timeout: float,
) -> dict[str, Any]:
    run_id = secrets.token_hex(3)
    names = [f"/tput/{run_id}/s{s}" for s in range(subjects)]
    publisher = await Publisher(
        cluster.members[:3], names, workers, publish_timeout, transport
    ).open()
    try:
        await publisher.run(2_000, 0, duration=1.0)  # warm-up: connections, subject heads
        publisher.log = PublishLog()
        cpu_cluster, cpu_self = cluster_cpu_seconds(cluster), time.process_time()
        start = await publisher.run(10_000_000, 0, duration=duration)
        end = time.monotonic()
        cpu_cluster = cluster_cpu_seconds(cluster) - cpu_cluster
        cpu_self = time.process_time() - cpu_self
    finally:
        await publisher.close()
    ok = publisher.log.ok()
    elapsed = end - start
    result = {
        "bench": "failover-throughput",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(sys.argv),
        "mode": mode,
        "transport": transport,
        "subjects": subjects,
        "workers": workers,
        "through_members": len(targets),
        "duration_s": round(elapsed, 2),
        "ok": len(ok),
        "not_ok": len(publisher.log.attempts) - len(ok),
        "ok_per_s": round(len(ok) / elapsed, 1),
        "publish_latency_p50_s": _round(percentile([a.done - a.started for a in ok], 50)),
        "cluster_cpu_per_s": round(cpu_cluster / elapsed, 2),
        "publisher_cpu_per_s": round(cpu_self / elapsed, 2),
    }
    console.print(
        f"{mode} {transport} x {subjects} subjects: {result['ok_per_s']} ok/s "
        f"(cluster CPU {result['cluster_cpu_per_s']}, publisher CPU "
        f"{result['publisher_cpu_per_s']} cores)"
    )
    return result


# --- output ------------------------------------------------------------------------------------


def emit(obj: dict[str, Any], json_out: Path | None) -> None:
    line = json.dumps(obj, separators=(",", ":"))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        with open(json_out, "a") as f:
            f.write(line + "\n")
    print(line, flush=True)


def print_failover(r: dict[str, Any]) -> None:
    table = Table(title=f"Failover ({r['mode']}, {r['signal']}, {r['rate']:g} msg/s)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("messages published ok", r["published_ok"]),
        ("deliveries expected / received", f"{r['expected_deliveries']} / {r['received']}"),
        (
            "lost / duplicated / out of order",
            f"{r['lost']} / {r['duplicated']} / {r['out_of_order']}",
        ),
        ("(epoch, seq) differing from the publish answer", r["mismatched"]),
        ("maybe attempts (received)", f"{r['maybe']} ({r['maybe_received']})"),
        (
            "refused attempts received / unknown received",
            f"{r['refused_received']} / {r['unknown_received']}",
        ),
        ("kills", len(r["kills"])),
        (
            "publish unavailability p50 / max (s)",
            f"{r['unavailable_p50_s']} / {r['unavailable_max_s']}",
        ),
        (
            "reconnect-to-recovered p50 / p99 (s)",
            f"{r['recovery_p50_s']} / {r['recovery_p99_s']} (n={r['recovery_samples']})",
        ),
        ("client data events", ", ".join(f"{k}={v}" for k, v in r["data_events"].items())),
        ("client events", ", ".join(f"{k}={v}" for k, v in r["client_events"].items())),
        ("achieved rate (msg/s)", r["achieved_rate"]),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)
    kills = Table(title="Per kill")
    for column in ("member", "signal", "leader", "unavailable s", "election s", "healthy after s"):
        kills.add_column(column, justify="right")
    for k in r["kills"]:
        kills.add_row(
            f"m{k['member']}",
            k["signal"],
            "yes" if k["was_leader"] else "no",
            str(k["unavailable_s"]),
            str(k["election_s"]),
            str(k["healthy_s"]),
        )
    console.print(kills)


def print_throughput(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = Table(title="Publish throughput (unpaced, ok publishes/s)")
    for column in ("transport", "subjects", "Guaranteed", "Standard", "Guaranteed / Standard"):
        table.add_column(column, justify="right")
    ratios = []
    keys = sorted({(r["transport"], r["subjects"]) for r in results}, key=lambda k: (k[0], -k[1]))
    for transport, subjects in keys:
        by_mode = {
            r["mode"]: r["ok_per_s"]
            for r in results
            if (r["transport"], r["subjects"]) == (transport, subjects)
        }
        g, s = by_mode.get("guaranteed"), by_mode.get("standard")
        ratio = round(g / s, 3) if g and s else None
        ratios.append(
            {
                "bench": "failover-throughput-ratio",
                "transport": transport,
                "subjects": subjects,
                "ratio": ratio,
                "guaranteed_ok_per_s": g,
                "standard_ok_per_s": s,
            }
        )
        table.add_row(transport, str(subjects), str(g), str(s), str(ratio))
    console.print(table)
    return ratios


# --- CLI ---------------------------------------------------------------------------------------


@app.command()
def main(
    messages: Annotated[int, typer.Option(min=1, help="messages to publish")] = 100_000,
    rate: Annotated[float, typer.Option(min=1, help="publishes/s in total")] = 300,
    subjects: Annotated[int, typer.Option(min=1)] = 100,
    subscribers: Annotated[int, typer.Option(min=1, help="subscriber clients")] = 6,
    workers: Annotated[int, typer.Option(min=1, help="publishes in flight at most")] = 64,
    kill_interval: Annotated[float, typer.Option(min=1, help="seconds between kills")] = 20,
    kills: Annotated[int | None, typer.Option(help="at most this many kills")] = None,
    down_time: Annotated[float, typer.Option(min=0, help="seconds a member stays down")] = 1.0,
    sig: Annotated[str, typer.Option("--signal", help="KILL or TERM")] = "KILL",
    mode: Annotated[str, typer.Option(help="guaranteed or standard (failover run)")] = (
        "guaranteed"
    ),
    transport: Annotated[str, typer.Option(help="failover publisher: ws or http")] = "ws",
    timeout: Annotated[float, typer.Option(help="client-side publish timeout, s")] = 20.0,
    cluster_publish_timeout: Annotated[float, typer.Option(help="ClusterPublishTimeout")] = 15.0,
    drain_timeout: Annotated[float, typer.Option(help="s to wait for the last messages")] = 90,
    failover: Annotated[bool, typer.Option(help="run the failover part")] = True,
    throughput: Annotated[bool, typer.Option(help="run the throughput part")] = True,
    throughput_duration: Annotated[float, typer.Option(min=1)] = 15.0,
    throughput_members: Annotated[
        int, typer.Option(min=1, max=3, help="throughput: publish through the first N members")
    ] = 3,
    throughput_transports: Annotated[str, typer.Option(help="comma-separated: ws, http")] = (
        "ws,http"
    ),
    json_out: Annotated[Path | None, typer.Option()] = DEFAULT_JSON,
    keep: Annotated[bool, typer.Option(help="keep the members' directories and logs")] = False,
) -> None:
    """Failover benchmark of a 3-member cluster; see the module docstring."""
    mode = mode.lower()
    if transport not in ("http", "ws") or not set(throughput_transports.split(",")) <= {
        "http",
        "ws",
    }:
        raise typer.BadParameter("transports: http or ws")
    if mode not in ("guaranteed", "standard"):
        raise typer.BadParameter("--mode: guaranteed or standard")
    try:
        signum = signal.Signals["SIG" + sig.upper().removeprefix("SIG")]
    except KeyError:
        raise typer.BadParameter("--signal: KILL or TERM") from None
    tmp = Path(tempfile.mkdtemp(prefix="pushgrid-failover-"))
    console.print(f"work directory: {tmp}")
    try:
        if failover:
            params = FailoverParams(
                messages,
                rate,
                subjects,
                subscribers,
                workers,
                kill_interval,
                down_time,
                kills,
                signum,
                mode,
                timeout,
                cluster_publish_timeout,
                drain_timeout,
                transport,
            )
            result = run_failover(params, tmp)
            print_failover(result)
            emit(result, json_out)
        if throughput:
            runs = [
                (t.strip(), n)
                for t in throughput_transports.split(",")
                for n in dict.fromkeys((subjects, 1))
            ]
            results = []
            for tput_mode in ("guaranteed", "standard"):
                for r in run_throughput(
                    tput_mode,
                    tmp,
                    runs,
                    throughput_duration,
                    workers,
                    cluster_publish_timeout,
                    throughput_members,
                ):
                    emit(r, json_out)
                    results.append(r)
            for ratio in print_throughput(results):
                emit(ratio, json_out)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    app()
