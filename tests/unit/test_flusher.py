"""The flusher's tick (ADR 012): idle, a mark is flushed at the end of the loop iteration; right
after a flush, the next one waits twice as long as that flush took, at most the tick; after a quiet
rest it is immediate again."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable

import pytest

from pushgrid.server.transport.flusher import Flusher, rest_after


class Recorder:
    """A connection whose flush costs ``cost`` seconds (the system calls of a real one)."""

    def __init__(self, cost: float = 0.0) -> None:
        self.flushes = 0
        self.cost = cost
        self.flushed_at: list[float] = []

    def flush(self) -> None:
        self.flushes += 1
        if self.cost:
            time.sleep(self.cost)
        self.flushed_at.append(time.monotonic())

    def flush_due(self, due: float) -> None:
        self.flush()


async def _until(condition: Callable[[], bool], bound: float = 10.0) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        assert time.monotonic() < deadline, "not reached within the bound"
        await asyncio.sleep(0.005)


def _flushed(conn: Recorder, times: int) -> bool:
    return conn.flushes >= times


async def _iterations(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_without_tick_every_iteration_flushes() -> None:
    flusher = Flusher(asyncio.get_running_loop())
    conn = Recorder()
    for expected in (1, 2, 3):
        flusher.mark(conn)
        await _iterations(2)
        assert conn.flushes == expected


async def test_first_mark_is_immediate_the_next_waits_for_the_rest() -> None:
    flusher = Flusher(asyncio.get_running_loop(), tick=60.0)
    first, second = Recorder(cost=0.05), Recorder()
    flusher.mark(first)
    await _iterations(2)
    assert first.flushes == 1, "idle: flushed at the end of the iteration"
    flusher.mark(first)
    flusher.mark(second)
    await _until(lambda: (first.flushes, second.flushes) == (2, 1))
    # Judged by the clock, not by loop iterations: a loaded machine may stall the test longer
    # than the rest. The rest is twice the flush (>= 0.1 s), counted from the flush's end.
    waited = second.flushed_at[0] - first.flushed_at[0]
    assert waited >= 2 * first.cost, "within the rest: waits"


@pytest.mark.parametrize(
    ("flush_seconds", "tick", "rest"),
    [
        (0.0001, 0.005, 0.0002),
        (0.002, 0.005, 0.004),
        (0.004, 0.005, 0.005),
        (0.1, 0.04, 0.04),
        (0.1, 0.0, 0.0),
    ],
)
def test_the_rest_is_twice_the_flush_at_most_the_tick(
    flush_seconds: float, tick: float, rest: float
) -> None:
    assert rest_after(flush_seconds, tick) == rest


async def test_a_cheap_flush_keeps_the_next_one_almost_immediate() -> None:
    flusher = Flusher(asyncio.get_running_loop(), tick=60.0)
    cheap = Recorder()
    for expected in (1, 2, 3):
        flusher.mark(cheap)
        # Within the bound (10 s), far below the tick: a 60 s tick does not hold it back.
        await _until(functools.partial(_flushed, cheap, expected))
        assert cheap.flushes == expected


async def test_marks_within_a_rest_share_one_flush() -> None:
    flusher = Flusher(asyncio.get_running_loop(), tick=0.05)
    conn = Recorder(cost=0.02)
    flusher.mark(conn)
    await _iterations(2)
    flusher.mark(conn)
    await _until(lambda: conn.flushes == 2)
    # The flush ends at flushed_at; the next starts after the rest (2 x 0.02 s) and lasts 0.02 s.
    assert conn.flushed_at[1] - conn.flushed_at[0] >= 3 * conn.cost, "within the rest: waits"
    await asyncio.sleep(0.2)  # longer than any rest: the tick (0.05 s) caps it
    flusher.mark(conn)  # a quiet rest went by: immediate again
    await _iterations(2)
    assert conn.flushes == 3


async def _feed(flusher: Flusher, until: float, every: float = 0.02) -> float:
    """Count a client read every ``every`` seconds until ``until`` (monotonic), as
    Connection._count_in does; returns when the last read was counted."""
    last = time.monotonic()
    while last < until:
        flusher.heard += 1
        last = time.monotonic()
        await asyncio.sleep(every)
    return last


async def test_the_rest_goes_on_while_input_arrives_and_ends_with_it() -> None:
    # ADR 064: after a flush as costly as the tick allows (saturation), a rest whose clients
    # are still sending waits for the lull (the publishers' window queued) so one write
    # carries it all. Tick 1 s: the rest 1 s, then steps of 0.5 s, at most 6 s in all.
    flusher = Flusher(asyncio.get_running_loop(), tick=1.0)
    conn = Recorder(cost=0.5)
    flusher.mark(conn)
    await _until(functools.partial(_flushed, conn, 1))
    flusher.mark(conn)
    last_read = await _feed(flusher, until=conn.flushed_at[0] + 2.0)
    await _until(functools.partial(_flushed, conn, 2))
    assert conn.flushed_at[1] > last_read, "flushed while the input still arrived"


async def test_after_a_cheap_flush_input_does_not_lengthen_the_rest() -> None:
    # A small fan-out keeps its latency: its short rest ends while the clients still send.
    flusher = Flusher(asyncio.get_running_loop(), tick=1.0)
    conn = Recorder(cost=0.05)  # the rest after it: 0.1 s, far from the tick
    flusher.mark(conn)
    await _until(functools.partial(_flushed, conn, 1))
    flusher.mark(conn)
    last_read = await _feed(flusher, until=conn.flushed_at[0] + 2.0)
    assert conn.flushes == 2
    assert conn.flushed_at[1] < last_read, "waited for the input to stop"


async def test_a_rest_ends_even_if_input_never_stops() -> None:
    flusher = Flusher(asyncio.get_running_loop(), tick=0.1)  # at most 0.6 s after the flush
    conn = Recorder(cost=0.05)  # the rest after it: the tick
    flusher.mark(conn)
    await _until(functools.partial(_flushed, conn, 1))
    flusher.mark(conn)
    feeding = asyncio.create_task(_feed(flusher, until=float("inf"), every=0.005))
    try:
        await _until(functools.partial(_flushed, conn, 2))
    finally:
        feeding.cancel()
    assert conn.flushed_at[1] - conn.flushed_at[0] >= 2 * conn.cost, "the rest itself is kept"
