"""The browser client reports delivery latency too (ADR 048): in Chromium, with its clock 5 s
off, against a real server; the latencies it measures and the server's percentiles agree, and
its bucket table is the server's."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np

from pushgrid.protocol.latency import UPPER, bucket_of

from .browser import Browser, publish
from .pgtest import DEFAULT_TIMEOUT, ServerProcess

S = "/lat/browser"
N = 20


def _delivery(srv: ServerProcess) -> dict[str, Any]:
    with httpx.Client(trust_env=False, timeout=DEFAULT_TIMEOUT) as http:
        stats = http.get(f"{srv.monitor_url}/stats", params={"format": "json"}).json()
    delivery: dict[str, Any] = stats["delivery"]
    return delivery


def test_the_browser_client_reports_latency_on_the_servers_clock(
    server_factory: Callable[..., ServerProcess], browser: Browser
) -> None:
    srv = server_factory()
    browser.driver.get(f"{srv.url}/health")  # any page of the server's origin
    browser.js(
        "const s = document.createElement('script'); s.src = '/pushgrid.js';"
        "document.head.appendChild(s);"
    )
    browser.wait_js("return typeof window.Pushgrid === 'object'", "/pushgrid.js loaded")
    assert browser.js("return Pushgrid.LATENCY_UPPER") == list(UPPER)
    browser.js(
        """
        window.seen = [];
        const client = window.pg = new Pushgrid.PushgridClient(arguments[0], {
          reportInterval: 0.5,
          clock: () => Date.now() + 5000,  // the browser's clock is 5 s ahead
          onMessage: (m) => window.seen.push(m),
        });
        client.subscribe(arguments[1]);
        client.connect({ wait: false });
        """,
        srv.address,
        S,
    )
    browser.wait_js("return window.pg.delivery.best !== null", "a clock offset")
    offset = browser.js("return window.pg.delivery.best.offset")
    assert abs(offset + 5_000_000) < 500_000  # the skew, found (microseconds)
    for i in range(N):
        publish(srv.url, S, f"m{i}")
    browser.wait_js(
        f"return window.seen.filter(m => m.type === 'update').length === {N}", f"{N} updates"
    )
    latencies = browser.js(
        "return window.seen.filter(m => m.type === 'update').map(m => m.latency)"
    )
    assert all(x is not None and -0.05 < x < 2.0 for x in latencies), latencies
    deadline = time.monotonic() + DEFAULT_TIMEOUT
    while (delivery := _delivery(srv))["latency"]["count"] != N:
        assert time.monotonic() < deadline, delivery
        time.sleep(0.1)
    mine = np.array(latencies, dtype=float) * 1e6
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        exact = float(np.quantile(mine, q, method="inverted_cdf"))
        reported = UPPER.index(round(delivery["latency"][name] * 1e6))
        assert abs(reported - bucket_of(exact)) <= 1, (name, exact, delivery["latency"])
    browser.js("window.pg.close()")
    assert not browser.console_errors(), browser.console_errors()
