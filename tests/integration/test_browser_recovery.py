"""The browser client reconnects and recovers: server restart (new epoch -> DATA_RESYNC), a cut
connection (exactly the missed messages, as recovered, in order), an operator disconnect, over
WebSocket and over SSE (EventSource's own reconnect with Last-Event-ID).

The demo page runs with a fast reconnect policy (``backoff=0.2``) so the tests stay short; every
wait is bounded and nothing asserts on timing.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from .browser import (
    WIRE_RECORDER,
    Browser,
    ThreadedProxy,
    jolokia_disconnect,
    publish,
    wire_updates,
)
from .cluster import Cluster

TRANSPORTS = ["websocket", "sse"]
N = 10


@pytest.fixture
def proxy_for() -> Iterator[Any]:
    proxies: list[ThreadedProxy] = []

    def make(srv: Any) -> ThreadedProxy:
        proxy = ThreadedProxy(srv.host, srv.port)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.close()


def script_errors(browser: Browser) -> list[dict[str, Any]]:
    """Console errors other than the browser's reports of refused connections."""
    return browser.console_errors(include_network=False)


def assert_in_order(messages: list[dict[str, Any]]) -> None:
    seqs = [m["seq"] for m in messages]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"not in order or duplicated: {seqs}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_restart_gives_data_resync_then_new_messages(
    server_factory, browser, subject, transport
):
    srv = server_factory()
    s = subject("restart")
    browser.open_demo(srv.url, subject=s, transport=transport, backoff="0.2")
    browser.wait_status("subscribe_allow", s)
    first = publish(srv.url, s, "before", {"k": "1"})
    browser.wait_messages(s, 1)

    srv.restart()  # SIGKILL, same port: the memory engine starts a new epoch

    browser.wait_status("server_down")
    (resync,) = browser.wait_status("data_resync", s)
    assert resync["detail"] == "new_epoch"
    after = publish(srv.url, s, "after", {"k": "2"})
    assert after["epoch"] != first["epoch"]
    messages = browser.wait_messages(s, 2)
    assert [(m["content"], m["epoch"], m["seq"]) for m in messages] == [
        ("before", first["epoch"], first["seq"]),
        ("after", after["epoch"], after["seq"]),
    ]
    assert messages[1]["type"] == "update"
    row = browser.wait(
        lambda: r if (r := browser.row(s)) and r["content"] == "after" else None, "row"
    )
    assert (row["epoch"], row["seq"]) == (after["epoch"], str(after["seq"]))
    assert len(browser.statuses("server_up")) == 2
    assert browser.client("transport") == transport
    statuses = [e["status"] for e in browser.statuses(subject=s)]
    assert statuses == ["subscribe_allow", "data_resync"], statuses
    assert not script_errors(browser), script_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_cut_connection_recovers_exactly_the_missed_messages(
    server, browser, subject, proxy_for, transport
):
    """The page's connection is cut and refused while N messages are published; once it can
    connect again it gets exactly those N, as recovered, in order, without duplicates. Over SSE
    the browser's own EventSource reconnect (Last-Event-ID) does the recovery."""
    s = subject("cut")
    other = subject("other")
    proxy = proxy_for(server)
    # sseRetries: leave reconnecting to EventSource for the whole outage
    browser.open_demo(
        proxy.url, subject=[s, other], transport=transport, backoff="0.2", sseRetries="1000"
    )
    browser.wait_status("subscribe_allow", s)
    browser.wait_status("subscribe_allow", other)
    live = [publish(server.url, s, f"live{i}") for i in range(1, 4)]
    browser.wait_messages(s, 3)

    proxy.set_accepting(False)
    assert proxy.drop_all() >= 1
    browser.wait_status("server_down")
    missed = [publish(server.url, s, f"missed{i}", {"i": str(i)}) for i in range(1, N + 1)]
    publish(server.url, other, "missed-other")
    proxy.set_accepting(True)

    browser.wait_status("data_sync", s, detail="recovered")
    messages = browser.wait_messages(s, 3 + N)
    assert len(messages) == 3 + N, [m["content"] for m in messages]
    recovered = messages[3:]
    assert [m["type"] for m in recovered] == ["recovered"] * N
    assert [m["content"] for m in recovered] == [f"missed{i}" for i in range(1, N + 1)]
    assert [m["seq"] for m in recovered] == [a["seq"] for a in missed]
    assert [m["fields"] for m in recovered] == [{"i": str(i)} for i in range(1, N + 1)]
    (other_missed,) = browser.wait_messages(other, 1)
    assert (other_missed["content"], other_missed["type"]) == ("missed-other", "recovered")

    after = publish(server.url, s, "after")
    messages = browser.wait_messages(s, 4 + N)
    assert (messages[-1]["content"], messages[-1]["type"]) == ("after", "update")
    assert after["seq"] == live[-1]["seq"] + N + 1
    assert_in_order(messages)
    assert len(browser.messages(s)) == 4 + N, "no duplicates arrived late"
    assert not browser.statuses("data_resync")
    if transport == "sse":
        assert browser.client("counters.eventSources") == 1, "EventSource reconnected by itself"
    else:
        assert browser.client("counters.websockets") >= 2
    assert browser.client("counters.welcomes") >= 2
    assert not script_errors(browser), script_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_client_takes_over_when_eventsource_cannot_reconnect(
    server, browser, subject, proxy_for, transport
):
    """When the browser's own retries keep failing (sseRetries=1), the client reconnects by
    itself with the positions in the URL; over WebSocket this is the ordinary path."""
    s = subject("takeover")
    proxy = proxy_for(server)
    browser.open_demo(proxy.url, subject=s, transport=transport, backoff="0.2", sseRetries="1")
    browser.wait_status("subscribe_allow", s)
    publish(server.url, s, "live")
    browser.wait_messages(s, 1)

    proxy.set_accepting(False)
    proxy.drop_all()
    # a few failed attempts while refused (SSE: the browser's retry, then the client's own)
    browser.wait_status("server_down", count=3)
    missed = [publish(server.url, s, f"missed{i}") for i in range(1, N + 1)]
    proxy.set_accepting(True)

    messages = browser.wait_messages(s, 1 + N)
    assert [(m["content"], m["type"]) for m in messages[1:]] == [
        (f"missed{i}", "recovered") for i in range(1, N + 1)
    ]
    assert [m["seq"] for m in messages[1:]] == [a["seq"] for a in missed]
    assert_in_order(messages)
    browser.wait_status("data_sync", s, detail="recovered")
    if transport == "sse":
        assert browser.client("counters.eventSources") >= 2, "the client opened a new stream"
    assert not script_errors(browser), script_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_operator_disconnect_reconnects_without_loss(server, browser, subject, transport):
    """Jolokia's Sessions/disconnect closes the page's session with 4003 (a close frame, or a
    ``closing`` event on SSE); the page reports it, reconnects and delivers every message
    exactly once, in order."""
    s = subject("operator")
    browser.open_demo(server.url, subject=s, transport=transport, backoff="0.2")
    browser.wait_status("subscribe_allow", s)
    publish(server.url, s, "first")
    browser.wait_messages(s, 1)
    session = browser.client("welcome.session")

    jolokia_disconnect(server.monitor_url, session)
    (down,) = browser.wait_status("server_down")
    assert down["closeCode"] == 4003
    assert down["retryIn"] is not None
    for i in range(1, N + 1):
        publish(server.url, s, f"m{i}")
    browser.wait_status("server_up", count=2)

    messages = browser.wait_messages(s, 1 + N)
    assert [m["content"] for m in messages] == ["first"] + [f"m{i}" for i in range(1, N + 1)]
    assert {m["type"] for m in messages[1:]} <= {"recovered", "update"}
    assert_in_order(messages)
    assert browser.client("welcome.session") != session
    assert not script_errors(browser), script_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_failover_to_the_other_server_of_the_list(server_factory, browser, subject, transport):
    """Two independent servers in the page's list: when the one in use dies, the page moves to
    the other (a different epoch there: DATA_RESYNC) and receives its messages."""
    a, b = server_factory(ServerName="node-a"), server_factory(ServerName="node-b")
    s = subject("failover")
    browser.open_demo(
        a.url,
        server=f"50 {a.address}, 50 {b.address}",
        subject=s,
        transport=transport,
        backoff="0.2",
    )
    browser.wait_status("subscribe_allow", s)
    used = browser.client("server")
    first, other = (a, b) if used == a.address else (b, a)
    assert used == first.address
    publish(first.url, s, "on the first")
    browser.wait_messages(s, 1)

    first.stop(signal.SIGKILL)

    (resync,) = browser.wait_status("data_resync", s)
    assert resync["server"] == other.address
    assert browser.client("server") == other.address
    publish(other.url, s, "on the other")
    messages = browser.wait_messages(s, 2)
    assert [m["content"] for m in messages] == ["on the first", "on the other"]
    ups = browser.statuses("server_up")
    assert [e["server"] for e in ups] == [first.address, other.address]
    assert not script_errors(browser), script_errors(browser)


def _publish_until_ok(base_url: str, s: str, content: str, fields: dict[str, str]) -> Any:
    """A publish to a cluster that may be electing a stream leader: retried, bounded."""
    for _ in range(60):
        try:
            return publish(base_url, s, content, fields)
        except AssertionError:  # 503 engine_unavailable while the stream has no leader
            time.sleep(0.5)
    return publish(base_url, s, content, fields)


def test_sse_page_fails_over_from_an_isolated_member_with_every_field(
    tmp_path: Path, browser: Browser, subject: Any
) -> None:
    """A Guaranteed cluster of three; the page reads field deltas over SSE from m1 (m2 its
    weight-0 backup). m1's nats-server is frozen (SIGSTOP): m1 stops hearing its peers, and
    after ClusterIsolationTimeout ends its event streams with a ``closing`` event carrying 4007.
    The page moves to m2 at once (retryIn 0, as on WebSocket), recovers what was published
    meanwhile, and every message it hands out holds every field at its latest value."""
    cluster = Cluster(tmp_path, configured=3)
    nats: psutil.Process | None = None
    try:
        cluster.start()
        m1, m2 = cluster.member(1), cluster.member(2)
        assert m1.proc is not None
        (nats,) = [p for p in psutil.Process(m1.proc.pid).children() if "nats" in p.name()]
        s = subject("isolated")
        record = {"bid": "1", "ask": "2", "last": "3"}
        expected = {_publish_until_ok(m2.url, s, "r0", record)["seq"]: dict(record)}

        def step(content: str, changes: dict[str, str]) -> None:
            nonlocal record
            record = {**record, **changes}
            answer = _publish_until_ok(m2.url, s, content, record)
            expected[answer["seq"]] = dict(record)

        browser.before_load(WIRE_RECORDER)
        browser.open_demo(
            m2.url,
            server=f"{m1.address}, 0 {m2.address}",
            subject=s,
            transport="sse",
            delta="1",
            backoff="0.2",
        )
        browser.wait_status("subscribe_allow", s)
        assert browser.client("server") == m1.address
        browser.wait_messages(s, 1)  # the snapshot
        step("r1", {"bid": "1.5"})
        browser.wait_messages(s, 2)

        nats.suspend()  # m1 delivers nothing more: r2 and r3 reach the page by recovery
        step("r2", {"ask": "2.5"})
        step("r3", {"last": "3.5", "volume": "7"})
        (down,) = browser.wait_status("server_down", timeout=60)
        assert (down["server"], down["closeCode"], down["retryIn"]) == (m1.address, 4007, 0)
        browser.wait_status("server_up", count=2)
        browser.wait_status("data_sync", s)  # the subscription on m2 is live
        assert browser.client("server") == m2.address
        step("r4", {"bid": "1.75"})
        step("r5", {"ask": "2.75"})
        messages = browser.wait_messages(s, len(expected))
        assert messages[-1]["content"] == "r5", [m["content"] for m in messages]
        for message in messages:
            assert message["fields"] == expected[message["seq"]], message
        assert [m["seq"] for m in messages] == sorted(expected), "no gap, no duplicate"
        # Live updates on the wire: each one whole (the first after a (re)subscription) or only
        # what changed since the previous message; r5 is a change on m2 after the failover.
        # (r2 and r3 arrive recovered or live on m2, depending on how long the stream's leader
        # election held the publishes: either way the page holds every field.)
        wire = wire_updates(browser, s)
        for frame in wire:
            now, before = expected[frame["seq"]], expected[frame["seq"] - 1]
            changes = {k: v for k, v in now.items() if before.get(k) != v}
            assert frame["fields"] in (now, changes), frame
        assert wire[-1]["fields"] == {"ask": "2.75"}
        assert not browser.statuses("data_resync"), "a member of the same cluster recovers"
        assert not script_errors(browser), script_errors(browser)

        # a new page choosing m1 while it is isolated: 503 to GET /events, on to m2
        browser.open_demo(
            m2.url, server=f"{m1.address}, 0 {m2.address}", subject=s, transport="sse"
        )
        (refused,) = browser.wait_status("server_down")
        assert refused["server"] == m1.address
        assert "refused" in refused["detail"], refused
        browser.wait_status("subscribe_allow", s)
        assert browser.client("server") == m2.address
    finally:
        if nats is not None:
            with contextlib.suppress(psutil.Error):
                nats.resume()
        cluster.kill_all()
