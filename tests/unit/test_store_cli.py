"""``pushgrid db`` / ``pushgrid stats`` commands on real SQLite files, with a fake pipeline.

The Spark entry points (``spark_stats.spark_session``, ``spark_stats.pipeline``) are replaced by
fake modules returning synthetic results, so these tests cover the CLI, the run bookkeeping and the
store without starting Spark (tests/integration/test_stats_cli.py runs the real thing).
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from sqlalchemy import func, select
from typer.testing import CliRunner

from pushgrid.metrics import sqlstore
from pushgrid.metrics.sqlstore.models import JobRun, TrendPoint, WindowStat, from_unix
from pushgrid.spark_stats import jobs
from pushgrid.spark_stats.cli import parse_as_of, register
from pushgrid.spark_stats.locking import warehouse_lock
from pushgrid.spark_stats.results import PipelineResult, StageResult
from pushgrid.spark_stats.synthetic_results import synthetic_result

AS_OF = 1_795_363_199  # 2026-11-22 15:59:59 UTC
DEFAULT_AS_OF = AS_OF - 3600  # what the fake pipeline picks when no --as-of is given
NODES = ("push-1", "push-2")


@dataclass
class FakePipeline:
    """Stands in for spark_stats.spark_session / spark_stats.pipeline; records its calls."""

    fail: BaseException | None = None
    offset: float = 0.0
    calls: list[dict[str, Any]] = field(default_factory=list)
    steps: list[tuple[str, float]] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    session_options: list[dict[str, Any]] = field(default_factory=list)

    def build_spark_session(self, master: str = "local[*]", **options: Any) -> Any:
        stopped = self.stopped

        class Session:
            def stop(self) -> None:
                stopped.append(master)

        self.calls.append({"master": master})
        self.session_options.append(options)
        return Session()

    def run_pipeline(
        self,
        spark: Any,
        archive_dir: Path,
        warehouse_dir: Path,
        as_of: int | None,
        progress: Callable[[str, float], None] | None = None,
        **options: Any,
    ) -> PipelineResult:
        self.calls[-1].update(archive=archive_dir, warehouse=warehouse_dir, as_of=as_of)
        assert options["lock"] is False  # run_job holds the warehouse lock
        # like the real one: what starts now, and the share of the pipeline done
        for message, fraction in (("compaction", 0.0), ("rollups", 0.35), ("windows", 0.65)):
            if progress is not None:
                progress(message, fraction)
            if self.fail is not None and message == "rollups":
                raise self.fail
        if progress is not None:
            progress("windows: done", 1.0)
        return synthetic_result(as_of or DEFAULT_AS_OF, NODES, offset=self.offset)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakePipeline:
    pipeline = FakePipeline()
    session_module = types.ModuleType("pushgrid.spark_stats.spark_session")
    session_module.build_spark_session = pipeline.build_spark_session  # type: ignore[attr-defined]
    pipeline_module = types.ModuleType("pushgrid.spark_stats.pipeline")
    pipeline_module.run_pipeline = pipeline.run_pipeline  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pushgrid.spark_stats.spark_session", session_module)
    monkeypatch.setitem(sys.modules, "pushgrid.spark_stats.pipeline", pipeline_module)
    monkeypatch.setattr(jobs, "_spark_context_running", lambda: False)
    real_run_job = jobs.run_job

    def run_job(*args: Any, **kwargs: Any) -> Any:
        """Record the steps the CLI's progress display receives."""
        display = kwargs["progress"]

        def both(step: str, fraction: float) -> None:
            pipeline.steps.append((step, fraction))
            display(step, fraction)

        return real_run_job(*args, **{**kwargs, "progress": both})

    monkeypatch.setattr(jobs, "run_job", run_job)
    return pipeline


@pytest.fixture
def app() -> typer.Typer:
    application = typer.Typer()
    register(application)
    return application


@pytest.fixture
def cli(app: typer.Typer, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    for name in list(os.environ):
        if name.startswith("PUSHGRID_"):
            monkeypatch.delenv(name)
    runner = CliRunner(env={"COLUMNS": "200"})

    def invoke(*args: str) -> Any:
        return runner.invoke(app, list(args))

    return invoke


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "archive"
    path.mkdir()
    return path


def _url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'pushgrid.db'}"


def _runs(url: str) -> list[JobRun]:
    with sqlstore.session_scope(url) as session:
        return list(reversed(sqlstore.latest_runs(session, 100)))


def _count(url: str, model: type[WindowStat] | type[TrendPoint]) -> int:
    with sqlstore.session_scope(url) as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


# --- db upgrade -------------------------------------------------------------------------------


def test_db_upgrade(cli: Callable[..., Any], tmp_path: Path) -> None:
    url = _url(tmp_path)
    result = cli("db", "upgrade", "--db", url)
    assert result.exit_code == 0, result.output
    assert f"revision {sqlstore.head_revision()}" in result.stdout
    assert sqlstore.current_revision(url) == sqlstore.head_revision()
    assert cli("db", "upgrade", "--db", url).exit_code == 0


def test_db_upgrade_uses_the_database_setting(cli: Callable[..., Any], tmp_path: Path) -> None:
    conf = tmp_path / "pushgrid.conf"
    conf.write_text(f"Database = sqlite:///{tmp_path / 'from-conf.db'}\n", encoding="utf-8")
    result = cli("db", "upgrade", "--config", str(conf))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "from-conf.db").is_file()


def test_bad_configuration_is_exit_2(cli: Callable[..., Any], tmp_path: Path) -> None:
    conf = tmp_path / "pushgrid.conf"
    conf.write_text("Databse = sqlite:///x.db\n", encoding="utf-8")
    result = cli("db", "upgrade", "--config", str(conf))
    assert result.exit_code == 2
    assert "unknown key 'Databse'" in result.stderr


def test_db_upgrade_reports_an_unusable_database(cli: Callable[..., Any], tmp_path: Path) -> None:
    result = cli("db", "upgrade", "--db", "nonsense://x")
    assert result.exit_code == 1
    assert "cannot migrate" in result.stderr


# --- stats run --------------------------------------------------------------------------------


def test_stats_run_succeeds_and_records_the_run(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path
) -> None:
    url = _url(tmp_path)
    result = cli(
        "stats",
        "run",
        "--db",
        url,
        "--archive",
        str(archive),
        "--as-of",
        "2026-11-22T15:59:59Z",
        "--master",
        "local[3]",
        "--warehouse",
        str(tmp_path / "wh"),
    )
    assert result.exit_code == 0, result.output
    assert "stats run 1 succeeded" in result.stdout
    assert "as of 2026-11-22 15:59:59Z" in result.stdout
    assert fake.calls == [
        {"master": "local[3]", "archive": archive, "warehouse": tmp_path / "wh", "as_of": AS_OF}
    ]
    assert fake.stopped == ["local[3]"]  # the session it built is stopped
    messages = [message for message, _ in fake.steps]
    fractions = [fraction for _, fraction in fake.steps]
    assert messages[0] == "starting Spark (local[3])"
    assert {"compaction", "rollups", "windows"} <= set(messages)
    assert messages[-2:] == [
        "writing the results to the database",
        "stored 252 window statistics and 756 trend points",
    ]
    assert fractions == sorted(fractions)
    assert fractions[0] == 0.0
    assert fractions[-1] == 1.0

    (run,) = _runs(url)
    expected = synthetic_result(AS_OF, NODES)
    assert run.status == "succeeded"
    assert run.as_of == from_unix(AS_OF)
    assert run.master == "local[3]"
    assert run.input_rows == expected.stages[0].input_rows
    assert run.output_rows == len(expected.window_stats) + len(expected.trend_points)
    assert run.stages is not None
    assert [stage["name"] for stage in run.stages] == ["compaction", "rollups", "windows"]
    assert run.error is None
    assert _count(url, WindowStat) == len(expected.window_stats)
    assert _count(url, TrendPoint) == len(expected.trend_points)


def test_rerun_for_the_same_as_of_replaces(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path
) -> None:
    url = _url(tmp_path)
    args = ("stats", "run", "--db", url, "--archive", str(archive))
    assert cli(*args).exit_code == 0
    rows = _count(url, WindowStat), _count(url, TrendPoint)
    fake.offset = 7.0
    assert cli(*args, "--as-of", str(DEFAULT_AS_OF)).exit_code == 0
    assert (_count(url, WindowStat), _count(url, TrendPoint)) == rows
    first, second = _runs(url)
    assert first.as_of == second.as_of == from_unix(DEFAULT_AS_OF)
    with sqlstore.session_scope(url) as session:
        stats = sqlstore.window_stats(session)
        assert {row.run_id for row in stats} == {second.id}


def test_missing_archive_is_recorded_as_failed(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path
) -> None:
    url = _url(tmp_path)
    missing = tmp_path / "no-such-archive"
    result = cli("stats", "run", "--db", url, "--archive", str(missing))
    assert result.exit_code == 1
    assert f"archive directory {missing} does not exist" in result.stderr
    assert "stats run 1 failed" in result.stderr
    (run,) = _runs(url)
    assert run.status == "failed"
    assert run.error == f"archive directory {missing} does not exist"
    assert run.finished_at is not None
    assert fake.calls == []  # Spark was never started
    assert _count(url, WindowStat) == 0


def test_archive_that_is_a_file_is_recorded_as_failed(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path
) -> None:
    url = _url(tmp_path)
    not_dir = tmp_path / "file"
    not_dir.write_text("x", encoding="utf-8")
    result = cli("stats", "run", "--db", url, "--archive", str(not_dir))
    assert result.exit_code == 1
    assert _runs(url)[0].error == f"archive {not_dir} is not a directory"


def test_pipeline_error_is_recorded_as_failed(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path
) -> None:
    url = _url(tmp_path)
    fake.fail = RuntimeError("executor lost\njava stack trace ...")
    result = cli("stats", "run", "--db", url, "--archive", str(archive))
    assert result.exit_code == 1
    assert "RuntimeError: executor lost" in result.stderr
    (run,) = _runs(url)
    assert run.status == "failed"
    assert run.error == "RuntimeError: executor lost\njava stack trace ..."
    assert fake.stopped == ["local[*]"]  # stopped even on failure
    assert _count(url, WindowStat) == 0


def test_interrupted_run_is_recorded(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path
) -> None:
    url = _url(tmp_path)
    fake.fail = KeyboardInterrupt()
    result = cli("stats", "run", "--db", url, "--archive", str(archive))
    assert result.exit_code == 130
    (run,) = _runs(url)
    assert run.error == "interrupted"
    assert run.status == "interrupted", "a clean stop is not a pipeline failure (issue 34)"
    assert "not failed" in result.stderr


@pytest.mark.parametrize("bad", ["yesterday", "2026-13-01", "12:00", "-5"])
def test_bad_as_of_is_a_usage_error_naming_the_option(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path, bad: str
) -> None:
    url = _url(tmp_path)
    result = cli("stats", "run", "--db", url, "--archive", str(archive), "--as-of", bad)
    assert result.exit_code == 2
    assert "--as-of" in result.output
    assert "ISO 8601" in result.output or "1970" in result.output
    assert not (tmp_path / "pushgrid.db").exists()  # nothing was started


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1795363199", AS_OF),
        (" 1795363199 ", AS_OF),
        ("2026-11-22T15:59:59Z", AS_OF),
        ("2026-11-22T15:59:59+00:00", AS_OF),
        ("2026-11-22T16:59:59+01:00", AS_OF),
        ("2026-11-22 15:59:59", AS_OF),  # no offset: UTC
        ("2026-11-22T15:59:59.900Z", AS_OF),
        ("2026-11-22", AS_OF - 15 * 3600 - 3599),
    ],
)
def test_parse_as_of(text: str, expected: int) -> None:
    assert parse_as_of(text) == expected


def test_defaults_come_from_the_settings(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path
) -> None:
    conf = tmp_path / "pushgrid.conf"
    conf.write_text(
        "\n".join(
            [
                f"Database = {_url(tmp_path)}",
                f"MetricsArchive = {archive}",
                f"StatsWarehouse = {tmp_path / 'warehouse'}",
                "SparkMaster = local[2]",
                "SparkDriverMemory = 768m",
                "SparkDriverHost = 127.0.0.2",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    result = cli("stats", "run", "--config", str(conf))
    assert result.exit_code == 0, result.output
    assert fake.calls[0] == {
        "master": "local[2]",
        "archive": archive,
        "warehouse": tmp_path / "warehouse",
        "as_of": None,
    }
    assert fake.session_options == [{"driver_memory": "768m", "driver_host": "127.0.0.2"}]
    status = cli("stats", "status", "--config", str(conf))
    assert status.exit_code == 0, status.output
    assert "succeeded" in status.stdout


# --- stats status -----------------------------------------------------------------------------


def test_status_shows_the_last_runs(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path
) -> None:
    url = _url(tmp_path)
    assert cli("stats", "run", "--db", url, "--archive", str(archive)).exit_code == 0
    assert cli("stats", "run", "--db", url, "--archive", str(tmp_path / "nope")).exit_code == 1
    with sqlstore.session_scope(url) as session:
        sqlstore.start_run(session, master="spark://cluster:7077")

    result = cli("stats", "status", "--db", url)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for text in ("succeeded", "failed", "running", "archive directory", "2026-11-22 14:59:59"):
        assert text in out, out
    ids = [line.split()[0] for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert ids == ["3", "2", "1"]

    limited = cli("stats", "status", "--db", url, "--limit", "1")
    assert "running" in limited.stdout
    assert "succeeded" not in limited.stdout


def test_status_shows_the_stages_of_the_last_run(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path
) -> None:
    url = _url(tmp_path)
    assert cli("stats", "run", "--db", url, "--archive", str(archive)).exit_code == 0
    out = cli("stats", "status", "--db", url).stdout
    assert "stages of run 1 (succeeded)" in out
    with sqlstore.session_scope(url) as session:
        stages = sqlstore.get_run(session, 1).stages
    assert stages
    for stage in stages:
        assert stage["name"] in out
    # a run still going shows the stages it has done so far
    with sqlstore.session_scope(url) as session:
        run = sqlstore.start_run(session)
        sqlstore.record_stages(session, run.id, [StageResult("compaction", 7, 7, 61.0)])
    out = cli("stats", "status", "--db", url).stdout
    assert f"stages of run {run.id} (so far)" in out
    assert "1 min 01 s" in out


def test_status_without_database_or_runs(cli: Callable[..., Any], tmp_path: Path) -> None:
    url = _url(tmp_path)
    missing = cli("stats", "status", "--db", url)
    assert missing.exit_code == 1
    assert "nothing has run yet" in missing.stderr
    assert not (tmp_path / "pushgrid.db").exists()  # status does not create it

    assert cli("db", "upgrade", "--db", url).exit_code == 0
    empty = cli("stats", "status", "--db", url)
    assert empty.exit_code == 0
    assert "no statistics runs" in empty.stdout


def test_status_on_a_database_without_the_schema(cli: Callable[..., Any], tmp_path: Path) -> None:
    import sqlite3

    sqlite3.connect(tmp_path / "pushgrid.db").close()
    result = cli("stats", "status", "--db", _url(tmp_path))
    assert result.exit_code == 1
    assert "pushgrid db upgrade" in result.stderr


def test_one_run_at_a_time_and_killed_runs_are_marked_failed(
    cli: Callable[..., Any], fake: FakePipeline, tmp_path: Path, archive: Path
) -> None:
    url = _url(tmp_path)
    warehouse = tmp_path / "wh"
    args = ("stats", "run", "--db", url, "--archive", str(archive), "--warehouse", str(warehouse))
    assert cli("db", "upgrade", "--db", url).exit_code == 0
    with sqlstore.session_scope(url) as session:
        killed = sqlstore.start_run(session, master="local[1]")  # a run that died: no lock held

    # another run holds the warehouse: refused, naming it, and nothing recorded
    with warehouse_lock(warehouse):
        refused = cli(*args)
    assert refused.exit_code == 1
    assert f"refused: statistics run {killed.id} (started " in refused.stderr
    assert "one run at a time" in refused.stderr
    assert [r.id for r in _runs_of(url)] == [killed.id]
    assert fake.calls == []

    # the next run holds the lock: the `running` row is a dead run, marked failed first
    assert cli(*args).exit_code == 0
    runs = {r.id: r for r in _runs_of(url)}
    assert (runs[killed.id].status, runs[killed.id].error) == ("failed", sqlstore.INTERRUPTED)
    assert runs[killed.id].finished_at is not None
    assert [r.status for r in runs.values() if r.id != killed.id] == ["succeeded"]


def _runs_of(url: str) -> list[JobRun]:
    with sqlstore.session_scope(url) as session:
        return sqlstore.latest_runs(session, 100)
