"""Every monitoring view formats one hand-built read model (ADR 014).

The read model is built here from raw samples with the standard library (``statistics``), not
with the code under test, and each view (/stats text and JSON, meta-subjects, Prometheus, the
MBean tables) must show exactly those numbers. A last group checks that the sampler publishes
such a read model, and the LoopBridge's thread rule.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import threading
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pushgrid.config import Settings
from pushgrid.metrics.canary import CanaryState
from pushgrid.metrics.counters import Counters
from pushgrid.metrics.delays import DelayHistogram, DelaySnapshot
from pushgrid.metrics.indicators import INDICATOR_NAMES, INDICATORS
from pushgrid.metrics.readmodel import ArchiveReading, IndicatorReading, ReadModel, WindowReading
from pushgrid.metrics.sampler import RECENT_SECONDS, Sampler
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops.accounting import EMPTY_ACCOUNTING, AccountingDocument
from pushgrid.server.cluster.status import ClusterStatus, MemberView, standalone_status
from pushgrid.server.engine.base import EngineStats, Published, PublishRequest
from pushgrid.server.monitoring.beans import server_beans
from pushgrid.server.monitoring.loop_bridge import LoopBridge
from pushgrid.server.monitoring.mbeans import MBean
from pushgrid.server.monitoring.meta import meta_messages, publish_meta_subjects
from pushgrid.server.monitoring.numbers import number_text
from pushgrid.server.monitoring.ports import DeflateStats, LiveState
from pushgrid.server.monitoring.prometheus_exporter import build_registry
from pushgrid.server.monitoring.stats_page import stats_document, stats_text

TS = 1_800_000_000
SAMPLES = [3.0, 4.0, 8.0, 9.0]  # 1m window of every indicator: max 9, avg 6, pstdev sqrt(6.5)
HOT = {
    "ts": TS,
    "top_n": 2,
    "capacity": 100,
    "window": 10.0,
    "units": {"messages_in": "messages/s"},
    "error_bounds": {"messages_in": 0.5, "messages_out": 0.0, "bytes_out": 0.0},
    "rankings": {
        "messages_in": [{"subject": "/a", "value": 12.5, "error": 0.5, "history": [12.5]}],
        "messages_out": [],
        "bytes_out": [],
        "subscribers": [{"subject": "/a", "value": 3, "error": 0}],
    },
}


def reading_of(samples: list[float]) -> WindowReading:
    if not samples:
        return WindowReading(0, None, None, None)
    return WindowReading(
        len(samples), max(samples), statistics.fmean(samples), statistics.pstdev(samples)
    )


def hand_built() -> ReadModel:
    """1m holds SAMPLES, 5m a single 2.5, every other window is empty."""
    windows = dict.fromkeys(WINDOW_NAMES, reading_of([]))
    windows["1m"] = reading_of(SAMPLES)
    windows["5m"] = reading_of([2.5])
    indicators = {
        name: IndicatorReading(float(index) + 0.5, MappingProxyType(dict(windows)))
        for index, name in enumerate(INDICATOR_NAMES)
    }
    archive = ArchiveReading(True, 1_800_000_001.25, 2)
    return ReadModel(TS, MappingProxyType(indicators), archive, HOT)


COUNTERS = {name: 10 + index for index, name in enumerate(Counters.__slots__)}


def _flush_delays() -> DelaySnapshot:
    histogram = DelayHistogram()
    for seconds in (0.0004, 0.004, 0.004, 0.2):
        histogram.observe(seconds)
    return histogram.snapshot()


LIVE = LiveState(
    server_name="node-a",
    uptime=12.5,
    started_at=1_799_999_987.5,
    engine_name="memory",
    delivery_mode="standalone",
    counters=COUNTERS,
    engine=EngineStats(subjects=4, cached_messages=5, cached_bytes=600, dropped_snapshots=3),
    refusals={
        "auth_failures": 1,
        "auth_throttled": 2,
        "pending_refused": 3,
        "protocol_errors": 4,
        "http_refused": 5,
        "inflating_refused": 6,
    },
    flush_delay=_flush_delays(),
    deflate=DeflateStats(True, 2, 10, 9_000, 2_500),
)


class Node:
    """A MonitoredNode made of fixed values."""

    stopping = False

    def __init__(self, model: ReadModel | None = None) -> None:
        self.model = model or hand_built()

    def read_model(self) -> ReadModel:
        return self.model

    def live_state(self) -> LiveState:
        return LIVE

    def cluster_status(self) -> ClusterStatus:
        return standalone_status("node-a")

    def canary_state(self) -> CanaryState:
        return CanaryState("node-a", True, 0, 0, ())

    def canary_probe_key(self) -> str:
        return "probe.test"

    def accounting(self) -> AccountingDocument:
        return EMPTY_ACCOUNTING


class NoOperations:
    def session_list(self) -> list[dict[str, Any]]:
        return []

    def session_detail(self, session_id: str, keep: int = 20) -> dict[str, Any] | None:
        return None

    def disconnect(self, session_id: str) -> bool:
        return False

    def slow_consumers(self) -> list[dict[str, Any]]:
        return []

    def trace_open(self, kind: str, value: str) -> dict[str, Any]:
        return {"error": "none"}

    def trace_read(self, trace_id: str, after: int, limit: int) -> dict[str, Any] | None:
        return None

    def trace_close(self, trace_id: str) -> bool:
        return False

    async def subject_snapshot(self, subject: str) -> dict[str, Any] | None:
        return None

    async def subscriber_count(self, subject: str) -> int:
        return 0

    def subscribed_subjects(self) -> int:
        return 7

    def subject_occupancy(self, subject: str) -> dict[str, Any]:
        return {"subject": subject, "subscribers": 0, "members": {}}

    def subject_presence(self, subject: str) -> dict[str, Any]:
        return {"subject": subject, "enabled": False, "subscribers": 0, "clients": []}

    def occupied_subjects(self) -> int:
        return 0

    async def publish_alert(self, summary: str, fields: Any) -> int:
        return 0

    def watch(self, pattern: str) -> dict[str, Any]:
        return {"pattern": pattern, "watched": True}

    def unwatch(self, pattern: str) -> dict[str, Any]:
        return {"pattern": pattern, "watched": False}

    async def subject_list(self, pattern: str) -> dict[str, Any]:
        return {"pattern": pattern, "subjects": [], "truncated": False}

    async def subject_history(self, subject: str, limit: int) -> list[dict[str, Any]]:
        return []

    async def remove_snapshot(self, subject: str) -> dict[str, Any]:
        return {"subject": subject, "removed": False, "epoch": "e", "seq": 0}

    def unsubscribe(self, session_id: str, subject: str) -> bool:
        return False


STDDEV = statistics.pstdev(SAMPLES)


# --- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"), [(3, "3"), (3.0, "3"), (2.5, "2.5"), (1e-7, "1e-07"), (-0.0, "0")]
)
def test_number_text(value: float, text: str) -> None:
    assert number_text(value) == text


# --- /stats ----------------------------------------------------------------------------------


def test_stats_json_shows_the_read_model_and_the_live_state() -> None:
    document = stats_document(hand_built(), LIVE)
    assert (document["server"], document["ts"], document["uptime"]) == ("node-a", TS, 12.5)
    assert document["totals"]["messages_in_total"] == COUNTERS["messages_in_total"]
    assert "sessions" not in document["totals"]
    assert document["gauges"] == {
        "sessions": COUNTERS["sessions"],
        "subscriptions": COUNTERS["subscriptions"],
        "subjects": 4,
        "cache_messages": 5,
        "cache_bytes": 600,
        "deflate_contexts": 2,
        "deflate_max_contexts": 10,
    }
    assert document["totals"]["dropped_snapshots_total"] == 3
    assert document["totals"]["deflate_uncompressed_bytes_total"] == 9_000
    assert document["totals"]["deflate_compressed_bytes_total"] == 2_500
    users = document["indicators"]["connected_users"]
    assert users["current"] == 0.5
    assert users["unit"] == "sessions"
    assert list(users["windows"]) == list(WINDOW_NAMES)
    assert users["windows"]["1m"] == {"max": 9.0, "avg": 6.0, "stddev": STDDEV, "count": 4}
    assert users["windows"]["1h"] == {"max": None, "avg": None, "stddev": None, "count": 0}
    assert document["hot_subjects"] == HOT


def test_stats_text_lines() -> None:
    lines = stats_text(stats_document(hand_built(), LIVE)).splitlines()
    assert lines[0] == f"# pushgrid stats server=node-a ts={TS}"
    assert "uptime_seconds 12.5" in lines
    assert f"bytes_out_total {COUNTERS['bytes_out_total']}" in lines
    assert "cache_bytes 600" in lines
    assert "connections_per_second 1.5" in lines
    assert "connections_per_second.1m.max 9" in lines
    assert "connections_per_second.1m.avg 6" in lines
    assert f"connections_per_second.1m.stddev {STDDEV!r}" in lines
    assert "connections_per_second.1m.count 4" in lines
    assert "connections_per_second.5m.avg 2.5" in lines
    assert "connections_per_second.5m.stddev 0" in lines
    assert "connections_per_second.15mo.max U" in lines
    assert "connections_per_second.15mo.count 0" in lines


# --- meta-subjects ---------------------------------------------------------------------------


class Recording:
    """The meta-subject publisher's engine: keeps what it is given."""

    def __init__(self) -> None:
        self.published: list[PublishRequest] = []

    async def publish(self, request: PublishRequest) -> Published:
        self.published.append(request)
        return Published(
            request.subject,
            request.content,
            request.fields,
            request.retained,
            "standard",
            epoch="e",
            seq=0,
            ts=0,
        )


def two_members(peer_state: str) -> ClusterStatus:
    me = MemberView("node-a", 1, "a", seed=True, state="up", is_self=True)
    peer = MemberView("node-b", 2, "b", seed=True, state=peer_state, is_self=False)  # type: ignore[arg-type]
    return ClusterStatus(
        engine="nats",
        mode="guaranteed",
        members=(me, peer),
        seeds=2,
        quorum_size=2,
        quorum=peer_state == "up",
        nats_connected=True,
    )


async def test_a_health_change_is_published_at_once_not_at_the_next_round() -> None:
    """The cluster meta-subject follows a change within ``health_period``, without waiting for
    the next round (``interval``): nothing else is published in between, nothing twice."""

    class Changing(Node):
        status = two_members("up")

        def cluster_status(self) -> ClusterStatus:
            return self.status

    node, engine = Changing(), Recording()
    task = asyncio.create_task(publish_meta_subjects(node, engine, 60.0, health_period=0.01))
    try:
        await asyncio.sleep(0.1)
        assert [(m.subject, m.content) for m in engine.published] == [
            ("/pushgrid/node-a/cluster", "ok")
        ]
        node.status = two_members("down")
        await asyncio.sleep(0.1)
        assert [(m.subject, m.content) for m in engine.published][1:] == [
            ("/pushgrid/node-a/cluster", "degraded")
        ]
        assert engine.published[-1].fields["member.node-b"] == "down"
    finally:
        task.cancel()


async def test_a_round_never_publishes_the_same_sampled_second_twice() -> None:
    """A sampler that is late (a loaded machine) has no new second when a round comes: that
    round publishes nothing, the next one the new second. An update always carries a new
    sample (found in a fresh-clone run: two updates of one ``ts``)."""

    class Late(Node):
        ts = TS

        def read_model(self) -> ReadModel:
            return dataclasses.replace(super().read_model(), ts=self.ts)

    node, engine = Late(), Recording()
    task = asyncio.create_task(publish_meta_subjects(node, engine, 0.02, health_period=0.01))
    try:
        await asyncio.sleep(0.15)  # several rounds, one sampled second
        indicator = f"/pushgrid/node-a/{INDICATOR_NAMES[0]}"
        seen = [m.fields["ts"] for m in engine.published if m.subject == indicator]
        assert seen == [str(TS)]
        node.ts = TS + 1
        await asyncio.sleep(0.1)
        seen = [m.fields["ts"] for m in engine.published if m.subject == indicator]
        assert seen == [str(TS), str(TS + 1)]
    finally:
        task.cancel()


def test_meta_round() -> None:
    messages = meta_messages(hand_built(), LIVE, standalone_status("node-a"))
    subjects = [m.subject for m in messages]
    assert subjects == [
        "/pushgrid/node-a/overview",
        *(f"/pushgrid/node-a/{name}" for name in INDICATOR_NAMES),
        "/pushgrid/node-a/cluster",
    ]
    assert all(m.retained and m.qos == "standard" for m in messages)
    overview = messages[0]
    assert overview.content == str(TS)
    assert overview.fields["connected_users"] == "0.5"
    assert overview.fields["sessions"] == str(COUNTERS["sessions"])
    assert (overview.fields["subjects"], overview.fields["cache_messages"]) == ("4", "5")
    assert overview.fields["uptime"] == "12.5"
    assert overview.fields["dropped_snapshots"] == "3"
    rate = messages[2]  # connections_per_second
    assert rate.content == "1.5"
    assert rate.fields["current"] == "1.5"
    assert rate.fields["ts"] == str(TS)
    assert (rate.fields["1m.max"], rate.fields["1m.avg"]) == ("9", "6")
    assert rate.fields["1m.stddev"] == repr(STDDEV)
    assert rate.fields["1m.count"] == "4"
    assert rate.fields["1h.count"] == "0"
    assert "1h.max" not in rate.fields
    assert "1h.avg" not in rate.fields
    assert messages[-1].content == "ok"


# --- Prometheus ------------------------------------------------------------------------------


def samples_of(node: Node) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(build_registry(node)).decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_prometheus_formats_the_same_numbers() -> None:
    samples = samples_of(Node())
    assert samples[("pushgrid_messages_received_total", ())] == COUNTERS["messages_in_total"]
    assert samples[("pushgrid_auth_throttled_total", ())] == 2
    assert samples[("pushgrid_http_refused_total", ())] == 5
    assert samples[("pushgrid_inflating_refused_total", ())] == 6
    assert (
        samples[("pushgrid_recoveries_total", (("outcome", "failure"),))]
        == COUNTERS["recovery_failures_total"]
    )
    assert samples[("pushgrid_cache_bytes", ())] == 600
    assert samples[("pushgrid_dropped_snapshots_total", ())] == 3
    assert samples[("pushgrid_deflate_contexts", ())] == 2
    assert samples[("pushgrid_deflate_max_contexts", ())] == 10
    assert samples[("pushgrid_deflate_uncompressed_bytes_total", ())] == 9_000
    assert samples[("pushgrid_deflate_compressed_bytes_total", ())] == 2_500
    assert samples[("pushgrid_indicator", (("indicator", "outgoing_bytes_per_second"),))] == 6.5

    def window(stat: str, name: str = "1m") -> float:
        key = (("indicator", "connected_users"), ("stat", stat), ("window", name))
        return samples[("pushgrid_indicator_window", key)]

    assert (window("max"), window("avg"), window("stddev")) == (9.0, 6.0, STDDEV)
    assert window("avg", "5m") == 2.5
    empty = [k for k in samples if k[0] == "pushgrid_indicator_window" and ("window", "1h") in k[1]]
    assert empty == [], "an empty window has no series"
    assert samples[("pushgrid_archive_enabled", ())] == 1
    assert samples[("pushgrid_archive_last_write_timestamp_seconds", ())] == 1_800_000_001.25
    assert samples[("pushgrid_archive_write_errors_total", ())] == 2
    rate = (("ranking", "messages_in"), ("subject", "/a"))
    assert samples[("pushgrid_hot_subject_rate", rate)] == 12.5
    assert samples[("pushgrid_hot_subject_subscribers", (("subject", "/a"),))] == 3
    assert samples[("pushgrid_cluster_quorum", ())] == 1
    buckets = {
        dict(labels)["le"]: value
        for (name, labels), value in samples.items()
        if name == "pushgrid_flush_delay_seconds_bucket"
    }
    assert (buckets["0.0005"], buckets["0.003"], buckets["0.005"]) == (1, 1, 3)
    assert (buckets["0.1"], buckets["0.25"], buckets["+Inf"]) == (3, 4, 4)
    assert samples[("pushgrid_flush_delay_seconds_count", ())] == 4
    assert samples[("pushgrid_flush_delay_seconds_sum", ())] == pytest.approx(0.2084)


# --- MBeans ----------------------------------------------------------------------------------


def beans() -> dict[str, MBean]:
    return beans_of(hand_built())


def beans_of(model: ReadModel) -> dict[str, MBean]:
    settings = Settings(ServerName="node-a", MonitorPassword="s3cret", MonitorUsername="ops")
    made = server_beans(Node(model), NoOperations(), settings, LoopBridge())
    return {bean.object_name.canonical: bean for bean in made}


def read(bean: MBean, attribute: str) -> Any:
    found = bean.attribute(attribute)
    assert found is not None, attribute
    return found.getter()


def test_indicator_bean_table() -> None:
    bean = beans()["pushgrid:name=ConnectionsPerSecond,type=Indicator"]
    names = [a.name for a in bean.attributes]
    assert names[:7] == [
        "Description",
        "Unit",
        "Current",
        "SampleTime",
        "Recent",
        "Total",
        "Windows",
    ]
    assert len(names) == 7 + 4 * len(WINDOW_NAMES)
    assert read(bean, "Current") == 1.5
    assert read(bean, "SampleTime") == TS
    assert read(bean, "Total") == COUNTERS["connections_total"]
    assert read(bean, "Max1m") == 9.0
    assert read(bean, "Average1m") == 6.0
    assert read(bean, "StdDev1m") == STDDEV
    assert read(bean, "Count1m") == 4
    assert read(bean, "Max1h") is None
    assert read(bean, "Count1h") == 0
    assert read(bean, "Windows")["5m"] == {"max": 2.5, "avg": 2.5, "stddev": 0.0, "count": 1}
    types = {a.name: a.type for a in bean.attributes}
    assert (types["Count15mo"], types["StdDev15mo"]) == ("long", "double")


def test_server_cache_subjects_and_hot_beans() -> None:
    made = beans()
    server = made["pushgrid:type=Server"]
    assert read(server, "ServerName") == "node-a"
    assert read(server, "StartTime") == 1_799_999_987_500
    assert read(server, "ConnectedUsers") == COUNTERS["sessions"]
    configuration = read(server, "Configuration")
    assert configuration["MonitorPassword"] == "********"
    assert configuration["MonitorUsername"] == "ops"
    cache = made["pushgrid:type=Cache"]
    assert (read(cache, "Subjects"), read(cache, "CachedBytes")) == (4, 600)
    assert read(cache, "DroppedSnapshots") == 3
    compression = made["pushgrid:type=Compression"]
    assert [read(compression, name) for name in ("Enabled", "Contexts", "MaxContexts")] == [
        True,
        2,
        10,
    ]
    assert read(compression, "UncompressedBytes") == 9_000
    assert read(compression, "CompressedBytes") == 2_500
    assert read(made["pushgrid:type=Subjects"], "Subscribed") == 7
    hot = made["pushgrid:type=HotSubjects"]
    assert read(hot, "TopN") == 2
    assert read(hot, "IncomingMessages") == HOT["rankings"]["messages_in"]  # type: ignore[index]
    assert read(hot, "ErrorBounds") == HOT["error_bounds"]
    assert read(hot, "Document") == HOT


# --- the sampler publishes the read model ----------------------------------------------------


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def assert_close(got: WindowReading, want: WindowReading) -> None:
    assert (got.count, got.max) == (want.count, want.max)
    assert got.avg == pytest.approx(want.avg, rel=1e-12)
    assert got.stddev == pytest.approx(want.stddev, rel=1e-12)


def test_sampler_publishes_a_read_model_per_second() -> None:
    counters = Counters()
    clock = Clock(TS + 0.001)
    sampler = Sampler(counters, clock=clock)
    first = sampler.read_model
    assert first.ts == 0
    assert first.window("connected_users", "1m") == WindowReading(0, None, None, None)
    assert sampler.sample() == []  # the first reading: no second complete yet
    users: list[float] = []
    rates: list[float] = []
    for step, sessions in enumerate([3, 4, 8, 9], start=1):
        counters.sessions = sessions
        counters.messages_in_total += 10 * step
        clock.now = TS + step + 0.001
        (sample,) = sampler.sample()  # one reading just after each second: that second
        assert sample.ts == TS + step - 1
        users.append(float(sessions))
        rates.append(sample.values["incoming_messages_per_second"])
    model = sampler.read_model
    assert model is not first, "a new second is a new object"
    assert first.ts == 0, "a published read model never changes"
    assert model.ts == TS + 3
    assert model.current("connected_users") == 9.0
    assert_close(model.window("connected_users", "1m"), reading_of(users))
    assert rates == [10.0, 20.0, 30.0, 40.0]
    assert_close(model.window("incoming_messages_per_second", "1m"), reading_of(rates))
    assert model.window("incoming_messages_per_second", "1h").count == 4
    assert model.archive == ArchiveReading(False, 0.0, 0)
    assert model.recent_values("connected_users") == {
        str(TS + step): users[step] for step in range(4)
    }


def test_recent_holds_every_second_of_the_last_minute_even_after_a_blocked_loop() -> None:
    """The Indicator MBeans' ``Recent``: a poller that reads every few seconds (the admin API's
    history) still gets each second's own value, including the seconds a late reading fills."""
    counters = Counters()
    clock = Clock(TS + 0.001)
    sampler = Sampler(counters, clock=clock)
    sampler.sample()
    for step in range(1, 71):
        counters.connections_total += step
        clock.now = TS + step + 0.001
        if step != 40:  # a blocked loop: second 39 is read late, with second 40
            sampler.sample()
    recent = sampler.read_model.recent_values("connections_per_second")
    assert len(recent) == RECENT_SECONDS, "bounded: the last minute only"
    assert list(recent) == [str(TS + s) for s in range(70 - RECENT_SECONDS, 70)]
    assert recent[str(TS + 69)] == 70.0
    assert recent[str(TS + 39)] + recent[str(TS + 40)] == 40.0 + 41.0
    bean = beans_of(sampler.read_model)["pushgrid:name=ConnectionsPerSecond,type=Indicator"]
    assert read(bean, "Recent") == recent


def test_sampler_copies_the_hot_document() -> None:
    class Hot:
        calls = 0

        def document(self) -> dict[str, Any]:
            self.calls += 1
            return {"ts": self.calls}

    hot = Hot()
    clock = Clock(TS + 0.5)
    sampler = Sampler(Counters(), clock=clock)
    sampler.attach_hot(hot)
    assert sampler.read_model.hot == {"ts": 1}
    sampler.sample()  # the first reading completes no second: no new read model
    assert sampler.read_model.hot == {"ts": 1}
    clock.now += 1
    sampler.sample()
    assert sampler.read_model.hot == {"ts": 2}


# --- LoopBridge ------------------------------------------------------------------------------


@pytest.fixture
def loop_thread() -> Iterator[tuple[asyncio.AbstractEventLoop, LoopBridge, int]]:
    loop = asyncio.new_event_loop()
    bridge = LoopBridge(timeout=5)
    ready = threading.Event()
    ident: list[int] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        bridge.bind(loop)
        ident.append(threading.get_ident())
        loop.call_soon(ready.set)
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(5)
    yield loop, bridge, ident[0]
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_bridge_runs_calls_and_coroutines_on_the_loop_thread(
    loop_thread: tuple[asyncio.AbstractEventLoop, LoopBridge, int],
) -> None:
    _, bridge, loop_ident = loop_thread
    assert not bridge.on_loop_thread()
    assert bridge.wrap(threading.get_ident)() == loop_ident

    async def where(offset: int) -> int:
        await asyncio.sleep(0)
        return threading.get_ident() + offset

    assert bridge.wrap(where)(1) == loop_ident + 1


def test_unbound_bridge_calls_in_place() -> None:
    assert LoopBridge().wrap(threading.get_ident)() == threading.get_ident()


def test_every_indicator_has_a_bean() -> None:
    made = beans()
    for indicator in INDICATORS:
        assert f"pushgrid:name={indicator.mbean},type=Indicator" in made


def test_monitoring_never_imports_the_server_app() -> None:
    """The views take ports (server/monitoring/ports.py), not PushServer: no import of
    server.app, not even under TYPE_CHECKING."""
    import ast
    from pathlib import Path

    import pushgrid.server.monitoring

    package = Path(pushgrid.server.monitoring.__file__).parent
    offenders = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [f"{'.' * node.level}{node.module or ''}"]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if any(name in ("..app", "pushgrid.server.app") for name in names):
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
