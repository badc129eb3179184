"""The pure parts of the JMX support: Nagios ranges and checks, the bridge's private files, the
JMX settings, URL checks and the admin API's rebuild of ``Windows``."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from pushgrid.admin_api.access import JmxMember, _pick, is_jmx, member_access
from pushgrid.admin_api.member_client import (
    MemberClient,
    check_jmx_url,
    check_monitor_url,
    derive_client_url,
)
from pushgrid.config import ConfigError, load_settings
from pushgrid.kernel.jmxquery import Reading, _classify, nest
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.server.jmx.bridge import BridgeError, jmx_url, prepare
from pushgrid.server.jmx.check import CheckStatus, Range, evaluate

# --- Nagios ranges ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "alerting", "quiet"),
    [
        ("10", [-1, 10.5, 11], [0, 5, 10]),
        ("10:", [9.9, -5], [10, 1e9]),
        ("~:10", [10.1, 99], [-1e9, 10]),
        ("10:20", [9, 21], [10, 15, 20]),
        ("@10:20", [10, 15, 20], [9, 21]),
    ],
)
def test_nagios_ranges_follow_the_plugin_guidelines(
    spec: str, alerting: list[float], quiet: list[float]
) -> None:
    threshold = Range.parse(spec)
    assert [threshold.alerts(v) for v in alerting] == [True] * len(alerting)
    assert [threshold.alerts(v) for v in quiet] == [False] * len(quiet)


@pytest.mark.parametrize("spec", ["abc", "20:10", "1:x", ""])
def test_bad_ranges_are_refused_with_the_text(spec: str) -> None:
    with pytest.raises(ValueError, match="range"):
        Range.parse(spec)


def reading(value: Any, attribute: str = "Current", key: str | None = None) -> Reading:
    return Reading("pushgrid:name=ConnectedUsers,type=Indicator", attribute, key, "Double", value)


def test_check_takes_the_worst_status_and_prints_perfdata() -> None:
    outcome = evaluate([reading(3.0), reading(12.0)], Range.parse("10"), Range.parse("20"))
    assert outcome.status is CheckStatus.WARNING
    assert outcome.line.startswith("JMX WARNING - ")
    assert "'ConnectedUsers.Current'=12;10;20" in outcome.line
    critical = evaluate([reading(3.0), reading(25)], Range.parse("10"), Range.parse("20"))
    assert critical.status is CheckStatus.CRITICAL
    assert evaluate([reading(3)], Range.parse("10"), None).status is CheckStatus.OK


def test_check_is_unknown_without_a_number_or_a_match() -> None:
    assert evaluate([], None, None).status is CheckStatus.UNKNOWN
    assert evaluate([reading("text")], None, None).status is CheckStatus.UNKNOWN
    assert evaluate([reading(None)], None, None).status is CheckStatus.UNKNOWN
    assert evaluate([reading(True)], None, None).status is CheckStatus.UNKNOWN


# --- jmxquery output ----------------------------------------------------------------------------


def test_nest_groups_composite_keys_under_their_attribute() -> None:
    rows = [
        Reading("pushgrid:type=Server", "Uptime", None, "Double", 1.5),
        Reading("pushgrid:type=Server", "Counters", "messages_in_total", "Long", 7),
        Reading("pushgrid:type=Server", "Counters", "sessions", "Long", 1),
    ]
    assert nest(rows) == {
        "pushgrid:type=Server": {"Uptime": 1.5, "Counters": {"messages_in_total": 7, "sessions": 1}}
    }


@pytest.mark.parametrize(
    ("output", "kind"),
    [
        (
            "java.lang.SecurityException: Authentication failed! Invalid username or password",
            "auth",
        ),
        ("java.rmi.ConnectException: Connection refused to host: 127.0.0.1", "unreachable"),
        ("Exception in thread main: something else", "error"),
    ],
)
def test_jvm_failures_are_classified(output: str, kind: str) -> None:
    assert _classify(output).kind == kind


# --- settings and the bridge's files ------------------------------------------------------------


def test_jmx_settings_are_checked_with_the_key_names() -> None:
    with pytest.raises(ConfigError, match="JmxUsername and JmxPassword"):
        load_settings(environ={}, jmx_username="ops")
    with pytest.raises(ConfigError, match="JmxTLSKeyStore"):
        load_settings(environ={}, jmx_tls=True)
    with pytest.raises(ConfigError, match="JmxRefreshInterval"):
        load_settings(environ={}, jmx_refresh_interval=5)
    with pytest.raises(ConfigError, match="JmxListen"):
        load_settings(environ={}, jmx_listen="127.0.0.1:0")


def test_prepare_writes_private_files_and_keeps_secrets_off_the_command_line(
    tmp_path: Path,
) -> None:
    settings = load_settings(
        environ={},
        monitor_username="mon",
        monitor_password="mon-secret",
        jmx_listen="127.0.0.1:9011",
        jmx_username="ops",
        jmx_password="ops-secret",
    )
    launch = prepare(settings.jmx, settings.monitoring, tmp_path / "jmx")
    assert launch.jmx_url == "service:jmx:rmi:///jndi/rmi://127.0.0.1:9011/jmxrmi"
    assert not any("secret" in part for part in launch.command)
    assert launch.env["PUSHGRID_JOLOKIA_PASSWORD"] == "mon-secret"
    password_file = tmp_path / "jmx" / "jmxremote.password"
    assert password_file.read_text() == "ops ops-secret\n"
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "jmx").stat().st_mode) == 0o700
    properties = (tmp_path / "jmx" / "management.properties").read_text()
    assert "com.sun.management.jmxremote.port=9011" in properties
    assert "com.sun.management.jmxremote.authenticate=true" in properties
    assert "com.sun.management.jmxremote.ssl=false" in properties


def test_prepare_refuses_without_credentials_or_java(tmp_path: Path) -> None:
    bare = load_settings(environ={})
    with pytest.raises(BridgeError, match="JMX needs credentials"):
        prepare(bare.jmx, bare.monitoring, tmp_path)
    settings = load_settings(environ={}, jmx_java="no-such-java-here")
    with pytest.raises(BridgeError, match="openjdk-17-jdk-headless"):
        prepare(settings.jmx, settings.monitoring, tmp_path)


def test_prepare_refuses_a_password_file_others_can_read(tmp_path: Path) -> None:
    loose = tmp_path / "pw"
    loose.write_text("ops x\n")
    loose.chmod(0o644)
    settings = load_settings(environ={}, jmx_password_file=loose, jmx_access_file=loose)
    with pytest.raises(BridgeError, match="chmod 600"):
        prepare(settings.jmx, settings.monitoring, tmp_path / "jmx")


def test_jmx_url_brackets_ipv6() -> None:
    assert jmx_url("::1", 9010) == "service:jmx:rmi:///jndi/rmi://[::1]:9010/jmxrmi"


# --- admin API ----------------------------------------------------------------------------------

JMX = "service:jmx:rmi:///jndi/rmi://10.0.0.5:9010/jmxrmi"


def test_member_urls_may_be_jmx() -> None:
    assert check_jmx_url(JMX) == JMX
    assert check_monitor_url(JMX) == JMX
    assert check_monitor_url("http://10.0.0.5:8900/") == "http://10.0.0.5:8900"
    with pytest.raises(ValueError, match="service:jmx"):
        check_monitor_url("service:jmx:nonsense")
    assert derive_client_url(JMX, ["*:8800"]) == "http://10.0.0.5:8800"


def test_a_jmx_member_gets_the_jmx_access_and_the_jmx_login() -> None:
    from pushgrid.admin_api.services.members import configured_members

    settings = load_settings(
        environ={},
        admin_members=[f"a={JMX}", "b=http://127.0.0.1:8900"],
        admin_member_username="mon",
        admin_member_password="m",
        jmx_username="ops",
        jmx_password="o",
    )
    jmx_member, jolokia_member = configured_members(settings.admin, settings.jmx)
    assert (jmx_member.username, jolokia_member.username) == ("ops", "mon")
    assert is_jmx(jmx_member.monitor_url)
    assert isinstance(member_access(None, jmx_member), JmxMember)  # type: ignore[arg-type]
    assert isinstance(member_access(None, jolokia_member), MemberClient)  # type: ignore[arg-type]


def test_windows_are_rebuilt_from_the_per_window_scalars() -> None:
    attributes: dict[str, Any] = {"Current": 2.0, "SampleTime": 5}
    for number, window in enumerate(WINDOW_NAMES):
        attributes |= {
            f"Max{window}": float(number),
            f"Average{window}": 1.0,
            f"StdDev{window}": 0.5,
            f"Count{window}": number,
        }
    picked = _pick(attributes, ["Current", "SampleTime", "Windows"])
    assert picked["Current"] == 2.0
    assert picked["Windows"]["5m"] == {"max": 1.0, "avg": 1.0, "stddev": 0.5, "count": 1}
    assert set(picked["Windows"]) == set(WINDOW_NAMES)
