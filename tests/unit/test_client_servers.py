"""Weighted server lists: parsing and weighted choice that skips failed servers."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pushgrid.client.servers import (
    DEFAULT_PORT,
    ServerAddress,
    ServerPool,
    parse_server,
    parse_servers,
)


@pytest.mark.parametrize(
    ("entry", "host", "port", "weight"),
    [
        ("localhost", "localhost", DEFAULT_PORT, 100),
        ("127.0.0.1:18800", "127.0.0.1", 18800, 100),
        ("50 push1.example.com", "push1.example.com", DEFAULT_PORT, 50),
        ("0 10.0.0.2:9000", "10.0.0.2", 9000, 0),
        ("  100   host-a:1  ", "host-a", 1, 100),
        ("[::1]", "::1", DEFAULT_PORT, 100),
        ("25 [fe80::1]:8801", "fe80::1", 8801, 25),
    ],
)
def test_parse_plain_entries(entry: str, host: str, port: int, weight: int) -> None:
    server = parse_server(entry)
    assert (server.host, server.port, server.weight) == (host, port, weight)
    assert not server.secure
    assert server.path == "/ws"


def test_parse_urls() -> None:
    plain = parse_server("ws://a.example.com:8800")
    assert (plain.host, plain.port, plain.secure, plain.path) == (
        "a.example.com",
        8800,
        False,
        "/ws",
    )
    secure = parse_server("30 wss://b.example.com/push")
    assert (secure.host, secure.port, secure.weight, secure.secure, secure.path) == (
        "b.example.com",
        443,
        30,
        True,
        "/push",
    )
    assert parse_server("ws://c").port == 80


def test_url_with_token_and_ipv6() -> None:
    assert parse_server("h:1").url() == "ws://h:1/ws"
    assert parse_server("h:1").url("a b&c") == "ws://h:1/ws?token=a%20b%26c"
    assert parse_server("[::1]:5").url() == "ws://[::1]:5/ws"
    assert parse_server("wss://h/p?x=1").url("t") == "wss://h:443/p?x=1&token=t"
    assert str(parse_server("[::1]:5")) == "[::1]:5"


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("101 host", "out of range 0-100"),
        ("-1 host", "not an integer"),
        ("abc host:80", "'abc' is not an integer"),
        ("host:notaport", "port 'notaport' is not a number"),
        ("host:0", "out of range 1-65535"),
        ("host:70000", "out of range 1-65535"),
        ("::1", "brackets"),
        ("[::1", "missing ']'"),
        ("[::1]x", "unexpected"),
        ("http://host", "scheme 'http'"),
        ("ws://", "no host"),
        ("ws://host:99999", "invalid URL"),
        ("bad host!", "not an integer"),
        ("ho$t", "not a valid host name"),
    ],
)
def test_invalid_entries_name_the_entry(entry: str, fragment: str) -> None:
    with pytest.raises(ValueError, match="server entry") as info:
        parse_server(entry)
    message = str(info.value)
    assert repr(entry) in message
    assert fragment in message


def test_parse_servers_list_and_comma_string() -> None:
    assert [str(s) for s in parse_servers(["a:1", "50 b:2"])] == ["a:1", "b:2"]
    parsed = parse_servers("a:1, 50 b:2 ,c")
    assert [(s.host, s.port, s.weight) for s in parsed] == [
        ("a", 1, 100),
        ("b", 2, 50),
        ("c", DEFAULT_PORT, 100),
    ]
    with pytest.raises(ValueError, match="empty"):
        parse_servers([])
    with pytest.raises(ValueError, match="empty"):
        parse_servers("")
    with pytest.raises(ValueError, match="'x:y'"):
        parse_servers("a:1,x:y")


def _pool(entries: list[str], seed: int = 7) -> ServerPool:
    return ServerPool(parse_servers(entries), random.Random(seed))


def test_weighted_choice_follows_weights() -> None:
    pool = _pool(["75 a", "25 b"])
    counts = Counter(pool.choose().host for _ in range(20_000))
    assert counts["a"] + counts["b"] == 20_000
    assert 0.72 < counts["a"] / 20_000 < 0.78


def test_weight_zero_is_backup_only() -> None:
    pool = _pool(["0 backup", "10 main"])
    assert {pool.choose().host for _ in range(500)} == {"main"}
    assert [s.host for s in pool.candidates()] == ["main"]
    pool.mark_failed(pool.servers[1])
    assert {pool.choose().host for _ in range(50)} == {"backup"}


def test_all_zero_weights_choose_uniformly() -> None:
    pool = _pool(["0 a", "0 b"])
    assert {pool.choose().host for _ in range(200)} == {"a", "b"}


def test_failed_servers_skipped_until_all_failed() -> None:
    pool = _pool(["a", "b", "c"])
    a, b, c = pool.servers
    pool.mark_failed(a)
    assert {pool.choose().host for _ in range(300)} == {"b", "c"}
    pool.mark_failed(c)
    assert {pool.choose().host for _ in range(100)} == {"b"}
    pool.mark_failed(b)  # every server failed: all are candidates again
    assert {pool.choose().host for _ in range(300)} == {"a", "b", "c"}


def test_reset_forgets_failures() -> None:
    pool = _pool(["a", "b"])
    pool.mark_failed(pool.servers[0])
    pool.reset()
    assert {pool.choose().host for _ in range(200)} == {"a", "b"}


def test_choice_is_reproducible_with_a_seed() -> None:
    pool1, pool2 = _pool(["10 a", "20 b", "30 c"], 3), _pool(["10 a", "20 b", "30 c"], 3)
    assert [pool1.choose() for _ in range(50)] == [pool2.choose() for _ in range(50)]


def test_empty_pool_rejected() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ServerPool([])


def test_server_address_equality_ignores_query() -> None:
    assert ServerAddress("h", 1) == ServerAddress("h", 1, query="x=1")
