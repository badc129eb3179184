"""The monitoring port as a trust boundary (issue 22 item 2; docs/security.md, "Boundaries").

A real member's monitoring port, probed as the issue's attacker did: a cross-site POST (CSRF),
a DNS-rebinding ``Host``, ``exec`` over GET, wildcard CORS, a bulk of 10,000 ``list`` requests,
connections holding partial bodies, and the ``Configuration`` attribute's secrets. Each test
failed on the code before the fix.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from .pgtest import ServerProcess, monitor_http

ALERTS = "/pushgrid/alerts"
PUBLISH_ALERT = {
    "type": "exec",
    "mbean": "pushgrid:type=Subjects",
    "operation": "publishAlert",
    "arguments": ["FAKE alert from a web page", {"rule": "csrf"}],
}
SNAPSHOT_OF_ALERTS = {
    "type": "exec",
    "mbean": "pushgrid:type=Subjects",
    "operation": "snapshot",
    "arguments": [ALERTS],
}
SECRETS = {
    "ClusterPassword": "cluster-pw-0xC0FFEE",
    "Admin.MemberPassword": "member-pw-0xBEEF",
    "Database": "postgresql://stats:dsn-pw-0xF00D@db.internal:5432/pushgrid",
    "Alerts.Webhook": "https://hooks.example.com/services/T000/B000/webhook-secret-0xABCD",
}


@pytest.fixture(scope="module")
def srv(module_server_factory) -> ServerProcess:
    return module_server_factory(ServerName="it-boundary", MetaSubjectInterval=0)


@pytest.fixture(scope="module")
def secret_srv(module_server_factory) -> ServerProcess:
    """Secrets in its configuration."""
    return module_server_factory(ServerName="it-secrets", MetaSubjectInterval=0, **SECRETS)


@pytest.fixture(scope="module")
def capped_srv(module_server_factory) -> ServerProcess:
    """The smallest answer cap (64 KiB)."""
    return module_server_factory(
        ServerName="it-capped", MetaSubjectInterval=0, JolokiaMaxAnswerBytes=65536
    )


def _problem(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["code"] == code, response.text


async def _alert_snapshot(srv: ServerProcess) -> Any:
    async with monitor_http(srv) as mon:
        answer = (await mon.post("/jolokia", json=SNAPSHOT_OF_ALERTS)).json()
    assert answer["status"] == 200, answer
    return answer["value"]


# --- CSRF and DNS rebinding --------------------------------------------------------------------


async def test_cross_site_text_plain_post_does_not_run_publish_alert(srv):
    """The issue's exploit: a page on another site POSTs text/plain (no CORS preflight) with its
    own Origin, through a rebound name: publishAlert ran and the fake alert was delivered."""
    assert await _alert_snapshot(srv) is None
    port = srv.monitor_port
    body = json.dumps(PUBLISH_ALERT)
    async with monitor_http(srv) as mon:
        rebinding = await mon.post(
            "/jolokia",
            content=body,
            headers={
                "Content-Type": "text/plain",
                "Origin": f"http://evil.example:{port}",
                "Host": f"evil.example:{port}",
            },
        )
        _problem(rebinding, 403, "host_not_allowed")
        cross_site = await mon.post(
            "/jolokia",
            content=body,
            headers={"Content-Type": "text/plain", "Origin": "https://evil.example"},
        )
        _problem(cross_site, 403, "origin_not_allowed")
        json_cross_site = await mon.post(
            "/jolokia",
            content=body,
            headers={"Content-Type": "application/json", "Origin": "https://evil.example"},
        )
        _problem(json_cross_site, 403, "origin_not_allowed")
        sandboxed = await mon.post(
            "/jolokia", content=body, headers={"Content-Type": "application/json", "Origin": "null"}
        )
        _problem(sandboxed, 403, "origin_not_allowed")
        plain = await mon.post("/jolokia", content=body, headers={"Content-Type": "text/plain"})
        _problem(plain, 415, "unsupported_media_type")
        form = await mon.post(
            "/jolokia", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        _problem(form, 415, "unsupported_media_type")
    assert await _alert_snapshot(srv) is None, "no refused request published an alert"


async def test_allowed_hosts_and_same_origin(srv):
    """Loopback names and IP addresses pass; a page served by the port itself may call it."""
    port = srv.monitor_port
    async with monitor_http(srv) as mon:
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "10.1.2.3"):
            response = await mon.get("/jolokia/version", headers={"Host": host})
            assert response.status_code == 200, (host, response.text)
        response = await mon.get("/health", headers={"Host": f"pushgrid.attacker.test:{port}"})
        _problem(response, 403, "host_not_allowed")
        own = f"http://127.0.0.1:{port}"
        response = await mon.post("/jolokia", json={"type": "version"}, headers={"Origin": own})
        assert response.status_code == 200, response.text
        assert response.json()["status"] == 200


async def test_a_configured_name_is_allowed(server_factory):
    srv = server_factory(MonitorAllowedHosts="monitor.internal, .prom.internal")
    port = srv.monitor_port
    expected = {
        "monitor.internal": 200,
        f"PROM.internal:{port}": 200,  # ".prom.internal": the name and every name under it
        f"scraper-1.prom.internal:{port}": 200,
        f"evilprom.internal:{port}": 403,
        # the configured list replaces the default: localhost is no longer one of its names
        f"localhost:{port}": 403,
    }
    async with monitor_http(srv) as mon:
        for host, status in expected.items():
            response = await mon.get("/metrics", headers={"Host": host})
            assert response.status_code == status, (host, response.text)


async def test_exec_over_get_is_refused(srv, connect):
    """``exec`` over GET closed a session from an <img> tag; now it needs a POST."""
    victim = await connect(srv)
    async with monitor_http(srv) as mon:
        listed = (
            await mon.post(
                "/jolokia",
                json={"type": "exec", "mbean": "pushgrid:type=Sessions", "operation": "list"},
            )
        ).json()
        ids = [session["id"] for session in listed["value"]]
        assert ids, listed
        for path in (
            f"/jolokia/exec/pushgrid:type=Sessions/disconnect/{ids[0]}",
            f"/jolokia/?p=/exec/pushgrid:type=Sessions/disconnect/{ids[0]}",
            "/jolokia/write/pushgrid:type=Cache/CacheExpireTime/1",
        ):
            response = await mon.get(path)
            assert response.status_code == 405, (path, response.text)
            answer = response.json()
            assert answer["status"] == 405
            assert "need a POST" in answer["error"]
        again = (
            await mon.post(
                "/jolokia",
                json={"type": "exec", "mbean": "pushgrid:type=Sessions", "operation": "list"},
            )
        ).json()
    assert sorted(s["id"] for s in again["value"]) == sorted(ids), "nobody was disconnected"
    assert (await victim.subscribe("/it/boundary/still-here"))["status"] == "allow"


async def test_no_cors_and_nosniff_on_every_answer(srv):
    async with monitor_http(srv) as mon:
        for path in ("/stats?format=json", "/health", "/stats", "/metrics", "/jolokia/version"):
            response = await mon.get(path)
            assert response.status_code == 200, path
            assert not [h for h in response.headers if h.lower().startswith("access-control-")], (
                path,
                dict(response.headers),
            )
            assert response.headers["x-content-type-options"] == "nosniff"
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        options = await mon.options(
            "/stats", headers={"Origin": f"http://127.0.0.1:{srv.monitor_port}"}
        )
        assert "access-control-allow-origin" not in options.headers


# --- Jolokia bulk and answer bounds --------------------------------------------------------------


async def test_bulk_of_10000_list_requests_is_refused_whole(srv):
    """10,000 ``list`` requests (180 KB) made a 340 MB answer; now one Jolokia error."""
    bulk = [{"type": "list"}] * 10_000
    async with monitor_http(srv) as mon:
        response = await mon.post(
            "/jolokia",
            content=json.dumps(bulk).encode(),
            headers={"Content-Type": "application/json"},
        )
        # 180 KB is above MonitorMaxRequestBody (64 KiB) already: the body is refused
        _problem(response, 413, "body_too_large")
        # a body under the size limit with too many requests: the Jolokia error
        many = [{"type": "version"}] * 101
        response = await mon.post("/jolokia", json=many)
        assert response.status_code == 413, response.text
        answer = response.json()
        assert answer["status"] == 413
        assert "JolokiaMaxBulkRequests" in answer["error"], answer
        allowed = await mon.post("/jolokia", json=[{"type": "list"}] * 100)
    assert allowed.status_code == 200
    answers = allowed.json()
    assert len(answers) == 100
    assert {a["status"] for a in answers} == {200}
    assert answers[0]["value"] == answers[99]["value"]


async def test_answer_capped_with_a_jolokia_error_per_request(capped_srv):
    async with monitor_http(capped_srv) as mon:
        one = await mon.post("/jolokia", json={"type": "list"})
        single = len(one.content)
        assert one.json()["status"] == 200
        assert single < 65536
        response = await mon.post("/jolokia", json=[{"type": "list"}] * 20)
    assert response.status_code == 200
    answers = response.json()
    assert len(answers) == 20, "one answer per request, in order"
    statuses = [a["status"] for a in answers]
    fitting = statuses.count(200)
    assert fitting >= 1
    assert statuses == [200] * fitting + [413] * (20 - fitting), statuses
    assert "JolokiaMaxAnswerBytes" in answers[-1]["error"]
    assert len(response.content) <= 65536 + 20 * 1024


# --- pending connections and bodies -------------------------------------------------------------


async def test_pending_connections_are_capped_per_address(srv):
    """150 connections holding ~1 MB partial bodies added 148 MB RSS: now the 33rd from one
    address (MonitorMaxPendingConnectionsPerAddress = 32) is answered 503, and a body above
    MonitorMaxRequestBody (64 KiB) is refused 413."""
    head = (
        f"POST /jolokia HTTP/1.1\r\nHost: 127.0.0.1:{srv.monitor_port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
    ).encode()
    held: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        for _ in range(32):
            reader, writer = await asyncio.open_connection(srv.host, srv.monitor_port)
            writer.write(head + b"[" + b" " * 30_000)
            await writer.drain()
            held.append((reader, writer))
        reader, writer = await asyncio.open_connection(srv.host, srv.monitor_port)
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
        assert b"retry-after: 5" in answer.lower()
    finally:
        for _, writer in held:
            writer.close()
    async with monitor_http(srv) as mon:
        # the slots are free again once those connections are gone
        for _ in range(50):
            try:
                response = await mon.get("/health")
            except httpx.RemoteProtocolError:
                await asyncio.sleep(0.05)
                continue
            if response.status_code == 200:
                break
            await asyncio.sleep(0.05)
        assert response.status_code == 200
        big = await mon.post(
            "/jolokia",
            content=b"[" + b" " * 70_000 + b"]",
            headers={"Content-Type": "application/json"},
        )
        _problem(big, 413, "body_too_large")


# --- secrets in the Configuration attribute -----------------------------------------------------


async def test_configuration_attribute_masks_secrets(secret_srv):
    async with monitor_http(secret_srv) as mon:
        response = await mon.post(
            "/jolokia",
            json={"type": "read", "mbean": "pushgrid:type=Server", "attribute": "Configuration"},
        )
        everything = await mon.post("/jolokia", json={"type": "read", "mbean": "pushgrid:*"})
    config = response.json()["value"]
    secrets = ["cluster-pw-0xC0FFEE", "member-pw-0xBEEF", "dsn-pw-0xF00D", "webhook-secret-0xABCD"]
    for text in (response.text, everything.text):
        assert not [s for s in secrets if s in text], "a secret is shown"
    assert config["ClusterPassword"] == "********"
    assert config["Admin.MemberPassword"] == "********"
    assert config["Alerts.Webhook"] == "********"
    assert config["Database"] == "postgresql://stats:********@db.internal:5432/pushgrid"
    assert config["Alerts.WebhookRetries"] == 3, "numbers are never secrets"
    assert config["ServerName"] == "it-secrets"
