"""Known traffic through a real server; every monitoring service must report the same numbers.

One server (``MetaSubjectInterval = 1``, ``MetricsArchive`` in a temporary directory) gets three
subscribers on one subject, a publisher at about 100 messages/s for 8 s (paced) and one
connect/disconnect cycle per second. Then:

* cumulative totals, read at a quiescent moment, are identical in Jolokia (Server ``Counters``,
  Indicator ``Total``, Cache, Sessions, Subjects), ``/stats?format=json`` and ``/metrics``, and
  equal to the traffic the test made;
* the window statistics (max / avg / stddev / count over the 12 windows) are identical in Jolokia,
  ``/stats`` and ``/metrics`` when read for the same sample second, and plausible for the traffic;
* the meta-subjects carry the same numbers as ``/stats`` for their sample second;
* the archive has one line per second, its lines reproduce the window statistics exactly, and
  its integer per-second counts add up exactly to the traffic (docs/archive.md).

Byte counters are left out of the cross-source equality here: see
``test_monitoring_http.py::test_monitoring_requests_are_not_client_traffic``.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jolokia import JolokiaClient

from pushgrid.metrics.archive import read_samples as read_archive_file
from pushgrid.metrics.indicators import INDICATOR_NAMES, INDICATORS

from .pgtest import (
    DEFAULT_TIMEOUT,
    ServerProcess,
    WsClient,
    eventually,
    jolokia_bulk,
    monitor_http,
    parse_prometheus,
    read_archive,
)

NODE = "it-node"
RATE = 100  # messages per second
SECONDS = 8
MESSAGES = RATE * SECONDS
CYCLES = 8  # connect/disconnect cycles, one a second
SUBSCRIBERS = 3
SUBJECT = "/it/traffic/IBM"

WINDOWS = {  # name -> (length W, resolution r) in seconds, docs/monitoring.md
    "1m": (60, 1),
    "5m": (300, 1),
    "15m": (900, 1),
    "1h": (3600, 60),
    "5h": (18000, 60),
    "15h": (54000, 60),
    "1d": (86400, 3600),
    "5d": (432000, 3600),
    "15d": (1296000, 3600),
    "1mo": (2592000, 86400),
    "5mo": (12960000, 86400),
    "15mo": (38880000, 86400),
}
STATS = ("max", "avg", "stddev", "count")
MBEAN_TO_NAME = {f"pushgrid:name={i.mbean},type=Indicator": i.name for i in INDICATORS}

# Counter (Server Counters key, /stats name) -> its Prometheus sample (name, labels)
PROMETHEUS_TOTALS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "connections_total": ("pushgrid_connections_total", ()),
    "disconnections_total": ("pushgrid_disconnections_total", ()),
    "messages_in_total": ("pushgrid_messages_received_total", ()),
    "messages_out_total": ("pushgrid_messages_sent_total", ()),
    "slow_consumer_disconnects_total": ("pushgrid_slow_consumer_disconnects_total", ()),
    "keepalive_timeouts_total": ("pushgrid_keepalive_timeouts_total", ()),
    "publish_rejected_total": ("pushgrid_publish_rejected_total", ()),
    "recovery_successes_total": ("pushgrid_recoveries_total", (("outcome", "success"),)),
    "recovery_failures_total": ("pushgrid_recoveries_total", (("outcome", "failure"),)),
    "subscribes_total": ("pushgrid_subscribes_total", (("outcome", "ok"),)),
    "subscribe_failures_total": ("pushgrid_subscribes_total", (("outcome", "failure"),)),
}
PROMETHEUS_GAUGES = {
    "sessions": "pushgrid_connected_users",
    "subscriptions": "pushgrid_subscriptions",
    "subjects": "pushgrid_subjects",
    "cache_messages": "pushgrid_cache_messages",
}
BYTE_COUNTERS = {"bytes_in_total", "bytes_out_total"}


def message_count(client: WsClient, subject: str | None = None) -> int:
    return sum(
        1
        for frame in client.buffer
        if frame.get("type") == "message" and (subject is None or frame.get("subject") == subject)
    )


# --- reading the three services --------------------------------------------------------------


def read(mbean: str, attribute: str | list[str]) -> dict[str, Any]:
    return {"type": "read", "mbean": mbean, "attribute": attribute}


def jolokia_client(srv: ServerProcess) -> JolokiaClient:
    client = JolokiaClient(f"{srv.monitor_url}/jolokia")
    client.session.trust_env = False
    return client


async def read_totals(srv: ServerProcess, mon: Any) -> dict[str, dict[str, float]]:
    """One reading of every cumulative total and gauge, from each service (bytes left out)."""
    stats = (await mon.get("/stats", params={"format": "json"})).json()
    from_stats = {
        **{k: v for k, v in stats["totals"].items() if k not in BYTE_COUNTERS},
        **{k: stats["gauges"][k] for k in PROMETHEUS_GAUGES},
    }

    prom = parse_prometheus((await mon.get("/metrics")).text)
    from_metrics = {name: prom[key] for name, key in PROMETHEUS_TOTALS.items()}
    from_metrics.update({name: prom[(metric, ())] for name, metric in PROMETHEUS_GAUGES.items()})

    # the PyPI jolokia client (requests, blocking: run it off the event loop)
    client = jolokia_client(srv)
    answer = await asyncio.to_thread(
        client.get_attribute, mbean="pushgrid:type=Server", attribute="Counters"
    )
    assert answer["status"] == 200, answer
    counters = answer["value"]
    from_jolokia = {k: v for k, v in counters.items() if k not in BYTE_COUNTERS}
    beans = await jolokia_bulk(
        mon,
        [
            read("pushgrid:type=Cache", ["Subjects", "CachedMessages"]),
            read("pushgrid:type=Sessions", "Count"),
            read("pushgrid:type=Subjects", ["Count", "Subscriptions"]),
            read("pushgrid:type=Server", ["ConnectedUsers", "Subscriptions"]),
            read("pushgrid:type=Indicator,*", "Total"),
            read("pushgrid:type=Server", "Counters"),
        ],
    )
    assert [a["status"] for a in beans] == [200] * len(beans), beans
    cache, sessions, subjects, server, totals, same_request_counters = (a["value"] for a in beans)
    assert cache["Subjects"] == subjects["Count"]
    assert sessions == server["ConnectedUsers"]
    assert subjects["Subscriptions"] == server["Subscriptions"]
    from_jolokia.update(
        subjects=cache["Subjects"],
        cache_messages=cache["CachedMessages"],
        sessions_bean=sessions,
        server_connected_users=server["ConnectedUsers"],
        server_subscriptions=server["Subscriptions"],
    )
    # Indicator Total is the underlying counter (bytes included: same request, same moment)
    for indicator in INDICATORS:
        bean = f"pushgrid:name={indicator.mbean},type=Indicator"
        assert totals[bean]["Total"] == same_request_counters[indicator.counter], (
            f"{bean} Total {totals[bean]['Total']} != Counters[{indicator.counter}]"
        )
        if indicator.counter not in BYTE_COUNTERS:
            from_jolokia[f"total:{indicator.mbean}"] = totals[bean]["Total"]
    return {"stats": from_stats, "metrics": from_metrics, "jolokia": from_jolokia}


async def quiescent_totals(srv: ServerProcess, mon: Any) -> dict[str, dict[str, float]]:
    """Read until two consecutive readings agree (the traffic is over; bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEFAULT_TIMEOUT
    previous = await read_totals(srv, mon)
    while True:
        await asyncio.sleep(0.2)
        current = await read_totals(srv, mon)
        if current == previous:
            return current
        assert loop.time() < deadline, f"totals still moving: {previous} -> {current}"
        previous = current


async def aligned_views(mon: Any) -> tuple[dict[str, Any], dict[Any, float], dict[str, Any]]:
    """(/stats JSON, /metrics samples, Jolokia indicator beans), all of one sample second.

    /stats carries its sample second (``ts``), Jolokia its ``SampleTime``; /metrics has none, so
    it is read between two /stats readings of the same second. Retried until all agree.
    """
    for _ in range(30):
        before = (await mon.get("/stats", params={"format": "json"})).json()
        prom = parse_prometheus((await mon.get("/metrics")).text)
        attributes = ["Current", "Windows", "Max1m", "Average1m", "StdDev1m", "Count1m"]
        answers = await jolokia_bulk(
            mon,
            [
                {"type": "read", "mbean": "pushgrid:type=Indicator,*", "attribute": "SampleTime"},
                {"type": "read", "mbean": "pushgrid:type=Indicator,*", "attribute": attributes},
                {"type": "read", "mbean": "pushgrid:type=Indicator,*", "attribute": "SampleTime"},
            ],
        )
        after = (await mon.get("/stats", params={"format": "json"})).json()
        assert [a["status"] for a in answers] == [200, 200, 200], answers
        seconds = {before["ts"], after["ts"]}
        for answer in (answers[0], answers[2]):
            seconds |= {bean["SampleTime"] for bean in answer["value"].values()}
        if len(seconds) == 1:
            beans = {MBEAN_TO_NAME[bean]: value for bean, value in answers[1]["value"].items()}
            return before, prom, beans
        await asyncio.sleep(random.uniform(0.05, 0.4))
    raise AssertionError("could not read /stats, /metrics and Jolokia within one sample second")


def window_rows(rows: list[dict[str, str]], window: str, now: int) -> list[dict[str, str]]:
    """The archive lines a window covers at ``now`` (docs/monitoring.md, Windows)."""
    length, resolution = WINDOWS[window]
    start = (now // resolution - (length // resolution - 1)) * resolution
    return [row for row in rows if start <= int(row["ts"]) <= now]


# --- the test ----------------------------------------------------------------------------------


async def test_known_traffic_is_reported_identically_everywhere(server_factory, connect, tmp_path):
    archive = tmp_path / "archive"
    srv = server_factory(MetaSubjectInterval=1, MetricsArchive=str(archive), ServerName=NODE)
    loop = asyncio.get_running_loop()
    async with monitor_http(srv) as mon:
        # The first sample covers a partial second (since start-up): start after it, so every
        # second of traffic is a whole sampling period.
        async def sampled() -> bool:
            return (await mon.get("/stats", params={"format": "json"})).json()["ts"] > 0

        for _ in range(100):
            if await sampled():
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("no sample within 5 s of start-up")

        subscribers = [await connect(srv) for _ in range(SUBSCRIBERS)]
        for subscriber in subscribers:
            assert (await subscriber.subscribe(SUBJECT))["status"] == "allow"
        publisher = await connect(srv)
        clients: list[WsClient] = [*subscribers, publisher]

        async def publish_paced() -> float:
            """Publish at RATE, each after the last one's ack; return the seconds it took (more
            than SECONDS when acks are slower than the pace, on a loaded machine)."""
            start = loop.time()
            for number in range(MESSAGES):
                delay = start + number / RATE - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                await publisher.publish_ok(
                    SUBJECT, f"{100 + number % 50}.{number:04d}", {"n": str(number)}
                )
            return loop.time() - start

        async def connect_disconnect() -> None:
            start = loop.time()
            for cycle in range(CYCLES):
                delay = start + cycle + 0.5 - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                client = await WsClient.connect(srv)
                clients.append(client)
                await client.close()

        publishing, _ = await asyncio.gather(publish_paced(), connect_disconnect())
        # The rate the publisher reached: RATE, or less if its acks were slower than the pace.
        reached = MESSAGES / max(publishing, SECONDS)
        await eventually(
            lambda: all(message_count(s, SUBJECT) >= MESSAGES for s in subscribers),
            what=f"{MESSAGES} messages at each subscriber",
        )
        for subscriber in subscribers:
            assert message_count(subscriber, SUBJECT) == MESSAGES
        delivered = sum(message_count(client) for client in clients)
        assert delivered == SUBSCRIBERS * MESSAGES

        # -- 1. cumulative totals: identical everywhere, equal to the traffic ------------------
        totals = await quiescent_totals(srv, mon)
        settled = int(time.time())
        stats_totals, metrics_totals, jolokia_totals = (
            totals["stats"],
            totals["metrics"],
            totals["jolokia"],
        )
        expected = {
            "messages_in_total": MESSAGES,
            "messages_out_total": delivered,
            "connections_total": SUBSCRIBERS + 1 + CYCLES,
            "disconnections_total": CYCLES,
            "sessions": SUBSCRIBERS + 1,
            "subscriptions": SUBSCRIBERS,
            "publish_rejected_total": 0,
            "slow_consumer_disconnects_total": 0,
            "keepalive_timeouts_total": 0,
            "recovery_successes_total": 0,
            "recovery_failures_total": 0,
            "subscribe_failures_total": 0,
            # the test subject, the meta-subjects (overview, one per indicator, cluster) and
            # the canaries' subject (/pushgrid/canary, docs/monitoring.md "Canaries")
            "subjects": 1 + 1 + len(INDICATORS) + 1 + 1,
            # every message is cached (guaranteed qos, under the 1000 limit); the
            # meta-subjects use qos standard and are never cached
            "cache_messages": MESSAGES,
        }
        for name, value in expected.items():
            assert stats_totals[name] == value, (
                f"/stats {name} = {stats_totals[name]}, want {value}"
            )
            assert metrics_totals[name] == value, (
                f"/metrics {name} = {metrics_totals[name]}, want {value}"
            )
            assert jolokia_totals[name] == value, (
                f"Jolokia {name} = {jolokia_totals[name]}, want {value}"
            )
        assert jolokia_totals["sessions_bean"] == expected["sessions"]
        assert jolokia_totals["server_connected_users"] == expected["sessions"]
        assert jolokia_totals["server_subscriptions"] == expected["subscriptions"]
        assert jolokia_totals["total:ConnectedUsers"] == expected["sessions"]
        assert jolokia_totals["total:IncomingMessagesPerSecond"] == MESSAGES
        assert jolokia_totals["total:OutgoingMessagesPerSecond"] == delivered
        assert jolokia_totals["total:ConnectionsPerSecond"] == expected["connections_total"]
        assert jolokia_totals["total:DisconnectionsPerSecond"] == CYCLES

        # -- 2. window statistics: identical for one sample second ---------------------------
        # Read once every event is in an emitted second. A reading spreads the events of its
        # period over the seconds the period overlaps (metrics/indicators.py PerSecond), so the
        # first reading after the traffic may leave a share in its still-open second; that
        # second is emitted by the next reading. A sample of second `settled` comes from a
        # reading after the traffic; that reading's open second is at most the second in which
        # we see the sample: wait for a sample of that second too. (Reading at the first sample
        # of `settled` saw 2399 of 2400 on a loaded machine: the last share was still open.)
        async def sample_second() -> int:
            return int((await mon.get("/stats", params={"format": "json"})).json()["ts"])

        for target in (settled, None):
            if target is None:
                target = int(time.time())
            deadline = loop.time() + 30
            while await sample_second() < target:
                assert loop.time() < deadline, f"no sample of second {target} within 30 s"
                await asyncio.sleep(0.05)
        stats, prom, beans = await aligned_views(mon)
        now = stats["ts"]
        assert now >= settled, "no sample after the traffic"
        for name in INDICATOR_NAMES:
            indicator = stats["indicators"][name]
            bean = beans[name]
            assert bean["Current"] == indicator["current"], name
            assert prom[("pushgrid_indicator", (("indicator", name),))] == indicator["current"]
            assert list(indicator["windows"]) == list(WINDOWS), name
            assert sorted(bean["Windows"]) == sorted(WINDOWS), name
            for window, values in indicator["windows"].items():
                assert bean["Windows"][window] == values, f"{name} {window}: Jolokia vs /stats"
                for stat in ("max", "avg", "stddev"):
                    key = (
                        "pushgrid_indicator_window",
                        (("indicator", name), ("stat", stat), ("window", window)),
                    )
                    if values["count"]:
                        assert prom[key] == values[stat], f"{name} {window} {stat}: /metrics"
                    else:
                        assert key not in prom, f"{name} {window}: no samples, yet in /metrics"
            one_minute = indicator["windows"]["1m"]
            assert bean["Max1m"] == one_minute["max"]
            assert bean["Average1m"] == one_minute["avg"]
            assert bean["StdDev1m"] == one_minute["stddev"]
            assert bean["Count1m"] == one_minute["count"]

        # ... and the traffic: rates are integer counts of events since the previous sample, so
        # a window's samples add up exactly to what happened in it; "1h" holds every sample of
        # this young server. Maxima depend on scheduling: loose bounds only.
        hour = {name: stats["indicators"][name]["windows"]["1h"] for name in INDICATOR_NAMES}
        made = SUBSCRIBERS + 1 + CYCLES
        for name, total in [
            ("incoming_messages_per_second", MESSAGES),
            ("outgoing_messages_per_second", delivered),
            ("connections_per_second", made),
            ("disconnections_per_second", CYCLES),
        ]:
            window = hour[name]
            assert math.isclose(window["avg"] * window["count"], total, rel_tol=1e-9), (
                f"{name}: 1h samples add up to {window['avg'] * window['count']}, want {total}"
            )
            assert float(window["max"]).is_integer(), f"{name}: samples are integers: {window}"
        incoming = hour["incoming_messages_per_second"]
        outgoing = hour["outgoing_messages_per_second"]
        assert 0.6 * reached <= incoming["max"] <= 3 * RATE, incoming
        assert 0.6 * SUBSCRIBERS * reached <= outgoing["max"] <= 3 * SUBSCRIBERS * RATE, outgoing
        users = hour["connected_users"]
        assert SUBSCRIBERS + 1 <= users["max"] <= SUBSCRIBERS + 2, users

        # -- 3. the archive: one line per second, reproducing the windows ----------------------
        rows = [row for row in await archive_through(archive, now) if int(row["ts"]) <= now]
        check_archive_lines(rows)
        for name in INDICATOR_NAMES:
            for window, values in stats["indicators"][name]["windows"].items():
                covered = [float(row[name]) for row in window_rows(rows, window, now)]
                where = f"archive vs /stats {name} {window} at {now}"
                assert len(covered) == values["count"], where
                if not covered:
                    continue
                assert max(covered) == values["max"], where
                assert math.isclose(statistics.fmean(covered), values["avg"], rel_tol=1e-9), where
                assert math.isclose(
                    statistics.pstdev(covered), values["stddev"], rel_tol=1e-6, abs_tol=1e-9
                ), where

        # the lines add up exactly to the cumulative counters (docs/archive.md)
        def column_sum(name: str) -> int:
            return sum(int(row[name]) for row in rows)

        assert column_sum("incoming_messages_per_second") == MESSAGES
        assert column_sum("outgoing_messages_per_second") == delivered
        assert column_sum("connections_per_second") == made
        assert column_sum("disconnections_per_second") == CYCLES
        assert int(rows[-1]["connected_users"]) == SUBSCRIBERS + 1
        assert max(int(r["connected_users"]) for r in rows) in (SUBSCRIBERS + 1, SUBSCRIBERS + 2)
        # about the reached rate a second while publishing (loose: the first and last seconds
        # are partial)
        active = [int(r["incoming_messages_per_second"]) for r in rows]
        active = [value for value in active if value > 0]
        assert 0.6 * reached <= statistics.fmean(active) <= 1.4 * RATE, active
        took = math.ceil(publishing)
        assert len(active) <= took + 3, f"publishing took {publishing:.1f} s: {active}"

        # -- 4. the meta-subjects: the numbers of /stats for their sample second ---------------
        await check_meta_subjects(srv, mon, connect)


async def archive_through(root: Path, ts: int) -> list[dict[str, str]]:
    """The node's archive lines once the line of second ``ts`` is there (bounded wait)."""
    rows: list[dict[str, str]] = []

    def written() -> bool:
        nonlocal rows
        rows = read_archive(root, NODE)
        return bool(rows) and int(rows[-1]["ts"]) >= ts

    await eventually(written, what=f"archive line of second {ts}")
    return rows


def check_archive_lines(rows: list[dict[str, str]]) -> None:
    assert list(rows[0]) == ["ts", "node", *INDICATOR_NAMES], "docs/archive.md column order"
    for row in rows:
        assert row["node"] == NODE
        assert re.fullmatch(r"\d+", row["ts"]), row
        for name in INDICATOR_NAMES:
            value = row[name]
            assert re.fullmatch(r"\d+", value), f"every value is an integer: {name}={value!r}"
    seconds = [int(row["ts"]) for row in rows]
    assert len(set(seconds)) == len(seconds), "duplicate ts in the archive"
    assert seconds == sorted(seconds), "archive lines out of order"
    span = seconds[-1] - seconds[0] + 1
    # one line per second; a second may only be missing if the event loop was blocked
    assert len(seconds) >= span - 2, f"{span - len(seconds)} seconds missing: {seconds}"


async def check_meta_subjects(srv: ServerProcess, mon: Any, connect: Any) -> None:
    """Meta-subject messages carry the numbers /stats shows for the same sample second."""
    watcher = await connect(srv)
    rate_subject = f"/pushgrid/{NODE}/incoming_messages_per_second"
    overview_subject = f"/pushgrid/{NODE}/overview"
    received: list[dict[str, Any]] = []
    for subject in (rate_subject, overview_subject):
        subscribed, frames = await watcher.subscribe_all(subject)
        assert subscribed["status"] == "allow"
        kinds = [(f.get("type"), f.get("kind"), f.get("subject")) for f in frames]
        assert ("message", "snapshot", subject) in kinds, f"no snapshot at once for {subject}"
        received.extend(frames)
    watcher.buffer[:0] = received  # compared below with the rest

    documents: dict[int, dict[str, Any]] = {}
    compared = {rate_subject: 0, overview_subject: 0}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEFAULT_TIMEOUT
    while min(compared.values()) < 2:
        assert loop.time() < deadline, f"meta-subject messages matched to /stats: {compared}"
        document = (await mon.get("/stats", params={"format": "json"})).json()
        documents.setdefault(document["ts"], document)
        remaining = []
        for frame in watcher.buffer:
            if frame.get("type") != "message" or int(frame["fields"]["ts"]) not in documents:
                remaining.append(frame)
                continue
            reference = documents[int(frame["fields"]["ts"])]
            if frame["subject"] == rate_subject:
                check_indicator_message(
                    frame, reference["indicators"]["incoming_messages_per_second"]
                )
            else:
                check_overview_message(frame, reference)
            compared[frame["subject"]] += 1
        watcher.buffer[:] = remaining
        await asyncio.sleep(0.1)


def check_indicator_message(frame: dict[str, Any], indicator: dict[str, Any]) -> None:
    fields = frame["fields"]
    assert frame["retained"] is True
    if frame["kind"] == "update":
        assert frame["qos"] == "standard", frame
    assert float(frame["content"]) == indicator["current"]
    assert float(fields["current"]) == indicator["current"]
    expected_keys = {"current", "ts"}
    for window, values in indicator["windows"].items():
        expected_keys.add(f"{window}.count")
        assert int(fields[f"{window}.count"]) == values["count"], window
        if values["count"]:
            for stat in ("max", "avg", "stddev"):
                expected_keys.add(f"{window}.{stat}")
                assert float(fields[f"{window}.{stat}"]) == values[stat], f"{window}.{stat}"
    assert set(fields) == expected_keys


def check_overview_message(frame: dict[str, Any], document: dict[str, Any]) -> None:
    fields = frame["fields"]
    assert frame["content"] == fields["ts"]
    for name in INDICATOR_NAMES:
        assert float(fields[name]) == document["indicators"][name]["current"], name
    for name in ("sessions", "subscriptions", "subjects", "cache_messages", "uptime"):
        assert name in fields, name
    assert float(fields["uptime"]) > 0


async def test_archive_layout_default_location_and_off(server_factory):
    """Without MetricsArchive the archive is ./data/archive (the server's working directory);
    an empty MetricsArchive turns it off. Files: <UTC date>/<node>/samples-<UTC hour>.csv.open
    for the hour being written."""
    default = server_factory(ServerName=NODE, MetaSubjectInterval=0)
    off = server_factory(ServerName=NODE, MetaSubjectInterval=0, MetricsArchive="")
    root = default.workdir / "data" / "archive"
    sampled: dict[ServerProcess, int] = {}
    for srv in (default, off):
        async with monitor_http(srv) as mon:
            start = (await mon.get("/stats", params={"format": "json"})).json()["ts"]
            for _ in range(100):
                sampled[srv] = (await mon.get("/stats", params={"format": "json"})).json()["ts"]
                if sampled[srv] >= start + 2:
                    break
                await asyncio.sleep(0.05)
    rows = await archive_through(root, sampled[default])
    check_archive_lines(rows)
    files = sorted(root.glob(f"*/{NODE}/*"))
    assert files
    assert files[-1].name.endswith(".csv.open"), "the current hour is written as .open"
    for path in files:
        match = re.fullmatch(r"samples-(\d\d)\.csv(\.open)?", path.name)
        assert match, path
        for row in read_archive_file(path):
            moment = datetime.fromtimestamp(int(row["ts"]), UTC)
            assert path.parent.parent.name == moment.strftime("%Y-%m-%d"), (path, row)
            assert match.group(1) == moment.strftime("%H"), (path, row)
    assert not (off.workdir / "data").exists(), "MetricsArchive = (empty) writes nothing"
    assert list(off.workdir.glob("**/samples-*")) == []
