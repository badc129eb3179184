"""Real JMX: ``pushgrid jmx`` (the JVM bridge) in front of a real member, read with jmxquery.

One member and one bridge are shared by the module (the bridge JVM compiles its source at start,
~5 s); the member-restart test runs last so the others see a member that was never restarted.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from pushgrid.kernel.jmxquery import JmxError, Reading, invoke, nest, query
from pushgrid.server.jmx.bridge import jmx_url

from .pgtest import (
    PUSHGRID,
    REPO,
    AdminHarness,
    ServerProcess,
    WsClient,
    clean_env,
    free_port,
    run_cli,
)

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="needs java 17+ on PATH")

MON = ("mon", "mon-secret")
OPS = ("ops", "ops-secret")
API = "/api/v1"
T = TypeVar("T")
BRIDGE_LAG = 2.5  # s: the bridge's refresh period (1 s) + its Jolokia round trip, with margin


class Bridge:
    """``pushgrid jmx --config FILE`` as a child process (in its own process group)."""

    def __init__(self, config: Path, port: int) -> None:
        self.url = jmx_url("127.0.0.1", port)
        self.log_path = config.with_suffix(".bridge.log")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [*PUSHGRID, "jmx", "--config", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=config.parent,
                env=clean_env(),
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text("utf-8", "replace")

    def wait_connected(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while "connected to" not in self.log():
            assert self.proc.poll() is None, f"the bridge exited:\n{self.log()}"
            assert time.monotonic() < deadline, f"the bridge did not connect:\n{self.log()}"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


@pytest.fixture(scope="module")
def member(module_server_factory) -> ServerProcess:
    return module_server_factory(
        ServerName="jmx-node",
        MetaSubjectInterval=0,
        MetricsArchive="",
        MonitorUsername=MON[0],
        MonitorPassword=MON[1],
        JmxListen=f"127.0.0.1:{free_port()}",
        JmxUsername=OPS[0],
        JmxPassword=OPS[1],
        **{"WatchedSubjects.Patterns": "/jmx/*"},
    )


@pytest.fixture(scope="module")
def bridge(member: ServerProcess) -> Iterator[Bridge]:
    port = int(str(member.settings["JmxListen"]).rpartition(":")[2])
    running = Bridge(member.config_path, port)
    try:
        running.wait_connected()
        yield running
    finally:
        running.stop()


def jolokia(member: ServerProcess, request: dict[str, Any]) -> Any:
    with httpx.Client(trust_env=False, timeout=5.0, auth=MON) as http:
        answer = http.post(f"{member.monitor_url}/jolokia", json=request).json()
    assert answer["status"] == 200, answer
    return answer["value"]


async def jmx(bridge: Bridge, *patterns: str) -> list[Reading]:
    return await query(bridge.url, list(patterns), *OPS)


def mismatches(jolokia_bean: dict[str, Any], jmx_bean: dict[str, Any]) -> list[str]:
    """Attributes whose JMX value differs from Jolokia's (``Windows`` via its scalar twins)."""
    wrong = []
    for attribute, value in jolokia_bean.items():
        if attribute == "Windows":  # TabularData: jmxquery prints no value, check the scalars
            for window, stats in value.items():
                if jmx_bean.get(f"Count{window}") != stats["count"]:
                    wrong.append(f"Windows/{window}")
        elif jmx_bean.get(attribute, "missing") != (
            pytest.approx(value, rel=1e-12) if isinstance(value, float) else value
        ):
            wrong.append(f"{attribute}: {jmx_bean.get(attribute, 'missing')!r} != {value!r}")
    return wrong


async def read_between_polls(read: Awaitable[T], poll: Callable[[], Awaitable[None]]) -> T:
    """Run ``poll`` for BRIDGE_LAG seconds, then while ``read`` runs, then once more; return
    what ``read`` returned. The polls catch every sample second the bridge may serve."""
    lead_until = time.monotonic() + BRIDGE_LAG
    while time.monotonic() < lead_until:
        await poll()
    reading = asyncio.ensure_future(read)
    while not reading.done():
        await poll()
    await poll()
    return reading.result()


async def compare_same_second(member: ServerProcess, bridge: Bridge) -> dict[str, Any]:
    """Read every Indicator over JMX and compare it with Jolokia reads of the same sample second.

    Jolokia is polled from BRIDGE_LAG seconds before the JMX read (a JVM run, ~1 s) until it is
    done, and each MBean's JMX values are compared with the Jolokia answer that carries the same
    SampleTime. The lead matters: the bridge serves what it mirrored at its last refresh (every
    1 s), so its sample can be older than any Jolokia read taken after the JMX read started, and
    as the member's sampling and the bridge's refresh both tick once a second, a retry meets the
    same phase again (CI failed so). Neither side reads all attributes atomically, so a read
    that straddled a sample is retried (bounded).
    """
    pattern = "pushgrid:type=Indicator,*"
    request = {"type": "read", "mbean": pattern}
    problems: list[str] = []
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    async with httpx.AsyncClient(trust_env=False, timeout=5.0, auth=MON) as http:

        async def poll() -> None:
            answer = (await http.post(f"{member.monitor_url}/jolokia", json=request)).json()
            for name, attributes in answer["value"].items():
                seen.setdefault((name, attributes["SampleTime"]), attributes)
            await asyncio.sleep(0.05)

        for _ in range(5):
            through_jmx = nest(await read_between_polls(jmx(bridge, pattern), poll))
            assert len(through_jmx) == 7
            problems = []
            for name, attributes in through_jmx.items():
                twin = seen.get((name, attributes["SampleTime"]))
                if twin is None:
                    problems.append(f"{name}: no Jolokia read of its sample second")
                else:
                    problems += [f"{name} {wrong}" for wrong in mismatches(twin, attributes)]
            if not problems:
                return through_jmx
    raise AssertionError("\n".join(problems))


async def test_every_indicator_attribute_over_jmx_equals_jolokia(member, bridge, connect):
    client = await connect(member)  # one connected user and some traffic: not all zeros
    await client.subscribe("/jmx/IBM")
    await client.publish_ok("/jmx/IBM", "193")
    # Wait (bounded) until a sample second saw the client: a fixed sleep raced a late sampler.
    users = {"type": "read", "mbean": "pushgrid:name=ConnectedUsers,type=Indicator"}
    deadline = time.monotonic() + 10
    while jolokia(member, {**users, "attribute": "Current"}) != 1.0:
        assert time.monotonic() < deadline, "no sample second saw the connected client"
        await asyncio.sleep(0.1)
    by_jmx = await compare_same_second(member, bridge)
    assert by_jmx["pushgrid:name=ConnectedUsers,type=Indicator"]["Current"] == 1.0
    assert sum(len(attributes) for attributes in by_jmx.values()) >= 7 * 50


async def test_values_have_open_types_and_secrets_stay_masked(bridge):
    readings = await jmx(
        bridge, "pushgrid:type=Indicator,name=ConnectedUsers", "pushgrid:type=Server"
    )
    found = {(r.attribute, r.key): (r.type, r.value) for r in readings}
    assert found[("Current", None)][0] == "Double"
    assert found[("SampleTime", None)][0] == "Long"
    assert found[("Windows", None)][0] == "TabularDataSupport"
    assert found[("Counters", "messages_in_total")][0] == "Long"  # a map: CompositeData
    assert found[("Configuration", "ServerName")] == ("String", "jmx-node")
    assert found[("Configuration", "JmxPassword")] == ("String", "********")
    assert found[("Configuration", "MonitorPassword")] == ("String", "********")


async def test_watched_subjects_are_served_over_jmx(member, bridge):
    """The WatchedSubjects MBean (issue 25) is mirrored like the others, and its ``watch``
    operation works over JMX. (jmxquery prints a String[] as a Java reference and cannot print
    the list-of-maps attributes at all: its limits, not the bridge's; Jolokia reads them.)"""
    readings = await jmx(bridge, "pushgrid:type=WatchedSubjects/MaxPatterns")
    assert [(r.type, r.value) for r in readings] == [("Integer", 100)]
    (patterns,) = await jmx(bridge, "pushgrid:type=WatchedSubjects/Patterns")
    assert patterns.type == "String[]"
    answer = await invoke(bridge.url, "pushgrid:type=WatchedSubjects", "watch", ["/jmx2/*"], *OPS)
    assert answer["watched"] is True, answer
    read = {"type": "read", "mbean": "pushgrid:type=WatchedSubjects", "attribute": "Patterns"}
    deadline = time.monotonic() + 5  # the read model shows it from the next sampled second
    while "/jmx2/*" not in jolokia(member, read):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.2)


async def test_disconnect_operation_over_jmx_closes_the_session_with_4003(member, bridge, connect):
    client: WsClient = await connect(member)
    await client.subscribe("/jmx/disconnect")
    sessions = jolokia(
        member, {"type": "exec", "mbean": "pushgrid:type=Sessions", "operation": "list"}
    )
    target = next(s["id"] for s in sessions if s["subjects"] == ["/jmx/disconnect"])
    assert await invoke(bridge.url, "pushgrid:type=Sessions", "disconnect", [target], *OPS)
    assert await client.wait_closed() == 4003
    assert await invoke(bridge.url, "pushgrid:type=Sessions", "disconnect", [target], *OPS) is False


async def test_wrong_credentials_are_refused(bridge):
    with pytest.raises(JmxError) as refused:
        await query(bridge.url, ["pushgrid:type=Server"], OPS[0], "wrong")
    assert refused.value.kind == "auth"
    with pytest.raises(JmxError) as anonymous:
        await query(bridge.url, ["pushgrid:type=Server"])
    assert anonymous.value.kind == "auth"


def test_cli_query_prints_json_and_check_gives_nagios_codes(member, bridge, tmp_path):
    conf = tmp_path / "ops.conf"
    conf.write_text(f"JmxUsername = {OPS[0]}\nJmxPassword = {OPS[1]}\n", encoding="utf-8")
    run = [*PUSHGRID, "jmx"]
    env = clean_env()
    done = subprocess.run(
        [*run, "query", bridge.url, "pushgrid:type=Server/ServerName", "-c", str(conf)],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"ServerName": "jmx-node"' in done.stdout
    # Uptime is above 1 s: outside ~:1 (WARNING) but inside 0:1e9 (not CRITICAL).
    checked = subprocess.run(
        [*run, "check", bridge.url, "pushgrid:type=Server", "-a", "Uptime",
         "--warn", "~:1", "--crit", "1e9", "-c", str(conf)],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    assert (checked.returncode, checked.stdout.split(" - ")[0]) == (1, "JMX WARNING")
    assert "'pushgrid:type=Server.Uptime'=" in checked.stdout  # perfdata
    conf.write_text(f"JmxUsername = {OPS[0]}\nJmxPassword = wrong\n", encoding="utf-8")
    refused = subprocess.run(
        [*run, "check", bridge.url, "pushgrid:type=Server", "-a", "Uptime", "-c", str(conf)],
        capture_output=True, text=True, timeout=60, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    assert refused.returncode == 3
    assert "refused the credentials" in refused.stdout


def flat(indicators: list[dict[str, Any]]) -> dict[str, float | None]:
    """``{"connected_users.current": 1.0, "connected_users.1m.max": 1.0, ...}``."""
    out: dict[str, float | None] = {}
    for indicator in indicators:
        out[f"{indicator['name']}.current"] = indicator["current"]
        for window, stats in indicator["windows"].items():
            for stat, value in stats.items():
                out[f"{indicator['name']}.{window}.{stat}"] = value
    return out


async def live_same_second(
    api: httpx.AsyncClient,
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """``/stats/live``'s JMX member and a Jolokia read of the same sample second (flattened).

    One ``/stats/live`` reads both members at once, but its JMX read (a JVM run, ~1 s) serves
    what the bridge mirrored at its last 1 s refresh, and the member's sampling ticks in phase
    with that refresh: the JMX sample can be a second older than the Jolokia one at every retry.
    So, as in compare_same_second, ``/stats/live/viajolokia`` is polled from BRIDGE_LAG seconds
    before the cluster read until it is done, and the JMX answer is paired with the Jolokia
    answers of its SampleTime. Neither side reads atomically: a straddling read is retried.
    """
    seen: dict[str, list[dict[str, float | None]]] = {}

    def keep(answer: dict[str, Any]) -> None:
        seen.setdefault(answer["sample_time"], []).append(flat(answer["indicators"]))

    async def poll() -> None:
        keep((await api.get(f"{API}/stats/live/viajolokia")).json())
        await asyncio.sleep(0.05)

    jmx_values: dict[str, float | None] = {}
    twins: list[dict[str, float | None]] = []
    for _ in range(10):  # 5 was not enough with three test workers on two cores
        live = await read_between_polls(api.get(f"{API}/stats/live"), poll)
        got = {m["member"]: m for m in live.json()["members"]}
        assert got["viajmx"]["reachable"], got["viajmx"]
        keep(got["viajolokia"])
        jmx_values = flat(got["viajmx"]["indicators"])
        twins = seen.get(got["viajmx"]["sample_time"], [])
        for twin in twins:
            if jmx_values == pytest.approx(twin, rel=1e-12):
                return jmx_values, twin
    assert twins, "no Jolokia read of the JMX member's sample second"
    return jmx_values, twins[-1]


async def test_admin_api_with_a_jmx_member_returns_the_same_live_stats(
    member, bridge, connect, tmp_path
):
    await connect(member)
    admin = AdminHarness(
        tmp_path / "admin",
        [f"viajolokia={member.monitor_url}", f"viajmx={bridge.url}"],
        member_timeout=20.0,
        admin_member_username=MON[0],
        admin_member_password=MON[1],
        jmx_username=OPS[0],
        jmx_password=OPS[1],
    )
    try:
        async with admin.client("viewer") as api:
            fields = ("server_name", "version", "engine", "connected_users", "client_url")
            # The bridge mirrors once a second: the client connected just now may not be in
            # its view yet; retry (bounded) until both answer the same.
            for _ in range(10):
                members = (await api.get(f"{API}/members")).json()["items"]
                by_name = {item["name"]: item for item in members}
                if all(by_name["viajmx"][f] == by_name["viajolokia"][f] for f in fields):
                    break
                await asyncio.sleep(0.5)
            assert by_name["viajmx"]["reachable"], by_name["viajmx"]
            for field in fields:
                assert by_name["viajmx"][field] == by_name["viajolokia"][field], field
            jmx_values, jolokia_values = await live_same_second(api)
            assert jmx_values == pytest.approx(jolokia_values, rel=1e-12)
        async with admin.client("admin") as api:
            registered = await api.post(
                f"{API}/members",
                json={"name": "regjmx", "monitor_url": bridge.url, "username": OPS[0],
                      "password": OPS[1]},
            )  # fmt: skip
            assert registered.status_code == 201, registered.text
            described = (await api.get(f"{API}/members/regjmx")).json()
            assert described["reachable"], described
            assert described["server_name"] == "jmx-node"
            sessions = {}
            for name in ("viajolokia", "viajmx"):
                page = (await api.get(f"{API}/members/{name}/sessions")).json()
                sessions[name] = sorted(item["id"] for item in page["items"])
            assert sessions["viajmx"] == sessions["viajolokia"] != []
    finally:
        admin.close()


@pytest.mark.parametrize("command", [["jmx"], ["up", "--jmx"]])
def test_a_missing_java_is_named_with_what_to_install(command, tmp_path):
    conf = tmp_path / "p.conf"
    conf.write_text(
        "JmxJava = /nonexistent/java\nJmxUsername = ops\nJmxPassword = x\n"
        f"Listen = 127.0.0.1:{free_port()}\nAdmin.Listen = 127.0.0.1:{free_port()}\n",
        encoding="utf-8",
    )
    done = run_cli(*command, "--config", str(conf), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "java not found ('/nonexistent/java')" in done.stderr
    assert "openjdk-17-jdk-headless" in done.stderr
    assert "listening on" not in done.stdout + done.stderr  # `up` stopped before starting


def keytool(*args: str) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True, timeout=60)


async def test_tls_bridge_needs_a_trusted_certificate(member, tmp_path):
    # One self-signed key; the same PKCS12 file serves as the client's truststore (Java trusts
    # the certificate of a key entry).
    keystore = tmp_path / "bridge.p12"
    keytool("-genkeypair", "-alias", "bridge", "-keyalg", "EC", "-groupname", "secp256r1",
            "-dname", "CN=127.0.0.1", "-ext", "SAN=ip:127.0.0.1", "-validity", "2",
            "-storetype", "PKCS12", "-keystore", str(keystore),
            "-storepass", "changeit")  # fmt: skip
    port = free_port()
    config = tmp_path / "tls.conf"
    settings = {**member.settings, "JmxListen": f"127.0.0.1:{port}", "JmxTLS": "true"}
    settings |= {"JmxTLSKeyStore": str(keystore), "JmxTLSKeyStorePassword": "changeit"}
    config.write_text("".join(f"{k} = {v}\n" for k, v in settings.items()), encoding="utf-8")
    tls = Bridge(config, port)
    try:
        tls.wait_connected()
        trusting = [f"-Djavax.net.ssl.trustStore={keystore}"]
        trusting.append("-Djavax.net.ssl.trustStorePassword=changeit")
        found = await query(
            tls.url, ["pushgrid:type=Server/ServerName"], *OPS, java_options=trusting
        )
        assert nest(found) == {"pushgrid:type=Server": {"ServerName": "jmx-node"}}
        with pytest.raises(JmxError, match="TLS"):
            await query(tls.url, ["pushgrid:type=Server/ServerName"], *OPS)
    finally:
        tls.stop()


async def test_bridge_survives_a_member_restart_and_serves_fresh_values(member, bridge):
    async def server_values() -> dict[str, Any]:
        found = nest(await jmx(bridge, "pushgrid:type=Server", "pushgrid.jmx:type=Bridge"))
        return {**found.get("pushgrid:type=Server", {}), **found["pushgrid.jmx:type=Bridge"]}

    first = await server_values()
    assert first["Connected"] is True
    await member.astop(signal.SIGKILL)
    # The Server bean and the Bridge bean are read one after the other, so a refresh may fall
    # between them: wait until both tell the same story (bounded), then check it.
    for _ in range(30):
        down = await server_values()
        if down["Connected"] is False and down.get("StartTime") is None:
            break
        await asyncio.sleep(0.3)
    assert down["Connected"] is False
    assert down.get("StartTime") is None  # unavailable, not the old value
    assert down.get("Uptime") is None
    await member.astart()
    for _ in range(30):
        back = await server_values()
        if back["Connected"] is True and back.get("StartTime") is not None:
            break
        await asyncio.sleep(0.3)
    assert bridge.proc.poll() is None
    assert back["Connected"] is True
    assert back.get("StartTime") is not None, "connected again, yet no fresh StartTime"
    assert back["StartTime"] > first["StartTime"]
    fresh = jolokia(
        member, {"type": "read", "mbean": "pushgrid:type=Server", "attribute": "StartTime"}
    )
    assert back["StartTime"] == fresh
