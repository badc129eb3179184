# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""The operators' console pages in real headless Chromium, on the stack of
test_console_browser.py (its fixtures are reused: two real servers, the admin API under uvicorn
with its alert runner, the console): an alert fires on the page while clients connect, a traced
subject shows a message published from Python, hot subjects rank a published subject.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from .test_console_browser import (  # noqa: F401  (fixtures, used by name)
    Console,
    Stack,
    WsClient,
    console,
    publish,
    pytestmark,
    stack,
    unique,
    ws_clients,
)


@pytest.mark.timeout(300)  # a rule, three clients, four pages and three actions, loaded machine
def test_an_alert_fires_on_every_page_while_clients_connect(
    console: Console, stack: Stack, ws_clients: Callable[..., WsClient]
) -> None:
    console.goto("alerts", "#rule-create")
    console.type("#rule-name", "BrowserBusy")
    console.select("rule-comparison", ">=")
    console.type("#rule-threshold", "3")
    console.select("rule-severity", "critical")
    console.click("#rule-create")  # the token is an admin's: may create
    console.wait_text("#rule-result", "rule BrowserBusy created")
    try:
        console.wait_text("#alerts-rules", "BrowserBusy")
        clients = [ws_clients(stack.servers[0]) for _ in range(3)]
        console.wait_text("#alert-banner", "BrowserBusy on console-1")
        console.wait_js(
            "return !!document.querySelector('#alerts-active tr[data-state=firing]')",
            "a firing row on the Alerts page",
        )
        console.goto("audit", "#audit-table")
        console.wait_text("#alert-banner", "BrowserBusy on console-1")  # on every page
        console.wait_text("#audit-table", "alerts.create_rule")  # the form's change is audited
        console.goto("alerts", "#alert-pick")
        rule_id = _rule_id(stack, "BrowserBusy")
        console.wait_js(
            "return !!document.querySelector('#alerts-active tr[data-state=firing]')",
            "the firing row again",
        )
        console.select("alert-pick", f"{rule_id}|console-1")
        console.click("#alert-ack")
        console.wait_text("#alert-action-result", "console-1 acknowledged")
        console.wait_js(
            "return !!document.querySelector('#alerts-active tr[data-acknowledged=yes]')",
            "the row acknowledged",
        )
        console.wait(lambda: "BrowserBusy" not in console.text("#alert-banner"), "banner quiet")
        console.click("#alert-silence")
        console.wait_text("#alert-action-result", "silenced until")
        console.wait_text("#alerts-silences", "BrowserBusy")
        console.screenshot("alerts")
        for client in clients:
            client.close()
        console.wait(
            lambda: "resolved" in console.text("#alerts-history").lower(), "a resolved event"
        )
        # edit the rule in the form, disable it, delete it: each through the page
        console.select("rule-pick", str(rule_id))
        console.click("#rule-edit")
        console.wait(
            lambda: console.js("return document.getElementById('rule-threshold').value") == "3",
            "the rule's threshold in the form",
        )
        console.click("#rule-toggle")
        console.wait_text("#rule-action-result", "rule BrowserBusy disabled")
        console.wait_js(
            "return !!document.querySelector('#alerts-rules tr[data-enabled=false]')",
            "the rule disabled",
        )
        console.click("#rule-delete")
        console.wait_text("#rule-action-result", "rule BrowserBusy deleted")
        console.wait(lambda: "BrowserBusy" not in console.text("#alerts-rules"), "rule gone")
        console.goto("audit", "#audit-table")
        for action in ("alerts.acknowledge", "alerts.silence", "alerts.patch_rule"):
            console.wait_text("#audit-table", action)
        console.assert_no_errors()
    finally:
        left = [
            r
            for r in stack.api("GET", "/alerts/rules").json()["items"]
            if r["name"] == "BrowserBusy"
        ]
        for rule in left:  # the page failed before deleting it
            stack.api("DELETE", f"/alerts/rules/{rule['id']}")


def _rule_id(stack: Stack, name: str) -> int:
    (found,) = [r for r in stack.api("GET", "/alerts/rules").json()["items"] if r["name"] == name]
    return int(found["id"])


def test_a_traced_subject_shows_a_message_published_from_python(
    console: Console, stack: Stack, ws_clients: Callable[..., WsClient]
) -> None:
    subject = unique("traced")
    console.goto("trace", "#trace-start")
    console.type("#trace-member", "console-1")
    console.type("#trace-subject", subject)
    console.click("#trace-start")
    console.wait(lambda: "live" in console.text("#trace-status").lower(), "the trace live")
    publish(stack.servers[0], subject, "hello from python", venue="NYSE")
    console.wait_text("#trace-messages", "hello from python")
    assert "venue=NYSE" in console.text("#trace-messages")
    console.click("#trace-pause")
    console.wait(lambda: "resume" in console.text("#trace-pause").lower(), "paused")
    publish(stack.servers[0], subject, "sent while paused")  # kept by the admin API's buffer
    console.click("#trace-pause")  # resume
    console.wait_text("#trace-messages", "sent while paused")

    watched = ws_clients(stack.servers[0])
    watched.subscribe(subject)
    console.type("#trace-session", watched.session)
    console.click("#trace-session-show")
    console.wait_text("#trace-session-view", subject)
    publish(stack.servers[0], subject, "hello again")  # recorded: the session is watched now

    def shown_again() -> bool:
        """Show the session again, as the page asks ("show it again later"): the frame is
        recorded when the member fans it out, which can follow the publish's answer."""
        console.click("#trace-session-show")
        time.sleep(0.5)
        return "hello again" in console.text("#trace-session-view")

    console.wait(shown_again, "the session's recorded frame 'hello again'")
    console.screenshot("trace")
    console.click("#trace-stop")
    console.assert_no_errors()


def test_hot_subjects_rank_a_published_subject(console: Console, stack: Stack) -> None:
    subject = unique("hot")
    console.goto("hot", "#hot-messages_in")
    for n in range(30):
        publish(stack.servers[0], subject, f"tick {n}")
    console.wait_text("#hot-messages_in", subject)
    console.screenshot("hot")
    console.assert_no_errors()


def test_a_trace_opened_while_the_member_is_slow_goes_live(console: Console, stack: Stack) -> None:
    """Opening takes several poll periods here (the browser holds the open's request 3 s, as
    a slow member or a loaded admin API would): the page's 1 s poll must not supersede the
    Trace click and lose its trace. (Stopping the member instead raced the admin API's 2 s
    look at a silent member, ADR 039, on a loaded machine.)"""
    subject = unique("slow")
    member = stack.servers[0]
    console.goto("trace", "#trace-start")
    console.type("#trace-member", "console-1")
    console.type("#trace-subject", subject)
    with console.held("trace-opened", 3000):
        console.click("#trace-start")
        console.wait(lambda: "live" in console.text("#trace-status").lower(), "the trace live")
    publish(member, subject, "after a slow open")
    console.wait_text("#trace-messages", "after a slow open")
    console.click("#trace-stop")
    console.assert_no_errors()


def test_a_pattern_watched_from_the_console_counts_what_is_published(
    console: Console, stack: Stack
) -> None:
    """Watch a pattern from the form, publish under it from Python: the member's row counts
    exactly those messages; then stop watching it from the same form."""
    prefix = unique("watched")
    pattern = f"{prefix}/*"
    console.goto("watched", "#watched-add")
    try:
        console.type("#watched-pattern", pattern)
        console.click("#watched-add")
        console.wait_text("#watched-result", f"{pattern}: watched on console-1")
        for n in range(7):
            publish(stack.servers[0], f"{prefix}/IBM", f"tick {n}")
        console.select("watched-scope", "console-1")
        row = f"#watched-table tr[data-pattern='{pattern}']"

        # the 7th cell (messages in); cells, not words: a byte rate reads "1.2 KiB" (two words)
        def messages_in() -> str | None:
            cell: str | None = console.js(
                "const r = document.querySelector(arguments[0]);"
                " return r && r.cells.length > 6 ? r.cells[6].innerText.trim() : null",
                row,
            )
            return cell

        console.wait(lambda: messages_in() == "7", "7 messages in on console-1")
        _seed_stored_windows(stack.db_url, pattern, stack.as_of - 7)
        console.select("watched-history", pattern)
        console.wait_js(
            "return !!document.querySelector("
            "'#watched-stats table[data-scope=\"node:console-1\"]')",
            "the pattern's stored windows for console-1",
        )
        partial = console.js(
            "return document.querySelector('#watched-stats [data-partial-windows]')"
            ".getAttribute('data-partial-windows')"
        )
        assert partial.split()[:2] == ["1h", "5h"]  # 15 minutes of data: partial from 1h on
        assert (
            console.js(
                "return document.querySelectorAll('#watched-stats td[data-indicator=subscribers]')"
                ".length"
            )
            == 3 * 12
        )  # max, avg, σ x the twelve windows of a pattern's own gauge
        console.screenshot("watched")
        console.click("#watched-remove")
        console.wait_text("#watched-result", f"{pattern}: removed on console-1")
        console.assert_no_errors()
    finally:
        stack.api("DELETE", "/watched-subjects", params={"pattern": pattern})


def _seed_stored_windows(db_url: str, pattern: str, as_of: int) -> None:
    """The pattern's windows as ``pushgrid stats run`` stores them (the store's writer, no
    Spark: the pipeline itself is tested in tests/unit/test_spark_watched.py): 15 minutes of
    seconds, so the longer windows are partial."""
    import pandas as pd

    from pushgrid.metrics.sqlstore import finish_run, make_session_factory, start_run, write_results
    from pushgrid.metrics.watched import WATCH_NAMES
    from pushgrid.metrics.window_spec import WINDOWS, span
    from pushgrid.spark_stats.results import PipelineResult

    rows = [
        (pattern, scope, name, w.name, as_of, min(900, span(w, as_of)), 9.0, 4.5, 1.5)
        for scope in ("cluster", "node:console-1")
        for name in WATCH_NAMES
        for w in WINDOWS
    ]
    columns = ["pattern", "scope", "indicator", "window", "as_of", "count", "max", "avg", "stddev"]
    empty = pd.DataFrame(columns=columns[1:])
    result = PipelineResult(as_of, empty, empty, watched_stats=pd.DataFrame(rows, columns=columns))
    with make_session_factory(db_url)() as session:
        run = start_run(session, as_of=as_of)
        write_results(session, run.id, result)
        finish_run(session, run.id, status="succeeded", as_of=as_of)


def test_the_objectives_page_shows_budgets_and_burn(console: Console, stack: Stack) -> None:
    """Two objectives with three hours of recorded minutes (the recorder's rows, written to the
    store; the real recording is tests/integration/test_slos.py): the last hour of one burns at
    30x, the other is all good."""
    created = [
        stack.api(
            "POST",
            "/slos",
            json={"name": name, "kind": "latency", "target": 0.99, "threshold_ms": 100},
        )
        for name in ("ui_burning", "ui_calm")
    ]
    assert all(r.status_code == 201 for r in created), [r.text for r in created]
    burning, calm = (r.json()["id"] for r in created)
    _seed_slo_minutes(stack.db_url, burning, bad_last_hour=300)
    _seed_slo_minutes(stack.db_url, calm, bad_last_hour=0)
    try:
        console.goto("slos", "#slos-table")
        console.wait_js(
            "return !!document.querySelector('#slos-table tr[data-burning=fast]')",
            "the burning objective marked",
        )
        console.wait_text("#slos-table", "ui_calm")
        assert "latency <= 100 ms" in console.text("#slos-table")
        console.wait_js(
            "return document.querySelectorAll('#slos-burn .scatterlayer .trace').length == 2",
            "two burn lines",
        )
        console.screenshot("slos")
        console.assert_no_errors()
    finally:
        for objective in (burning, calm):
            stack.api("DELETE", f"/slos/{objective}")


def _seed_slo_minutes(db_url: str, objective_id: int, bad_last_hour: int) -> None:
    """Three hours of 1,000 events a minute, ``bad_last_hour`` of them bad each minute of the
    last hour (at a 99 % target, 300 bad is a burn rate of 30); not the current minute, which
    the running recorder may be writing."""
    from pushgrid.metrics.sqlstore import make_session_factory
    from pushgrid.metrics.sqlstore.admin_models import SloMinute

    now = int(time.time()) // 60 * 60
    with make_session_factory(db_url)() as session:
        for back in range(1, 181):
            bad = bad_last_hour if back <= 60 else 0
            session.add(
                SloMinute(
                    objective_id=objective_id, minute=now - 60 * back, good=1000 - bad, total=1000
                )
            )
        session.commit()
