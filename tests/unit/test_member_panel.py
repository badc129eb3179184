"""The member panel's computation (metrics/member_panel.py) with hand-made probes and a clock the
test moves: CPU percent from CPU-second deltas, loop-lag max over the window, flush quantiles of
the window only, slow consumers of the window."""

from __future__ import annotations

import asyncio
import math
import time

import pytest

from pushgrid.metrics.delays import DelayHistogram
from pushgrid.metrics.member_panel import (
    EMPTY_PANEL,
    PanelTracker,
    ProcessSample,
    cpu_percent,
    max_replica_lag,
    server_panel,
    sleep_lag,
)
from pushgrid.ops.panel import MemberPanel


def _process(at: float, cpu: float, files: int = 10, limit: int = 1000) -> ProcessSample:
    return ProcessSample(
        at=at, cpu_seconds=cpu, rss_bytes=50 << 20, open_files=files, max_open_files=limit
    )


def test_cpu_percent_is_cpu_seconds_over_elapsed_time() -> None:
    assert cpu_percent(_process(10.0, 1.0), _process(12.0, 2.5)) == pytest.approx(75.0)
    # two busy cores for half a second: 200 % of one core
    assert cpu_percent(_process(10.0, 1.0), _process(10.5, 3.0)) == pytest.approx(400.0)
    assert cpu_percent(_process(10.0, 1.0), _process(10.0, 1.5)) is None
    assert cpu_percent(_process(10.0, 2.0), _process(11.0, 1.0)) == 0.0


def test_sleep_lag_is_how_late_the_sleep_ended() -> None:
    assert sleep_lag(1.0, 100.0, 101.25) == pytest.approx(0.25)
    assert sleep_lag(1.0, 100.0, 100.999) == 0.0


def test_replica_lag_max() -> None:
    assert max_replica_lag([]) is None
    assert max_replica_lag([0, 12, 3]) == 12


def test_first_probe_has_no_cpu_percent_yet() -> None:
    tracker = PanelTracker()
    panel = tracker.observe(_process(1.0, 0.5), 0.01, DelayHistogram().snapshot(), 0)
    assert panel.cpu_percent is None
    assert panel.cpu_seconds_total == 0.5
    assert panel.loop_lag_seconds == 0.01
    assert panel.flush_delay_p50_seconds is None
    assert panel.replica_lag_max is None


def test_window_covers_only_the_last_minute() -> None:
    tracker = PanelTracker(window=60.0)
    histogram = DelayHistogram()
    for _ in range(100):  # old and slow flushes: out of the window later
        histogram.observe(0.2)
    slow = 5
    tracker.observe(_process(0.0, 0.0), 0.5, histogram.snapshot(), slow)
    for second in range(1, 61):
        histogram.observe(0.001)
        tracker.observe(_process(float(second), second * 0.1), 0.002, histogram.snapshot(), slow)
    slow += 3
    histogram.observe(0.004)
    panel = tracker.observe(_process(61.0, 6.15), 0.003, histogram.snapshot(), slow)
    assert panel.cpu_percent == pytest.approx(15.0)
    assert panel.loop_lag_seconds == 0.003
    # the 0.5 s lag of second 0 is more than 60 s old
    assert panel.loop_lag_max_seconds == pytest.approx(0.003)
    # the window is (1, 61]: 59 flushes of 1 ms and 1 of 4 ms; the 100 slow ones are older
    assert panel.flushes_window == 60
    assert panel.flush_delay_p50_seconds == 0.001
    assert panel.flush_delay_p99_seconds == 0.005
    assert panel.slow_consumers_window == 3
    assert panel.slow_consumers_total == 8


def test_a_long_lag_shows_in_the_max_for_a_minute() -> None:
    tracker = PanelTracker(window=60.0)
    empty = DelayHistogram().snapshot()
    tracker.observe(_process(0.0, 0.0), 0.0, empty, 0)
    tracker.observe(
        _process(1.3, 0.1), 0.3, empty, 0
    )  # a blocked loop: the sleep ended 300 ms late
    panel = tracker.observe(_process(2.3, 0.2), 0.001, empty, 0)
    assert panel.loop_lag_seconds == 0.001
    assert panel.loop_lag_max_seconds == 0.3
    panel = tracker.observe(_process(61.5, 0.3), 0.001, empty, 0)
    assert panel.loop_lag_max_seconds == 0.001


def test_open_files_ratio_and_json() -> None:
    tracker = PanelTracker()
    histogram = DelayHistogram()
    histogram.observe(5.0)  # past the last bound: the p99 is infinite
    panel = tracker.observe(
        _process(1.0, 0.1, files=250, limit=1000), 0.0, histogram.snapshot(), 0, {"m1": 0, "m2": 40}
    )
    assert panel.open_files_ratio == 0.25
    assert panel.replica_lag_max == 40
    assert math.isinf(panel.flush_delay_p99_seconds or 0.0)
    document = panel.as_dict()
    assert document["flush_delay_p99_seconds"] is None
    assert document["open_files"] == 250
    assert set(document) == set(EMPTY_PANEL.as_dict())
    unlimited = tracker.observe(_process(2.0, 0.1, limit=0), 0.0, histogram.snapshot(), 0)
    assert unlimited.open_files_ratio is None


def _worker_panel(**numbers: float | int | None) -> MemberPanel:
    return EMPTY_PANEL.model_copy(update=numbers)


def test_a_server_of_several_workers_is_one_panel() -> None:
    """Workers > 1: amounts add up, lags and flush quantiles are the worst process's, the
    slow-consumer total is the server's (a restarted worker's earlier life included)."""
    own = _worker_panel(
        cpu_percent=40.0,
        cpu_seconds_total=10.0,
        rss_bytes=100,
        open_files=30,
        max_open_files=1000,
        loop_lag_seconds=0.001,
        loop_lag_max_seconds=0.02,
        flush_delay_p50_seconds=0.001,
        flush_delay_p99_seconds=0.005,
        flushes_window=50,
        slow_consumers_window=1,
        slow_consumers_total=1,
        replica_lag_max=7,
    )
    other = _worker_panel(
        cpu_percent=55.5,
        cpu_seconds_total=12.5,
        rss_bytes=120,
        open_files=45,
        max_open_files=1000,
        loop_lag_seconds=0.004,
        loop_lag_max_seconds=0.3,
        flush_delay_p50_seconds=0.002,
        flush_delay_p99_seconds=None,
        flushes_window=70,
        slow_consumers_window=2,
        slow_consumers_total=2,
    )
    panel = server_panel(own, [other], slow_total=9)
    assert panel.cpu_percent == 95.5
    assert panel.cpu_seconds_total == 22.5
    assert (panel.rss_bytes, panel.open_files, panel.max_open_files) == (220, 75, 2000)
    assert (panel.loop_lag_seconds, panel.loop_lag_max_seconds) == (0.004, 0.3)
    assert (panel.flush_delay_p50_seconds, panel.flush_delay_p99_seconds) == (0.002, 0.005)
    assert (panel.flushes_window, panel.slow_consumers_window) == (120, 3)
    assert panel.slow_consumers_total == 9
    assert panel.replica_lag_max == 7  # the cluster engine's, worker 0's
    assert panel.window_seconds == own.window_seconds
    assert server_panel(own, [], slow_total=9) is own  # one process: its own panel
    first = _worker_panel(cpu_percent=None, max_open_files=0)  # no CPU yet, unlimited files
    merged = server_panel(first, [_worker_panel(cpu_percent=None, max_open_files=1000)], 0)
    assert merged.cpu_percent is None
    assert merged.max_open_files == 0


def test_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        PanelTracker(window=0)


def test_open_files_are_counted_less_often_as_they_grow() -> None:
    from pushgrid.server.monitoring.probe import files_refresh_after

    assert files_refresh_after(20) == 1.0
    assert files_refresh_after(10_000) == 10.0
    assert files_refresh_after(100_000) == 30.0


def _block(seconds: float) -> None:
    """A handler that holds the loop (what the probe exists to see)."""
    time.sleep(seconds)


async def test_the_probe_sees_a_blocked_loop() -> None:
    """The real probe on a real loop: a callback that blocks 300 ms shows as lag; with a 0.1 s
    probe sleep, at least 0.3 - 0.1 s of it ends past the sleep."""
    from pushgrid.server.monitoring.probe import PanelProbe

    probe = PanelProbe(lambda: DelayHistogram().snapshot(), lambda: 0, dict, period=0.1)
    task = asyncio.create_task(probe.run())
    try:
        await asyncio.sleep(0.35)  # a few probes
        assert probe.panel.cpu_percent is not None
        asyncio.get_running_loop().call_soon(_block, 0.3)
        await asyncio.sleep(0.3)
        panel = probe.panel
    finally:
        task.cancel()
    assert panel.loop_lag_max_seconds is not None
    assert panel.loop_lag_max_seconds >= 0.19
    assert panel.open_files > 0
    assert panel.rss_bytes > 0
