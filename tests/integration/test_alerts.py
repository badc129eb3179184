"""Alert rules against a real server driven by real clients: a rule fires when clients connect
and resolves when they leave; the history is in SQL; the changes reach a pushgrid client on
``/pushgrid/alerts`` and a webhook (retried after a failure); ``export-rules`` passes promtool.

The built-in rules in a real 3-member cluster: a SIGKILL fires MemberDown (the time is printed),
a restart resolves it and fires MemberRestarted; silences and acknowledgements through the API,
audited.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from .cluster import Cluster
from .pgtest import (
    DEFAULT_TIMEOUT,
    AdminHarness,
    ServerProcess,
    WsClient,
    assert_problem,
    member_entry,
    run_cli,
    until,
    write_conf,
)

API = "/api/v1"


class Webhook:
    """A tiny HTTP receiver on 127.0.0.1: answers 500 to the first POST, 204 to the others."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.attempts = 0
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/hook"

    async def start(self) -> Webhook:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body = await reader.readexactly(length)
        self.attempts += 1
        if self.attempts == 1:
            writer.write(b"HTTP/1.1 500 Oops\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        else:
            self.bodies.append(json.loads(body))
            writer.write(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    hook = await Webhook().start()
    yield hook
    assert hook.server is not None
    hook.server.close()


async def _until(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    return await until(check, what, 20.0)


RULES = [
    {
        "name": "ManyUsers",
        "indicator": "connected_users",
        "window": "current",
        "comparison": ">=",
        "threshold": 4,
        "for": 1,
        "severity": "critical",
        "scope": "member",
        "description": "too many users on one member",
    },
    {
        "name": "ClusterUsers",
        "indicator": "connected_users",
        "window": "1m",
        "stat": "max",
        "comparison": ">",
        "threshold": 2,
        "scope": "cluster",
    },
]


async def test_rule_fires_and_resolves_with_real_clients(
    tmp_path: Path,
    server_factory: Callable[..., ServerProcess],
    connect: Callable[..., Awaitable[WsClient]],
    webhook: Webhook,
) -> None:
    # MaxFieldsPerSubject below an announcement's 8 fields: the bound is the publishers', an
    # alert still gets out whole (docs/alerts.md)
    push = server_factory(ServerName="alert-1", MetaSubjectInterval=0, MaxFieldsPerSubject=2)
    admin = AdminHarness(
        tmp_path / "admin",
        [member_entry("alert-1", push)],
        alerts_webhook=webhook.url,
        alerts_webhook_retries=2,
    )
    runner = admin.app.state.alert_runner
    try:
        async with admin.client("operator") as api:
            for rule in RULES:
                response = await api.post(f"{API}/alerts/rules", json=rule)
                assert response.status_code == 201, response.text
            assert_problem(await api.post(f"{API}/alerts/rules", json=RULES[0]), 409)
            bad = {**RULES[0], "name": "Bad", "comparison": "~"}
            assert_problem(await api.post(f"{API}/alerts/rules", json=bad), 422)
            async with admin.client("viewer") as viewer:
                assert_problem(await viewer.post(f"{API}/alerts/rules", json=RULES[0]), 403)

            watcher = await connect(push)  # a pushgrid client that receives the alerts
            await watcher.subscribe("/pushgrid/alerts")
            runner.start()
            crowd = [await connect(push) for _ in range(3)]  # 4 users with the watcher

            async def firing() -> list[dict[str, Any]]:
                items = (await api.get(f"{API}/alerts")).json()["items"]
                return [a for a in items if a["rule"] == "ManyUsers" and a["state"] == "firing"]

            (alert,) = await _until(firing, "ManyUsers firing")
            assert alert["target"] == "alert-1"
            assert alert["severity"] == "critical"
            assert alert["value"] >= 4
            for client in crowd:
                await client.close()

            async def resolved() -> bool:
                items = (await api.get(f"{API}/alerts")).json()["items"]
                return not any(a["rule"] == "ManyUsers" for a in items)

            await _until(resolved, "ManyUsers resolved")
            history = (await api.get(f"{API}/alerts/history")).json()["items"]
            states = [e["state"] for e in reversed(history) if e["rule"] == "ManyUsers"]
            assert states == ["firing", "resolved"]  # an average over 1 s, no partial window
            cluster = [e for e in history if e["rule"] == "ClusterUsers"]
            assert cluster
            assert {e["target"] for e in cluster} == {"cluster"}

            frames = await watcher.messages(2, "/pushgrid/alerts")
            fields = [(f["fields"]["rule"], f["fields"]["state"]) for f in frames]
            assert ("ManyUsers", "firing") in fields or ("ClusterUsers", "firing") in fields
            announced = {"rule", "target", "state", "severity", "value", "threshold"}
            assert all(announced | {"expression", "at"} == set(f["fields"]) for f in frames)

            async def webhook_saw_resolution() -> bool:
                return any(
                    (b["rule"], b["state"]) == ("ManyUsers", "resolved") for b in webhook.bodies
                )

            await _until(webhook_saw_resolution, "the webhook POST of the resolution")
            assert webhook.attempts > len(webhook.bodies)  # the first POST failed, was retried
            assert ("ManyUsers", "firing") in [(b["rule"], b["state"]) for b in webhook.bodies]
    finally:
        await runner.stop()
        admin.close()


async def test_export_rules_passes_promtool(tmp_path: Path) -> None:
    admin = AdminHarness(tmp_path / "admin", [])
    try:
        async with admin.client("operator") as api:
            for rule in RULES:
                assert (await api.post(f"{API}/alerts/rules", json=rule)).status_code == 201
            exported = (await api.get(f"{API}/alerts/rules/export")).text
    finally:
        admin.close()
    assert 'alert: "ManyUsers"' in exported
    assert 'sum(pushgrid_indicator_window{indicator=\\"connected_users\\"' in exported
    conf = write_conf(tmp_path / "pushgrid.conf", {"Database": admin.url})
    out = tmp_path / "pushgrid.rules.yml"
    result = run_cli("admin", "export-rules", "--config", str(conf), "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_text() == exported
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    check = subprocess.run(  # noqa: ASYNC221 - a short, bounded child process
        [promtool, "check", "rules", str(out)],
        capture_output=True,
        text=True,
        timeout=DEFAULT_TIMEOUT * 3,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 2 rules found" in check.stdout


FIRE_WITHIN = 60.0  # a bound for a failing test, not a measurement


async def _alert(api: Any, rule: str, target: str) -> dict[str, Any] | None:
    items = (await api.get(f"{API}/alerts")).json()["items"]
    return next((a for a in items if (a["rule"], a["target"]) == (rule, target)), None)


async def test_builtin_rules_on_a_killed_and_restarted_member(
    tmp_path_factory: pytest.TempPathFactory, webhook: Webhook
) -> None:
    """No rule set up: SIGKILL of m3 fires MemberDown on m3, a restart resolves it and fires
    MemberRestarted (silenced beforehand: listed, not announced); acknowledging and silencing
    are audited; steady members never alert."""
    cluster = Cluster(tmp_path_factory.mktemp("alerts"), configured=3, mode="Standard")
    admin: AdminHarness | None = None
    runner = None
    try:
        cluster.start()
        admin = AdminHarness(
            tmp_path_factory.mktemp("alerts-admin"),
            [f"m{i}={cluster.member(i).monitor_url}" for i in (1, 2, 3)],
            alerts_webhook=webhook.url,
            alerts_webhook_retries=3,
        )
        runner = admin.app.state.alert_runner
        async with admin.client("operator") as api:
            rules = {r["name"]: r for r in (await api.get(f"{API}/alerts/rules")).json()["items"]}
            assert {"MemberDown", "MemberRestarted", "QuorumLost"} <= set(rules)
            until = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
            silence = {"rule_id": rules["MemberRestarted"]["id"], "target": "m3", "until": until}
            response = await api.post(f"{API}/alerts/silences", json=silence)
            assert response.status_code == 201, response.text
            past = {**silence, "until": "2020-01-01T00:00:00+00:00"}
            assert_problem(await api.post(f"{API}/alerts/silences", json=past), 422)
            assert_problem(
                await api.post(f"{API}/alerts/silences", json={**silence, "rule_id": 99999}), 404
            )
            runner.start()

            async def evaluated() -> bool:
                return bool(runner.evaluations >= 8)

            await _until(evaluated, "8 evaluations")
            assert (await api.get(f"{API}/alerts")).json()["items"] == []  # a healthy cluster

            cluster.member(3).kill()  # SIGKILL
            killed = time.monotonic()
            while (down := await _alert(api, "MemberDown", "m3")) is None:
                assert time.monotonic() - killed < FIRE_WITHIN
                await asyncio.sleep(0.1)
            print(f"SIGKILL to MemberDown firing: {time.monotonic() - killed:.2f} s")
            assert down["state"] == "firing"
            assert down["severity"] == "critical"
            assert await _alert(api, "MemberDown", "m1") is None

            ack = {"rule_id": down["rule_id"], "target": "m3", "comment": "on it"}
            assert (await api.post(f"{API}/alerts/acknowledgements", json=ack)).status_code == 201
            acked = await _alert(api, "MemberDown", "m3")
            assert acked is not None
            assert acked["acknowledged_by"] == "test-operator"
            gone = {**ack, "target": "m1"}
            assert_problem(await api.post(f"{API}/alerts/acknowledgements", json=gone), 404)

            await cluster.member(3).astart()
            ready = time.monotonic()
            restarted = await _until(
                lambda: _alert(api, "MemberRestarted", "m3"), "MemberRestarted on m3"
            )
            print(f"m3 ready to MemberRestarted firing: {time.monotonic() - ready:.2f} s")
            assert restarted["silenced_until"] is not None

            async def down_resolved() -> bool:
                return await _alert(api, "MemberDown", "m3") is None

            await _until(down_resolved, "MemberDown resolved")
            print(f"m3 ready to MemberDown resolved: {time.monotonic() - ready:.2f} s")

            async def announced() -> bool:
                seen = {(b["rule"], b["target"], b["state"]) for b in webhook.bodies}
                return ("MemberDown", "m3", "resolved") in seen

            await _until(announced, "the webhook POST of MemberDown resolved")
            seen = {(b["rule"], b["target"], b["state"]) for b in webhook.bodies}
            assert ("MemberDown", "m3", "firing") in seen
            assert not [b for b in webhook.bodies if b["rule"] == "MemberRestarted"]  # silenced
            history = (await api.get(f"{API}/alerts/history")).json()["items"]
            assert {(e["rule"], e["target"]) for e in history} == {
                ("MemberDown", "m3"),
                ("MemberRestarted", "m3"),
            }
        async with admin.client("admin") as api:
            audit = (await api.get(f"{API}/audit", params={"limit": 100})).json()["items"]
        actions = {(e["action"], e["status"]) for e in audit}
        assert {("alerts.silence", 201), ("alerts.acknowledge", 201)} <= actions
        assert ("alerts.acknowledge", 404) in actions
    finally:
        if runner is not None:
            await runner.stop()
        cluster.kill_all()
        if admin is not None:
            admin.close()
