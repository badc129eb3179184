# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""The Delivery page's Accounting card (issue 33 items 4 and 7, ADR 054) and its latency and
loss card (items 1, 2 and 7, ADR 048) in real headless Chromium on the stack of
test_console_browser.py: a subject two clients follow shows the admin API's counts, and "adds
up" once the deliveries are settled; a client's report shows in every scope as the API says.
Screenshot: ``$PUSHGRID_SHOTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pushgrid.ops.delivery import LOSS_KINDS

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
    docs, console.shots = console.shots, Path(os.environ.get("PUSHGRID_SHOTS") or tmp_path)
    try:
        console.screenshot("delivery-accounting")
    finally:
        console.shots = docs


LATENCY_ROWS = (
    "const out = {};"
    "for (const row of document.querySelectorAll('.latency-table tr[data-row]')) {"
    "  const cells = Array.from(row.querySelectorAll('[data-column]'));"
    "  out[row.dataset.row] = Object.fromEntries(cells.map(c => [c.dataset.column,"
    "    c.dataset.value === '' ? null : Number(c.dataset.value)]));"
    "}"
    "return out;"
)
PERCENTILES = ("p50", "p90", "p99", "p999")


def _latency_rows(answer: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """The rows the card must show for one answer of ``GET /delivery/latency``."""

    def row(scope: dict[str, Any]) -> dict[str, float | None]:
        latency = scope["latency"]
        numbers = {"count": latency["count"], **{p: latency[p] for p in PERCENTILES}}
        return numbers | {kind: scope["loss"].get(kind, 0) for kind in LOSS_KINDS}

    rows = {"cluster": row(answer["cluster"])}
    for member in answer["members"]:
        rows[f"member:{member['member']}"] = row(member) if member["reachable"] else {}
    for pattern in answer["cluster"]["patterns"]:
        rows[f"pattern:{pattern['pattern']}"] = row(pattern)
    return rows


@pytest.mark.timeout(300)
def test_the_latency_card_shows_the_api_percentiles_and_loss(
    console: Console,
    stack: Stack,
    ws_clients: Callable[..., WsClient],
    tmp_path: Path,
) -> None:
    subject = unique("latency")
    client = ws_clients(stack.servers[0])
    client.subscribe(subject)
    # what a client measured (docs/protocol.md 5.7): 123 latencies, 2 gaps and a resync
    entry = {"subject": subject, "latency": [[31, 120], [35, 3]], "gaps": 2, "resyncs": 1}
    client.ws.send(json.dumps({"op": "report", "interval": 5.0, "entries": [entry]}))

    console.goto("delivery", ".latency-table")

    def agreed() -> dict[str, dict[str, float | None]] | None:
        """The card's rows once they equal the API's (both refresh every two seconds) and
        hold the report (the admin API's canary probes report too: at least, not exactly)."""
        shown = console.js(LATENCY_ROWS)
        want = _latency_rows(stack.api("GET", "/delivery/latency").json())
        cluster = want["cluster"]
        if shown != want or (cluster["count"] or 0) < 123 or (cluster["gaps"] or 0) < 2:
            return None
        return want

    rows = console.wait(agreed, "the latency card to equal the API and hold the report")
    assert (rows["cluster"]["resyncs"] or 0) >= 1
    assert rows["cluster"]["p999"] is not None
    console.assert_no_errors()
    console.screenshot("delivery")  # docs/img/console-delivery.png with CONSOLE_SCREENSHOTS=1
