"""The flusher's tick (ADR 012): idle, a mark is flushed at the end of the loop iteration; right
after a flush, the next one waits for the tick; after a quiet tick it is immediate again."""

from __future__ import annotations

import asyncio

from server.transport.flusher import Flusher


class Recorder:
    def __init__(self) -> None:
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1

    def flush_due(self, due: float) -> None:
        self.flush()


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


async def test_first_mark_is_immediate_the_next_waits_for_the_tick() -> None:
    flusher = Flusher(asyncio.get_running_loop(), tick=60.0)
    first, second = Recorder(), Recorder()
    flusher.mark(first)
    await _iterations(2)
    assert first.flushes == 1, "idle: flushed at the end of the iteration"
    flusher.mark(first)
    flusher.mark(second)
    await _iterations(20)
    assert (first.flushes, second.flushes) == (1, 0), "within the tick: waits"


async def test_marks_within_a_tick_share_one_flush() -> None:
    flusher = Flusher(asyncio.get_running_loop(), tick=0.05)
    conn = Recorder()
    flusher.mark(conn)
    await _iterations(2)
    flusher.mark(conn)
    await asyncio.sleep(0.2)
    assert conn.flushes == 2, "the waiting flush happened once the tick passed"
    flusher.mark(conn)  # a quiet tick went by: immediate again
    await _iterations(2)
    assert conn.flushes == 3
