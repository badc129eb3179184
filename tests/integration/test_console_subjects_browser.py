# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""The subject browser page (issue 35 item 3) in real headless Chromium, on the stack of
test_console_browser.py (two real servers, the admin API under uvicorn, the console): the page
shows exactly the numbers ``/api/v1/subjects`` returned, keeps its query in the URL, shows a
subject's cached history as the API gives it, removes a snapshot and ends a real client's
subscription; a viewer is offered neither action. The Alerts page (issue 35 item 4): each
row's since is the API's, a row's own Silence sends the comment, the history's durations are the
API's. Screenshots at 1366 and 1920 px go to
``$SUBJECTS_SHOTS`` when set (the lead's notes), else to a temporary directory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .test_console_browser import (  # noqa: F401  (fixtures, used by name)
    HEIGHT,
    WAIT,
    WIDTH,
    Console,
    Stack,
    WsClient,
    _alert,
    console,
    publish,
    stack,
    unique,
    ws_clients,
)
from .test_console_browser import pytestmark as browser_skip

# the module's stack starts two servers, the admin API and Chromium: slow on a loaded machine
pytestmark = [browser_skip, pytest.mark.timeout(300)]


def _shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("SUBJECTS_SHOTS")
    return Path(given) if given else tmp_path_factory.mktemp("subject-shots")


def _shoot(console: Console, folder: Path, name: str) -> None:
    """The page at 1366 and 1920 px wide, whole height; no horizontal scrollbar at either."""
    folder.mkdir(parents=True, exist_ok=True)
    for width in (1366, 1920):
        console.driver.set_window_size(width, HEIGHT)
        time.sleep(0.5)
        content: int = console.js("return document.documentElement.scrollHeight")
        console.driver.set_window_size(width, min(content + 140, 4000))
        time.sleep(1.0)
        console.driver.save_screenshot(str(folder / f"subjects-{name}-{width}.png"))
        overflow = console.js(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        wide = console.js(
            "const w = document.documentElement.clientWidth; return Array.from("
            "document.querySelectorAll('*')).filter(e => e.getBoundingClientRect().right > w)"
            ".slice(0, 5).map(e => e.id || e.className || e.tagName)"
        )
        assert overflow <= 0, f"{name} scrolls sideways at {width} px ({overflow} px): {wide}"
    console.driver.set_window_size(WIDTH, HEIGHT)


def _rows(console: Console) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = console.js(
        "return Array.from(document.querySelectorAll('#browse-table tr[data-subject]')).map(r =>"
        " ({subject: r.dataset.subject, subscribers: r.dataset.subscribers,"
        "   bytes: r.dataset.snapshotBytes, cells: Array.from(r.cells).map(c => c.innerText.trim())"
        " }))"
    )
    return rows


def _click(console: Console, selector: str) -> None:
    """Click what ``selector`` finds once it is there (a table drawn again meanwhile: the
    new one's element; a held element would be stale)."""
    console.wait(
        lambda: console.js(
            "const e = document.querySelector(arguments[0]); if (e) e.click(); return !!e",
            selector,
        ),
        selector,
    )


def _search(console: Console, pattern: str) -> None:
    """Type the pattern once the page has read its URL (which sets the field: typing before it
    would be overwritten)."""
    console.wait(lambda: console.text("#browse-pager"), "the first listing")
    console.type("#browse-pattern", pattern)
    console.wait(lambda: "pattern=" in console.driver.current_url, "the pattern in the URL")


def _api_page(stack: Stack, pattern: str) -> dict[str, Any]:
    answer = stack.api("GET", "/subjects", params={"pattern": pattern, "limit": 25})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_the_page_shows_exactly_what_the_api_returned_and_acts_on_it(
    console: Console,
    stack: Stack,
    ws_clients: Callable[..., WsClient],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    prefix = unique("browse")
    one, two = stack.servers
    publish(one, f"{prefix}/NYSE/IBM", "193", volume="6.62M")
    for n in range(4):
        publish(one, f"{prefix}/NYSE/IBM", f"19{n}")
    publish(two, f"{prefix}/LSE/VOD", "77")
    listener = ws_clients(two)
    listener.subscribe(f"{prefix}/NYSE/IBM", f"{prefix}/LSE/VOD")
    ws_clients(one).subscribe(f"{prefix}/NYSE/IBM")
    pattern = f"{prefix}/*"

    console.goto("browse", "#browse-pattern")
    _search(console, pattern)
    console.wait(lambda: len(_rows(console)) == 2, "the two subjects of the prefix")
    api = _api_page(stack, pattern)
    shown = {row["subject"]: row for row in _rows(console)}
    assert set(shown) == {item["subject"] for item in api["items"]}
    for item in api["items"]:
        row = shown[item["subject"]]
        assert row["subscribers"] == str(item["subscribers"]) == row["cells"][1]
        assert row["bytes"] == str(item["snapshot_bytes"]) == row["cells"][2]
        assert row["cells"][4] == ", ".join(item["members"])
    ibm = shown[f"{prefix}/NYSE/IBM"]
    assert (ibm["subscribers"], ibm["bytes"]) == ("2", str(len("193volume6.62M")))
    assert "pattern=" in console.driver.current_url  # the query is in the URL: shareable
    console.select("browse-sort", "-subscribers")
    console.wait(lambda: "sort=-subscribers" in console.driver.current_url, "the sort in the URL")

    # a subject's cached history: the API's seqs and contents, newest first
    _click(console, f"tr[data-subject='{prefix}/NYSE/IBM'] button")
    console.wait_text("#browse-detail", "cached messages on")
    member = ibm["cells"][4].split(", ")[0]
    history = stack.api(
        "GET",
        f"/members/{member}/subjects/history",
        params={"subject": f"{prefix}/NYSE/IBM", "limit": 20},
    ).json()
    seqs = console.js(
        "return Array.from(document.querySelectorAll('#browse-detail tr[data-seq]'))"
        ".map(r => r.dataset.seq)"
    )
    assert seqs == [str(m["seq"]) for m in reversed(history["items"])]
    assert seqs[0] == "5"
    _shoot(console, _shots(tmp_path_factory), "browser")
    console.screenshot("browse")  # docs/img/console-browse.png with CONSOLE_SCREENSHOTS=1

    # end the listener's subscription to IBM: it is told, and keeps VOD
    _click(console, f"#browse-detail tr[data-session='{listener.session}'] button")
    console.wait_text("#browse-result", f"session {listener.session}")
    deadline = time.monotonic() + WAIT
    while not [f for f in listener.frames if f.get("type") == "unsubscribed"]:
        assert time.monotonic() < deadline, f"no unsubscribed frame: {listener.frames[-3:]}"
        time.sleep(0.05)
    publish(two, f"{prefix}/LSE/VOD", "78")
    publish(two, f"{prefix}/NYSE/IBM", "not for the listener")
    console.wait(lambda: len(listener.messages(f"{prefix}/LSE/VOD")) >= 2, "VOD still arrives")
    assert not [m for m in listener.messages(f"{prefix}/NYSE/IBM") if "not for" in m["content"]]

    # remove the snapshot (confirmed): the API then lists 0 bytes, and so does the page
    console.br.find_element("#browse-remove").click()
    dialog = console.wait(lambda: _alert(console), "the confirmation dialog")
    assert f"{prefix}/NYSE/IBM" in dialog.text
    dialog.accept()
    console.wait_text("#browse-result", "removed on every member")
    after = {i["subject"]: i for i in _api_page(stack, pattern)["items"]}
    assert after[f"{prefix}/NYSE/IBM"]["snapshot_bytes"] == 0
    console.wait(
        lambda: {r["subject"]: r["bytes"] for r in _rows(console)}.get(f"{prefix}/NYSE/IBM") == "0",
        "the page shows the snapshot gone",
    )
    console.assert_no_errors()


def test_a_viewer_is_not_offered_the_operator_actions(
    console: Console, stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from pushgrid.admin_api.security import Role
    from pushgrid.admin_api.services.tokens import TokenService
    from pushgrid.metrics.sqlstore import session_scope

    prefix = unique("viewer")
    publish(stack.servers[0], f"{prefix}/x", "1")
    with session_scope(stack.db_url) as session:
        token = TokenService(session).create(f"viewer-{prefix}", Role.VIEWER, "test").token
    console.ensure_signed_in()
    console.br.find_element("#sign-out").click()
    try:
        console.wait(
            lambda: console.js("return !!document.getElementById('login-token')"), "the login"
        )
        console.sign_in(token)
        console.br.wait_for_element("#nav-group-live")  # signed in (goto would sign in again)
        console.wait_text("#user", "viewer")
        console.goto("browse", "#browse-pattern")
        _search(console, f"{prefix}/*")
        console.wait(lambda: len(_rows(console)) == 1, "the viewer's subject")
        _click(console, f"tr[data-subject='{prefix}/x'] button")
        console.wait_text("#browse-detail", "cached messages on")
        assert not console.js("return document.getElementById('browse-remove').offsetParent")
        assert not console.js("return !!document.querySelector('#browse-detail tr[data-session]')")
        _shoot(console, _shots(tmp_path_factory), "viewer")
        console.assert_no_errors()
    finally:
        console.br.find_element("#sign-out").click()
        console.ensure_signed_in()


def test_the_alerts_page_shows_the_api_s_since_and_durations_and_acts_per_row(
    console: Console, stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A rule that fires at once on both members: each row's since is the API's, a row's own
    Silence sends the comment typed above the table (the silences list shows it, as the API
    does), and the history shows each change's duration as the API computed it."""
    name = f"RowDemo{int(time.time() * 1000) % 10**6}"
    created = stack.api(
        "POST",
        "/alerts/rules",
        json={"name": name, "indicator": "connected_users", "comparison": ">=", "threshold": 0},
    )
    assert created.status_code == 201, created.text
    rule_id = created.json()["id"]
    try:
        console.goto("alerts", "#alerts-active")
        row = f"#alerts-active tr[data-rule='{name}'][data-state='firing']"
        console.wait(
            lambda: console.js("return document.querySelectorAll(arguments[0]).length", row) == 2,
            "the rule firing on both members",
        )
        api = {a["target"]: a for a in stack.api("GET", "/alerts").json()["items"]}
        shown = console.js(
            "return Array.from(document.querySelectorAll(arguments[0]))"
            ".map(r => [r.dataset.target, r.dataset.since])",
            row,
        )
        assert {target: since for target, since in shown} == {
            target: api[target]["since"] for target, _ in shown
        }
        console.type("#alert-comment", "planned restart of console-1")
        # the action's request is held in the browser longer than the table's 2 s refresh,
        # as a loaded machine does: the row is drawn again while the action runs, and the
        # page must still say what the click did (a redraw used to drop the action's answer)
        with console.held("alert-action-result", 5000):
            console.click(f"{row}[data-target='console-1'] button:nth-of-type(2)")  # Silence
            console.wait_text("#alert-action-result", "silenced until")
        silences = [s for s in stack.api("GET", "/alerts/silences").json()["items"]]
        mine = [s for s in silences if s["rule_id"] == rule_id]
        assert [(s["target"], s["comment"]) for s in mine] == [
            ("console-1", "planned restart of console-1")
        ]
        console.wait_text("#alerts-silences", "planned restart of console-1")
        _shoot(console, _shots(tmp_path_factory), "alerts")  # firing rows with their buttons
        stack.api("PATCH", f"/alerts/rules/{rule_id}", json={"threshold": 1e9})  # resolves
        console.select("history-state", "resolved")
        from pushgrid.console import format as fmt

        def agreed() -> bool:
            """The page's resolved rows of the rule are exactly the API's, durations included."""
            history = stack.api(
                "GET", "/alerts/history", params={"rule_id": rule_id, "state": "resolved"}
            ).json()["items"]
            cells = console.js(
                "return Array.from(document.querySelectorAll('#alerts-history tr[data-event]'))"
                ".filter(r => r.innerText.includes(arguments[0]))"
                ".map(r => [r.dataset.event, r.dataset.state, r.cells[4].innerText.trim()])",
                name,
            )
            expected = [[str(e["id"]), "resolved", fmt.duration(e["duration"])] for e in history]
            return len(history) == 2 and cells == expected

        console.wait(agreed, "the resolved changes with the API's durations")
        assert "state=resolved" in console.driver.current_url  # the filters are the URL's
        _history_pages(console, stack, rule_id)
        console.assert_no_errors()
    finally:
        stack.api("DELETE", f"/alerts/rules/{rule_id}")


def _history_rows(console: Console) -> list[str]:
    rows: list[str] = console.js(
        "return Array.from(document.querySelectorAll('#alerts-history tr[data-event]'))"
        ".map(r => r.dataset.event)"
    )
    return rows


def _history_pages(console: Console, stack: Stack, rule_id: int) -> None:
    """The history as a shared link opens it (issue 35 items 4 and 6): the rule's changes of
    all time from the second one on; the rows and the pager are the API's page at that offset,
    and Newer goes back to the first page (the link loses its offset)."""
    base = stack.console_url + "alerts"
    console.driver.get(f"{base}?rule={rule_id}&range=all&offset=1")  # a fresh load, signed in
    api = stack.api(
        "GET", "/alerts/history", params={"rule_id": rule_id, "offset": 1, "limit": 50}
    ).json()
    assert api["total"] >= 4, api  # pending and firing on both members, then two resolved
    expected = [str(e["id"]) for e in api["items"]]
    console.wait(lambda: _history_rows(console) == expected, "the API's page at offset 1")
    assert console.text("#history-pager") == f"2–{api['total']} of {api['total']}"
    assert console.js("return document.getElementById('history-next').disabled") is True
    assert console.js("return document.getElementById('history-state').innerText").strip() in (
        "",
        "Select...",
    )
    console.click("#history-prev")
    console.wait(lambda: "offset=" not in console.driver.current_url, "the first page's URL")
    first = stack.api("GET", "/alerts/history", params={"rule_id": rule_id, "limit": 50}).json()
    console.wait(
        lambda: _history_rows(console) == [str(e["id"]) for e in first["items"]],
        "the API's first page",
    )
    assert f"rule={rule_id}" in console.driver.current_url
