# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""The Delivery page's Accounting card (issue 33 items 4 and 7, ADR 054) in real headless
Chromium on the stack of test_console_browser.py: a subject two clients follow shows the
admin API's counts, and "adds up" once the deliveries are settled.
Screenshot: ``$PUSHGRID_SHOTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

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

ROW = (
    "const row = document.querySelector(`.acct-table tr[data-row='${arguments[0]}']`);"
    "if (!row) return null;"
    "const cells = Array.from(row.querySelectorAll('[data-column]'));"
    "const holds = row.querySelector('[data-holds]');"
    "return [Object.fromEntries(cells.map(c => [c.dataset.column, Number(c.dataset.value)])),"
    " holds && holds.innerText.trim()];"
)


@pytest.mark.timeout(300)
def test_the_accounting_card_shows_the_api_counts_and_that_they_add_up(
    console: Console,
    stack: Stack,
    ws_clients: Callable[..., WsClient],
    tmp_path: Path,
) -> None:
    subject = unique("accounting")
    member = stack.servers[0]
    readers = [ws_clients(member) for _ in range(2)]
    for reader in readers:
        reader.subscribe(subject)
    for n in range(5):
        publish(member, subject, f"tick {n}")
    deadline = time.monotonic() + 20
    while any(len(r.messages(subject)) < 5 for r in readers):
        assert time.monotonic() < deadline, [r.frames for r in readers]
        time.sleep(0.05)

    console.goto("delivery", ".acct-table")

    def agreed() -> dict[str, int] | None:
        """The page's row once it equals the API's row (both refresh every second or two)."""
        shown = console.js(ROW, subject)
        rows = stack.api("GET", "/delivery/accounting").json()["subjects"]
        api = next((r for r in rows if r["name"] == subject), None)
        if shown is None or api is None:
            return None
        cells, holds = shown
        if cells != api["total"] or holds != "adds up":
            return None
        total: dict[str, int] = api["total"]
        return total

    total = console.wait(agreed, "the accounting row to equal the API's and add up")
    assert (total["published"], total["due"], total["written"]) == (5, 10, 10)
    console.wait_text("#delivery-offenders", "no slow consumer")  # none on this stack
    console.assert_no_errors()
    shots = Path(os.environ.get("PUSHGRID_SHOTS") or tmp_path)
    console.shots = shots
    console.screenshot("delivery-accounting")
