# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""The Statistics page's delivery latency windows (issue 33 items 1 and 7, ADR 062) in real
headless Chromium on the stack of test_console_browser.py: windows the statistics pipeline
wrote (the store's writer, no Spark) show, per scope and series, exactly the numbers
``GET /stats/delivery`` answers. Screenshot: ``console-statistics-delivery.png``.
"""

from __future__ import annotations

import time

import pandas as pd

from pushgrid.console.format import count, latency
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.spark_stats.delivery import delivery_windows
from pushgrid.spark_stats.exact import empty_stats
from pushgrid.spark_stats.results import PipelineResult

from .test_console_browser import (  # noqa: F401  (fixtures, used by name)
    NODES,
    Console,
    Stack,
    console,
    pytestmark,
    stack,
)

CELLS = (
    "return Array.from(document.querySelectorAll('#stats-delivery-table td[data-line]'))"
    ".map(c => [c.dataset.series, c.dataset.window, c.dataset.line, c.dataset.value,"
    " c.innerText])"
)


def _seed(db_url: str) -> int:
    """Delivery windows of the cluster and the first node as one run writes them: 100
    latencies in the last 15 minutes (60 <= 10 ms, 39 <= 12.589 ms, 1 <= 316 ms), 400 more
    (<= 19.953 ms) in the hour, a watched pattern's seven from 15 minutes on; no window
    statistics (this run is the delivery family alone)."""
    from pushgrid.metrics.sqlstore import finish_run, make_session_factory, start_run, write_results

    as_of = int(time.time()) // 60 * 60 - 30  # not the seeded main run's instant
    records = []
    minute = {30: 60, 31: 39, 45: 1}
    longer = {30: 600, 31: 39, 33: 400, 45: 1}  # windows of an hour and more hold the minute
    for scope in ("cluster", f"node:{NODES[0]}"):
        for window in WINDOW_NAMES:
            buckets = minute if window in ("1m", "5m", "15m") else longer
            for bucket, n in buckets.items():
                records.append((f"{scope}\tmember\t{bucket}", window, n))
            if window not in ("1m", "5m"):
                records.append((f"{scope}\tpattern:/Stocks/*\t20", window, 7))
            if window not in ("1m", "5m", "15m"):  # the clients reported 3 gaps in the hour
                records.append((f"{scope}\tmember\tloss:gaps", window, 3))
    exact = pd.DataFrame.from_records(records, columns=["scope", "window", "sum"])
    frame = delivery_windows(exact, as_of)
    result = PipelineResult(as_of, empty_stats(), empty_stats(), delivery_stats=frame)
    factory = make_session_factory(db_url)
    with factory() as session:
        run = start_run(session, as_of=as_of)
        write_results(session, run.id, result)
        finish_run(session, run.id, status="succeeded", as_of=as_of)
    factory.kw["bind"].dispose()
    return as_of


def test_statistics_page_shows_the_delivery_latency_windows(console: Console, stack: Stack) -> None:
    from pushgrid.metrics.sqlstore import delivery_window_stats, session_scope

    _seed(stack.db_url)
    with session_scope(stack.db_url) as session:
        stored = [
            (r.scope, r.series, r.window, r.count, r.p50, r.p90, r.p99, r.p999, r.gaps)
            for r in delivery_window_stats(session)
        ]
    console.goto("statistics", "#stats-delivery-table table")
    for scope in ("cluster", f"node:{NODES[0]}"):
        console.js(
            "document.querySelector(`#stats-scope input[value='${arguments[0]}']`).click()", scope
        )
        console.wait_js(
            "const t = document.querySelector('#stats-delivery-table table');"
            "return t && t.dataset.scope === arguments[0]",
            f"the delivery windows of {scope}",
            scope,
        )
        shown = {(s, w, line): (v, text) for s, w, line, v, text in console.js(CELLS)}
        mine = [row for row in stored if row[0] == scope]
        assert {(r[1], r[2]) for r in mine} == {
            (s, w) for s in ("member", "pattern:/Stocks/*") for w in WINDOW_NAMES
        }
        assert len(shown) == len(mine) * 6  # count, four percentiles, loss
        for _, series, window, n, *quantiles, gaps in mine:
            assert shown[(series, window, "count")] == (repr(n), count(n))
            assert shown[(series, window, "loss")][1] == (f"{gaps} gaps" if gaps else "none")
            assert gaps == (3 if series == "member" and window not in ("1m", "5m", "15m") else 0)
            for line, value in zip(("p50", "p90", "p99", "p999"), quantiles, strict=True):
                assert shown[(series, window, line)] == (
                    "" if value is None else repr(value),
                    latency(value),
                ), (scope, series, window, line)
        # the hand-computed minute: nearest rank over 60 + 39 + 1 latencies
        assert shown[("member", "1m", "p50")][1] == "10 ms"
        assert shown[("member", "1m", "p99")][1] == latency(0.012589)
        assert shown[("member", "1m", "p999")][1] == latency(0.316228)
        if scope == "cluster":
            console.screenshot("statistics-delivery")
    console.assert_no_errors()
