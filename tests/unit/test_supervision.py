"""``pushgrid up``'s children (pushgrid/kernel/periodic.py): how an exit is said, the restart
back-off and its bound, and :func:`supervised` on real child processes (``sh -c 'exit N'``, a
self-kill)."""

from __future__ import annotations

import asyncio
import logging
import sys

import pytest

from pushgrid.kernel.periodic import RestartPolicy, exit_text, run_child, supervised


def test_exit_text_names_the_code_or_the_signal() -> None:
    assert exit_text(0) == "exited with code 0"
    assert exit_text(3) == "exited with code 3"
    assert exit_text(-9) == "was killed by signal SIGKILL (9)"
    assert exit_text(-15) == "was killed by signal SIGTERM (15)"


def test_back_off_doubles_and_is_bounded() -> None:
    policy = RestartPolicy()
    delays = [policy.next_delay(float(t), 0.5) for t in range(5)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert policy.next_delay(5.0, 0.5) is None  # a 6th restart within 300 s: no
    assert policy.recent == 5


def test_old_restarts_leave_the_count_and_a_stable_run_resets_the_delay() -> None:
    policy = RestartPolicy(limit=2, period=100.0, stable=60.0)
    assert policy.next_delay(0.0, 1.0) == 1.0
    assert policy.next_delay(10.0, 1.0) == 2.0
    assert policy.next_delay(20.0, 1.0) is None
    # 150 s later the first two restarts are out of the period; the child had run 130 s
    assert policy.next_delay(150.0, 130.0) == 1.0
    assert policy.next_delay(151.0, 1.0) == 2.0


def test_last_delay_repeats() -> None:
    policy = RestartPolicy(delays=(1.0, 5.0), limit=10)
    assert [policy.next_delay(float(t), 0.0) for t in range(4)] == [1.0, 5.0, 5.0, 5.0]


async def test_supervised_restarts_a_failing_child_then_gives_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runs: list[int] = []

    async def run() -> int:
        runs.append(1)
        return await run_child(["sh", "-c", "exit 3"])

    policy = RestartPolicy(delays=(0.01,), limit=2)
    with caplog.at_level(logging.WARNING, logger="pushgrid.kernel.periodic"):
        await asyncio.wait_for(supervised("member m2", run, policy=policy), 30)
    assert len(runs) == 3  # the first run and two restarts
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3
    assert all(m.startswith("pushgrid up: member m2 exited with code 3 after") for m in messages)
    assert "restarting it in 0.01 s (restart 1 of at most 2 within 300 s)" in messages[0]
    assert "not restarting it: it already restarted 2 times within 300 s" in messages[2]


async def test_supervised_says_a_signal_and_does_not_restart_a_clean_exit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    codes = iter(
        [
            [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
            ["sh", "-c", "exit 0"],
        ]
    )

    async def run() -> int:
        return await run_child(next(codes))

    with caplog.at_level(logging.WARNING, logger="pushgrid.kernel.periodic"):
        await asyncio.wait_for(
            supervised("admin API", run, policy=RestartPolicy(delays=(0.01,))), 30
        )
    first, second = (r.getMessage() for r in caplog.records)
    assert "admin API was killed by signal SIGKILL (9)" in first
    assert "restarting it in 0.01 s" in first
    assert "admin API exited with code 0" in second
    assert "not restarting it: it stopped cleanly" in second
