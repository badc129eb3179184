"""Settings: defaults, pushgrid.conf parsing, PUSHGRID_<KEY> overrides, and located errors."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from pydantic import ValidationError

from pushgrid.config import (
    ConfigError,
    Settings,
    env_name,
    load_settings,
    read_config_file,
)
from pushgrid.kernel.addresses import parse_address


def _write(tmp_path: Path, text: str, name: str = "pushgrid.conf") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(path: Path | None = None, environ: dict[str, str] | None = None, **kw: object) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={} if environ is None else environ, **kw)
    return str(info.value)


# --- defaults ---------------------------------------------------------------------------------


def test_defaults() -> None:
    s = load_settings(None, environ={})
    assert s.listen == ["*:8800"]
    assert s.listen_addresses == [("0.0.0.0", 8800)]
    assert s.listen_encrypted == []
    assert s.tls_certificate is None
    assert s.tls_key is None
    assert s.server_name == socket.gethostname()
    assert s.engine is None
    assert s.engine_name == "memory"
    assert s.cluster_members == []
    assert s.cluster_delivery_mode == "guaranteed"
    assert s.publish_snapshot_message is True
    assert s.max_cached_messages_per_subject == 1000
    assert s.cache_expire_time == 180.0
    assert s.max_message_size == 65536
    assert s.max_subscriptions_per_connection == 10_000
    assert s.max_connections == 100_000
    assert s.max_outbound_buffer_size == 4 * 1024 * 1024
    assert s.listen_backlog == 4096
    assert s.flush_tick == 5.0
    assert s.keepalive_interval == 30.0
    assert s.keepalive_timeout == 75.0
    assert s.shutdown_timeout == 5.0
    assert s.slow_consumer_close_timeout == 5.0
    assert s.entitlement == "none"
    assert s.entitlement_jwt_secret is None
    assert s.entitlement_jwt_public_key_file is None
    assert s.publish_allow == []
    assert s.log_level == "INFO"


def test_process_environment_is_ignored_when_environ_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PUSHGRID_MAXMESSAGESIZE", "123")
    monkeypatch.setenv("PUSHGRID_NOSUCHKEY", "1")
    assert load_settings(None, environ={}).max_message_size == 65536


def test_process_environment_is_used_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("PUSHGRID_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PUSHGRID_MAXMESSAGESIZE", "123")
    assert load_settings(None).max_message_size == 123


def test_settings_are_frozen() -> None:
    s = load_settings(None, environ={})
    with pytest.raises(ValidationError):
        s.max_message_size = 1


# --- file parsing -----------------------------------------------------------------------------


def test_file_parsing(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "# pushgrid configuration\n"
        "\n"
        "   # an indented comment\n"
        "Listen = *:8800, 127.0.0.1:9000 ,[::1]:9001,\n"
        "\t\n"
        "servername=node-7\n"
        "  PUBLISHSNAPSHOTMESSAGE   =   false  \n"
        "MaxMessageSize = 1024\n"
        "CacheExpireTime = 2.5\n"
        "loglevel = debug\n"
        "EntitlementJwtSecret = a=b=c\n"
        "PublishAllow = 10.0.0.1:0, 10.0.0.2:0\n",
    )
    s = load_settings(path, environ={})
    assert s.listen == ["*:8800", "127.0.0.1:9000", "[::1]:9001"]
    assert s.listen_addresses == [("0.0.0.0", 8800), ("127.0.0.1", 9000), ("::1", 9001)]
    assert s.server_name == "node-7"
    assert s.publish_snapshot_message is False
    assert s.max_message_size == 1024
    assert s.cache_expire_time == 2.5
    assert s.log_level == "DEBUG"
    assert s.entitlement_jwt_secret == "a=b=c"
    assert s.publish_allow == ["10.0.0.1:0", "10.0.0.2:0"]
    # unset keys keep their defaults
    assert s.max_connections == 100_000


def test_empty_and_comment_only_files_give_defaults(tmp_path: Path) -> None:
    assert load_settings(_write(tmp_path, ""), environ={}) == load_settings(None, environ={})
    commented = _write(tmp_path, "# Listen = *:1\n\n   \n#MaxMessageSize=1\n", "c.conf")
    assert load_settings(commented, environ={}).max_message_size == 65536


def test_crlf_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "crlf.conf"
    path.write_bytes(b"MaxMessageSize = 2048\r\nServerName = a\r\n")
    s = load_settings(path, environ={})
    assert s.max_message_size == 2048
    assert s.server_name == "a"


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "yes", "1", "on"])
def test_boolean_true_spellings(tmp_path: Path, value: str) -> None:
    s = load_settings(_write(tmp_path, f"PublishSnapshotMessage = {value}\n"), environ={})
    assert s.publish_snapshot_message is True


@pytest.mark.parametrize("value", ["false", "False", "no", "0", "off"])
def test_boolean_false_spellings(tmp_path: Path, value: str) -> None:
    s = load_settings(_write(tmp_path, f"PublishSnapshotMessage = {value}\n"), environ={})
    assert s.publish_snapshot_message is False


def test_read_config_file_records_line_numbers(tmp_path: Path) -> None:
    path = _write(tmp_path, "# c\n\nListen = *:1\n# c\nmaxmessagesize = 5\n")
    values = read_config_file(path)
    assert values["listen"][0] == "*:1"
    assert values["listen"][1].where == f"{path}:3"
    assert values["max_message_size"][0] == "5"
    assert values["max_message_size"][1].where == f"{path}:5"


# --- environment ------------------------------------------------------------------------------


def test_env_name() -> None:
    assert env_name("Listen") == "PUSHGRID_LISTEN"
    assert env_name("MaxMessageSize") == "PUSHGRID_MAXMESSAGESIZE"
    assert env_name("MonitorHTTP.Listen") == "PUSHGRID_MONITORHTTP_LISTEN"


def test_environment_overrides_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "MaxMessageSize = 1024\nServerName = from-file\nListen = *:1\n")
    s = load_settings(
        path, environ={"PUSHGRID_MAXMESSAGESIZE": "2048", "PUSHGRID_LISTEN": "*:2, *:3"}
    )
    assert s.max_message_size == 2048
    assert s.listen == ["*:2", "*:3"]
    assert s.server_name == "from-file"  # not overridden


def test_environment_without_file() -> None:
    s = load_settings(
        None,
        environ={
            "PUSHGRID_SERVERNAME": "env-node",
            "PUSHGRID_PUBLISHSNAPSHOTMESSAGE": "false",
            "PUSHGRID_KEEPALIVEINTERVAL": "10",
            "PUSHGRID_KEEPALIVETIMEOUT": "20",
            "PUSHGRID_LOGLEVEL": "warning",
        },
    )
    assert s.server_name == "env-node"
    assert s.publish_snapshot_message is False
    assert s.keepalive_interval == 10.0
    assert s.keepalive_timeout == 20.0
    assert s.log_level == "WARNING"


def test_environment_ignores_other_variables() -> None:
    s = load_settings(
        None,
        environ={"PATH": "/bin", "HOME": "/root", "pushgrid_listen": "bad", "XPUSHGRID_FOO": "1"},
    )
    assert s.listen == ["*:8800"]


def test_keyword_overrides_win_over_environment(tmp_path: Path) -> None:
    path = _write(tmp_path, "MaxMessageSize = 1\n")
    s = load_settings(path, environ={"PUSHGRID_MAXMESSAGESIZE": "2"}, max_message_size=3)
    assert s.max_message_size == 3


def test_environment_value_is_validated_even_when_file_is_valid(tmp_path: Path) -> None:
    path = _write(tmp_path, "MaxMessageSize = 1024\n")
    message = _error(path, environ={"PUSHGRID_MAXMESSAGESIZE": "big"})
    assert "PUSHGRID_MAXMESSAGESIZE" in message
    assert "MaxMessageSize" in message
    assert str(path) not in message


def test_bad_file_value_overridden_by_environment_is_not_an_error(tmp_path: Path) -> None:
    # the environment wins over the file, so the file's value is never used
    path = _write(tmp_path, "MaxMessageSize = big\n")
    assert load_settings(path, environ={"PUSHGRID_MAXMESSAGESIZE": "10"}).max_message_size == 10


# --- errors name their origin -----------------------------------------------------------------


def test_unknown_key_in_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "# comment\n\nListen = *:1\nMaxMesageSize = 10\n")
    message = _error(path)
    assert f"{path}:4" in message
    assert "MaxMesageSize" in message


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("MaxMessageSize = abc", "MaxMessageSize"),
        ("MaxMessageSize = 0", "MaxMessageSize"),
        ("MaxMessageSize = 1.5", "MaxMessageSize"),
        ("MaxMessageSize = ", "MaxMessageSize"),
        ("CacheExpireTime = 0", "CacheExpireTime"),
        ("CacheExpireTime = soon", "CacheExpireTime"),
        ("MaxOutboundBufferSize = 1023", "MaxOutboundBufferSize"),
        ("MaxInboundBufferSize = 1023", "MaxInboundBufferSize"),
        ("DeflateMaxInflatingPerAddress = 0", "DeflateMaxInflatingPerAddress"),
        ("DeflateMaxInflating = many", "DeflateMaxInflating"),
        ("ListenBacklog = 0", "ListenBacklog"),
        ("ListenBacklog = 70000", "ListenBacklog"),
        ("MaxCachedMessagesPerSubject = -1", "MaxCachedMessagesPerSubject"),
        ("ShutdownTimeout = -1", "ShutdownTimeout"),
        ("KeepaliveInterval = 0", "KeepaliveInterval"),
        ("PublishSnapshotMessage = maybe", "PublishSnapshotMessage"),
        ("Engine = redis", "Engine"),
        ("Engine = nats", "ClusterMembers"),
        ("ClusterDeliveryMode = Eventual", "ClusterDeliveryMode"),
        ("ClusterMembers = a:1, a:1", "ClusterMembers"),
        ("NatsServers = http://x:4222", "NatsServers"),
        ("Entitlement = ldap", "Entitlement"),
        ("LogLevel = verbose", "LogLevel"),
        ("Listen = localhost", "Listen"),
        ("Listen = *:8800, host:99999", "Listen"),
        ("Listen = host:port", "Listen"),
    ],
)
def test_bad_value_in_file(tmp_path: Path, line: str, key: str) -> None:
    path = _write(tmp_path, f"# header\nServerName = n\n{line}\n")
    message = _error(path)
    assert f"{path}:3" in message
    assert key in message


def test_bad_value_reported_with_the_key_as_spelled_in_the_docs(tmp_path: Path) -> None:
    path = _write(tmp_path, "maxmessagesize = abc\n")
    message = _error(path)
    assert f"{path}:1" in message
    assert "MaxMessageSize" in message
    assert "'abc'" in message


def test_two_bad_values_are_both_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, "MaxMessageSize = abc\nMaxConnections = -5\n")
    message = _error(path)
    assert f"{path}:1" in message
    assert f"{path}:2" in message
    assert "MaxMessageSize" in message
    assert "MaxConnections" in message


@pytest.mark.parametrize("second", ["Listen = *:2", "LISTEN = *:2", "listen=*:2"])
def test_duplicate_key(tmp_path: Path, second: str) -> None:
    path = _write(tmp_path, f"Listen = *:1\n# c\n{second}\n")
    message = _error(path)
    assert f"{path}:3" in message
    assert f"{path}:1" in message  # where it was first set
    assert "listen" in message.lower()
    assert "twice" in message


@pytest.mark.parametrize("line", ["Listen *:8800", "Listen", "= 5", "   = value"])
def test_line_without_key_and_equals(tmp_path: Path, line: str) -> None:
    path = _write(tmp_path, f"ServerName = a\n\n{line}\n")
    message = _error(path)
    assert f"{path}:3" in message
    assert line.strip() in message


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.conf"
    message = _error(path)
    assert str(path) in message


def test_directory_instead_of_file(tmp_path: Path) -> None:
    message = _error(tmp_path)
    assert str(tmp_path) in message


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "Listen = *:1\n")
    real_read_text = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    # chmod 0 does not stop root, so make the read fail the way it would for a normal user
    monkeypatch.setattr(Path, "read_text", read_text)
    message = _error(path)
    assert str(path) in message
    assert "Permission denied" in message


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.conf"
    path.write_bytes("ServerName = Börse\n".encode("latin-1"))
    message = _error(path)
    assert str(path) in message
    assert "UTF-8" in message


def test_unknown_environment_variable() -> None:
    message = _error(None, environ={"PUSHGRID_MAXMESAGESIZE": "1"})
    assert "PUSHGRID_MAXMESAGESIZE" in message


def test_env_name_uses_underscores_not_dots() -> None:
    # only the PUSHGRID_ spelling of a key is a setting
    message = _error(None, environ={"PUSHGRID_MaxMessageSize": "1"})
    assert "PUSHGRID_MaxMessageSize" in message


def test_bad_environment_value() -> None:
    message = _error(None, environ={"PUSHGRID_MAXMESSAGESIZE": "x"})
    assert "PUSHGRID_MAXMESSAGESIZE" in message
    assert "MaxMessageSize" in message
    assert "'x'" in message


# --- cross-field checks -----------------------------------------------------------------------


def test_listen_encrypted_needs_tls_files(tmp_path: Path) -> None:
    path = _write(tmp_path, "ListenEncrypted = *:443\n")
    message = _error(path)
    assert "ListenEncrypted" in message
    assert "TLSCertificate" in message
    assert "TLSKey" in message
    only_cert = _write(tmp_path, "ListenEncrypted = *:443\nTLSCertificate = c.pem\n", "b.conf")
    assert "TLSKey" in _error(only_cert)
    both = _write(
        tmp_path, "ListenEncrypted = *:443\nTLSCertificate = c.pem\nTLSKey = k.pem\n", "d.conf"
    )
    s = load_settings(both, environ={})
    assert s.listen_encrypted_addresses == [("0.0.0.0", 443)]
    assert s.tls_certificate == Path("c.pem")
    assert s.tls_key == Path("k.pem")


def test_some_client_port_is_required() -> None:
    message = _error(None, environ={"PUSHGRID_LISTEN": ""})
    assert "Listen" in message


@pytest.mark.parametrize(("interval", "timeout"), [("30", "30"), ("30", "29.9"), ("80", "75")])
def test_keepalive_timeout_must_exceed_interval(interval: str, timeout: str) -> None:
    message = _error(
        None,
        environ={"PUSHGRID_KEEPALIVEINTERVAL": interval, "PUSHGRID_KEEPALIVETIMEOUT": timeout},
    )
    assert "KeepaliveTimeout" in message
    assert "KeepaliveInterval" in message


def test_keepalive_timeout_just_above_interval_is_accepted() -> None:
    s = load_settings(
        None, environ={"PUSHGRID_KEEPALIVEINTERVAL": "30", "PUSHGRID_KEEPALIVETIMEOUT": "30.5"}
    )
    assert s.keepalive_timeout == 30.5


def test_jwt_entitlement_needs_a_key(tmp_path: Path) -> None:
    message = _error(_write(tmp_path, "Entitlement = jwt\n"))
    assert "Entitlement" in message
    assert "EntitlementJwtSecret" in message
    s = load_settings(
        _write(tmp_path, "Entitlement = jwt\nEntitlementJwtSecret = s3\n", "b"), environ={}
    )
    assert s.entitlement == "jwt"
    assert s.entitlement_jwt_secret == "s3"
    s = load_settings(
        None,
        environ={"PUSHGRID_ENTITLEMENT": "jwt", "PUSHGRID_ENTITLEMENTJWTPUBLICKEYFILE": "/k.pem"},
    )
    assert s.entitlement_jwt_public_key_file == Path("/k.pem")


def test_empty_jwt_secret_does_not_count(tmp_path: Path) -> None:
    assert "EntitlementJwtSecret" in _error(
        _write(tmp_path, "Entitlement = jwt\nEntitlementJwtSecret =\n")
    )


# --- addresses --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("*:8800", ("0.0.0.0", 8800)),
        (":8800", ("0.0.0.0", 8800)),
        ("127.0.0.1:1", ("127.0.0.1", 1)),
        ("[::1]:443", ("::1", 443)),
        (" host:0 ", ("host", 0)),
        ("host:65535", ("host", 65535)),
    ],
)
def test_parse_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["8800", "host", "host:", "host:65536", "host:-1", "host:x1"])
def test_parse_address_rejects(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011
        parse_address(text)


def test_every_field_has_a_config_key() -> None:
    for name, info in Settings.model_fields.items():
        assert info.alias, name


# --- dotted keys ------------------------------------------------------------------------------


def test_dotted_key_in_file_and_environment(tmp_path: Path) -> None:
    path = _write(tmp_path, "monitorhttp.listen = 127.0.0.1:9100\n")
    assert load_settings(path, environ={}).monitor_http_listen == ["127.0.0.1:9100"]
    s = load_settings(path, environ={"PUSHGRID_MONITORHTTP_LISTEN": "127.0.0.1:9200"})
    assert s.monitor_http_listen == ["127.0.0.1:9200"]  # dots become underscores


def test_dotted_key_errors_name_origin_and_key(tmp_path: Path) -> None:
    path = _write(tmp_path, "\nMonitorHTTP.Listen = nowhere\n")
    message = _error(path)
    assert f"{path}:2" in message
    assert "MonitorHTTP.Listen" in message
    message = _error(None, environ={"PUSHGRID_MONITORHTTP.LISTEN": "127.0.0.1:1"})
    assert "PUSHGRID_MONITORHTTP.LISTEN" in message


# --- cluster keys ------------------------------------------------------------------------------


def _cluster(tmp_path: Path, extra: str) -> str:
    members = "ClusterMembers = 127.0.0.1:7100, 127.0.0.1:7200, 127.0.0.1:7300\n"
    return _error(_write(tmp_path, members + extra + "ClusterPassword = s3cret\n"))


def test_cluster_member_must_be_named(tmp_path: Path) -> None:
    assert "ClusterMember: say which entry" in _cluster(tmp_path, "")


def test_cluster_member_must_be_in_the_list(tmp_path: Path) -> None:
    message = _cluster(tmp_path, "ClusterMember = 127.0.0.1:7400\n")
    assert ":2: ClusterMember" in message
    assert "not one of ClusterMembers" in message
    assert "position 4 is outside" in _cluster(tmp_path, "ClusterMember = 4\n")


def test_guaranteed_needs_the_seed_members(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "ClusterMembers = 127.0.0.1:7100, 127.0.0.1:7200\nClusterMember = 1\nClusterPassword = s\n",
    )
    message = _error(path)
    assert "Guaranteed needs at least 3 ClusterMembers" in message
    standard = load_settings(path, environ={}, cluster_delivery_mode="Standard")
    assert standard.engine_name == "nats"
    assert standard.cluster_delivery_mode == "standard"


def test_seed_count_is_three_or_five(tmp_path: Path) -> None:
    message = _cluster(tmp_path, "ClusterMember = 1\nClusterSeedMemberCount = 4\n")
    assert "ClusterSeedMemberCount must be 3 or 5" in message
    # Checked without ClusterMembers too: a single node must not ignore a cluster key's typo.
    alone = _error(_write(tmp_path, "ClusterSeedMemberCount = 4\n"))
    assert "ClusterSeedMemberCount must be 3 or 5" in alone


def test_memory_engine_refuses_a_cluster(tmp_path: Path) -> None:
    assert "Engine = memory cannot run a cluster" in _cluster(
        tmp_path, "ClusterMember = 1\nEngine = memory\n"
    )


def test_a_valid_cluster_member(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "ClusterMembers = 127.0.0.1:7100, 127.0.0.1:7200, 127.0.0.1:7300\n"
        "ClusterMember = 127.0.0.1:7200\nClusterDeliveryMode = guaranteed\n"
        "ClusterPasswordFile = " + str(_write(tmp_path, "from-a-file\n", "cluster.secret")) + "\n",
    )
    settings = load_settings(path, environ={})
    assert settings.cluster_password == "from-a-file"
    assert settings.engine_name == "nats"
    assert settings.cluster_member == "127.0.0.1:7200"


def test_the_fsync_policy_is_always_or_an_interval(tmp_path: Path) -> None:
    members = (
        "ClusterMembers = 127.0.0.1:7100, 127.0.0.1:7200, 127.0.0.1:7300\n"
        "ClusterMember = 1\nClusterPassword = s3cret\n"
    )
    for value in ("always", "2m", "100ms", "10s"):
        path = _write(tmp_path, members + f"ClusterSyncInterval = {value}\n")
        assert load_settings(path, environ={}).cluster_sync_interval == value
    assert load_settings(_write(tmp_path, members), environ={}).cluster_sync_interval == "always"
    assert "ClusterSyncInterval" in _cluster(
        tmp_path, "ClusterMember = 1\nClusterSyncInterval = 0\n"
    )


def test_secrets_from_files(tmp_path: Path) -> None:
    secret = tmp_path / "jwt.secret"
    secret.write_text("s3cret-from-a-file\n", encoding="utf-8")
    conf = tmp_path / "pushgrid.conf"
    conf.write_text(
        f"Entitlement = jwt\nEntitlementJwtSecretFile = {secret}\n"
        f"MonitorUsername = ops\nMonitorPasswordFile = {secret}\n",
        encoding="utf-8",
    )
    settings = load_settings(conf, environ={})
    assert settings.entitlement_jwt_secret == "s3cret-from-a-file"
    assert settings.monitor_password == "s3cret-from-a-file"
    with pytest.raises(ConfigError, match="not both"):
        load_settings(conf, environ={"PUSHGRID_MONITORPASSWORD": "x"})
    with pytest.raises(ConfigError, match="cannot read the secret file"):
        load_settings(None, environ={}, monitor_password_file=str(tmp_path / "missing"))
    (tmp_path / "empty").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="is empty"):
        load_settings(None, environ={}, entitlement_jwt_secret_file=str(tmp_path / "empty"))


def test_a_cluster_needs_its_password(tmp_path: Path) -> None:
    """Issue 22: the cluster bus is never anonymous, so a cluster without ClusterPassword does
    not start, naming the key."""
    path = _write(tmp_path, "ClusterMembers = 127.0.0.1:7100\nClusterMember = 1\n")
    message = _error(path, cluster_delivery_mode="Standard")
    assert "ClusterPassword: required" in message
    assert "ClusterPasswordFile" in message
    external = _error(_write(tmp_path, "NatsServers = nats://n:4222\n", "ext.conf"))
    assert "ClusterPassword: required" in external
    half_tls = _error(
        path,
        cluster_delivery_mode="Standard",
        cluster_password="p",
        cluster_tls_certificate="c.pem",
    )
    assert "ClusterTLSCertificate and ClusterTLSKey" in half_tls


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("DeflateMaxInflatingPerAddress = 1000000\n", "DeflateMaxInflatingPerAddress = 1000000"),
        ("DeflateMaxInflating = 2000000\n", "DeflateMaxInflating = 2000000 is below"),
        (
            "MaxMessageSize = 2097152\nDeflateMaxInflating = 16777216\n",
            "DeflateMaxInflatingPerAddress = 8388608 is below the hard frame limit 16777216",
        ),
    ],
)
def test_inflating_bounds_must_hold_one_whole_message(
    tmp_path: Path, text: str, named: str
) -> None:
    """Each bound on unfinished compressed messages holds at least one message of the hard
    frame limit, and the total at least the per-address bound (issue 34 item 2 row 2)."""
    message = _error(_write(tmp_path, text))
    assert named in message
