"""deploy/prometheus and deploy/grafana, checked by the real tools.

- ``promtool check config`` / ``check rules`` / ``test rules`` (unit tests of every alert).
- A real Prometheus (Debian package) runs the shipped scrape configuration (Basic auth, file
  service discovery, the shipped rules) against two real members and a real admin API; the
  indicators come back through the HTTP query API with the members' own values, every rule
  evaluates without error, and every PromQL expression of the Grafana dashboard parses and
  returns data.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from .pgtest import REPO, ServerProcess, clean_env, free_port, write_conf
from .test_admin_cli import ADMIN, AdminProcess

PROMETHEUS_DIR = REPO / "deploy" / "prometheus"
DASHBOARD = REPO / "deploy" / "grafana" / "pushgrid-dashboard.json"
PASSWORD = "scrape-secret"

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool missing (make system-deps installs it)"
)
needs_prometheus = pytest.mark.skipif(
    shutil.which("prometheus") is None, reason="prometheus missing (make system-deps)"
)


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", *args],
        cwd=PROMETHEUS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@needs_promtool
@pytest.mark.parametrize("config", ["prometheus.yml", "prometheus-kubernetes.yml"])
def test_promtool_accepts_the_scrape_configs(config):
    result = promtool("check", "config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 rule files found" in result.stdout


@needs_promtool
def test_promtool_accepts_the_rules_and_every_alert_is_unit_tested():
    result = promtool("check", "rules", "rules/recording.yml", "rules/alerts.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    result = promtool("test", "rules", "tests/alerts_test.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    alerts = {
        rule["alert"]
        for group in yaml.safe_load((PROMETHEUS_DIR / "rules/alerts.yml").read_text())["groups"]
        for rule in group["rules"]
    }
    tests = yaml.safe_load((PROMETHEUS_DIR / "tests/alerts_test.yml").read_text())["tests"]
    fired = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if case["exp_alerts"]
    }
    quiet = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if not case["exp_alerts"]
    }
    assert alerts == fired, "an alert without a test that makes it fire"
    assert alerts == quiet, "an alert without a test that keeps it quiet"


# --- a real Prometheus against real members ----------------------------------------------------


class Prometheus:
    """``prometheus`` on 127.0.0.1 with the shipped configuration, retargeted at the test."""

    def __init__(self, workdir: Path, members: list[ServerProcess], admin_port: int) -> None:
        config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
        config["global"].update(scrape_interval="1s", evaluation_interval="1s")
        config["rule_files"] = [str(PROMETHEUS_DIR / f) for f in config["rule_files"]]
        jobs = {job["job_name"]: job for job in config["scrape_configs"]}
        password = workdir / "monitor-password"
        password.write_text(PASSWORD)
        targets = workdir / "members.yml"
        targets.write_text(
            yaml.safe_dump(
                [
                    {"targets": [f"127.0.0.1:{m.monitor_port}"], "labels": {"member": name}}
                    for m in members
                    for name in [m.settings["ServerName"]]
                ]
            )
        )
        jobs["pushgrid-members"]["basic_auth"]["password_file"] = str(password)
        jobs["pushgrid-members"]["file_sd_configs"][0]["files"] = [str(targets)]
        jobs["pushgrid-admin"]["static_configs"][0]["targets"] = [f"127.0.0.1:{admin_port}"]
        self.config = workdir / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "prometheus.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [
                    "prometheus",
                    f"--config.file={self.config}",
                    f"--storage.tsdb.path={workdir / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=clean_env(),
            )

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with httpx.Client(trust_env=False, timeout=2.0) as http:
            while time.monotonic() < deadline:
                assert self.proc.poll() is None, self.log.read_text()
                try:
                    if http.get(f"{self.url}/-/ready").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        raise AssertionError(f"prometheus not ready:\n{self.log.read_text()}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def record_successful_run(database: str, finished: datetime) -> None:
    """A succeeded statistics run in job_runs, as ``pushgrid stats run`` records one."""
    from pushgrid.metrics.sqlstore import make_session_factory
    from pushgrid.metrics.sqlstore.models import JobRun

    with make_session_factory(database)() as session:
        session.add(
            JobRun(
                started_at=finished - timedelta(seconds=40),
                finished_at=finished,
                status="succeeded",
                as_of=finished - timedelta(minutes=50),
                master="local[*]",
                input_rows=3600,
                output_rows=84,
            )
        )
        session.commit()


@pytest.fixture(scope="module")
def stack(module_server_factory, tmp_path_factory) -> Iterator[dict[str, Any]]:
    auth = {"MonitorUsername": "prometheus", "MonitorPassword": PASSWORD}
    members = [module_server_factory(ServerName=name, **auth) for name in ("push-a", "push-b")]
    workdir = tmp_path_factory.mktemp("prometheus")
    admin_port = free_port()
    database = f"sqlite:///{workdir / 'admin.db'}"
    conf = write_conf(
        workdir / "admin.conf",
        {"Database": database, "Admin.Listen": f"127.0.0.1:{admin_port}", "LogLevel": "WARNING"},
    )
    admin = AdminProcess([*ADMIN, "serve", "--config", str(conf)], workdir, admin_port)
    prometheus: Prometheus | None = None
    try:
        admin.wait_ready()
        finished = datetime.now(UTC) - timedelta(minutes=3)
        record_successful_run(database, finished)
        prometheus = Prometheus(workdir, members, admin_port)
        prometheus.wait_ready()
        yield {"members": members, "prometheus": prometheus, "finished": finished}
    finally:
        if prometheus is not None:
            prometheus.stop()
        admin.stop()


async def query(prom: Prometheus, expr: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=prom.url, trust_env=False, timeout=10) as http:
        response = await http.get("/api/v1/query", params={"query": expr})
    body = response.json()
    assert response.status_code == 200, f"{expr}: {body.get('error')}"
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


async def eventually_query(prom: Prometheus, expr: str, ok: Any, within: float = 30.0) -> Any:
    """Query until ``ok(result)`` holds (Prometheus scrapes and evaluates once a second)."""
    deadline = time.monotonic() + within
    result: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        result = await query(prom, expr)
        if ok(result):
            return result
        await asyncio.sleep(0.25)
    raise AssertionError(f"{expr}: still {result} after {within} s")


def by_member(result: list[dict[str, Any]]) -> dict[str, float]:
    return {r["metric"].get("member", ""): float(r["value"][1]) for r in result}


@needs_prometheus
async def test_prometheus_scrapes_the_members_with_basic_auth_and_the_admin_api(stack):
    prom = stack["prometheus"]
    up = await eventually_query(
        prom, "up", lambda r: len(r) == 3 and all(x["value"][1] == "1" for x in r)
    )
    assert {(r["metric"]["job"], r["metric"].get("member")) for r in up} == {
        ("pushgrid-members", "push-a"),
        ("pushgrid-members", "push-b"),
        ("pushgrid-admin", None),
    }
    fresh = await eventually_query(prom, "pushgrid_stats_last_success_timestamp_seconds", bool)
    assert float(fresh[0]["value"][1]) == pytest.approx(stack["finished"].timestamp(), abs=1)


@needs_prometheus
async def test_the_indicators_come_back_through_the_query_api(stack, connect, subject):
    prom = stack["prometheus"]
    member = stack["members"][0]
    topic = subject("IBM")
    clients = [await connect(member) for _ in range(3)]
    for client in clients:
        await client.subscribe(topic)
    for n in range(15):
        await clients[0].publish_ok(topic, str(n))
    for client in clients:
        await client.messages(15, topic)
    async with httpx.AsyncClient(trust_env=False, auth=("prometheus", PASSWORD)) as http:
        own = (await http.get(f"{member.monitor_url}/stats?format=json")).json()

    def same(name: str, value: float) -> Any:
        return lambda r: by_member(r).get("push-a") == value

    totals = own["totals"]
    for expr, value in [
        ("pushgrid_connected_users", 3),
        ("pushgrid_messages_received_total", totals["messages_in_total"]),
        ("pushgrid_messages_sent_total", totals["messages_out_total"]),
        ("pushgrid_connections_total", totals["connections_total"]),
        ("pushgrid_received_bytes_total", totals["bytes_in_total"]),
        ("pushgrid_sent_bytes_total", totals["bytes_out_total"]),
    ]:
        await eventually_query(prom, expr, same(expr, float(value)))
    assert totals["messages_in_total"] == 15
    assert totals["messages_out_total"] == 45
    # Each member's rate exists once Prometheus holds two scrapes of it; the members are scraped
    # at their own offsets, so push-b's rate can appear a scrape after push-a's (CI saw it).
    rates = await eventually_query(
        prom,
        "member:pushgrid_messages_sent:rate1m",
        lambda r: by_member(r).get("push-a", 0) > 0 and "push-b" in by_member(r),
    )
    assert by_member(rates)["push-b"] == 0
    quorum = await query(prom, "pushgrid_cluster_quorum")
    assert by_member(quorum) == {"push-a": 1.0, "push-b": 1.0}


@needs_prometheus
async def test_every_rule_evaluates_without_error_and_no_alert_fires(stack):
    prom = stack["prometheus"]
    await eventually_query(prom, "cluster:pushgrid_stats_pipeline_age_seconds", bool)
    async with httpx.AsyncClient(base_url=prom.url, trust_env=False, timeout=10) as http:
        groups = (await http.get("/api/v1/rules")).json()["data"]["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    assert len(rules) == 20
    bad = [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
    assert not bad, bad
    firing = [r["name"] for r in rules if r["type"] == "alerting" and r["state"] != "inactive"]
    assert not firing, f"alerts on a healthy cluster: {firing}"


def dashboard_queries() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            queries.append((panel["title"], target["expr"]))
    return queries


@needs_prometheus
@pytest.mark.parametrize(("panel", "expr"), dashboard_queries())
async def test_every_dashboard_query_parses_and_returns_data(stack, panel, expr):
    concrete = re.sub(r"\$\{?member\}?", ".*", expr)  # the dashboard's "All" value
    assert "$" not in concrete, f"{panel}: unhandled variable in {expr}"
    result = await eventually_query(stack["prometheus"], concrete, bool)
    assert all(r["value"][1] not in ("NaN",) for r in result), (panel, result)


@needs_prometheus
async def test_the_member_variable_lists_every_member(stack):
    dashboard = json.loads(DASHBOARD.read_text())
    variable = next(v for v in dashboard["templating"]["list"] if v["name"] == "member")
    match = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["definition"])
    assert match, variable["definition"]
    metric, label = match.groups()
    async with httpx.AsyncClient(base_url=stack["prometheus"].url, trust_env=False) as http:
        body = (await http.get(f"/api/v1/label/{label}/values", params={"match[]": metric})).json()
    assert body["data"] == ["push-a", "push-b"]


@needs_prometheus
async def test_a_killed_member_raises_member_down(stack):
    """Last in the module: it kills push-b. The alert waits 1 minute before firing; pending is
    what the real Prometheus shows within seconds."""
    prom = stack["prometheus"]
    stack["members"][1].kill()
    await eventually_query(prom, 'up{member="push-b"}', lambda r: by_member(r) == {"push-b": 0})
    pending = await eventually_query(
        prom, 'ALERTS{alertname="PushgridMemberDown"}', lambda r: len(r) == 1
    )
    assert pending[0]["metric"]["member"] == "push-b"
    assert pending[0]["metric"]["alertstate"] == "pending"
    assert pending[0]["metric"]["severity"] == "critical"
