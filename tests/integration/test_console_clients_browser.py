# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""The Clients page (issue 35 item 1, ADR 050) in real headless Chromium on the stack of
test_console_browser.py: a row shows exactly the numbers the admin API returned for the client,
the filters live in the URL (a reload keeps them), a click opens the client's subscriptions and
frames with millisecond times, and a viewer is not offered Disconnect.
Screenshots at 1366 and 1920 px: ``$PUSHGRID_SHOTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pushgrid.console import format as fmt

from .test_console_browser import (  # noqa: F401  (fixtures, used by name)
    HEIGHT,
    WIDTH,
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

ROW_CELLS = (
    "return Array.from(document.querySelectorAll("
    "`#sessions-table tr[data-client='${arguments[0]}'] td`)).map(c => c.innerText.trim())"
)


def _shots(tmp_path: Path) -> Path:
    where = Path(os.environ.get("PUSHGRID_SHOTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def _expected_cells(item: dict[str, Any]) -> list[str]:
    """What the row must show of the API's item (columns 1-10: member .. queued)."""
    return [
        item["member"],
        item["remote"],
        "SSE" if item["transport"] == "sse" else "WebSocket",
        "deflate" if item["compression"] else "off",
        ", ".join(item["subjects"]),
        fmt.count(item["messages_in"]),
        fmt.count(item["messages_out"]),
        fmt.compact(item["bytes_in"], "bytes"),
        fmt.compact(item["bytes_out"], "bytes"),
        fmt.compact(item["outbound_buffer_bytes"], "bytes"),
    ]


@pytest.mark.timeout(300)
def test_the_clients_page_shows_exactly_the_api_numbers(
    console: Console,
    stack: Stack,
    ws_clients: Callable[..., WsClient],
    tmp_path: Path,
) -> None:
    subject = unique("clients")
    client_id = f"alice-{int(time.time() * 1000) % 10**8}"
    alice = ws_clients(stack.servers[1])
    alice.subscribe(subject, client_id=client_id)
    for n in range(3):
        publish(stack.servers[1], subject, f"tick {n}")
    deadline = time.monotonic() + 20
    while len(alice.messages(subject)) < 3:
        assert time.monotonic() < deadline, alice.frames
        time.sleep(0.05)

    console.goto("sessions", "#sessions-table table")

    def searched() -> bool:
        """The client id in the search box and in the URL (typed again when the page was laid
        out anew meanwhile: a sign-in check re-renders it)."""
        value = console.js(
            "const e = document.getElementById('sessions-search'); return e && e.value"
        )
        if value == client_id:
            return "q=" + client_id in console.driver.current_url
        console.type("#sessions-search", client_id)  # emptied first: the URL may fill it
        return False

    console.wait(searched, "the search in the box and the URL")

    clicked: dict[str, float] = {}

    def again(selector: str) -> None:
        """Click ``selector`` at most every 2 s: a click while the last one's answer is still
        on its way makes Dash drop that answer (console/polling.py), and on a loaded machine a
        click every 0.1 s never let one through."""
        if time.monotonic() - clicked.get(selector, 0.0) >= 2.0:
            clicked[selector] = time.monotonic()
            console.click(selector)

    def agreed() -> tuple[list[str], dict[str, Any]] | None:
        """The row and the API's item once they agree (the row is re-read after a refresh:
        a keepalive between the page's read and ours moves bytes out)."""
        cells: list[str] = console.js(ROW_CELLS, client_id)
        answer = stack.api("GET", "/sessions", params={"client_id": client_id}).json()
        if not cells or answer["total"] != 1:
            return None
        (item,) = answer["items"]
        if cells[1:11] == _expected_cells(item):
            return cells, item
        again("#sessions-refresh")
        return None

    cells, item = console.wait(agreed, "the row to show the API's numbers")
    assert item["id"] == alice.session
    assert cells[0].startswith(client_id)
    assert cells[7] == "3"  # messages out: the three ticks
    assert cells[12] == fmt.DASH  # no delivery report from this client: no number shown
    assert "q=" + client_id in console.driver.current_url  # the filter is in the URL

    # the same URL in a fresh load keeps the filter
    console.driver.get(console.driver.current_url)
    console.wait(
        lambda: (
            console.js("const e = document.getElementById('sessions-search'); return e && e.value")
            == client_id
        ),
        "the search restored from the URL",
    )
    console.wait(lambda: console.js(ROW_CELLS, client_id), "the row after the reload")

    # the client's detail: subscriptions, frames with millisecond times
    console.click(f"tr[data-client='{client_id}'] button.linklike")
    console.wait_text("#sessions-detail", subject)
    assert "client=" in console.driver.current_url
    publish(stack.servers[1], subject, "after the click")

    def frame_times() -> list[str] | None:
        text = console.text("#sessions-detail")
        if "after the click" not in text:
            # the member records frames from the first look on; ask again
            again("#sessions-refresh")
            again(f"tr[data-client='{client_id}'] button.linklike")
            return None
        return re.findall(r"\d\d:\d\d:\d\d\.\d{3} UTC", text)

    assert console.wait(frame_times, "a frame with a millisecond time")
    shots = _shots(tmp_path)
    for width in (1366, 1920):
        console.driver.set_window_size(width, HEIGHT)
        time.sleep(1.0)
        scroll, inner = console.js(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        console.driver.save_screenshot(str(shots / f"clients-{width}.png"))
        assert scroll <= inner, f"the Clients page at {width} px is {scroll} px wide"
    console.driver.set_window_size(WIDTH, HEIGHT)
    console.assert_no_errors()


@pytest.mark.timeout(300)
def test_a_viewer_sees_clients_but_is_not_offered_disconnect(
    console: Console, stack: Stack, ws_clients: Callable[..., WsClient], tmp_path: Path
) -> None:
    bob = ws_clients(stack.servers[0])
    bob.subscribe(unique("viewer"), client_id="bob-viewer-test")
    made = stack.api("POST", "/tokens", json={"name": "clients-viewer", "role": "viewer"})
    assert made.status_code == 201, made.text
    console.ensure_signed_in()
    console.click("#sign-out")
    console.sign_in(made.json()["token"])
    try:
        console.wait_text("#user", "clients-viewer")
        console.goto("sessions", "#sessions-table table")
        console.type("#sessions-search", "bob-viewer-test")
        console.wait(lambda: console.js(ROW_CELLS, "bob-viewer-test"), "bob's row")
        offered = console.js(
            "return Array.from(document.querySelectorAll('#sessions-table button.danger'))"
            ".filter(b => b.offsetParent !== null).length"
        )
        assert offered == 0, "a viewer is offered Disconnect"
        console.click("tr[data-client='bob-viewer-test'] button.linklike")
        console.wait_text("#sessions-detail", "operator role")
        console.driver.save_screenshot(str(_shots(tmp_path) / "clients-viewer-1366.png"))
        console.assert_no_errors()
    finally:
        console.click("#sign-out")
        console.sign_in(stack.token)
        console.br.wait_for_element("#nav-group-live")


def _trace_rows(console: Console) -> list[list[str]]:
    rows: list[list[str]] = console.js(
        "return Array.from(document.querySelectorAll('#mtrace-events tr[data-index]')).map(r =>"
        " [r.dataset.index, ...Array.from(r.cells).map(c => c.innerText.trim())])"
    )
    return rows


@pytest.mark.timeout(300)
def test_a_client_traced_from_the_live_trace_page_shows_the_api_s_events(
    console: Console, stack: Stack, ws_clients: Callable[..., WsClient], tmp_path: Path
) -> None:
    """Issue 35 item 2 on the console: a client id traced on the whole cluster across two
    subjects; the rows are exactly the API's events (newest first, millisecond times), the
    download is the API's JSON lines, no subscriber is added, Stop ends the trace."""
    first, second = unique("traced-a"), unique("traced-b")
    client_id = f"desk-{int(time.time() * 1000) % 10**8}"
    desk = ws_clients(stack.servers[1])
    desk.subscribe(first, second, client_id=client_id)
    console.goto("trace", "#mtrace-start")
    console.type("#mtrace-value", client_id)
    console.wait(
        lambda: console.js("return document.getElementById('mtrace-value').value") == client_id,
        "the client id in the form",
    )
    console.click("#mtrace-start")
    # the pill says RECORDING (upper case by the style sheet: innerText is what one sees)
    console.wait_text("#mtrace-status", "RECORDING")
    trace_id = console.text("#mtrace-status .trace-id")
    publish(stack.servers[1], first, "first subject")
    publish(stack.servers[1], second, "second subject")

    def agreed() -> list[dict[str, Any]] | None:
        """The page's rows are the API's events, newest first, once both have both messages."""
        answer = stack.api("GET", f"/member-traces/{trace_id}", params={"after": -1})
        assert answer.status_code == 200, answer.text
        events = answer.json()["events"]
        texts = " ".join(e["text"] for e in events)
        if "first subject" not in texts or "second subject" not in texts:
            return None
        expected = [
            [
                str(e["index"]),
                fmt.iso_millis(e["at"]),
                e["member"],
                e["direction"],
                e["client_id"] or e["session"] or fmt.DASH,
                e["subject"] or fmt.DASH,
                f"{e['size']} B",
                e["text"][:300].strip(),
            ]
            for e in reversed(events)
        ]
        return events if _trace_rows(console) == expected else None

    events = console.wait(agreed, "the page's rows equal the API's events")
    assert {e["subject"] for e in events if "subject" in e["text"]} >= {first, second}
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3} UTC", row[1]) for row in _trace_rows(console))
    # the trace is no subscriber: the subject's sessions are the desk's only
    listed = stack.api("GET", "/sessions", params={"subject": first, "internal": "true"})
    assert [s["id"] for s in listed.json()["items"]] == [desk.session]

    # Download: the browser saves the admin API's JSON lines, event for event
    folder = tmp_path / "downloads"
    folder.mkdir()
    console.driver.execute_cdp_cmd(
        "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(folder)}
    )
    console.click("#mtrace-download")
    saved = folder / f"trace-{trace_id}.jsonl"
    console.wait(saved.exists, "the downloaded JSON lines")
    api_lines = stack.api("GET", f"/member-traces/{trace_id}/events.jsonl").text.splitlines()
    downloaded = [json.loads(line) for line in saved.read_text().splitlines()]
    assert len(downloaded) >= len(events)
    assert downloaded[: len(events)] == events
    assert [json.loads(line) for line in api_lines][: len(downloaded)] == downloaded

    shots = _shots(tmp_path)
    for width in (1366, 1920):
        console.driver.set_window_size(width, HEIGHT)
        time.sleep(1.0)
        console.driver.save_screenshot(str(shots / f"console-member-trace-{width}.png"))
        scroll, inner = console.js("return [document.documentElement.scrollWidth, innerWidth]")
        assert scroll <= inner, f"the Live trace page scrolls sideways at {width} px"
    console.driver.set_window_size(WIDTH, HEIGHT)
    console.screenshot("trace-member")  # docs/img/console-trace-member.png (CONSOLE_SCREENSHOTS=1)
    console.click("#mtrace-stop")
    console.wait(lambda: "RECORDING" not in console.text("#mtrace-status"), "the trace stopped")
    assert stack.api("GET", f"/member-traces/{trace_id}").status_code == 404
    console.assert_no_errors()
