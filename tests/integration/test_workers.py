"""Workers = 2: one server on two real processes behind one port (ADR 044, docs/workers.md).

Which process a connection landed on is read from the kernel (psutil: the worker whose socket
has the client's port as its remote end); a worker's index from its process title
(``... worker 1/2``). Clients are opened until both workers hold some.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from websockets.asyncio.client import connect as ws_connect

from pushgrid.server.workers.ownership import owner_of

from .pgtest import (
    ServerProcess,
    SseStream,
    WsClient,
    free_port,
    http_publish,
    run_cli,
    self_signed_certificate,
    write_conf,
)

Connect = Callable[..., Awaitable[WsClient]]
DEADLINE = 60.0  # seconds: generous, the machine is loaded


def workers_of(srv: ServerProcess) -> dict[int, int]:
    """worker index -> pid, from the supervisor's children's titles."""
    assert srv.proc is not None
    out: dict[int, int] = {}
    for child in psutil.Process(srv.proc.pid).children():
        try:
            title = " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
        if " worker " in title:
            out[int(title.rsplit(" worker ", 1)[1].split("/")[0])] = child.pid
    return out


def worker_holding(srv: ServerProcess, client: WsClient) -> int | None:
    """The index of the worker that holds ``client``'s connection."""
    port = client.ws.local_address[1]
    for index, pid in workers_of(srv).items():
        try:
            connections = psutil.Process(pid).net_connections("tcp")
        except psutil.NoSuchProcess:
            continue
        for conn in connections:
            if (
                conn.laddr
                and conn.laddr.port == srv.port
                and conn.raddr
                and conn.raddr.port == port
            ):
                return index
    return None


async def on_each_worker(srv: ServerProcess, connect: Connect) -> dict[int, WsClient]:
    """One client per worker (opened until the kernel's spread gave both some)."""
    found: dict[int, WsClient] = {}
    for _ in range(80):
        client = await connect(srv)
        index = worker_holding(srv, client)
        if index is not None and index not in found:
            found[index] = client
        else:
            await client.close()
        if len(found) == 2:
            return found
    raise AssertionError(f"80 connections all landed on workers {sorted(found)}")


async def on_worker(index: int, srv: ServerProcess, connect: Connect) -> WsClient:
    """A client that landed on worker ``index``."""
    for _ in range(80):
        client = await connect(srv)
        if worker_holding(srv, client) == index:
            return client
        await client.close()
    raise AssertionError(f"80 connections, none on worker {index}")


async def leave_and_recover(
    srv: ServerProcess,
    connect: Connect,
    s: str,
    subscriber: WsClient,
    publisher: WsClient,
    back_on: int,
    last: int,
) -> WsClient:
    """``subscriber`` takes 3 messages of ``s`` and leaves; the publisher publishes up to seq
    ``last``; a client on worker ``back_on`` recovers the missed ones, without a resync."""
    epoch = (await subscriber.subscribe(s))["epoch"]
    for i in range(1, 4):
        await publisher.publish_ok(s, f"m{i}")
    seen = (await subscriber.messages(3, s))[-1]["seq"]
    await subscriber.close()
    for i in range(4, last + 1):
        await publisher.publish_ok(s, f"m{i}")
    again = await on_worker(back_on, srv, connect)
    subscribed, recovered = await again.subscribe_all(s, recover={"epoch": epoch, "seq": seen})
    assert (subscribed["recovery"], subscribed["epoch"], subscribed["seq"]) == (
        "recovered",
        epoch,
        last,
    )
    assert [(f["kind"], f["seq"]) for f in recovered] == [
        ("recovered", i) for i in range(4, last + 1)
    ]
    return again


def owned_by(index: int, subject: Callable[[str], str]) -> str:
    """A fresh subject that worker ``index`` (of 2) owns."""
    while True:
        s = subject("s")
        if owner_of(s, 2) == index:
            return s


async def wait_for(what: str, check: Callable[[], Any], within: float = DEADLINE) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {what} within {within} s")


@pytest.fixture(scope="module")
def two_workers(
    module_server_factory: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory
) -> ServerProcess:
    """One Workers = 2 server (with a TLS listener) shared by the module's tests: each uses
    subjects of its own; the tests that kill or stop a worker come last."""
    cert, key = self_signed_certificate(tmp_path_factory.mktemp("w2-tls"))
    return module_server_factory(
        Workers=2,
        ServerName="w2",
        ListenEncrypted=f"127.0.0.1:{free_port()}",
        TLSCertificate=cert,
        TLSKey=key,
    )


@pytest.mark.parametrize("owner", [0, 1])
async def test_one_numbering_publish_on_one_receive_on_the_other(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str], owner: int
) -> None:
    clients = await on_each_worker(two_workers, connect)
    s = owned_by(owner, subject)
    publisher, subscriber = clients[0], clients[1]
    subscribed = await subscriber.subscribe(s)
    assert subscribed.get("status") == "allow", subscribed
    epoch = subscribed["epoch"]
    results = [await publisher.publish_ok(s, f"m{i}", {"i": str(i)}) for i in range(1, 6)]
    assert [(r["epoch"], r["seq"]) for r in results] == [(epoch, i) for i in range(1, 6)]
    got = await subscriber.messages(5, s)
    assert [(m["epoch"], m["seq"], m["content"]) for m in got] == [
        (epoch, i, f"m{i}") for i in range(1, 6)
    ]
    # the other way round, same numbering
    _subscribed, frames = await publisher.subscribe_all(s)
    assert [(f["kind"], f["seq"]) for f in frames] == [("snapshot", 5)]
    result = await subscriber.publish_ok(s, "m6")
    assert (result["epoch"], result["seq"]) == (epoch, 6)
    assert [m["seq"] for m in await publisher.messages(1, s)] == [6]
    assert [m["seq"] for m in await subscriber.messages(1, s)] == [6]
    # a snapshot read on either worker is the owner's
    for client in clients.values():
        _subscribed, frames = await client.subscribe_all(owned_by(owner, subject))
        assert frames == []
    for index, fresh in (await on_each_worker(two_workers, connect)).items():
        _sub, frames = await fresh.subscribe_all(s)
        assert [(f["kind"], f["epoch"], f["seq"], f["content"]) for f in frames] == [
            ("snapshot", epoch, 6, "m6")
        ], index


@pytest.mark.parametrize("owner", [0, 1])
async def test_reconnect_to_the_other_worker_recovers_without_resync(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str], owner: int
) -> None:
    clients = await on_each_worker(two_workers, connect)
    s = owned_by(owner, subject)
    publisher = clients[0]
    # the subscriber comes back on worker 0 (the publisher's): another process
    again = await leave_and_recover(two_workers, connect, s, clients[1], publisher, 0, 23)
    await publisher.publish_ok(s, "m24")
    assert [(m["kind"], m["seq"]) for m in await again.messages(1, s)] == [("update", 24)]


async def test_http_publish_and_msg_id_reach_both_workers_once(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str]
) -> None:
    """POST /publish lands on either worker; the owner numbers it and drops a repeated
    msg_id whichever worker the repeat lands on."""
    clients = await on_each_worker(two_workers, connect)
    subjects = [owned_by(0, subject), owned_by(1, subject)]
    for s in subjects:
        for client in clients.values():
            subscribed = await client.subscribe(s)
            assert subscribed.get("status") == "allow", subscribed
    for s in subjects:
        answers = [
            (await http_publish(two_workers, s, "once", msg_id="k1")).json() for _ in range(6)
        ]
        assert {(a["epoch"], a["seq"]) for a in answers} == {(answers[0]["epoch"], 1)}, answers
        for client in clients.values():
            got = await client.messages(1, s)
            assert [(m["seq"], m["content"]) for m in got] == [(1, "once")]
    for client in clients.values():
        assert await client.sync() == [], "a repeated msg_id was delivered again"


def test_bad_workers_is_a_clear_error(tmp_path: Path) -> None:
    """The real binary exits 2 naming the key (every bad value: tests/unit/test_workers_cli.py,
    in process)."""
    conf = tmp_path / "pushgrid.conf"
    write_conf(conf, {"Listen": "127.0.0.1:0", "Workers": "0"})
    result = run_cli("server", "--config", str(conf), env={"PUSHGRID_WORKERS": "0"})
    assert result.returncode == 2, result.stderr
    assert "Workers must be at least 1" in result.stderr


def _get(srv: ServerProcess, path: str) -> httpx.Response:
    with httpx.Client(trust_env=False, timeout=10.0) as http:
        return http.get(f"{srv.monitor_url}{path}")


def _stats(srv: ServerProcess) -> dict[str, Any]:
    document: dict[str, Any] = _get(srv, "/stats?format=json").json()
    return document


def linked(srv: ServerProcess, index: int) -> bool | None:
    """Worker ``index``'s ``linked`` in /stats (worker 0's view of the server's processes);
    None before its first report."""
    rows: list[dict[str, Any]] = _stats(srv).get("workers", [])
    return next((bool(row["linked"]) for row in rows if row["index"] == index), None)


async def quiet_totals(srv: ServerProcess) -> tuple[int, int]:
    """(messages in, messages out) once two reads a report period apart agree: the other
    worker's counters reach worker 0 once a second, earlier tests' traffic included."""
    previous = None
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        totals = _stats(srv)["totals"]
        now = (totals["messages_in_total"], totals["messages_out_total"])
        if now == previous:
            return now
        previous = now
        await asyncio.sleep(1.5)
    raise AssertionError(f"the totals did not settle within {DEADLINE} s")


async def test_the_monitoring_port_counts_the_whole_server_once(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str]
) -> None:
    clients = await on_each_worker(two_workers, connect)
    s = owned_by(1, subject)
    for client in clients.values():
        subscribed = await client.subscribe(s)
        assert subscribed.get("status") == "allow", subscribed
    base_in, base_out = await quiet_totals(two_workers)
    for i in range(7):
        await clients[0].publish_ok(s, f"m{i}")
    for client in clients.values():
        assert len(await client.messages(7, s)) == 7

    def settled() -> dict[str, Any] | None:
        document = _stats(two_workers)
        totals, gauges = document["totals"], document["gauges"]
        workers = document.get("workers", [])
        if (
            totals["messages_in_total"] == base_in + 7
            and totals["messages_out_total"] == base_out + 14
            and gauges["sessions"] == 2
            and gauges["subscriptions"] == 2
            and gauges["subjects"] >= 1  # and the meta-subjects
            and [w["sessions"] for w in workers] == [1, 1]
        ):
            return document
        return None

    document = await wait_for("the server's totals on the monitoring port", settled)
    pids = workers_of(two_workers)
    assert [(w["index"], w["pid"]) for w in document["workers"]] == [(0, pids[0]), (1, pids[1])]
    assert all(w["rss_bytes"] > 1 << 20 and w["open_files"] > 0 for w in document["workers"])
    metrics = _get(two_workers, "/metrics").text
    assert f"pushgrid_messages_sent_total {base_out + 14}.0" in metrics
    assert f'pushgrid_worker_sessions{{pid="{pids[1]}",worker="1"}} 1.0' in metrics


async def test_tls_listener_is_served_by_every_worker(two_workers: ServerProcess) -> None:
    port = int(two_workers.settings["ListenEncrypted"].rsplit(":", 1)[1])
    context = ssl.create_default_context(cafile=str(two_workers.settings["TLSCertificate"]))
    seen: set[int] = set()
    for _ in range(60):
        async with ws_connect(
            f"wss://127.0.0.1:{port}/ws", ssl=context, open_timeout=30, compression=None
        ) as ws:
            assert json.loads(await ws.recv())["type"] == "welcome"
            local = ws.local_address[1]
            for index, pid in workers_of(two_workers).items():
                for conn in psutil.Process(pid).net_connections("tcp"):
                    if conn.laddr.port == port and conn.raddr and conn.raddr.port == local:
                        seen.add(index)
        if seen == {0, 1}:
            break
    assert seen == {0, 1}


async def test_sse_last_event_id_recovers_across_workers(
    two_workers: ServerProcess, subject: Callable[[str], str]
) -> None:
    """SSE streams land on either worker; each subject has a local and a remote owner for any
    stream, and Last-Event-ID recovers both exactly, whichever worker the next stream is on."""
    a, b = owned_by(0, subject), owned_by(1, subject)
    for s in (a, b):
        assert (await http_publish(two_workers, s, f"{s}-0")).json()["result"] == "ok"
    first = await SseStream(two_workers, [a, b]).open()
    try:
        await first.expect("message", subject=b, kind="snapshot")
        last_id = first.last_event_id
        assert last_id is not None
    finally:
        await first.close()
    missed = [(await http_publish(two_workers, a, f"m{i}")).json() for i in range(5)]
    missed += [(await http_publish(two_workers, b, f"n{i}")).json() for i in range(5)]
    for _ in range(4):  # new connections: the kernel spreads them over both workers
        again = await SseStream(two_workers, [a, b], headers={"Last-Event-ID": last_id}).open()
        try:
            frames = [(await again.next()).data for _ in range(1 + 2 * 6)]
        finally:
            await again.close()
        subscribed = [f for f in frames if f["type"] == "subscribed"]
        assert [(f["subject"], f["recovery"]) for f in subscribed] == [
            (a, "recovered"),
            (b, "recovered"),
        ]
        recovered = [(f["subject"], f["content"]) for f in frames if f["type"] == "message"]
        assert recovered == [(a, f"m{i}") for i in range(5)] + [(b, f"n{i}") for i in range(5)]
        assert {f["epoch"] for f in frames if f.get("subject") == a} == {missed[0]["epoch"]}


async def test_delivery_reports_of_clients_on_every_worker_reach_the_views(
    two_workers: ServerProcess, connect: Connect
) -> None:
    """A client's delivery report goes to the worker holding its connection; worker 0 serves
    the views: the other worker's reports reach them (/stats, /metrics), each counted once."""
    clients = await on_each_worker(two_workers, connect)
    base = _stats(two_workers)["delivery"]
    for i, client in enumerate(clients.values(), start=1):  # 2 reports, 3 latencies
        await client.send({"op": "report", "interval": 5, "entries": [{"latency": [[30, i]]}]})

    def counted() -> dict[str, Any] | None:
        delivery: dict[str, Any] = _stats(two_workers)["delivery"]
        reported = delivery["reports"] >= base["reports"] + 2
        latencies = delivery["latency"]["count"] >= base["latency"]["count"] + 3
        return delivery if reported and latencies else None  # a second is sent once it ended

    delivery = await wait_for("both workers' reports in /stats", counted)
    assert delivery["reports"] == base["reports"] + 2
    assert delivery["latency"]["count"] == base["latency"]["count"] + 3
    metrics = _get(two_workers, "/metrics").text
    assert f"pushgrid_delivery_reports_total {base['reports'] + 2}.0" in metrics


async def test_field_deltas_of_a_subject_owned_by_the_other_worker(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str]
) -> None:
    """A delta subscriber on worker 0 of a subject worker 1 owns and publishes: the forwarded
    messages go through worker 0's delta table like local ones (the first whole, then only the
    fields that changed)."""
    clients = await on_each_worker(two_workers, connect)
    s = owned_by(1, subject)
    fields = {"f1": "a", "f2": "b", "f3": "c"}
    await clients[1].publish_ok(s, "0", fields)
    wire = clients[0]
    request_id = wire.next_id()
    await wire.send(
        {"op": "subscribe", "id": request_id, "subjects": [{"subject": s, "delta": True}]}
    )
    subscribed = await wire.expect("subscribed", id=request_id)
    assert subscribed["status"] == "allow", subscribed
    records = [{**fields, "f1": str(i), "f2": "x" if i % 2 else "y"} for i in range(4)]
    for i, record in enumerate(records):
        await clients[1].publish_ok(s, str(i), record)
    frames = await wire.messages(5, s)
    assert frames[0]["kind"] == "snapshot"
    assert [f["fields"] for f in frames[1:]] == [
        records[0],  # the first live message is whole
        {"f1": "1", "f2": "x"},
        {"f1": "2", "f2": "y"},
        {"f1": "3", "f2": "x"},
    ]


async def test_max_subjects_is_the_server_s_not_each_worker_s(
    server_factory: Callable[..., ServerProcess], subject: Callable[[str], str]
) -> None:
    """MaxSubjects = 4 with two workers: the server holds 4 subjects (2 per owner), not 4 per
    owner; the refusal names the key and the worker's share."""
    srv = server_factory(
        Workers=2,
        MaxSubjects=4,
        MaxRetainedBytes=100_000,
        MetaSubjectInterval=0,
        **{"Canary.Enabled": False},  # its subject would hold one of the 4
    )
    fresh = [owned_by(0, subject) for _ in range(4)] + [owned_by(1, subject) for _ in range(4)]
    answers = [(await http_publish(srv, s, "x")) for s in fresh]
    accepted = [s for s, a in zip(fresh, answers, strict=True) if a.status_code == 200]
    assert sorted(owner_of(s, 2) for s in accepted) == [0, 0, 1, 1], [a.text for a in answers]
    refused = [a.json() for a in answers if a.status_code != 200]
    assert len(refused) == 4
    assert all("MaxSubjects" in r["detail"] and "share" in r["detail"] for r in refused), refused
    await wait_for("4 subjects", lambda: _stats(srv)["gauges"]["subjects"] == 4)


# -- the tests that kill or stop a worker of the shared server: last ----------------------


async def test_a_killed_worker_is_restarted_and_its_clients_recover(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str]
) -> None:
    clients = await on_each_worker(two_workers, connect)
    s = owned_by(0, subject)  # the survivor owns it: its numbering outlives worker 1
    victim = clients[1]
    epoch = (await victim.subscribe(s))["epoch"]
    await clients[0].publish_ok(s, "before")
    last = (await victim.messages(1, s))[0]["seq"]
    old_pid = workers_of(two_workers)[1]
    os.kill(old_pid, signal.SIGKILL)
    await victim.wait_closed()
    for i in range(3):
        await clients[0].publish_ok(s, f"during{i}")
    log = await wait_for(
        "restart WARNING",
        lambda: (
            f"WARNING pushgrid.server.workers.supervisor: worker 1 (pid {old_pid}) "
            "killed by signal SIGKILL: restarting it" in two_workers.log()
        ),
    )
    assert log
    new_pid = await wait_for(
        "a new worker 1",
        lambda: (
            workers_of(two_workers).get(1) not in (None, old_pid) and workers_of(two_workers)[1]
        ),
    )
    assert new_pid != old_pid
    # the victim's client reconnects (wherever the kernel puts it) and recovers
    back = await connect(two_workers)
    subscribed, recovered = await back.subscribe_all(s, recover={"epoch": epoch, "seq": last})
    assert subscribed["recovery"] == "recovered"
    assert [f["content"] for f in recovered] == [f"during{i}" for i in range(3)]
    # the restarted worker serves again: both workers take clients and publishes
    fresh = await on_each_worker(two_workers, connect)
    s1 = owned_by(1, subject)
    sub = fresh[0]
    await sub.subscribe(s1)
    result = await fresh[1].publish_ok(s1, "after")
    assert result["seq"] == 1
    assert [m["content"] for m in await sub.messages(1, s1)] == ["after"]


async def test_a_stopped_worker_is_reported(two_workers: ServerProcess, connect: Connect) -> None:
    await on_each_worker(two_workers, connect)  # both are up and serving
    pid = workers_of(two_workers)[1]
    os.kill(pid, signal.SIGSTOP)
    try:
        await wait_for(
            "stall WARNING",
            lambda: f"worker 1 (pid {pid}) has not answered for" in two_workers.log(),
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    await wait_for(
        "answers again", lambda: f"worker 1 (pid {pid}) answers again" in two_workers.log()
    )
    assert workers_of(two_workers)[1] == pid  # detected and shown, not killed

    def lag_shown() -> dict[str, Any] | None:  # its loop was stopped for 5 s and more
        row = next(r for r in _stats(two_workers)["workers"] if r["index"] == 1)
        return row if (row["loop_lag_max_seconds"] or 0) >= 4.0 else None

    row = await wait_for("worker 1's loop lag in /stats", lag_shown)
    assert row["pid"] == pid
    assert (
        f'pushgrid_worker_loop_lag_max_seconds{{pid="{pid}",worker="1"}}'
        in _get(two_workers, "/metrics").text
    )


async def test_questions_for_a_restarting_owner_wait_for_it(
    two_workers: ServerProcess, connect: Connect, subject: Callable[[str], str]
) -> None:
    """While worker 1 is dead (its restart held back by stopping the supervisor), a subscribe
    and a publish on worker 0 for a subject worker 1 owns wait for it instead of failing; once
    it is back the subscription is in place on it and the publish is applied once."""
    clients = await on_each_worker(two_workers, connect)
    publisher = await on_worker(0, two_workers, connect)
    s = owned_by(1, subject)
    assert two_workers.proc is not None
    supervisor, victim = two_workers.proc.pid, workers_of(two_workers)[1]
    await wait_for("worker 1 shown", lambda: linked(two_workers, 1))
    os.kill(supervisor, signal.SIGSTOP)
    try:
        os.kill(victim, signal.SIGKILL)
        await clients[1].wait_closed()
        # asked at once: the subscribe may meet the link still up, then lose it before the answer
        subscribing = asyncio.create_task(clients[0].subscribe(s, timeout=DEADLINE))
        await wait_for("worker 1 shown down", lambda: linked(two_workers, 1) is False)
        publishing = asyncio.create_task(publisher.publish(s, "held", timeout=DEADLINE))
        await asyncio.sleep(1.0)
        # nothing can answer for the subject now: no error either
        assert not subscribing.done(), subscribing.result()
        assert not publishing.done(), publishing.result()
    finally:
        os.kill(supervisor, signal.SIGCONT)
    subscribed, published = await subscribing, await publishing
    assert subscribed.get("status") == "allow", subscribed
    assert (published.get("result"), published.get("seq")) == ("ok", 1), published
    got = await clients[0].messages(1, s, timeout=DEADLINE)
    assert [(m["seq"], m["content"]) for m in got] == [(1, "held")]
    assert await clients[0].sync() == []
    assert workers_of(two_workers)[1] != victim
    await wait_for("worker 1 shown up", lambda: linked(two_workers, 1))
