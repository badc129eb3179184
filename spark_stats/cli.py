"""``pushgrid db ...`` and ``pushgrid stats ...``: the SQL store and the statistics pipeline.

``pushgrid/cli/main.py`` calls :func:`register` to add both sub-apps. Defaults come from the one
Settings object (``--config FILE``, ``PUSHGRID_*`` variables): ``Database``, ``MetricsArchive``,
``StatsWarehouse``, ``SparkMaster``.

    pushgrid db upgrade [--config FILE] [--db URL]
    pushgrid stats run [--config FILE] [--archive DIR] [--db URL] [--as-of TIMESTAMP]
                       [--master URL] [--warehouse DIR]
    pushgrid stats status [--config FILE] [--db URL] [--limit N]
    pushgrid stats verify --member URL [--config FILE] [--archive DIR] [--warehouse DIR]
                          [--master URL] [--node NAME]

Exit codes: 0 done; 1 the job failed (recorded as failed), the run was refused (another run
holds the warehouse: nothing recorded), the database is unusable, or ``verify`` found a
difference; 2 bad option or configuration.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pushgrid.config.cli_support import fail, name_process, settings_or_exit

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID
    from rich.table import Table

    from pushgrid.config import StatsSettings

    from .jobs import JobOutcome
    from .results import PipelineResult
    from .verify import Check

db_app = typer.Typer(
    name="db", help="The SQL store (SQLite or PostgreSQL): schema migrations.", no_args_is_help=True
)
stats_app = typer.Typer(
    name="stats",
    help="Statistics pipeline: Spark jobs over the metrics archive, results in the SQL store.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``db`` and ``stats`` command groups to the ``pushgrid`` app."""
    app.add_typer(db_app, name="db")
    app.add_typer(stats_app, name="stats")


ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="pushgrid.conf file (Key = value lines)."),
]
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="URL",
        help="Database URL (default: the Database setting, sqlite:///data/pushgrid.db); "
        "e.g. postgresql+psycopg://user:password@host/db.",
    ),
]


def parse_as_of(text: str) -> int:
    """``--as-of``: Unix seconds or ISO 8601 (a time without offset is UTC) -> Unix second."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither Unix seconds nor an ISO 8601 time "
            "(e.g. 1795363200 or 2026-11-22T15:00:00Z)",
            param_hint="'--as-of'",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = int(moment.timestamp())
    if seconds < 0:
        raise typer.BadParameter(f"{text!r} is before 1970", param_hint="'--as-of'")
    return seconds


def _iso(moment: datetime | None, zone: str = "Z") -> str:
    if moment is None:
        return "-"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") + zone


def _wide_console(stderr: bool = False) -> Console:
    """stdout (or stderr); not a terminal (a pipe, a log): lines are not wrapped at 80 columns."""
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=max(console.width, 160))
    return console


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _rows(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


# --- db ---------------------------------------------------------------------------------------


@db_app.command("upgrade")
def db_upgrade(config: ConfigOption = None, db: DbOption = None) -> None:
    """Create or migrate the database schema (Alembic migrations) to the newest revision."""
    from sqlalchemy.exc import SQLAlchemyError

    from pushgrid.metrics.sqlstore import StoreError, display_url, upgrade

    url = db or settings_or_exit(config).database
    try:
        revision = upgrade(url)
    except (StoreError, SQLAlchemyError, OSError) as exc:
        raise fail(f"cannot migrate {display_url(url)}: {_first_line(exc)}") from None
    typer.echo(f"{display_url(url)}: schema at revision {revision} (newest)")


def _first_line(error: BaseException | str, limit: int = 500) -> str:
    """The first line of an error (message), shortened to ``limit`` characters."""
    lines = str(error).strip().splitlines()
    line = lines[0] if lines else type(error).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --- stats run --------------------------------------------------------------------------------


class _ProgressDisplay:
    """An overall bar for the job, and one line (with its own bar and time) per stage.

    Each ``progress(message, fraction)`` call closes the current stage and opens the next one,
    named by ``message``; ``fraction`` (0 -> 1) drives the overall bar.
    """

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.overall = progress.add_task("statistics job", total=1.0)
        self.current: TaskID | None = None

    def __call__(self, message: str, fraction: float) -> None:
        done = min(max(float(fraction), 0.0), 1.0)
        self.progress.update(self.overall, completed=done)
        self._close_stage()
        if done < 1.0:
            self.current = self.progress.add_task(f"  {message}", total=None)
        else:
            final = self.progress.add_task(f"  {message}", total=1.0)
            self.progress.update(final, completed=1.0)

    def _close_stage(self) -> None:
        if self.current is not None:
            self.progress.update(self.current, total=1.0, completed=1.0)
            self.current = None

    def stop(self, succeeded: bool) -> None:
        """Close the display: a failed job leaves its overall bar where it stopped."""
        self._close_stage()
        if succeeded:
            self.progress.update(self.overall, completed=1.0)


@stats_app.command("run")
def stats_run(
    config: ConfigOption = None,
    archive: Annotated[
        Path | None,
        typer.Option("--archive", metavar="DIR", help="Metrics archive (default: MetricsArchive)."),
    ] = None,
    db: DbOption = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            metavar="TIMESTAMP",
            help="Compute the statistics as of this instant: Unix seconds or ISO 8601 "
            "(UTC unless an offset is given). Default: the pipeline's (the archive's last "
            "closed hour).",
        ),
    ] = None,
    master: Annotated[
        str | None,
        typer.Option(
            "--master",
            metavar="URL",
            help="Spark master: local[*] (default: SparkMaster) or spark://host:7077.",
        ),
    ] = None,
    warehouse: Annotated[
        Path | None,
        typer.Option(
            "--warehouse",
            metavar="DIR",
            help="Directory of the pipeline's Parquet files (default: StatsWarehouse).",
        ),
    ] = None,
) -> None:
    """Run the statistics jobs (compaction, rollups, windows) and store the results."""
    as_of_seconds = None if as_of is None else parse_as_of(as_of)
    settings = settings_or_exit(config)
    name_process("stats run", "stats")
    url = db or settings.database
    archive_dir = archive if archive is not None else settings.metrics_archive
    spark_master = master or settings.spark_master
    warehouse_dir = warehouse if warehouse is not None else settings.stats_warehouse

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from sqlalchemy.exc import SQLAlchemyError

    from pushgrid.metrics.sqlstore import StoreError, display_url

    from .jobs import RunRefused, run_job

    err = Console(stderr=True)
    _log_to(err, settings.log_level)
    started = time.monotonic()
    outcome: JobOutcome
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        display = _ProgressDisplay(progress)
        try:
            outcome = run_job(
                url,
                archive=archive_dir,
                warehouse=warehouse_dir,
                master=spark_master,
                as_of=as_of_seconds,
                progress=display,
                driver_memory=settings.spark_driver_memory,
                driver_host=settings.spark_driver_host,
            )
        except RunRefused as exc:
            raise fail(f"stats run refused: {exc}") from None
        except (StoreError, SQLAlchemyError, OSError) as exc:
            raise fail(f"database {display_url(url)}: {_first_line(exc)}") from None
        except KeyboardInterrupt:
            raise fail("stats run interrupted (recorded as interrupted, not failed)", 130) from None
        display.stop(outcome.ok)
    run = outcome.run
    if not outcome.ok:
        error = run.error or "unknown error"
        raise fail(
            f"stats run {run.id} failed after {_duration(time.monotonic() - started)}: "
            f"{_first_line(error)}\n(see `pushgrid stats status`)"
        )
    _print_success(outcome, display_url(url))


def _log_to(console: Console, level: str) -> None:
    """Log records above the progress display instead of through it.

    On a terminal the display already tells the INFO story: only warnings (or everything at
    LogLevel DEBUG) are logged; in a log file (``pushgrid up``'s periodic runs) LogLevel holds.
    py4j's chatter stays at WARNING.
    """
    import logging

    from rich.logging import RichHandler

    handler: logging.Handler
    if console.is_terminal:
        level = "DEBUG" if level == "DEBUG" else "WARNING"
        handler = RichHandler(console=console, show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(console.file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    logging.getLogger("py4j").setLevel(logging.WARNING)


def _print_success(outcome: JobOutcome, where: str) -> None:

    run, written = outcome.run, outcome.written
    console = _wide_console()
    console.print(
        f"stats run {run.id} [green]succeeded[/green]: as of {_iso(run.as_of)}, "
        f"{_rows(run.input_rows)} input rows, "
        f"{_rows(written.window_stats if written else None)} window statistics and "
        f"{_rows(written.trend_points if written else None)} trend points written to {where} "
        f"in {_duration(run.duration)}",
        highlight=False,
        soft_wrap=True,
    )
    stages = outcome.result.stages if outcome.result else []
    if stages:
        console.print(_stage_table([asdict(stage) for stage in stages]))


def _stage_table(stages: list[dict[str, Any]], title: str | None = None) -> Table:
    """Stages of a run (``job_runs.stages`` dicts): rows, duration and share of the time."""
    from rich.table import Table

    total = sum(float(stage.get("seconds") or 0.0) for stage in stages)
    table = Table(title=title, title_justify="left", box=None)
    for column in ("stage", "input rows", "output rows", "duration", "share"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for stage in stages:
        seconds = float(stage.get("seconds") or 0.0)
        share = f"{100 * seconds / total:.0f} %" if total > 0 else "-"
        table.add_row(
            str(stage.get("name", "?")),
            _rows(stage.get("input_rows")),
            _rows(stage.get("output_rows")),
            _duration(seconds),
            share,
        )
    return table


# --- stats status -----------------------------------------------------------------------------

_STATUS_STYLE = {"succeeded": "green", "failed": "red", "running": "yellow"}


@stats_app.command("status")
def stats_status(
    config: ConfigOption = None,
    db: DbOption = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="How many runs to show, newest first.")
    ] = 10,
) -> None:
    """Show the last statistics runs."""
    from rich import box
    from rich.table import Table
    from sqlalchemy.exc import SQLAlchemyError

    from pushgrid.metrics.sqlstore import (
        StoreError,
        display_url,
        has_schema,
        latest_runs,
        make_engine,
        make_session_factory,
        normalize_url,
    )

    url = db or settings_or_exit(config).database
    try:
        parsed = normalize_url(url)
        database = parsed.database or ""
        if (
            parsed.get_backend_name() == "sqlite"
            and database not in ("", ":memory:")
            and not database.startswith("file:")
            and not Path(database).exists()
        ):
            raise fail(
                f"no database at {display_url(url)}: nothing has run yet "
                "(`pushgrid stats run` creates it)"
            )
        engine = make_engine(parsed)
        try:
            if not has_schema(engine):
                raise fail(
                    f"{display_url(url)} has no statistics tables: run `pushgrid db upgrade`"
                )
            with make_session_factory(engine)() as session:
                runs = latest_runs(session, limit)
        finally:
            engine.dispose()
    except (StoreError, SQLAlchemyError, OSError) as exc:
        raise fail(f"database {display_url(url)}: {_first_line(exc)}") from None

    console = _wide_console()
    if not runs:
        console.print(f"no statistics runs recorded in {display_url(url)} yet", highlight=False)
        return
    table = Table(
        title=f"statistics runs in {display_url(url)} (times in UTC)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("id", justify="right", min_width=2)
    table.add_column("status", min_width=9)
    table.add_column("as of", min_width=10)
    table.add_column("started", min_width=10)
    table.add_column("duration", justify="right", min_width=5)
    table.add_column("input rows", justify="right", min_width=6)
    table.add_column("output rows", justify="right", min_width=6)
    table.add_column("error", overflow="fold", min_width=10)
    now = datetime.now(UTC)
    for run in runs:
        duration = run.duration
        if run.status == "running":
            shown = f"running {_duration((now - run.started_at).total_seconds())}"
        else:
            shown = _duration(duration)
        error = _first_line(run.error, 120) if run.error else ""
        style = _STATUS_STYLE.get(run.status, "")
        table.add_row(
            str(run.id),
            f"[{style}]{run.status}[/{style}]" if style else run.status,
            _iso(run.as_of, ""),
            _iso(run.started_at, ""),
            shown,
            _rows(run.input_rows),
            _rows(run.output_rows),
            error,
        )
    console.print(table)
    last = runs[0]
    if last.stages:
        state = "so far" if last.status == "running" else last.status
        console.print(
            _stage_table(
                [stage for stage in last.stages if isinstance(stage, dict)],
                f"stages of run {last.id} ({state})",
            )
        )
    elif last.status != "succeeded":
        console.print(f"run {last.id} recorded no stage", highlight=False)


# --- stats verify -----------------------------------------------------------------------------

_OUTCOME_STYLE = {"equal": "green", "different": "red", "restarted": "yellow"}


@stats_app.command("verify")
def stats_verify(
    member: Annotated[
        str,
        typer.Option(
            "--member",
            metavar="URL",
            help="Monitoring URL of a running member (MonitorHTTP.Listen), e.g. "
            "http://127.0.0.1:8081: its /stats gives its live windows and their second.",
        ),
    ],
    config: ConfigOption = None,
    archive: Annotated[
        Path | None,
        typer.Option("--archive", metavar="DIR", help="Metrics archive (default: MetricsArchive)."),
    ] = None,
    warehouse: Annotated[
        Path | None,
        typer.Option(
            "--warehouse", metavar="DIR", help="Pipeline's Parquet files (default: StatsWarehouse)."
        ),
    ] = None,
    master: Annotated[
        str | None,
        typer.Option("--master", metavar="URL", help="Spark master (default: SparkMaster)."),
    ] = None,
    node: Annotated[
        str | None,
        typer.Option("--node", help="The member's node name in the archive (default: its name)."),
    ] = None,
) -> None:
    """Check the pipeline's 1m/5m/15m windows against a running member's live ones.

    Reads the member's live window statistics and their second T, runs the pipeline as of T
    over the archive (the hour being written included; nothing is written to SQL) and compares
    the member's node scope. Exit 0: every window agrees; 1: a difference (or a failure).
    """
    settings = settings_or_exit(config)
    archive_dir = archive if archive is not None else settings.metrics_archive
    if archive_dir is None:
        raise fail("no metrics archive: set MetricsArchive or pass --archive DIR", 2)
    from .locking import StoreBusyError
    from .verify import VerifyError, compare, fetch_live, pipeline_stats

    try:
        live = fetch_live(member)
    except VerifyError as exc:
        raise fail(str(exc)) from None
    name = node or live.server
    err = _wide_console(stderr=True)
    err.print(
        f"member {live.server} at {member}: live windows as of {_iso(_moment(live.ts))} "
        f"(up {_duration(live.uptime)}); running the pipeline as of that second ...",
        highlight=False,
    )
    _log_to(err, settings.log_level)
    try:
        result = _pipeline_as_of(
            archive_dir,
            warehouse if warehouse is not None else settings.stats_warehouse,
            master or settings.spark_master,
            live.ts,
            settings.stats,
        )
    except StoreBusyError as exc:
        raise fail(f"{exc}: a statistics run is going on, try again when it ends") from None
    checks = compare(live, pipeline_stats(result.window_stats, name))
    if not checks:
        raise fail(f"{member} reported no 1m/5m/15m windows")
    _print_checks(checks, name, live.ts)
    if any(check.outcome == "different" for check in checks):
        raise typer.Exit(1)


def _moment(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _pipeline_as_of(
    archive: Path, warehouse: Path, master: str, as_of: int, stats: StatsSettings
) -> PipelineResult:
    from .pipeline import run_pipeline
    from .spark_session import build_spark_session

    spark = build_spark_session(
        master,
        driver_memory=stats.spark_driver_memory,
        driver_host=stats.spark_driver_host,
    )
    try:
        return run_pipeline(spark, archive, warehouse, as_of, include_open=True)
    finally:
        spark.stop()


def _print_checks(checks: list[Check], node: str, ts: int) -> None:
    from rich.table import Table

    def show(value: float | None) -> str:
        return "-" if value is None else f"{value:.12g}"

    table = Table(
        title=f"node:{node} as of {_iso(_moment(ts))}: live (member) | pipeline",
        title_justify="left",
        box=None,
    )
    for column in ("indicator", "window", "count", "max", "avg", "stddev", "result"):
        table.add_column(column, justify="left" if column in ("indicator", "result") else "right")
    for c in checks:
        style = _OUTCOME_STYLE[c.outcome]
        table.add_row(
            c.indicator,
            c.window,
            f"{c.live[0]} | {c.pipeline[0]}",
            f"{show(c.live[1])} | {show(c.pipeline[1])}",
            f"{show(c.live[2])} | {show(c.pipeline[2])}",
            f"{show(c.live[3])} | {show(c.pipeline[3])}",
            f"[{style}]{c.outcome}[/{style}]" + (f" ({c.detail})" if c.detail else ""),
        )
    console = _wide_console()
    console.print(table)
    counts = {outcome: sum(c.outcome == outcome for c in checks) for outcome in _OUTCOME_STYLE}
    console.print(
        f"{counts['equal']} equal, {counts['different']} different, "
        f"{counts['restarted']} not comparable (member restarted within the window)",
        highlight=False,
    )
