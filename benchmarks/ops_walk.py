"""Operator walk-through: real load on a running ``make cluster``, a member killed, every view
compared with the load generator's own counts.

Run it against the cluster ``make cluster`` starts (3 members, monitoring ports 8900-8902, the
admin API on 8080) with an admin API token::

    .venv/bin/python benchmarks/ops_walk.py --token pgt_... [--kill m3]

It connects ``--subscribers`` WebSocket clients spread over the members (client k subscribes to
subject k mod ``--subjects`` under ``/Stocks/NYSE/``), watches the pattern ``/Stocks/NYSE/*``,
publishes through one member at ``--rate`` messages per second with Zipf-distributed subjects
(guaranteed delivery), and then:

1. over a steady window, samples every view of the live rates (each member's ``/stats``,
   Prometheus ``/metrics`` and Jolokia Indicator MBeans; the admin API's cluster live view, its
   hot subjects and its watched pattern) and compares their averages with the generator's rate of
   acknowledged publishes (incoming) and of deliveries counted by the subscribers (outgoing);
2. SIGKILLs a member's server process and reports the seconds until each health view says
   ``degraded`` (``/health`` of the survivors, the Cluster MBean, the ``/pushgrid/<m>/cluster``
   meta-subject, ``GET /api/v1/cluster``) and until the built-in alerts fire;
3. after the restart, samples the views again, and at the end checks that every subscriber got
   every acknowledged message of its subject exactly once and in order (guaranteed delivery with
   recovery across the failover).

It prints one JSON report (and ``--out`` writes it). Every count it compares comes from the
generator itself; a view that disagrees is a bug. Four comparisons per steady window:

- ``counter_error_percent``: each view's counters (``/stats`` totals, Prometheus, the watched
  pattern's totals) over the window against the generator's counts in the same time;
- ``per_second_error_percent``: the per-second series (each Indicator MBean's ``Recent``, the
  admin API's ``/stats/history``) summed over the window's whole seconds;
- ``windows_1m``: the 1-minute windows (average x count) of every member and of the pattern;
- ``hot_subjects``: the cluster ranking's top 5 in the generator's order, rates over its window.

``current_error_percent`` (the mean of the views' last-second values read every 2 s) is
reported too, but it measures the generator as much as the views: this process publishes,
receives and reads the views on one event loop, so the seconds the views report are those in
which it was busy reading them, and on a loaded machine they run low (-10% in the
walk-throughs while the per-second series of the same seconds agree within 0.3%).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import signal
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
import psutil

from pushgrid.client import PushgridClient
from pushgrid.client.models import Message, MessageType

PATTERN = "/Stocks/NYSE/*"


@dataclass
class Tally:
    """What the generator itself counted."""

    acked: Counter[str] = field(default_factory=Counter)  # OK publishes per subject
    ack_times: list[tuple[float, str]] = field(default_factory=list)  # (wall clock, subject)
    failed: int = 0
    # why they failed: "outcome_unknown" (no answer: it may have been stored and counted by the
    # servers) or the refusal's result and reason
    failures: Counter[str] = field(default_factory=Counter)
    # (wall clock, subject) of every update or recovered message a subscriber received
    delivered_times: list[tuple[float, str]] = field(default_factory=list)
    seqs: dict[tuple[int, str], list[int]] = field(default_factory=lambda: defaultdict(list))


def in_window(
    times: list[tuple[float, str]], start: float, end: float, subject: str | None = None
) -> int:
    return sum(1 for t, s in times if start <= t < end and subject in (None, s))


def zipf_weights(n: int, s: float) -> list[float]:
    return [1.0 / (rank + 1) ** s for rank in range(n)]


async def subscribers(
    args: argparse.Namespace, subjects: list[str], tally: Tally
) -> list[PushgridClient]:
    clients = []
    for k in range(args.subscribers):
        primary = k % len(args.members)
        servers = [
            f"{100 if i == primary else 1} 127.0.0.1:{args.client_port + i}"
            for i in range(len(args.members))
        ]
        subject = subjects[k % len(subjects)]

        def on_message(message: Message, k: int = k) -> None:
            if message.type in (MessageType.UPDATE, MessageType.RECOVERED):
                tally.delivered_times.append((time.time(), message.subject))
                tally.seqs[(k, message.subject)].append(message.seq)

        client = PushgridClient(servers, on_message=on_message)
        await client.connect()
        await client.subscribe([subject])
        clients.append(client)
    return clients


async def publisher(
    args: argparse.Namespace, subjects: list[str], tally: Tally, stop: asyncio.Event
) -> None:
    client = PushgridClient([f"127.0.0.1:{args.client_port + args.publish_via}"])
    await client.connect()
    rng = random.Random(7)
    weights = zipf_weights(len(subjects), args.zipf)
    pending: set[asyncio.Task[None]] = set()

    async def one(subject: str, n: int) -> None:
        result = await client.publish(
            subject, f"{100 + n % 50}.{n % 100:02d}", fields={"volume": str(n), "bid": str(n % 7)}
        )
        if result.ok and not result.duplicate:
            tally.acked[subject] += 1
            tally.ack_times.append((time.time(), subject))
        elif not result.ok:
            tally.failed += 1
            refused = f"{result.result}: {result.reason}"
            why = "outcome_unknown" if result.outcome_unknown else refused
            tally.failures[why] += 1

    n = 0
    start = time.monotonic()
    while not stop.is_set():
        n += 1
        subject = rng.choices(subjects, weights)[0]
        task = asyncio.create_task(one(subject, n))
        pending.add(task)
        task.add_done_callback(pending.discard)
        await asyncio.sleep(max(0.0, start + n / args.rate - time.monotonic()))
    if pending:
        await asyncio.wait(pending, timeout=15)
    await client.close()


def prom_value(text: str, name: str, labels: str = "") -> float:
    key = f"{name}{{{labels}}}" if labels else name
    for line in text.splitlines():
        if line.startswith(key + " "):
            return float(line.split()[-1])
    return float("nan")


async def sample_views(
    http: httpx.AsyncClient, args: argparse.Namespace, members: list[int]
) -> dict[str, float]:
    """One reading of every view: incoming and outgoing messages per second, cluster-wide."""
    views: dict[str, float] = defaultdict(float)
    for i in members:
        mon = f"http://127.0.0.1:{args.monitor_port + i}"
        stats = (await http.get(f"{mon}/stats?format=json")).json()
        views["stats.in"] += stats["indicators"]["incoming_messages_per_second"]["current"]
        views["stats.out"] += stats["indicators"]["outgoing_messages_per_second"]["current"]
        prom = (await http.get(f"{mon}/metrics")).text
        views["prometheus.in"] += prom_value(
            prom, "pushgrid_indicator", 'indicator="incoming_messages_per_second"'
        )
        views["prometheus.out"] += prom_value(
            prom, "pushgrid_indicator", 'indicator="outgoing_messages_per_second"'
        )
        for name, key in (
            ("IncomingMessagesPerSecond", "in"),
            ("OutgoingMessagesPerSecond", "out"),
        ):
            read = (
                await http.get(f"{mon}/jolokia/read/pushgrid:type=Indicator,name={name}/Current")
            ).json()
            views[f"jolokia.{key}"] += float(read["value"])
    api = f"http://127.0.0.1:{args.admin_port}/api/v1"
    live = (await http.get(f"{api}/stats/live")).json()["cluster"]["indicators"]
    by_name = {item["name"]: item["current"] for item in live}
    views["admin.in"] = by_name["incoming_messages_per_second"]
    views["admin.out"] = by_name["outgoing_messages_per_second"]
    live_all = (await http.get(f"{api}/stats/live")).json()["cluster"]
    views["admin.members_reachable"] = live_all["members_reachable"]
    watched = (await http.get(f"{api}/watched-subjects")).json()["cluster"]
    for row in watched:
        if row["pattern"] == PATTERN:
            views["watched.in"] = row["current"]["incoming_messages_per_second"]
            views["watched.out"] = row["current"]["outgoing_messages_per_second"]
            views["watched.subscribers"] = row["subscribers"]
            views["watched.subjects"] = row["current"]["subjects"]
    return views


async def counters(
    http: httpx.AsyncClient, args: argparse.Namespace, members: list[int]
) -> dict[str, float]:
    """Every view's counters of messages in and out, summed over the members."""
    views: dict[str, float] = defaultdict(float)
    for i in members:
        mon = f"http://127.0.0.1:{args.monitor_port + i}"
        totals = (await http.get(f"{mon}/stats?format=json")).json()["totals"]
        views["stats_totals.in"] += totals["messages_in_total"]
        views["stats_totals.out"] += totals["messages_out_total"]
        prom = (await http.get(f"{mon}/metrics")).text
        views["prometheus_totals.in"] += prom_value(prom, "pushgrid_messages_received_total")
        views["prometheus_totals.out"] += prom_value(prom, "pushgrid_messages_sent_total")
    api = f"http://127.0.0.1:{args.admin_port}/api/v1"
    for row in (await http.get(f"{api}/watched-subjects")).json()["cluster"]:
        if row["pattern"] == PATTERN:
            views["watched_totals.in"] = row["totals"]["messages_in_total"]
            views["watched_totals.out"] = row["totals"]["messages_out_total"]
    return views


async def per_second(
    http: httpx.AsyncClient, args: argparse.Namespace, members: list[int], seconds: range
) -> dict[str, float]:
    """The per-second series of each view summed over ``seconds`` (whole UTC seconds)."""
    views: dict[str, float] = defaultdict(float)
    for i in members:
        mon = f"http://127.0.0.1:{args.monitor_port + i}"
        for name, key in (
            ("IncomingMessagesPerSecond", "in"),
            ("OutgoingMessagesPerSecond", "out"),
        ):
            path = f"pushgrid:type=Indicator,name={name}/Recent"
            recent = (await http.get(f"{mon}/jolokia/read/{path}")).json()["value"]
            views[f"mbean_recent.{key}"] += sum(recent.get(str(s), 0.0) for s in seconds)
    api = f"http://127.0.0.1:{args.admin_port}/api/v1"
    query = {"since": seconds.start, "until": seconds.stop - 1}
    history = (await http.get(f"{api}/stats/history", params=query)).json()["cluster"]
    by_second = dict(zip(history["seconds"], range(len(history["seconds"])), strict=True))
    for name, key in (("incoming", "in"), ("outgoing", "out")):
        values = history["values"][f"{name}_messages_per_second"]
        views[f"admin_history.{key}"] = sum(values[by_second[s]] for s in seconds if s in by_second)
    return views


def compare(views: dict[str, float], tally: Tally, start: float, end: float) -> dict[str, Any]:
    """Each view's error in percent against the generator's own count over [start, end)."""
    errors: dict[str, Any] = {}
    for key, value in views.items():
        view, _, subject = key.partition(":")
        if view.endswith((".in", ".out")):
            times = tally.ack_times if view.endswith(".in") else tally.delivered_times
            reference = in_window(times, start, end, subject or None)
            errors[key] = round((value - reference) / reference * 100, 2) if reference else None
    return errors


async def timed_counters(
    http: httpx.AsyncClient, args: argparse.Namespace, members: list[int]
) -> tuple[float, dict[str, float]]:
    """The counters and the middle of the time it took to read them all."""
    begin = time.time()
    views = await counters(http, args, members)
    return (begin + time.time()) / 2, views


async def hot_check(
    http: httpx.AsyncClient, args: argparse.Namespace, tally: Tally
) -> dict[str, Any]:
    """The admin API's cluster hot subjects against the generator's counts over the rankings'
    window (10 s): the top 5 in the same order, and each listed rate's error."""
    mon = f"http://127.0.0.1:{args.monitor_port}"
    window = (await http.get(f"{mon}/stats?format=json")).json()["hot_subjects"]["window"]
    api = f"http://127.0.0.1:{args.admin_port}/api/v1"
    read_at = time.time()
    rankings = (await http.get(f"{api}/hot-subjects")).json()["cluster"]["rankings"]
    result: dict[str, Any] = {"window": window}
    for ranking, times in (
        ("messages_in", tally.ack_times),
        ("messages_out", tally.delivered_times),
    ):
        since = int(read_at) - window  # the rankings cover the whole seconds before this one
        truth = Counter(s for t, s in times if since <= t < int(read_at))
        rows = rankings[ranking]
        errors = [abs(row["value"] - truth[row["subject"]] / window) for row in rows]
        top = [subject for subject, _ in truth.most_common(5)]
        result[ranking] = {
            "top5_view": [row["subject"] for row in rows[:5]],
            "top5_generator": top,
            "top1_rate": {
                "view": rows[0]["value"] if rows else None,
                "generator": truth[top[0]] / window if top else None,
            },
            "largest_abs_error_per_second": round(max(errors), 2) if errors else None,
            "within_error_bound": all(
                abs(row["value"] - truth[row["subject"]] / window) <= row["error"] + 1.0
                for row in rows
            ),
        }
    return result


async def windows_check(
    http: httpx.AsyncClient, args: argparse.Namespace, tally: Tally, members: list[int]
) -> dict[str, Any]:
    """The 1-minute windows (average over the seconds they hold, times the count) against the
    generator: each member's indicators from /stats, the watched pattern from the admin API."""
    now = int(time.time())
    result: dict[str, Any] = {}
    views: dict[str, float] = defaultdict(float)
    for i in members:
        mon = f"http://127.0.0.1:{args.monitor_port + i}"
        stats = (await http.get(f"{mon}/stats?format=json")).json()
        for name, key in (("incoming", "in"), ("outgoing", "out")):
            window = stats["indicators"][f"{name}_messages_per_second"]["windows"]["1m"]
            views[f"indicator_1m_sum.{key}"] += window["avg"] * window["count"]
    api = f"http://127.0.0.1:{args.admin_port}/api/v1"
    for member in (await http.get(f"{api}/watched-subjects")).json()["members"]:
        for pattern in member["patterns"]:
            if pattern["pattern"] == PATTERN:
                for name, key in (("incoming", "in"), ("outgoing", "out")):
                    indicator = pattern["indicators"][f"{name}_messages_per_second"]
                    window = indicator["windows"]["1m"]
                    views[f"watched_1m_sum.{key}"] += (window["avg"] or 0) * window["count"]
    result["sums"] = {k: round(v) for k, v in views.items()}
    # a 1m window holds the 60 seconds up to the last one recorded (now - 1)
    result["error_percent"] = compare(views, tally, now - 60, now)
    return result


async def steady_window(
    http: httpx.AsyncClient,
    args: argparse.Namespace,
    tally: Tally,
    members: list[int],
    seconds: float,
) -> dict[str, Any]:
    readings: list[dict[str, float]] = []
    started, before = await timed_counters(http, args, members)
    while time.time() - started < seconds:
        try:
            readings.append(await sample_views(http, args, members))
        except (httpx.HTTPError, KeyError) as exc:
            print("sample failed:", repr(exc))
        await asyncio.sleep(2.0)
    ended, after = await timed_counters(http, args, members)
    hot = await hot_check(http, args, tally)
    windows = await windows_check(http, args, tally, members)
    await asyncio.sleep(3.0)  # let the last whole second be recorded everywhere
    # whole seconds, at most the last 55 (an Indicator MBean's Recent holds the last minute)
    whole = range(max(int(started) + 1, int(ended) - 55), int(ended))
    sums = await per_second(http, args, members, whole)
    deltas = {key: after[key] - before.get(key, 0.0) for key in after}
    # "current" readings: each is the view's last second; their mean against the mean rate
    means = {
        key: statistics.fmean(r[key] for r in readings if key in r)
        for key in sorted({k for r in readings for k in r})
    }
    span = ended - started
    return {
        "seconds": round(span, 1),
        "generator": {
            "in": in_window(tally.ack_times, started, ended),
            "out": in_window(tally.delivered_times, started, ended),
            "in_per_second": round(in_window(tally.ack_times, started, ended) / span, 2),
            "out_per_second": round(in_window(tally.delivered_times, started, ended) / span, 2),
        },
        "counter_deltas": {k: round(v) for k, v in deltas.items()},
        "counter_error_percent": compare(deltas, tally, started, ended),
        "per_second_sums": {k: round(v) for k, v in sums.items()},
        "per_second_error_percent": compare(sums, tally, whole.start, whole.stop),
        "windows_1m": windows,
        "hot_subjects": hot,
        "current_means": {k: round(v, 2) for k, v in means.items()},
        "current_error_percent": compare(
            {k: m * span for k, m in means.items()}, tally, started, ended
        ),
    }


def server_pid(port: int) -> int:
    for conn in psutil.net_connections("tcp"):
        if conn.laddr and conn.laddr.port == port and conn.status == "LISTEN" and conn.pid:
            return int(conn.pid)
    raise SystemExit(f"no process listens on {port}")


async def health_views(
    http: httpx.AsyncClient,
    args: argparse.Namespace,
    survivors: list[int],
    meta: dict[str, str],
    killed_at: float,
) -> dict[str, tuple[str, float]]:
    """Each health view's word and the seconds since the kill when it was read (a poll of every
    view takes seconds on a loaded machine: each view gets its own time)."""
    views: dict[str, tuple[str, float]] = {}

    def seen(view: str, health: str) -> None:
        views[view] = (health, round(time.monotonic() - killed_at, 2))

    for i in survivors:
        mon = f"http://127.0.0.1:{args.monitor_port + i}"
        health = (await http.get(f"{mon}/health")).json()
        seen(f"health.m{i + 1}", health["cluster"]["health"])
        mbean = (await http.get(f"{mon}/jolokia/read/pushgrid:type=Cluster/Health")).json()
        seen(f"mbean.m{i + 1}", mbean["value"])
    cluster = (await http.get(f"http://127.0.0.1:{args.admin_port}/api/v1/cluster")).json()
    seen("admin", cluster["health"])
    seen("meta", meta.get("health", "?"))
    return views


async def follow_meta(
    args: argparse.Namespace, member: int, meta: dict[str, str]
) -> PushgridClient:
    def on_message(message: Message) -> None:
        if message.content != meta.get("health"):
            print(f"{time.monotonic():.2f} /pushgrid/m{member + 1}/cluster: {message.content}")
        meta["health"] = message.content  # the meta-subject's content is the health word

    client = PushgridClient([f"127.0.0.1:{args.client_port + member}"], on_message=on_message)
    await client.connect()
    await client.subscribe([f"/pushgrid/m{member + 1}/cluster"])
    return client


async def kill_and_watch(
    http: httpx.AsyncClient, args: argparse.Namespace, meta: dict[str, str]
) -> dict[str, Any]:
    victim = args.members.index(args.kill)
    survivors = [i for i in range(len(args.members)) if i != victim]
    pid = server_pid(args.client_port + victim)
    killed_at, killed_wall = time.monotonic(), time.time()
    os.kill(pid, signal.SIGKILL)
    degraded_after: dict[str, float] = {}
    alerts_after: dict[str, float] = {}
    ok_again_after: float | None = None
    api = f"http://127.0.0.1:{args.admin_port}/api/v1"
    while time.monotonic() - killed_at < args.kill_watch:
        try:
            views = await health_views(http, args, survivors, meta, killed_at)
        except (httpx.HTTPError, KeyError):
            views = {}
        for view, (health, when) in views.items():
            if health != "ok" and view not in degraded_after:
                degraded_after[view] = when
        if (
            degraded_after
            and views
            and ok_again_after is None
            and all(health == "ok" for health, _ in views.values())
        ):
            ok_again_after = max(when for _, when in views.values())
        try:
            for alert in (await http.get(f"{api}/alerts")).json()["items"]:
                # the alert's own "since": exact, whatever the polling delay; alerts that were
                # already firing before the kill (a restart a minute ago) do not count
                since = datetime.fromisoformat(alert["since"]).timestamp() - killed_wall
                if alert.get("state") == "firing" and since >= 0:
                    alerts_after.setdefault(alert["rule"], round(since, 2))
        except (httpx.HTTPError, KeyError):
            pass
        await asyncio.sleep(0.25)
    return {
        "killed": args.kill,
        "pid": pid,
        "degraded_after_s": degraded_after,
        "alerts_after_s": alerts_after,
        "ok_again_after_s": ok_again_after,
    }


def delivery_check(tally: Tally, subjects: list[str], args: argparse.Namespace) -> dict[str, Any]:
    lost = duplicated = reordered = 0
    for seqs in tally.seqs.values():
        duplicated += len(seqs) - len(set(seqs))
        reordered += sum(1 for a, b in itertools.pairwise(seqs) if b < a)
        if seqs:
            lost += (max(seqs) - min(seqs) + 1) - len(set(seqs))
    expected = sum(tally.acked[subjects[k % len(subjects)]] for k in range(args.subscribers))
    return {
        "acked": sum(tally.acked.values()),
        "failed": tally.failed,
        "failures": dict(tally.failures.most_common(10)),
        "delivered": len(tally.delivered_times),
        "expected_at_least": expected,
        "gaps": lost,
        "duplicated": duplicated,
        "reordered": reordered,
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    subjects = [f"/Stocks/NYSE/S{i:02d}" for i in range(args.subjects)]
    tally = Tally()
    headers = {"Authorization": f"Bearer {args.token}"}
    report: dict[str, Any] = {"args": {k: v for k, v in vars(args).items() if k != "token"}}
    async with httpx.AsyncClient(headers=headers, timeout=10) as http:
        api = f"http://127.0.0.1:{args.admin_port}/api/v1"
        added = await http.post(f"{api}/watched-subjects", json={"pattern": PATTERN})
        report["watch"] = added.status_code
        meta: dict[str, str] = {}
        follower = await follow_meta(args, 0, meta)
        t0 = time.monotonic()
        clients = await subscribers(args, subjects, tally)
        report["subscribers_connected_s"] = round(time.monotonic() - t0, 1)
        stop = asyncio.Event()
        pub = asyncio.create_task(publisher(args, subjects, tally, stop))
        await asyncio.sleep(args.warmup)
        everyone = list(range(len(args.members)))
        report["steady_before_kill"] = await steady_window(http, args, tally, everyone, args.window)
        report["kill"] = await kill_and_watch(http, args, meta)
        await asyncio.sleep(args.warmup)
        report["steady_after_restart"] = await steady_window(
            http, args, tally, everyone, args.window
        )
        stop.set()
        await pub
        await asyncio.sleep(3)
        report["delivery"] = delivery_check(tally, subjects, args)
        report["connected_at_end"] = sum(1 for c in clients if c.connected)
        for client in [*clients, follower]:
            await client.close()
    return report


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--token",
        required=True,
        help="an admin API token (viewer is enough "
        "except for adding the watched pattern: operator)",
    )
    parser.add_argument("--members", nargs="+", default=["m1", "m2", "m3"])
    parser.add_argument("--client-port", type=int, default=8800)
    parser.add_argument("--monitor-port", type=int, default=8900)
    parser.add_argument("--admin-port", type=int, default=8080)
    parser.add_argument("--subscribers", type=int, default=250)
    parser.add_argument("--subjects", type=int, default=40)
    parser.add_argument("--rate", type=float, default=120.0)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--publish-via", type=int, default=1, help="member index (0-based)")
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--window", type=float, default=40.0)
    parser.add_argument("--kill", default="m3")
    parser.add_argument("--kill-watch", type=float, default=60.0)
    parser.add_argument("--out", help="also write the report here")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse()
    result = asyncio.run(main(arguments))
    text = json.dumps(result, indent=2)
    print(text)
    if arguments.out:
        with open(arguments.out, "w", encoding="utf-8") as out:
            out.write(text + "\n")
