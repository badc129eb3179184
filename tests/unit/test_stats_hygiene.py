"""Pure parts of issue 16: the JVM watchdog, compaction batches, rollup chunks, the verify
comparison and the Jobs page's stage table (no Spark here; tests/integration/test_stats_cluster.py
runs the real thing)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dash.development.base_component import Component

from pushgrid.console.pages.jobs import render_stages
from pushgrid.metrics.window_spec import HOUR
from pushgrid.ops.api.jobs import JobRunOut, StageOut
from pushgrid.spark_stats.verify import LiveWindows, Stat, compare

pytest.importorskip("pyspark")

from pushgrid.spark_stats.compaction import ArchiveFile, batches
from pushgrid.spark_stats.rollups import chunks


def _alive(process: subprocess.Popen[bytes]) -> bool:
    return process.poll() is None


def _watch(target: subprocess.Popen[bytes], grace: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pushgrid.spark_stats.watchdog",
            str(target.pid),
            "--grace",
            str(grace),
        ],
        stdin=subprocess.PIPE,
    )


def _wait_exit(process: subprocess.Popen[bytes], timeout: float = 30) -> int:
    return process.wait(timeout)


def test_watchdog_kills_a_process_that_outlives_its_driver() -> None:
    stubborn = subprocess.Popen(["sleep", "600"])  # stands in for a JVM that does not exit
    try:
        watchdog = _watch(stubborn, grace=0.5)
        time.sleep(0.5)
        assert _alive(stubborn)
        assert watchdog.stdin is not None
        watchdog.stdin.close()  # what the driver's death does
        assert _wait_exit(stubborn) == -9
        assert _wait_exit(watchdog) == 0
    finally:
        stubborn.kill()
        stubborn.wait()


def test_watchdog_leaves_a_process_that_exits_in_its_grace() -> None:
    polite = subprocess.Popen(["sleep", "0.3"])
    watchdog = _watch(polite, grace=30)
    assert watchdog.stdin is not None
    watchdog.stdin.close()
    assert _wait_exit(polite) == 0
    assert _wait_exit(watchdog) == 0


def _file(day: str, hour: int, size: int) -> ArchiveFile:
    rel = f"{day}/n/samples-{hour:02d}.csv"
    return ArchiveFile(Path(rel), rel, day, hour, size, 0, True)


def test_batches_keep_dates_whole_and_in_order() -> None:
    files = [_file(f"2026-01-0{d}", h, 10) for d in (3, 1, 2) for h in range(3)]
    groups = batches(files, budget=60)
    assert [sorted({f.day for f in g}) for g in groups] == [
        ["2026-01-01", "2026-01-02"],
        ["2026-01-03"],
    ]
    assert sum(len(g) for g in groups) == len(files)
    assert len(batches(files, budget=1)) == 3  # a date larger than the budget is one batch
    assert batches([], budget=1) == []


def test_chunks_cut_only_where_the_version_changes() -> None:
    changed = {h * HOUR: 1 for h in range(5)} | {h * HOUR: 2 for h in range(5, 8)}
    changed[100 * HOUR] = 3
    assert chunks(changed, min_hours=4) == [
        ([h * HOUR for h in range(5)], 1),
        ([h * HOUR for h in range(5, 8)] + [100 * HOUR], 3),
    ]
    assert chunks(changed, min_hours=100) == [(sorted(changed), 3)]
    assert chunks({}, min_hours=1) == []


def _live(stats: dict[tuple[str, str], Stat]) -> LiveWindows:
    return LiveWindows("push-1", ts=10_000, uptime=3600.0, stats=stats)


def test_compare_equal_different_and_restarted() -> None:
    live = _live(
        {
            ("connected_users", "1m"): (60, 9.0, 4.5, 2.0),
            ("connected_users", "5m"): (300, 9.0, 4.5, 2.0),
            ("connected_users", "1h"): (3600, 9.0, 4.5, 2.0),  # not a second window: skipped
            ("outgoing_bytes_per_second", "1m"): (0, None, None, None),
        }
    )
    pipeline = {
        ("connected_users", "1m"): (60, 9.0, 4.5 * (1 + 1e-15), 2.0 * (1 + 1e-11)),
        ("connected_users", "5m"): (300, 9.0, 4.5000001, 2.0),
    }
    checks = {(c.indicator, c.window): c for c in compare(live, pipeline)}
    assert set(checks) == {
        ("connected_users", "1m"),
        ("connected_users", "5m"),
        ("outgoing_bytes_per_second", "1m"),
    }
    assert checks[("connected_users", "1m")].outcome == "equal"
    assert checks[("outgoing_bytes_per_second", "1m")].outcome == "equal"  # both empty
    assert checks[("connected_users", "5m")].outcome == "different"
    assert "avg" in checks[("connected_users", "5m")].detail

    young = LiveWindows("push-1", ts=10_000, uptime=100.0, stats=live.stats)
    more = {("connected_users", "5m"): (310, 9.0, 4.4, 2.1)}
    (check,) = [c for c in compare(young, more) if c.window == "5m"]
    assert check.outcome == "restarted"
    assert "10 samples of its previous run" in check.detail
    # more archived samples in a window the member saw entirely: a real difference
    (check,) = [c for c in compare(live, more) if c.window == "5m"]
    assert check.outcome == "different"


def _text(component: Component) -> str:
    return str(component.to_plotly_json())  # type: ignore[no-untyped-call]


def test_jobs_page_shows_the_last_runs_stages() -> None:
    stages = [
        StageOut(name="compaction", seconds=30.0, input_rows=100, output_rows=100),
        StageOut(name="rollups", seconds=10.0, input_rows=100, output_rows=7),
    ]
    runs = [
        _run(2, "running", "2026-11-24T03:00:00+00:00", stages=stages),
        _run(1, "succeeded", "2026-11-24T02:00:00+00:00", duration_seconds=5.0),
    ]
    text = _text(render_stages(runs))
    assert "Stages of run #2 (so far)" in text
    assert "compaction" in text
    assert "rollups" in text
    assert "75 %" in text  # 30 of 40 seconds
    assert "no stage recorded yet" in _text(render_stages(runs[1:]))
    assert JobRunOut.model_validate(runs[0].model_dump(mode="json")) == runs[0]


def _run(run_id: int, status: str, started_at: str, **given: Any) -> JobRunOut:
    """A run as ``GET /jobs`` answers it (every field present, null when unknown)."""
    fields = dict.fromkeys(JobRunOut.model_fields) | {"stages": []}
    return JobRunOut.model_validate(
        fields | {"id": run_id, "status": status, "started_at": started_at} | given
    )
