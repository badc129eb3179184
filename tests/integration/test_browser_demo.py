"""The browser client (client/js/pushgrid.js) and the demo page in real headless Chromium.

Subscribe, receive, publish from the page, over WebSocket and over the SSE fallback, with the
page served by the server itself (/demo, /pushgrid.js). Skipped only when Chromium, chromedriver
or selenium are not installed (the skip message says what to install).
"""

from __future__ import annotations

import time

import httpx
import jwt
import pytest

from .browser import WIRE_RECORDER, Browser, ThreadedProxy, publish, wire_updates
from .pgtest import DEFAULT_TIMEOUT

TRANSPORTS = ["websocket", "sse"]
SECRET = "browser-test-secret-0123456789abcdef0123"


def no_console_errors(browser: Browser, include_network: bool = True) -> None:
    errors = browser.console_errors(include_network=include_network)
    assert not errors, f"browser console errors: {errors}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_page_shows_a_published_update_with_its_fields(server, browser, subject, transport):
    s = subject("IBM")
    browser.open_demo(server.url, subject=s, transport=transport)
    browser.wait_status("subscribe_allow", s)
    assert browser.client("transport") == transport

    answer = publish(server.url, s, "193", {"volume": "6.62M", "ask": "190"})

    row = browser.wait(
        lambda: r if (r := browser.row(s)) and r["content"] == "193" else None,
        "the table row shows the update",
    )
    assert row["type"] == "update"
    assert row["seq"] == str(answer["seq"])
    assert row["epoch"] == answer["epoch"]
    assert sorted(row["fields"].splitlines()) == ["ask=190", "volume=6.62M"]
    (message,) = browser.messages(s)
    assert message["fields"] == {"volume": "6.62M", "ask": "190"}
    assert (message["qos"], message["retained"], message["conflated"]) == (
        "guaranteed",
        True,
        False,
    )
    assert browser.statuses("server_up")
    log = browser.js("return document.querySelector('#message-log li:last-child').dataset")
    assert (log["type"], log["seq"]) == ("update", str(answer["seq"]))
    no_console_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_subscribing_shows_the_snapshot_first(server, browser, subject, transport):
    s = subject("snap")
    publish(server.url, s, "195", {"ask": "190"})
    publish(server.url, s, "193", {"bid": "194"})
    browser.open_demo(server.url, transport=transport)
    browser.driver.find_element("id", "subject").send_keys(s)
    browser.driver.find_element("id", "subscribe").click()

    (snapshot,) = browser.wait_messages(s, 1)
    assert snapshot["type"] == "snapshot"
    assert snapshot["content"] == "193"
    assert snapshot["fields"] == {"ask": "190", "bid": "194"}
    assert snapshot["seq"] == 2
    browser.wait(lambda: (browser.row(s) or {}).get("type") == "snapshot", "snapshot row")
    no_console_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_publish_from_the_page_shows_the_result(server, browser, subject, transport):
    s = subject("pub")
    browser.open_demo(server.url, subject=s, transport=transport)
    browser.wait_status("subscribe_allow", s)
    find = browser.driver.find_element
    find("id", "pub-subject").send_keys(s)
    find("id", "pub-content").send_keys("hello from the page")
    find("id", "pub-fields").send_keys("bid=194\nnote=a = b")
    find("id", "publish").click()

    result = browser.wait_js(
        "const r = document.getElementById('pub-result'); return r.dataset.result && r.innerText",
        "publish result",
    )
    assert result.startswith("ok"), result
    (published,) = browser.js("return window.pgDemo.publishResults")
    assert published["result"] == "ok"
    assert published["subject"] == s
    assert published["seq"] == 1
    assert f"seq {published['seq']}" in result

    # the page receives its own message, and the server holds it
    (message,) = browser.wait_messages(s, 1)
    assert (message["content"], message["fields"]) == (
        "hello from the page",
        {"bid": "194", "note": "a = b"},
    )
    with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
        snap = http.get(
            f"{server.url}/snapshot", params={"subject": s}, headers={"accept": "application/json"}
        ).json()
    assert (snap["content"], snap["seq"]) == ("hello from the page", 1)

    # too large: refused before sending, with the server's limit in the reason
    too_large = browser.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.pgDemo.client.publish(arguments[0], 'x'.repeat(70000)).then(done);",
        s,
    )
    assert too_large["result"] == "too_large", too_large
    assert "max_message_size" in too_large["reason"]
    no_console_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_publish_results_denied_and_failed(server_factory, browser, transport):
    srv = server_factory(Entitlement="jwt", EntitlementJwtSecret=SECRET)
    token = jwt.encode(
        {
            "exp": int(time.time()) + 3600,
            "permissions": {"sub": ["/Stocks/*"], "pub": ["/Stocks/NYSE/IBM"]},
        },
        SECRET,
        algorithm="HS256",
    )
    browser.open_demo(srv.url, transport=transport, token=token, subject="/Stocks/NYSE/IBM")
    browser.wait_status("subscribe_allow", "/Stocks/NYSE/IBM")
    results = browser.driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const pg = window.pgDemo.client;
        Promise.all([
          pg.publish("/Stocks/NYSE/IBM", "193"),
          pg.publish("/Stocks/NYSE/MSFT", "1"),
        ]).then(done);
        """
    )
    ok, denied = results
    assert ok["result"] == "ok", ok
    assert denied["result"] == "denied", denied
    assert denied["reason"]
    assert denied["subject"] == "/Stocks/NYSE/MSFT"

    browser.js("window.pgDemo.client.subscribe('/Forex/EUR/USD')")
    (deny,) = browser.wait_status("subscribe_deny", "/Forex/EUR/USD")
    assert deny["detail"]
    with pytest.raises(Exception, match="invalid subject"):
        browser.js("window.pgDemo.client.publish('/Stocks', 'x')")
    # over SSE the browser itself reports the 403 of POST /publish (source "network")
    no_console_errors(browser, include_network=transport == "websocket")


def test_without_websocket_the_page_uses_sse(server, browser, subject):
    """A browser without WebSocket (deleted before any script runs) falls back to SSE."""
    s = subject("nows")
    browser.before_load("delete window.WebSocket;")
    browser.open_demo(server.url, subject=s)
    assert browser.js("return typeof WebSocket") == "undefined"
    browser.wait_status("subscribe_allow", s)
    assert browser.client("transport") == "sse"
    publish(server.url, s, "1", {"a": "b"})
    publish(server.url, s, "2")
    messages = browser.wait_messages(s, 2)
    assert [(m["content"], m["seq"], m["type"]) for m in messages] == [
        ("1", 1, "update"),
        ("2", 2, "update"),
    ]
    assert browser.client("counters.websockets") == 0
    no_console_errors(browser)


def test_auto_falls_back_to_sse_when_a_proxy_blocks_websocket(server, browser, subject):
    """WebSocket upgrades fail but HTTP works (a proxy that blocks WebSocket): after a few
    attempts the client switches to SSE by itself and receives and publishes normally."""
    s = subject("blocked")
    proxy = ThreadedProxy(server.host, server.port, block_websocket=True)
    try:
        browser.open_demo(proxy.url, subject=s, backoff="0.1")
        browser.wait_status("subscribe_allow", s)
        assert browser.client("transport") == "sse"
        assert browser.client("counters.websockets") >= 3
        assert proxy.blocked >= 3
        publish(server.url, s, "through the proxy")
        (message,) = browser.wait_messages(s, 1)
        assert message["content"] == "through the proxy"
        result = browser.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.pgDemo.client.publish(arguments[0], 'from the page').then(done);",
            s,
        )
        assert result["result"] == "ok", result
        browser.wait_messages(s, 2)
        # failed WebSocket handshakes are reported by the browser itself (source "network")
        no_console_errors(browser, include_network=False)
    finally:
        proxy.close()


def test_batched_frames_are_delivered_in_order(server_factory, browser, subject):
    """With server batching, several frames travel as one JSON array per WebSocket frame."""
    srv = server_factory(BatchingTime=100, BatchingMaxSize=65536)
    s = subject("batch")
    browser.open_demo(srv.url, subject=s, transport="websocket")
    browser.wait_status("subscribe_allow", s)
    answers = [publish(srv.url, s, f"m{i}", {"i": str(i)}) for i in range(1, 31)]
    messages = browser.wait_messages(s, 30)
    assert [m["seq"] for m in messages] == [a["seq"] for a in answers]
    assert [m["content"] for m in messages] == [f"m{i}" for i in range(1, 31)]
    assert {m["type"] for m in messages} == {"update"}
    assert not browser.statuses("data_sync"), "no gap recovery may have been needed"
    no_console_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_conflated_subscription_skips_gap_detection(server, browser, subject, transport):
    """Conflated deliveries jump in seq by design: no gap recovery, the last value arrives."""
    s = subject("conflated")
    browser.open_demo(server.url, transport=transport)
    browser.js("window.pgDemo.client.subscribe(arguments[0], {conflationMs: 300})", s)
    browser.wait_status("subscribe_allow", s)
    for i in range(1, 21):
        publish(server.url, s, f"v{i}", {f"f{i % 3}": str(i)})
    browser.wait(lambda: any(m["content"] == "v20" for m in browser.messages(s)), "the last value")
    messages = browser.messages(s)
    assert len(messages) < 20, "updates were conflated"
    assert any(m["conflated"] for m in messages)
    seqs = [m["seq"] for m in messages]
    assert seqs == sorted(set(seqs)), "no duplicates, in order"
    assert messages[-1]["seq"] == 20
    assert not browser.statuses("data_sync", s), "a conflated jump is not a gap"
    assert not browser.statuses("data_resync", s)
    assert len(browser.statuses("subscribe_allow", s)) == 1
    no_console_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_subscription_changes_while_connected_lose_nothing(server, browser, subject, transport):
    """Subscribing and unsubscribing while messages flow (over SSE each change opens a new
    stream that recovers the other subjects): no loss, no duplicates, no spurious statuses."""
    first, second = subject("first"), subject("second")
    browser.open_demo(server.url, subject=first, transport=transport)
    browser.wait_status("subscribe_allow", first)
    publish(server.url, first, "a1")
    browser.wait_messages(first, 1)

    browser.driver.find_element("id", "subject").send_keys(second)
    browser.driver.find_element("id", "subscribe").click()
    for i in range(2, 12):  # while the new subscription (or stream) is set up
        publish(server.url, first, f"a{i}")
    browser.wait_status("subscribe_allow", second)
    publish(server.url, second, "b1")
    assert [m["content"] for m in browser.wait_messages(first, 11)] == [
        f"a{i}" for i in range(1, 12)
    ]
    browser.wait_messages(second, 1)

    browser.js(
        "Array.from(document.querySelectorAll('#messages tr'))"
        ".find((tr) => tr.dataset.subject === arguments[0])"
        ".querySelector('button.unsubscribe').click()",
        first,
    )
    assert browser.row(first) is None
    publish(server.url, first, "after unsubscribe")
    publish(server.url, second, "b2")
    browser.wait_messages(second, 2)
    assert len(browser.messages(first)) == 11
    assert browser.client("subjects") == [second]

    messages = browser.messages(first)
    assert [m["seq"] for m in messages] == list(range(1, 12))
    assert [e["status"] for e in browser.statuses(subject=first)] == ["subscribe_allow"]
    assert [e["status"] for e in browser.statuses(subject=second)] == ["subscribe_allow"]
    assert len(browser.statuses("server_up")) == 1
    assert not browser.statuses("server_down")
    if transport == "sse":
        assert browser.client("counters.eventSources") == 3
    no_console_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_keepalives_keep_an_idle_connection_up(server_factory, browser, subject, transport):
    """Idle past a keepalive interval: the server's keepalive frames (WebSocket frames or SSE
    events) reach the page's watchdog (1.4 x keepalive), so the connection stays up."""
    srv = server_factory(KeepaliveInterval=5)
    s = subject("idle")
    browser.open_demo(srv.url, subject=s, transport=transport)
    browser.wait_status("subscribe_allow", s)
    assert browser.client("welcome.keepalive") == 5
    browser.wait(lambda: browser.client("counters.keepalives") >= 1, "a keepalive frame")
    assert not browser.statuses("server_down"), browser.statuses("server_down")
    publish(srv.url, s, "still here")
    (message,) = browser.wait_messages(s, 1)
    assert message["type"] == "update"
    assert browser.client("counters.welcomes") == 1
    no_console_errors(browser)


def test_chromium_negotiates_deflate_and_reads_compressed_updates(server, browser, subject):
    """Chromium offers permessage-deflate by itself; the server agrees and compresses frames of
    DeflateMinSize bytes or more (ADR 028); the page sees the messages whole."""
    s = subject("deflate")
    browser.open_demo(server.url, subject=s, transport="websocket")
    browser.wait_status("subscribe_allow", s)
    extensions = browser.client("extensions")
    assert extensions.startswith("permessage-deflate"), extensions
    assert "server_no_context_takeover" in extensions
    fields = {f"f{i}": f"{1000 + i}.{i:04d}" for i in range(10)}
    publish(server.url, s, "x" * 300, fields)
    (message,) = browser.wait_messages(s, 1)
    assert (message["content"], message["fields"]) == ("x" * 300, fields)
    no_console_errors(browser)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_browser_client_merges_field_deltas_into_full_field_sets(
    server, browser, subject, transport
):
    """``delta=1``: the page subscribes with field deltas, over WebSocket and over the SSE
    fallback (``delta=true`` on GET /events); the publisher sends whole records, the wire
    carries the first one whole and then the changed fields only, and every message the page
    gets holds every field with its latest value (docs/protocol.md 5.1.2)."""
    s = subject("delta")
    record = {"bid": "1", "ask": "2", "last": "3"}
    publish(server.url, s, "0", record)
    browser.before_load(WIRE_RECORDER)
    browser.open_demo(server.url, subject=s, transport=transport, delta="1")
    browser.wait_status("subscribe_allow", s)
    assert browser.client("transport") == transport
    steps = [{"bid": "1.5"}, {"ask": "2.5", "last": "3.5"}, {}, {"volume": "9"}]
    expected = [dict(record)]
    for changes in steps:
        record = {**record, **changes}
        publish(server.url, s, "x", record)
        expected.append(dict(record))
    messages = browser.wait_messages(s, len(expected))
    assert [m["fields"] for m in messages] == expected
    assert [f["fields"] for f in wire_updates(browser, s)] == [expected[1], *steps[1:]]
    no_console_errors(browser)
