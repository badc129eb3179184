"""One statistics job run, recorded in the store: what ``pushgrid stats run`` does, minus the UI.

:func:`run_job` migrates the database, records a ``running`` :class:`~.models.JobRun`, checks the
archive, starts (or reuses) a Spark session, runs ``spark_stats.pipeline.run_pipeline``, upserts
the results and closes the run as ``succeeded`` with its counts, or as ``failed`` with the error
text. Failures of the job itself are returned in the :class:`JobOutcome` (the run is recorded);
only a database that cannot be reached or migrated raises, since nothing can be recorded then.
pyspark is imported only when a job runs, so ``pushgrid up`` (or the admin API) can import this.

Progress is reported like the pipeline does it, ``progress(message, fraction)``: ``message`` says
what is being done from now on, ``fraction`` is the share of the whole job done (0 -> 1): starting
Spark (up to :data:`SPARK_SHARE`), the pipeline's own messages (scaled into the middle), then
writing the results (from :data:`WRITE_SHARE`) and a last message at 1.0.
"""

from __future__ import annotations

import contextlib
import logging
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pushgrid.metrics.sqlstore import (
    JobRun,
    RunOwner,
    WrittenRows,
    fail_stale,
    finish_run,
    make_engine,
    make_session_factory,
    record_stages,
    running_run,
    start_run,
    upgrade,
    write_results,
)
from pushgrid.protocol.exceptions import StatsError

from .results import StageResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from sqlalchemy.orm import Session, sessionmaker

    from .results import PipelineResult

Progress = Callable[[str, float], None]
log = logging.getLogger(__name__)

SPARK_SHARE: Final = 0.05
WRITE_SHARE: Final = 0.95


class JobError(StatsError):
    """An expected failure of a job (bad archive ...): its message is the whole story."""

    code = "job"


@dataclass
class JobOutcome:
    run: JobRun
    result: PipelineResult | None = None
    written: WrittenRows | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.run.status == "succeeded"


def check_archive(archive: Path | None) -> Path:
    """The archive directory, or a :class:`JobError` saying what is wrong with it."""
    if archive is None:
        raise JobError("no metrics archive: set MetricsArchive or pass --archive DIR")
    if not archive.exists():
        raise JobError(f"archive directory {archive} does not exist")
    if not archive.is_dir():
        raise JobError(f"archive {archive} is not a directory")
    try:
        os.listdir(archive)
    except OSError as exc:
        raise JobError(f"cannot read archive directory {archive}: {exc.strerror}") from None
    if not os.access(archive, os.R_OK | os.X_OK):
        raise JobError(f"cannot read archive directory {archive}: permission denied")
    return archive


def describe_error(exc: BaseException) -> str:
    """The text stored in ``job_runs.error``."""
    if isinstance(exc, JobError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return "".join(traceback.format_exception_only(exc)).strip()


def stopped_by_shutdown(exc: BaseException) -> bool:
    """The run was stopped, not broken: Ctrl-C or `pushgrid up` stopping (SIGINT to the run's
    process group, KeyboardInterrupt) or a SystemExit. Recorded ``interrupted``, which does not
    fire StatsPipelineFailing (issue 34); anything else the pipeline raised is ``failed``."""
    return isinstance(exc, KeyboardInterrupt | SystemExit)


def input_rows(result: PipelineResult) -> int:
    """The rows the job read: the input of its first stage (compaction of the archive)."""
    return result.stages[0].input_rows if result.stages else 0


def _spark_context_running() -> bool:
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


class RunRefused(StatsError):
    """The run did not start (and is not recorded): another one holds the warehouse."""

    code = "run_refused"
    retryable = True


def _exclusive(warehouse: Path, factory: sessionmaker[Session]) -> contextlib.ExitStack:
    """The warehouse lock, held by the returned stack (only its acquisition is guarded here).

    :class:`RunRefused` names the run that holds it; a warehouse that cannot be locked at all
    (not a directory, no permission) is a :class:`JobError`.
    """
    from .locking import StoreBusyError, warehouse_lock

    stack = contextlib.ExitStack()
    try:
        stack.enter_context(warehouse_lock(warehouse))
    except StoreBusyError:
        with factory() as db:
            other = running_run(db, str(warehouse.resolve()))
        who = (
            f"statistics run {other.id} (started {other.started_at:%Y-%m-%d %H:%M:%S}Z)"
            if other is not None
            else "another statistics run"
        )
        raise RunRefused(
            f"{who} is still running on the warehouse {warehouse}: one run at a time; "
            "see `pushgrid stats status`"
        ) from None
    except OSError as exc:
        raise JobError(f"cannot use the warehouse {warehouse}: {exc.strerror or exc}") from None
    return stack


def run_job(
    url: str,
    *,
    archive: Path | None,
    warehouse: Path,
    master: str = "local[*]",
    as_of: int | None = None,
    progress: Progress | None = None,
    spark: SparkSession | None = None,
    migrate: bool = True,
    driver_memory: str | None = None,
    driver_host: str = "127.0.0.1",
) -> JobOutcome:
    """Run the three Spark jobs once and record the run (see the module docstring).

    ``spark``: a session to use (left running); otherwise one is built for ``master`` and
    stopped at the end unless a Spark context was already running in this process.
    The run holds the warehouse lock from before it records itself to the end: a second run
    raises :class:`RunRefused` (nothing recorded). The run is recorded with its owner (host,
    process, warehouse); once the lock is held, ``running`` rows of this warehouse, or of dead
    processes of this host, belong to runs that were killed: they are marked failed first.
    """
    report: Progress = progress or (lambda _step, _fraction: None)
    if migrate:
        upgrade(url)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    try:
        try:
            lock = _exclusive(warehouse, factory)
        except JobError as exc:  # nothing ran: recorded as failed all the same
            with factory() as db:
                run = start_run(db, master=master, as_of=as_of)
                failed = finish_run(db, run.id, status="failed", error=describe_error(exc))
                return JobOutcome(failed, error=exc)
        owner = RunOwner(str(warehouse.resolve()))
        with lock, factory() as db:
            for stale in fail_stale(db, owner):
                log.warning("statistics run %d was interrupted: marked failed", stale)
            run = start_run(db, master=master, as_of=as_of, owner=owner)
            outcome = JobOutcome(run)
            done: list[StageResult] = []

            def on_stage(stage: StageResult) -> None:
                done.append(stage)
                record_stages(db, run.id, done)

            try:
                outcome.result = _run_pipeline(
                    archive,
                    warehouse,
                    master,
                    as_of,
                    report,
                    spark or _SessionSpec(driver_memory, driver_host),
                    on_stage,
                )
                report("writing the results to the database", WRITE_SHARE)
                outcome.written = write_results(db, run.id, outcome.result)
                report(
                    f"stored {outcome.written.window_stats} window statistics and "
                    f"{outcome.written.trend_points} trend points",
                    1.0,
                )
                outcome.run = finish_run(
                    db,
                    run.id,
                    status="succeeded",
                    as_of=outcome.result.as_of,
                    input_rows=input_rows(outcome.result),
                    output_rows=outcome.written.total,
                    stages=outcome.result.stages,
                )
            except BaseException as exc:
                outcome.error = exc  # the failed write was rolled back by its transaction
                outcome.run = finish_run(
                    db,
                    run.id,
                    status="interrupted" if stopped_by_shutdown(exc) else "failed",
                    stages=outcome.result.stages if outcome.result else done,
                    error=describe_error(exc),
                )
                if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit
                    raise
            return outcome
    finally:
        engine.dispose()


@dataclass(frozen=True)
class _SessionSpec:
    """How to build the session when the caller gave none."""

    driver_memory: str | None
    driver_host: str


def _run_pipeline(
    archive: Path | None,
    warehouse: Path,
    master: str,
    as_of: int | None,
    report: Progress,
    spark: SparkSession | _SessionSpec,
    on_stage: Callable[[StageResult], None],
) -> PipelineResult:
    archive_dir = check_archive(archive)
    from .pipeline import run_pipeline
    from .spark_session import build_spark_session

    given = not isinstance(spark, _SessionSpec)
    own = not given and not _spark_context_running()
    report(f"starting Spark ({master})", 0.0)
    spark_session = (
        spark
        if not isinstance(spark, _SessionSpec)
        else build_spark_session(
            master, driver_memory=spark.driver_memory, driver_host=spark.driver_host
        )
    )

    def pipeline_progress(message: str, fraction: float) -> None:
        share = min(max(float(fraction), 0.0), 1.0)
        report(message, SPARK_SHARE + (WRITE_SHARE - SPARK_SHARE) * share)

    try:
        result: PipelineResult = run_pipeline(
            spark_session,
            archive_dir,
            warehouse,
            as_of,
            progress=pipeline_progress,
            lock=False,  # run_job holds it
            on_stage=on_stage,
        )
        return result
    finally:
        if own:
            spark_session.stop()
