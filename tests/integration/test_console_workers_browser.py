# ruff: noqa: F811  (pytest fixtures imported from test_console_browser, used as arguments)
"""The member card shows each process of a Workers = 2 server (issue 31 item 4, ADR 061), in real
headless Chromium: one row per process (pid, cores, CPU, RSS, connections, open files, loop lag,
state), the pids the kernel gives the two workers. Its own stack (test_console_browser's pieces:
the admin API with the console under uvicorn) over one real two-process server.
Screenshot: copied to ``$PUSHGRID_SHOTS`` when set.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pushgrid.console.member_panel import LOOP_LAG_LEVELS

from .pgtest import ServerProcess
from .test_console_browser import (  # noqa: F401  (fixtures, used by name)
    Console,
    Stack,
    admin_console,
    console,
)
from .test_console_browser import pytestmark as browser_only
from .test_workers import workers_of

pytestmark = [browser_only, pytest.mark.timeout(300)]

CARD = "#overview-members [data-member='wcon']"
ROWS = (
    "return Array.from(document.querySelectorAll(arguments[0] + ' .process-row'))"
    ".map(r => [r.dataset.worker, r.dataset.pid, r.dataset.level,"
    " Array.from(r.querySelectorAll('[data-cell]')).map(c => c.dataset.value), r.dataset.lagMax]);"
)


@pytest.fixture(scope="module")
def stack(
    module_server_factory: Callable[..., ServerProcess], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    server = module_server_factory(Workers=2, ServerName="wcon")
    with admin_console([server], tmp_path_factory.mktemp("workers-console")) as (built, _srv):
        yield built


def test_the_member_card_shows_both_processes(console: Console, stack: Stack) -> None:
    pids = workers_of(stack.servers[0])
    console.ensure_signed_in()
    console.wait_text(CARD, "UP", timeout=90)
    console.wait_text(CARD, "2 processes on cores")

    def both() -> list[Any] | None:
        rows = console.js(ROWS, CARD)
        return rows if len(rows) == 2 and all(r[3][3] != "—" for r in rows) else None

    rows = console.wait(both, "two process rows with their CPU")
    assert [(r[0], r[1]) for r in rows] == [("0", str(pids[0])), ("1", str(pids[1]))]
    for _worker, _pid, level, cells, lag_max in rows:
        # a linked process is "ok" unless its loop lagged past the warning level in the last
        # minute, as a process on a loaded machine may: then "warn", for that reason only
        lagged = lag_max != "" and float(lag_max) > LOOP_LAG_LEVELS[0]
        assert level == ("warn" if lagged else "ok"), (level, lag_max)
        assert cells[2] != "—"  # the cores it may run on
        assert cells[-1] == "linked"
    _keep(console.screenshot("workers"))
    console.assert_no_errors()


def test_a_stopped_worker_is_not_answering_on_the_card(console: Console, stack: Stack) -> None:
    pid = workers_of(stack.servers[0])[1]
    console.ensure_signed_in()
    os.kill(pid, signal.SIGSTOP)
    try:
        silent = f"{CARD} .process-row[data-worker='1'][data-level='bad']"
        console.wait_text(silent, "not answering for", timeout=90)
        assert console.text(f"{CARD} .process-row[data-worker='0']").endswith("linked")
        _keep(console.screenshot("workers-stopped"))
    finally:
        os.kill(pid, signal.SIGCONT)
    # answering again: linked, no longer "bad" (its loop lag's max holds the pause for a
    # minute, so the row may read "warn" for that reason; test_the_member_card_shows_both_processes
    # checks the levels)
    answering = (
        f"{CARD} .process-row[data-worker='1']:not([data-level='bad'])"
        " [data-cell='state'][data-value='linked']"
    )
    console.wait(  # the stopped worker's backlog runs first: generous on a loaded machine
        lambda: console.js("return !!document.querySelector(arguments[0])", answering),
        "worker 1 answering again",
        timeout=120,
    )
    console.assert_no_errors()


def _keep(shot: Path) -> None:
    target = os.environ.get("PUSHGRID_SHOTS")
    if target:
        shutil.copy(shot, Path(target) / shot.name)
