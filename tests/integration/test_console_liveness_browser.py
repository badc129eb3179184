# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""The console tells a hung member and a lost admin API, in real headless Chromium (issue 34,
item 4 rows 1 and 6). Its own stack (test_console_browser's pieces: two real servers, the admin
API with the console under uvicorn), because the last test stops the admin API.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .pgtest import ServerProcess
from .test_console_browser import (  # noqa: F401  (fixtures, used by name)
    Console,
    Stack,
    admin_console,
    console,
)
from .test_console_browser import pytestmark as browser_only

# its own stack and Chromium: more than the integration tests' 90 s on a loaded machine
pytestmark = [browser_only, pytest.mark.timeout(300)]

NAMES = ("live-1", "live-2")


@pytest.fixture(scope="module")
def running(
    module_server_factory: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Stack, Any]]:
    servers = [module_server_factory(ServerName=name) for name in NAMES]
    with admin_console(servers, tmp_path_factory.mktemp("liveness")) as built:
        yield built


@pytest.fixture(scope="module")
def stack(running: tuple[Stack, Any]) -> Stack:
    return running[0]


def _card(name: str) -> str:
    return f"#overview-members [data-member='{name}']"


def test_a_hung_member_is_not_answering_and_the_page_keeps_updating(
    console: Console, stack: Stack
) -> None:
    hung = stack.servers[1]
    assert hung.proc is not None
    console.ensure_signed_in()
    # the first round after signing in took 28 s at load average 28 on 2 cores
    console.wait_text(_card("live-2"), "UP", timeout=90)
    hung.proc.send_signal(signal.SIGSTOP)
    try:
        console.wait_js(
            "return !!document.querySelector(arguments[0] + '[data-answering=false]')",
            "live-2's card: not answering",
            _card("live-2"),
        )
        console.wait_text(_card("live-2"), "NOT ANSWERING")
        console.wait_text(_card("live-2"), "not answering for")
        console.wait_text("#overview-health", "member live-2 is not answering for")
        assert "1/2 up" in console.text("#overview-health")
        assert "DEGRADED" in console.text("#overview-health")
        # the page keeps updating while the member hangs (each round skips it)
        first = console.text("#overview-updated")
        console.wait(lambda: console.text("#overview-updated") != first, "a later update")
        assert console.text("#overview-stale") == ""
        assert "UP" in console.text(_card("live-1"))
        console.screenshot("hung-member")
    finally:
        hung.proc.send_signal(signal.SIGCONT)
    console.wait_js(
        "return !!document.querySelector(arguments[0] + '[data-up=true]')",
        "live-2 up again",
        _card("live-2"),
    )
    console.wait_text("#overview-health", "2/2 up")
    console.assert_no_errors()


def test_the_console_says_when_it_cannot_reach_the_admin_api(
    console: Console, running: tuple[Stack, Any]
) -> None:
    """Last in the module: it stops the admin API (which serves the console)."""
    _stack, server = running
    console.ensure_signed_in()
    console.wait_text("#overview-updated", "updated")
    assert not console.js("return !!document.getElementById('console-unreachable')")
    server.should_exit = True
    console.wait_text("#console-unreachable", "the console cannot reach the admin API")
    console.wait_text("#overview-stale", "stale: no update for")
    console.wait(  # (requests in flight when it stopped may still land: both at once)
        lambda: (
            "stale" in console.text("#overview-stale")
            and "cannot reach" in console.text("#console-unreachable")
        ),
        "the banner and the stale mark together",
    )
    console.screenshot("admin-api-unreachable")
    assert "stale: no update for" in console.text("#overview-stale")
    console.errors()  # the failed requests are logged by Chromium: expected here
