"""``pushgrid stats run`` / ``stats status`` end to end: real Spark, real archive files, real SQL.

A small archive in the format of docs/archive.md (three nodes, two closed hours, a few absent
seconds) goes through the real pipeline (``spark_stats.pipeline.run_pipeline``) into SQLite and
into a private PostgreSQL server (tests/integration/postgres.py). The commands run in-process
(Typer's runner on an app with :func:`spark_stats.cli.register`), on the test run's one Spark
session (``spark``, tests/spark_timeouts.py): the CLI reuses a running Spark context and leaves
it running.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from sqlalchemy import func, select
from typer.testing import CliRunner

from pushgrid.metrics import sqlstore
from pushgrid.metrics.archive import hour_path
from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.sqlstore.models import JobRun, TrendPoint, WindowStat, to_unix
from pushgrid.metrics.window_spec import WINDOW_NAMES, window_start
from pushgrid.spark_stats.cli import register

from .pgtest import PUSHGRID, REPO, clean_env
from .postgres import PostgresServer, running_postgres

pytestmark = pytest.mark.slow

NODES = ("push-1", "push-2", "push-3")
HOURS = 2
# The two hours before the current one: closed hours, and inside every window and the trend
# series of a run as of now (the pipeline's default as-of).
START = (int(time.time()) // 3600 - HOURS) * 3600
SCOPES = ("cluster", *(f"node:{node}" for node in NODES))


def _value(indicator: int, node: int, ts: int) -> int:
    """Deterministic integer samples; outgoing bytes near 1.4e7 like a busy node."""
    base = (1000 * (node + 1), 0, 0, 100, 120_000, 10_400, 14_400_000)[indicator]
    spread = (600, 7, 5, 13, 1000 * (node + 1), 17, 100_000)[indicator]
    return base + (ts * (indicator + 3) + node) % spread


def _present(node: int, ts: int) -> bool:
    return (ts + node) % 97 != 0  # a few absent seconds per node


def write_archive(root: Path) -> dict[str, list[tuple[int, list[int]]]]:
    """Closed hourly CSV files for every node; returns node -> [(ts, values)]."""
    samples: dict[str, list[tuple[int, list[int]]]] = {}
    for n, node in enumerate(NODES):
        rows = samples.setdefault(node, [])
        for hour in range(HOURS):
            first = START + 3600 * hour
            path = hour_path(root, node, first)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8", newline="\n") as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(["ts", "node", *INDICATOR_NAMES])
                for ts in range(first, first + 3600):
                    if not _present(n, ts):
                        continue
                    values = [_value(i, n, ts) for i in range(len(INDICATOR_NAMES))]
                    writer.writerow([ts, node, *values])
                    rows.append((ts, values))
    return samples


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("archive")
    return root, write_archive(root)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    app = typer.Typer()
    register(app)
    for name in list(os.environ):
        if name.startswith("PUSHGRID_"):
            monkeypatch.delenv(name)
    runner = CliRunner(env={"COLUMNS": "200"})

    def invoke(*args: str) -> Any:
        return runner.invoke(app, list(args))

    return invoke


def _runs(url: str) -> list[JobRun]:
    with sqlstore.session_scope(url) as session:
        return list(reversed(sqlstore.latest_runs(session, 100)))


def _counts(url: str) -> tuple[int, int]:
    with sqlstore.session_scope(url) as session:
        stats = session.scalar(select(func.count()).select_from(WindowStat)) or 0
        trend = session.scalar(select(func.count()).select_from(TrendPoint)) or 0
    return stats, trend


def check_results(
    url: str, samples: dict[str, list[tuple[int, list[int]]]], first_run: bool = True
) -> JobRun:
    """The last run succeeded and stored a row for every scope x indicator x window.

    A first run over a fresh warehouse reads every archive sample; a rerun may read fewer
    (the pipeline compacts only what it has not seen).
    """
    run = _runs(url)[-1]
    assert run.status == "succeeded", run.error
    assert run.as_of is not None
    assert run.finished_at is not None
    total = sum(len(rows) for rows in samples.values())
    if first_run:
        assert run.input_rows == total
    else:
        assert run.input_rows is not None
        assert 0 <= run.input_rows <= total
    assert run.output_rows == sum(_counts(url))
    assert run.stages
    as_of = to_unix(run.as_of)
    with sqlstore.session_scope(url) as session:
        rows = sqlstore.window_stats(session)
        keys = {(r.scope, r.indicator, r.window) for r in rows}
        assert keys == {(s, i, w) for s in SCOPES for i in INDICATOR_NAMES for w in WINDOW_NAMES}
        assert {r.as_of for r in rows} == {run.as_of}
        assert {r.run_id for r in rows} == {run.id}
        trend = sqlstore.trend(session, "cluster", "connected_users", "1h")
        assert trend, "no trend points for cluster/connected_users/1h"
        assert trend[-1].as_of <= run.as_of

        # Node statistics against the raw samples (docs/monitoring.md window definition).
        for window in ("1m", "1h", "15h"):
            (stat,) = sqlstore.window_stats(
                session, "node:push-2", "outgoing_bytes_per_second", window
            )
            low = window_start(window, as_of)
            values = [v[6] for ts, v in samples["push-2"] if low <= ts <= as_of]
            assert stat.count == len(values), window
            if values:
                assert stat.max == max(values)
                assert stat.avg == pytest.approx(statistics.fmean(values), rel=1e-12)
                assert stat.stddev == pytest.approx(statistics.pstdev(values), rel=1e-9, abs=1e-9)
            else:
                assert stat.max is None
                assert stat.avg is None
            assert stat.stddev is None or not math.isnan(stat.stddev)
    return run


def test_stats_run_on_sqlite_then_status_and_rerun(
    cli: Callable[..., Any], spark: Any, archive: tuple[Path, Any], tmp_path: Path
) -> None:
    root, samples = archive
    url = f"sqlite:///{tmp_path / 'data' / 'pushgrid.db'}"
    args = (
        "stats",
        "run",
        "--db",
        url,
        "--archive",
        str(root),
        "--warehouse",
        str(tmp_path / "warehouse"),
        "--master",
        "local[2]",
    )
    first = cli(*args)
    assert first.exit_code == 0, first.output
    assert "stats run 1 succeeded" in first.stdout
    run = check_results(url, samples)
    counts = _counts(url)

    status = cli("stats", "status", "--db", url)
    assert status.exit_code == 0, status.output
    assert "succeeded" in status.stdout
    assert run.as_of is not None
    assert run.as_of.strftime("%Y-%m-%d %H:%M:%S") in status.stdout

    # A rerun for the same as-of replaces the rows (ISO 8601 --as-of).
    again = cli(*args, "--as-of", run.as_of.isoformat())
    assert again.exit_code == 0, again.output
    assert _counts(url) == counts
    rerun = check_results(url, samples, first_run=False)
    assert rerun.id == run.id + 1
    assert rerun.as_of == run.as_of


def test_failing_runs_are_recorded_as_failed(
    cli: Callable[..., Any], spark: Any, archive: tuple[Path, Any], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'pushgrid.db'}"
    missing = tmp_path / "no-archive"
    result = cli("stats", "run", "--db", url, "--archive", str(missing))
    assert result.exit_code == 1
    assert "does not exist" in result.stderr

    # An unusable warehouse (the path is a regular file): recorded as failed too.
    blocked = tmp_path / "warehouse-is-a-file"
    blocked.write_text("not a directory\n", encoding="utf-8")
    root, _ = archive
    result = cli("stats", "run", "--db", url, "--archive", str(root), "--warehouse", str(blocked))
    assert result.exit_code == 1, result.output
    assert "stats run 2 failed" in result.stderr

    runs = _runs(url)
    assert [r.status for r in runs] == ["failed", "failed"]
    assert all(r.error and r.finished_at for r in runs)
    assert _counts(url) == (0, 0)
    status = cli("stats", "status", "--db", url)
    assert status.exit_code == 0
    assert status.stdout.count("failed") == 2


def test_stats_run_on_postgresql(
    cli: Callable[..., Any], spark: Any, archive: tuple[Path, Any], tmp_path: Path
) -> None:
    root, samples = archive
    with running_postgres() as server:
        url = _pg_url(server)
        upgraded = cli("db", "upgrade", "--db", url)
        assert upgraded.exit_code == 0, upgraded.output
        result = cli(
            "stats",
            "run",
            "--db",
            url,
            "--archive",
            str(root),
            "--warehouse",
            str(tmp_path / "warehouse"),
        )
        assert result.exit_code == 0, result.output
        check_results(url, samples)
        status = cli("stats", "status", "--db", url)
        assert status.exit_code == 0, status.output
        assert "succeeded" in status.stdout


def _pg_url(server: PostgresServer) -> str:
    return server.create_database("pushgrid_e2e")


def test_pushgrid_binary_has_the_commands(tmp_path: Path) -> None:
    """Through the installed ``pushgrid`` entry point (no Spark): db upgrade, stats status."""
    from pushgrid.cli.main import command_line

    app = command_line()

    if "stats" not in {group.name for group in app.registered_groups}:
        pytest.skip("pushgrid/cli/main.py does not register spark_stats.cli yet")
    url = f"sqlite:///{tmp_path / 'bin.db'}"
    env = clean_env()
    for command in (["db", "upgrade", "--db", url], ["stats", "status", "--db", url]):
        done = subprocess.run(
            [*PUSHGRID, *command],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=REPO,
            check=False,
        )
        assert done.returncode == 0, done.stderr
