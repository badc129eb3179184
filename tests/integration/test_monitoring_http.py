"""The monitoring port over HTTP: /stats, /metrics, /health, Basic authentication and TLS.

docs/monitoring.md, "The monitoring port". ``promtool`` (Debian package ``prometheus``) checks the
Prometheus exposition; its test is skipped when it is not installed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import ssl
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from jolokia import JolokiaClient
from prometheus_client.parser import text_string_to_metric_families

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.member_panel import EMPTY_PANEL
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops.accounting import COLUMNS as ACCOUNTING_COLUMNS
from pushgrid.protocol.latency import LEGS, LOSS_KINDS

from .pgtest import (
    DEFAULT_TIMEOUT,
    RawWs,
    ServerProcess,
    free_port,
    monitor_http,
    parse_prometheus,
    parse_stats_text,
    self_signed_certificate,
)

STATS = ("max", "avg", "stddev", "count")
TOTALS = [
    "bytes_in_total",
    "bytes_out_total",
    "connections_total",
    "disconnections_total",
    "keepalive_timeouts_total",
    "messages_in_total",
    "messages_out_total",
    "publish_rejected_total",
    "recovery_failures_total",
    "recovery_successes_total",
    "slow_consumer_disconnects_total",
    "subscribes_total",
    "subscribe_failures_total",
    "dropped_snapshots_total",
    "deflate_uncompressed_bytes_total",
    "deflate_compressed_bytes_total",
]
GAUGES = ["sessions", "subscriptions", "subjects", "cache_messages", "cache_bytes"]
GAUGES += ["deflate_contexts", "deflate_max_contexts"]
PROMETHEUS_COUNTERS = [
    "pushgrid_connections_total",
    "pushgrid_disconnections_total",
    "pushgrid_messages_received_total",
    "pushgrid_messages_sent_total",
    "pushgrid_received_bytes_total",
    "pushgrid_sent_bytes_total",
    "pushgrid_slow_consumer_disconnects_total",
    "pushgrid_keepalive_timeouts_total",
    "pushgrid_publish_rejected_total",
    "pushgrid_dropped_snapshots_total",
    "pushgrid_deflate_uncompressed_bytes_total",
    "pushgrid_deflate_compressed_bytes_total",
]
PROMETHEUS_GAUGES = [
    "pushgrid_connected_users",
    "pushgrid_subscriptions",
    "pushgrid_subjects",
    "pushgrid_cache_messages",
    "pushgrid_cache_bytes",
    "pushgrid_deflate_contexts",
    "pushgrid_deflate_max_contexts",
]
USER, PASSWORD = "monitor", "s3cret:with-colon"
MONITOR_PATHS = [
    "/jolokia",
    "/jolokia/version",
    "/stats",
    "/stats?format=json",
    "/metrics",
    "/health",
]


@pytest.fixture(scope="module")
def srv(module_server_factory) -> ServerProcess:
    return module_server_factory(ServerName="it-node", MetaSubjectInterval=0)


async def first_sample(mon: httpx.AsyncClient) -> None:
    for _ in range(100):
        if (await mon.get("/stats", params={"format": "json"})).json()["ts"] > 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no sample within 5 s")


# --- /stats ----------------------------------------------------------------------------------


async def test_stats_text_lists_every_indicator_window_and_statistic(srv):
    async with monitor_http(srv) as mon:
        await first_sample(mon)
        response = await mon.get("/stats")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    header, values = parse_stats_text(response.text)
    assert header["server"] == "it-node"
    assert int(header["ts"]) > 0
    assert float(values["uptime_seconds"]) > 0
    for name in TOTALS + GAUGES:
        assert name in values, name
        assert int(values[name]) >= 0, name
    expected = {"uptime_seconds", *TOTALS, *GAUGES}
    expected |= {f"panel.{key}" for key in EMPTY_PANEL.as_dict()}  # the member panel
    # the canaries (docs/monitoring.md "Canaries"): this member's own, then its own pair
    expected |= {"canary_published_total", "canary_publish_failures_total", "canary_stale_pairs"}
    server = header["server"]
    expected |= {f"canary.{server}.{key}" for key in ("age_seconds", "latency_seconds", "stale")}
    # delivery latency and loss (no watched pattern here: no pattern lines)
    summary = ("count", "p50", "p90", "p99", "p999")
    expected |= {"delivery.window", "delivery.reports", "delivery.rejected_reports"}
    expected |= {f"delivery.latency.{k}" for k in summary}
    expected |= {f"delivery.legs.{leg}.{k}" for leg in LEGS for k in summary}
    expected |= {
        f"delivery.{part}.{kind}" for part in ("loss", "loss_total") for kind in LOSS_KINDS
    }
    # delivery accounting (docs/monitoring.md "Delivery accounting"; no watched pattern here)
    expected |= {f"deliveries.{column}_total" for column in ACCOUNTING_COLUMNS}
    expected.add("deliveries.unaccounted")
    for indicator in INDICATOR_NAMES:
        expected.add(indicator)
        for window in WINDOW_NAMES:
            for stat in STATS:
                name = f"{indicator}.{window}.{stat}"
                expected.add(name)
                assert name in values, name
                # every window holds at least the last sample
                assert values[name] != "U", name
            assert int(values[f"{indicator}.{window}.count"]) >= 1
    assert len(WINDOW_NAMES) == 12
    assert set(values) == expected, set(values) ^ expected


async def test_stats_before_the_first_sample_prints_u(server_factory):
    """A window without samples prints U (RRD's unknown) in the text and null in JSON.

    Only a server that has not sampled yet has empty windows: the check applies when the first
    reading comes before the first sample (it usually does: start-up ends anywhere in a second).
    """
    fresh = server_factory(MetaSubjectInterval=0)
    async with monitor_http(fresh) as mon:
        text = await mon.get("/stats")
        document = (await mon.get("/stats", params={"format": "json"})).json()
    header, values = parse_stats_text(text.text)
    if header["ts"] == "0":
        for indicator in INDICATOR_NAMES:
            for window in WINDOW_NAMES:
                for stat in ("max", "avg", "stddev"):
                    assert values[f"{indicator}.{window}.{stat}"] == "U"
                assert values[f"{indicator}.{window}.count"] == "0"
    if document["ts"] == 0:
        windows = document["indicators"]["connected_users"]["windows"]
        assert windows["1m"] == {"max": None, "avg": None, "stddev": None, "count": 0}


async def test_stats_json_matches_the_text_for_the_same_second(srv):
    async with monitor_http(srv) as mon:
        await first_sample(mon)
        for _ in range(20):
            response = await mon.get("/stats", params={"format": "json"})
            text = await mon.get("/stats")
            header, values = parse_stats_text(text.text)
            document = response.json()
            if str(document["ts"]) == header["ts"]:
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("text and JSON never read in the same second")
    assert response.headers["content-type"].startswith("application/json")
    assert document["server"] == "it-node"
    assert set(document["totals"]) == set(TOTALS)
    assert set(document["gauges"]) == set(GAUGES)
    assert list(document["indicators"]) == list(INDICATOR_NAMES)
    for name, indicator in document["indicators"].items():
        assert float(values[name]) == indicator["current"]
        assert indicator["unit"]
        assert list(indicator["windows"]) == list(WINDOW_NAMES)
        for window, stats in indicator["windows"].items():
            assert set(stats) == set(STATS)
            for stat in STATS:
                assert float(values[f"{name}.{window}.{stat}"]) == stats[stat], (name, window)
    for name in GAUGES:
        assert int(values[name]) == document["gauges"][name]


# --- /metrics --------------------------------------------------------------------------------


async def test_metrics_exposition(srv):
    async with monitor_http(srv) as mon:
        await first_sample(mon)
        response = await mon.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    samples = parse_prometheus(response.text)
    names = {name for name, _ in samples}
    for counter in PROMETHEUS_COUNTERS:
        assert counter in names, counter
        assert families[counter.removesuffix("_total")].type == "counter", counter
    for gauge in PROMETHEUS_GAUGES:
        assert gauge in names, gauge
        assert families[gauge].type == "gauge", gauge
    for outcome in ("success", "failure"):
        assert ("pushgrid_recoveries_total", (("outcome", outcome),)) in samples
    for outcome in ("ok", "failure"):
        assert ("pushgrid_subscribes_total", (("outcome", outcome),)) in samples
    assert "process_cpu_seconds_total" in names
    assert "process_resident_memory_bytes" in names
    for indicator in INDICATOR_NAMES:
        assert ("pushgrid_indicator", (("indicator", indicator),)) in samples
        for window in WINDOW_NAMES:
            for stat in ("max", "avg", "stddev"):
                labels = (("indicator", indicator), ("stat", stat), ("window", window))
                assert ("pushgrid_indicator_window", labels) in samples, labels
    assert families["pushgrid_indicator_window"].type == "gauge"


async def test_flush_delay_histogram_counts_the_server_flushes(srv, connect, subject):
    """pushgrid_flush_delay_seconds (ADR 012): one observation per flush of queued frames."""
    async with monitor_http(srv) as mon:
        before = _flush_delay_count((await mon.get("/metrics")).text)
        client = await connect(srv)
        assert (await client.subscribe(subject("flush")))["status"] == "allow"  # via the flusher
        family = _flush_delay_family((await mon.get("/metrics")).text)
    assert family.type == "histogram"
    count = _flush_delay_count_of(family)
    assert count > before
    buckets = [s for s in family.samples if s.name.endswith("_bucket")]
    assert buckets[-1].labels["le"] == "+Inf"
    assert buckets[-1].value == count
    assert [s.value for s in buckets] == sorted(s.value for s in buckets), "cumulative"


def _flush_delay_family(text: str) -> Any:
    families = {f.name: f for f in text_string_to_metric_families(text)}
    return families["pushgrid_flush_delay_seconds"]


def _flush_delay_count(text: str) -> float:
    return _flush_delay_count_of(_flush_delay_family(text))


def _flush_delay_count_of(family: Any) -> float:
    return next(s.value for s in family.samples if s.name.endswith("_count"))


def test_metrics_pass_promtool_check(srv):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus: `make system-deps`)")
    with httpx.Client(base_url=srv.monitor_url, trust_env=False, timeout=DEFAULT_TIMEOUT) as h:
        for _ in range(100):
            if h.get("/stats", params={"format": "json"}).json()["ts"] > 0:
                break
        body = h.get("/metrics").content
    assert b"pushgrid_indicator_window{" in body
    result = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, timeout=30, check=False
    )
    output = (result.stdout + result.stderr).decode("utf-8", "replace")
    assert result.returncode == 0, f"promtool check metrics failed:\n{output}"


# --- /health ---------------------------------------------------------------------------------


async def test_health(srv):
    async with monitor_http(srv) as mon:
        response = await mon.get("/health")
    assert response.status_code == 200
    document = response.json()
    assert document["status"] == "ok"
    assert document["server"] == "it-node"


def test_health_is_503_while_stopping(server_factory):
    """While a graceful stop waits for clients to go, /health answers 503 "stopping"."""
    stopping = server_factory(MetaSubjectInterval=0, ShutdownTimeout=5)
    peer = RawWs(stopping.host, stopping.port)  # never answers the server's close frame
    url = f"{stopping.monitor_url}/health"
    seen: list[Any] = []
    try:
        assert stopping.proc is not None
        assert httpx.get(url, trust_env=False, timeout=2).status_code == 200
        stopping.proc.send_signal(signal.SIGTERM)
        for _ in range(60):
            try:  # a new connection each time: the stop closes the open ones
                response = httpx.get(url, trust_env=False, timeout=2)
            except httpx.HTTPError as exc:
                seen.append(type(exc).__name__)
            else:
                seen.append(response.status_code)
                if response.status_code == 503:
                    assert response.json()["status"] == "stopping"
                    break
            if stopping.proc.poll() is not None:
                break
            time.sleep(0.05)
    finally:
        peer.close()
    assert 503 in seen, f"/health while stopping answered: {seen}"
    assert stopping.stop(timeout=15) == 0


# --- client traffic counters -----------------------------------------------------------------


async def test_monitoring_requests_are_not_client_traffic(srv, connect, subject):
    """Bytes counters count the client port only (docs: "bytes received from clients on the
    client port", "bytes written to clients on the client port"): scraping must not move them."""
    async with monitor_http(srv) as mon:
        before = (await mon.get("/stats", params={"format": "json"})).json()["totals"]
        for path in ("/metrics", "/stats", "/jolokia/read/pushgrid:type=Server", "/health"):
            assert (await mon.get(path)).status_code == 200
        after = (await mon.get("/stats", params={"format": "json"})).json()["totals"]
        assert (after["bytes_in_total"], after["bytes_out_total"]) == (
            before["bytes_in_total"],
            before["bytes_out_total"],
        ), f"monitoring requests moved the client byte counters: {before} -> {after}"

        # ... while client traffic does move them
        client = await connect(srv)
        await client.publish_ok(subject(), "x" * 1000)
        moved = (await mon.get("/stats", params={"format": "json"})).json()["totals"]
        assert moved["bytes_in_total"] >= after["bytes_in_total"] + 1000
        assert moved["bytes_out_total"] > after["bytes_out_total"]


# --- Basic authentication and TLS ------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


def tls_context(cert: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cert))


@pytest.fixture(scope="module")
def secured(module_server_factory, certificate) -> tuple[ServerProcess, str]:
    """A server with Basic authentication on both its plain and its TLS monitoring listener."""
    cert, key = certificate
    port = free_port()
    server = module_server_factory(
        ServerName="it-secured",
        MetaSubjectInterval=0,
        MonitorUsername=USER,
        MonitorPassword=PASSWORD,
        **{"MonitorHTTPS.Listen": f"127.0.0.1:{port}"},
        MonitorTLSCertificate=str(cert),
        MonitorTLSKey=str(key),
    )
    return server, f"https://127.0.0.1:{port}"


def secured_client(secured, certificate, scheme: str, **kwargs: Any) -> httpx.AsyncClient:
    server, https_url = secured
    base = server.monitor_url if scheme == "http" else https_url
    return httpx.AsyncClient(
        base_url=base,
        trust_env=False,
        timeout=DEFAULT_TIMEOUT,
        verify=tls_context(certificate[0]),
        **kwargs,
    )


@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("path", MONITOR_PATHS)
async def test_basic_authentication(secured, certificate, scheme, path):
    denied = [
        ("no credentials", {}),
        ("wrong password", {"auth": (USER, "wrong")}),
        ("wrong user", {"auth": ("someone", PASSWORD)}),
        ("password prefix", {"auth": (USER, PASSWORD.split(":")[0])}),
    ]
    for what, options in denied:
        async with secured_client(secured, certificate, scheme, **options) as http:
            response = await http.get(path)
        assert response.status_code == 401, (what, response.status_code, response.text)
        assert response.content == b"", f"{what}: a 401 carries nothing: {response.text[:200]}"
        assert response.headers["www-authenticate"].lower().startswith("basic"), what
    async with secured_client(secured, certificate, scheme) as http:
        for header in ("Basic !!!not-base64", "Bearer abc", f"Basic {'x' * 10}"):
            response = await http.get(path, headers={"Authorization": header})
            assert response.status_code == 401, header
            assert response.content == b"", header
    async with secured_client(secured, certificate, scheme, auth=(USER, PASSWORD)) as http:
        response = await http.get(path)
    assert response.status_code == 200, response.text
    assert response.content


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_basic_authentication_on_jolokia_posts(secured, certificate, scheme):
    bulk = [{"type": "read", "mbean": "pushgrid:type=Server", "attribute": "ServerName"}]
    async with secured_client(secured, certificate, scheme) as http:
        response = await http.post("/jolokia/read", json=bulk)
        assert response.status_code == 401
        assert response.content == b""
        response = await http.post("/jolokia", json=bulk, auth=(USER, "nope"))
        assert response.status_code == 401
        assert response.content == b""
        response = await http.post("/jolokia/read", json=bulk, auth=(USER, PASSWORD))
        assert response.status_code == 200
        assert response.json()[0]["value"] == "it-secured"


async def test_jolokia_client_with_credentials(secured, certificate):
    server, https_url = secured

    def read(base: str, username: str | None, password: str | None) -> Any:
        client = JolokiaClient(f"{base}/jolokia", username, password)
        client.session.trust_env = False
        client.session.verify = str(certificate[0])
        return client.get_attribute(mbean="pushgrid:type=Server", attribute="Configuration")

    for base in (server.monitor_url, https_url):
        refused = await asyncio.to_thread(read, base, None, None)
        assert getattr(refused, "status_code", None) == 401, refused
        wrong = await asyncio.to_thread(read, base, USER, "wrong")
        assert getattr(wrong, "status_code", None) == 401, wrong
        answer = await asyncio.to_thread(read, base, USER, PASSWORD)
        assert answer["status"] == 200, answer
        configuration = answer["value"]
        # secrets hidden (docs: "Configuration (map, secrets hidden)")
        assert PASSWORD not in json.dumps(configuration)
        assert configuration["MonitorUsername"] == USER
        assert configuration["MonitorPassword"] != PASSWORD


@pytest.mark.parametrize("keys", ["MonitorTLSCertificate", "TLSCertificate"])
async def test_tls_listener_next_to_the_plain_one(server_factory, certificate, keys):
    """MonitorHTTPS.Listen serves the same resources over TLS, with MonitorTLSCertificate /
    MonitorTLSKey or, without them, TLSCertificate / TLSKey; the plain listener still works."""
    cert, key = certificate
    port = free_port()
    prefix = "Monitor" if keys == "MonitorTLSCertificate" else ""
    server = server_factory(
        MetaSubjectInterval=0,
        **{
            "MonitorHTTPS.Listen": f"127.0.0.1:{port}",
            f"{prefix}TLSCertificate": str(cert),
            f"{prefix}TLSKey": str(key),
        },
    )
    https_url = f"https://127.0.0.1:{port}"
    async with httpx.AsyncClient(
        base_url=https_url, trust_env=False, timeout=DEFAULT_TIMEOUT, verify=tls_context(cert)
    ) as https:
        health = await https.get("/health")
        assert health.status_code == 200
        assert health.json()["status"] == "ok"
        assert (await https.get("/stats")).status_code == 200
        assert b"pushgrid_connected_users" in (await https.get("/metrics")).content
        version = (await https.get("/jolokia/version")).json()
        assert version["value"]["protocol"] == "7.2"
    async with httpx.AsyncClient(base_url=https_url, trust_env=False, verify=False) as insecure:
        assert (await insecure.get("/health")).status_code == 200
    async with monitor_http(server) as plain:
        assert (await plain.get("/health")).status_code == 200
        assert (await plain.get("/stats")).status_code == 200
    # the TLS port speaks TLS only
    with pytest.raises(httpx.HTTPError):
        async with httpx.AsyncClient(trust_env=False, timeout=3) as wrong:
            await wrong.get(f"http://127.0.0.1:{port}/health")


async def test_a_post_without_credentials_is_401_whatever_its_content_type(secured, certificate):
    """Issue 34: with MonitorUsername set, a Jolokia POST without credentials answered 415 (its
    media type) before the credentials were looked at, where a GET answered 401."""
    async with secured_client(secured, certificate, "http") as mon:
        for headers in ({"content-type": "text/plain"}, {}, {"content-type": "application/json"}):
            answer = await mon.post("/jolokia", content=b'{"type":"version"}', headers=headers)
            assert answer.status_code == 401, (headers, answer.status_code)
        plain = await mon.post(
            "/jolokia",
            content=b'{"type":"version"}',
            headers={"content-type": "text/plain"},
            auth=(USER, PASSWORD),
        )
        assert plain.status_code == 415, "the media type is checked once signed in"
        assert plain.json()["code"] == "unsupported_media_type"
