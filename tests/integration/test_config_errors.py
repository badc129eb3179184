"""``pushgrid server --config FILE`` refuses a bad configuration, naming file, line and key."""

from __future__ import annotations

import pytest

from .pgtest import free_port, run_cli


def _write(tmp_path, lines: list[str]):
    path = tmp_path / "bad.conf"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _assert_refused(result, *needles: str) -> None:
    assert result.returncode != 0, result
    assert "listening on" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, f"{needle!r} not in stderr:\n{result.stderr}"


def _listen() -> str:
    return f"Listen = 127.0.0.1:{free_port()}"


def test_unknown_key(tmp_path):
    path = _write(tmp_path, ["# comment", _listen(), "MaxCachedMessagesPerSubjects = 10"])
    result = run_cli("server", "--config", str(path))
    _assert_refused(result, f"{path}:3", "MaxCachedMessagesPerSubjects")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("MaxCachedMessagesPerSubject", "lots"),
        ("MaxCachedMessagesPerSubject", "-1"),
        ("CacheExpireTime", "0"),
        ("PublishSnapshotMessage", "maybe"),
        ("Entitlement", "ldap"),
        ("MaxOutboundBufferSize", "10"),
        ("Listen", "nowhere"),
        ("Listen", "127.0.0.1:99999"),
    ],
)
def test_bad_value(tmp_path, key, value):
    lines = ["# pushgrid", "", _listen() if key != "Listen" else "LogLevel = INFO"]
    lines.append(f"{key} = {value}")  # line 4
    path = _write(tmp_path, lines)
    result = run_cli("server", "--config", str(path))
    _assert_refused(result, f"{path}:4", key)


def test_missing_file(tmp_path):
    path = tmp_path / "does-not-exist.conf"
    result = run_cli("server", "--config", str(path))
    _assert_refused(result, str(path))


def test_line_without_equals_sign(tmp_path):
    path = _write(tmp_path, [_listen(), "KeepaliveInterval 5"])
    result = run_cli("server", "--config", str(path))
    _assert_refused(result, f"{path}:2")


def test_duplicate_key(tmp_path):
    path = _write(tmp_path, [_listen(), "ShutdownTimeout = 1", "ShutdownTimeout = 2"])
    result = run_cli("server", "--config", str(path))
    _assert_refused(result, f"{path}:3", "ShutdownTimeout", f"{path}:2")


def test_inconsistent_settings(tmp_path):
    path = _write(tmp_path, [_listen(), "KeepaliveInterval = 10", "KeepaliveTimeout = 5"])
    result = run_cli("server", "--config", str(path))
    _assert_refused(result, "KeepaliveTimeout")

    path = _write(tmp_path, [_listen(), "Entitlement = jwt"])
    result = run_cli("server", "--config", str(path))
    _assert_refused(result, "EntitlementJwtSecret")


def test_port_in_use_exits_non_zero(server):
    path = server.workdir / "same-port.conf"
    path.write_text(f"Listen = {server.address}\n", encoding="utf-8")
    result = run_cli("server", "--config", str(path))
    assert result.returncode != 0
    assert "cannot start" in result.stderr
    assert server.running, "the first server is unaffected"


# --- other configuration sources ---------------------------------------------------------------


async def test_environment_variables_override_the_file(server_factory, connect):
    srv = server_factory(
        _env={"PUSHGRID_SERVERNAME": "env-node", "PUSHGRID_MAXMESSAGESIZE": "100"},
        ServerName="file-node",
        MaxMessageSize=5000,
    )
    client = await connect(srv)
    assert client.welcome["server"] == "env-node"
    assert client.welcome["max_message_size"] == 100
    result = await client.publish("/env/a/b", "x" * 101)
    assert result["result"] == "too_large"


def test_unknown_environment_variable(tmp_path):
    path = _write(tmp_path, [_listen()])
    result = run_cli("server", "--config", str(path), env={"PUSHGRID_NO_SUCH_KEY": "1"})
    _assert_refused(result, "PUSHGRID_NO_SUCH_KEY")


def test_bad_environment_value(tmp_path):
    path = _write(tmp_path, [_listen()])
    result = run_cli("server", "--config", str(path), env={"PUSHGRID_MAXMESSAGESIZE": "big"})
    _assert_refused(result, "PUSHGRID_MAXMESSAGESIZE", "MaxMessageSize")


async def test_publish_allow_restricts_publishers_by_address(server_factory, connect):
    srv = server_factory(PublishAllow="10.0.0.0/8, 192.168.0.0/16")
    client = await connect(srv)
    assert (await client.subscribe("/allow/a/b"))["status"] == "allow"
    refused = await client.publish("/allow/a/b", "x")
    assert (refused["result"], refused["code"]) == ("denied", "denied")
    async with srv.http() as http:
        response = await http.post("/publish", json={"subject": "/allow/a/b", "content": "x"})
        assert response.status_code == 403
        assert response.json()["code"] == "denied"
    assert await client.sync() == []

    allowed = server_factory(PublishAllow="127.0.0.0/8")
    client = await connect(allowed)
    assert (await client.publish("/allow/a/b", "x"))["result"] == "ok"
