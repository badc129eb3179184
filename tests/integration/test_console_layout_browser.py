# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""Every console page fits 1366, 1440 and 1920 px without a horizontal scrollbar, and a viewer is
not offered what it may not do (issue 34 item 4.7, issue 35 item 6), in real headless Chromium on
the stack of test_console_browser.py; a page's range and filters are its URL's query, so a shared
link opens the same view (issue 35 item 6). The review met a nav bar with a scrollbar on every
page and "Live trace" cut off at 1440 px, and Publish / Start a run / Disconnect offered to a
viewer, then refused with 403. Screenshots: ``$PUSHGRID_SHOTS`` (with ``CONSOLE_SCREENSHOTS=1``:
the test's temporary directory; else none, ``shots_wanted``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from .test_console_browser import (  # noqa: F401  (fixtures, used by name)
    HEIGHT,
    NODES,
    WIDTH,
    Console,
    Stack,
    console,
    pytestmark,
    shots_wanted,
    stack,
)

#: every page: (its nav id suffix, a selector that says it rendered)
PAGES = [
    ("overview", "#overview-health"),
    ("subjects", "#subject-input"),
    ("sessions", "#sessions-table"),
    ("trace", "#trace-start"),
    ("slos", "#slos-table"),
    ("delivery", "#delivery-matrix"),
    ("statistics", "#stats-table"),
    ("trends", "#trends-graph"),
    ("hot", "#hot-messages_in"),
    ("watched", "#watched-table"),
    ("browse", "#browse-pattern"),
    ("jobs", "#jobs-table"),
    ("alerts", "#rule-create"),
    ("audit", "#audit-table"),
]
#: pages no other browser test photographs for docs/console.md (the Delivery page:
#: test_console_delivery_browser.py, with a client's report in its latency card)
DOC_ONLY_HERE: tuple[str, ...] = ()
OVERFLOW = "return [document.documentElement.scrollWidth, window.innerWidth]"


def _shoot(console: Console, tmp_path: Path, name: str) -> None:
    """The window as it is, for whoever will look (``shots_wanted``): it checks nothing."""
    if shots_wanted():
        where = Path(os.environ.get("PUSHGRID_SHOTS") or tmp_path)
        where.mkdir(parents=True, exist_ok=True)
        console.driver.save_screenshot(str(where / name))


@pytest.mark.timeout(600)  # thirteen pages in a browser, on a loaded machine
@pytest.mark.parametrize("width", [1366, 1440, 1920])
def test_every_page_fits_without_a_horizontal_scrollbar(
    console: Console, width: int, tmp_path: Path
) -> None:
    console.driver.set_window_size(width, HEIGHT)
    try:
        console.ensure_signed_in()
        for page, ready in PAGES:
            console.goto(page, ready)
            time.sleep(0.8)  # the page's first refresh (tables, charts) lays it out
            scroll, inner = console.js(OVERFLOW)
            _shoot(console, tmp_path, f"tourmisc-{page}-{width}.png")
            if page in DOC_ONLY_HERE and width == WIDTH:  # docs/img (CONSOLE_SCREENSHOTS=1)
                console.screenshot(page)
            assert scroll <= inner, f"{page} at {width} px: {scroll} px wide in {inner} px"
            nav = console.js(
                "const n = document.getElementById('nav');return [n.scrollWidth, n.clientWidth]"
            )
            assert nav[0] <= nav[1], f"the group tabs are clipped on {page}: {nav}"
        console.assert_no_errors()
    finally:
        console.driver.set_window_size(WIDTH, HEIGHT)


@pytest.mark.timeout(300)
def test_a_viewer_is_not_offered_operator_actions(
    console: Console, stack: Stack, tmp_path: Path
) -> None:
    made = stack.api("POST", "/tokens", json={"name": "layout-viewer", "role": "viewer"})
    assert made.status_code == 201, made.text
    console.ensure_signed_in()
    console.click("#sign-out")
    console.sign_in(made.json()["token"])
    try:
        console.wait_text("#user", "layout-viewer")
        for hidden in ("nav-trace", "nav-audit"):  # their reads need operator / admin
            assert not console.js("return !!document.getElementById(arguments[0])", hidden)
        for page, ready, control in [
            ("subjects", "#subject-input", "#subject-publish"),
            ("jobs", "#jobs-table", "#jobs-start"),
            ("watched", "#watched-table", "#watched-add"),
            ("alerts", "#alerts-active", "#rule-create"),
            ("alerts", "#alerts-active", "#alert-comment"),
            ("browse", "#browse-pattern", "#browse-remove"),
        ]:
            console.goto(page, ready)
            shown = console.js(
                "const e = document.querySelector(arguments[0]);"
                "return !!e && e.offsetParent !== null",
                control,
            )
            assert shown is False, f"a viewer is offered {control} on {page}"
            _shoot(console, tmp_path, f"tourmisc-viewer-{page}.png")
        console.assert_no_errors()
    finally:
        console.click("#sign-out")
        console.sign_in(stack.token)
        console.br.wait_for_element("#nav-group-live")


def _value(console: Console, element: str) -> str:
    """What a control shows: an input's value, a dropdown's or radio group's chosen text."""
    shown: str = console.js(
        "const e = document.getElementById(arguments[0]); if (!e) return '';"
        "if (e.tagName === 'INPUT') return e.value;"
        "const c = e.querySelector('input:checked'); if (c) return c.value;"
        "return e.innerText.trim()",
        element,
    )
    return shown


@pytest.mark.timeout(300)
def test_a_shared_link_opens_the_same_view_and_a_change_rewrites_it(
    console: Console, stack: Stack
) -> None:
    """Issue 35 item 6: the Overview's range, the Trends' indicator/window/range, the
    Statistics' scope and the Audit's filters come from the URL, and changing a control
    rewrites the URL (no reload) so the address bar can be shared at any time."""
    console.ensure_signed_in()
    base = stack.console_url
    member = NODES[1]
    cases = [
        ("?range=1h", "overview-range", "1h"),
        (
            "trends?indicator=connected_users&window=1d&range=30+d",
            "trends-indicator",
            "Connected users",
        ),
        ("statistics?scope=" + member, "stats-scope", member),
        ("audit?who=layout-viewer&outcome=denied", "audit-actor", "layout-viewer"),
    ]
    for path, control, expected in cases:
        console.driver.get(base + path)  # a fresh load of the shared link (still signed in)

        def shown(control: str = control, expected: str = expected) -> bool:
            return expected in _value(console, control)

        console.wait(shown, f"{path}: {control}")
        assert console.driver.current_url == base + path, "the link was rewritten on load"
    console.wait(lambda: "denied" in _value(console, "audit-outcome"), "the audit outcome")
    # a change is written back: the Overview's range
    console.driver.get(base)
    console.br.wait_for_element("#overview-range")
    console.js("document.querySelector(\"#overview-range input[value='24h']\").click()")
    console.wait(lambda: console.driver.current_url.endswith("?range=24h"), "the range in the URL")
    console.driver.get(console.driver.current_url)
    console.wait(lambda: _value(console, "overview-range") == "24h", "the range after a reload")
    # a click before the page's first read of its URL answered (a loaded admin API: Dash drops
    # that read's answer and runs it again for the click) is kept, not reverted to the link's
    console.goto("statistics", "#stats-table table")
    with console.held("overview-url-read", 2500):
        console.goto("overview", "#overview-range")  # in the page: the hold stays
        console.js("document.querySelector(\"#overview-range input[value='1h']\").click()")
        console.wait(lambda: console.driver.current_url.endswith("?range=1h"), "the click's URL")
    console.wait(lambda: _value(console, "overview-range") == "1h", "the click kept")
    console.assert_no_errors()
