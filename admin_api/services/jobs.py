"""Pipeline runs: listed from SQL (``job_runs``), and a trigger that starts a new one.

A trigger starts ``python -m server stats run --db URL --archive DIR --warehouse DIR --master M
[--as-of T]`` (what ``pushgrid stats run`` is) as a child process, with its output appended to a
log file, and waits until the run has recorded itself in ``job_runs`` (it does so before starting
Spark), so the answer can point at it. One run at a time: a trigger while the admin API's child
is still running, or while any run (e.g. a periodic run of ``pushgrid up``) holds the warehouse
lock, is a 409 problem. A ``running`` row whose run no longer holds the lock was killed; the next
run marks it failed.

Hygiene: the child runs in its own session and process group (with its Spark JVM and the JVM's
watchdog, ``spark_stats.watchdog``); :meth:`JobRunner.close` interrupts the group and then kills
whatever of it is left, so no JVM outlives the admin API's shutdown. If the admin API itself is
killed, the run goes on to its end and records its outcome; its JVM ends with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Final

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from pushgrid.config import StatsSettings
from pushgrid.metrics.sqlstore import running_run
from pushgrid.metrics.sqlstore.models import RUN_STATUSES, JobRun, RunStatus, utc_now
from pushgrid.spark_stats.locking import warehouse_busy

from ..problems import ProblemError, conflict, not_found
from ..schemas import JobRunOut, JobRunPage, StageOut

# How long a trigger waits for its child to record itself (the child imports the store and
# migrates it first). The wait ends as soon as the row is there; it runs on a worker thread, not
# the event loop. 30 s was too short on a loaded machine (load average 15 on 2 cores: the child
# had not recorded itself, the trigger answered 500 while the run went on; issue 34 item 3).
START_TIMEOUT: Final = 120.0
DEFAULT_LOG: Final = Path("data/logs/admin-stats.log")


def run_out(run: JobRun) -> JobRunOut:
    stages = None
    if run.stages is not None:
        stages = [StageOut.model_validate(stage) for stage in run.stages if isinstance(stage, dict)]
    status: RunStatus = run.status if run.status in RUN_STATUSES else "failed"
    return JobRunOut(
        id=run.id,
        status=status,
        started_at=run.started_at,
        finished_at=run.finished_at,
        duration_seconds=run.duration,
        as_of=run.as_of,
        master=run.master,
        input_rows=run.input_rows,
        output_rows=run.output_rows,
        error=run.error,
        stages=stages,
    )


class JobService:
    def __init__(self, db: Session) -> None:
        self.db = db

    def page(
        self, *, offset: int = 0, limit: int = 20, status: RunStatus | None = None
    ) -> JobRunPage:
        filters = [] if status is None else [JobRun.status == status]
        total = self.db.scalar(select(func.count()).select_from(JobRun).where(*filters))
        rows = self.db.scalars(
            select(JobRun).where(*filters).order_by(JobRun.id.desc()).offset(offset).limit(limit)
        )
        return JobRunPage(
            total=total or 0, offset=offset, limit=limit, items=[run_out(row) for row in rows]
        )

    def get(self, run_id: int) -> JobRunOut:
        run = self.db.get(JobRun, run_id)
        if run is None:
            raise not_found(f"no job run {run_id}")
        return run_out(run)


class JobRunner:
    """Starts statistics runs as child processes, one at a time (thread-safe)."""

    def __init__(
        self,
        settings: StatsSettings,
        archive: Path | None,
        log_path: Path = DEFAULT_LOG,
        *,
        python: str = sys.executable,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        """``archive``: the metrics archive the runs read (``MetricsArchive``; None: off)."""
        self.settings = settings
        self.archive = archive
        self.log_path = log_path
        self.python = python
        self.start_timeout = start_timeout
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None

    def argv(self, as_of: int | None = None) -> list[str]:
        settings = self.settings
        argv = [self.python, "-m", "pushgrid", "stats", "run", "--db", settings.database]
        if self.archive is not None:
            argv += ["--archive", str(self.archive)]
        argv += ["--warehouse", str(settings.stats_warehouse), "--master", settings.spark_master]
        if as_of is not None:
            argv += ["--as-of", str(as_of)]
        return argv

    @property
    def busy(self) -> bool:
        """Whether the last child started is still running (reaps it when it is done)."""
        process = self._process
        return process is not None and process.poll() is None

    def _log_tail(self, limit: int = 600) -> str:
        try:
            text = self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""
        return text[-limit:].strip()

    def trigger(
        self, session_factory: sessionmaker[Session], as_of: int | None, actor: str
    ) -> JobRunOut:
        """Start a run; return it once it recorded itself (409 while one runs)."""
        with self._lock:
            if self.busy:
                assert self._process is not None
                raise conflict(
                    f"a statistics run started by the admin API is still running "
                    f"(pid {self._process.pid})",
                    "job_running",
                )
            if self.archive is None:
                raise conflict(
                    "MetricsArchive is off: the pipeline has no input", "no_metrics_archive"
                )
            with session_factory() as db:
                if warehouse_busy(self.settings.stats_warehouse):
                    running = running_run(db, str(self.settings.stats_warehouse.resolve()))
                    raise conflict(
                        f"statistics run {running.id} is running since "
                        f"{running.started_at.isoformat()}"
                        if running is not None
                        else f"a statistics run holds {self.settings.stats_warehouse}",
                        "job_running",
                    )
                last_id = db.scalar(select(func.max(JobRun.id))) or 0
            argv = self.argv(as_of)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("ab") as log:
                header = f"--- {utc_now().isoformat()} triggered by {actor}: {' '.join(argv)}\n"
                log.write(header.encode("utf-8", "replace"))
                log.flush()
                # its own process group: the JVM and its watchdog can be ended with it
                self._process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            process = self._process
        return self._wait_for_run(session_factory, process, last_id)

    def _wait_for_run(
        self,
        session_factory: sessionmaker[Session],
        process: subprocess.Popen[bytes],
        last_id: int,
    ) -> JobRunOut:
        deadline = time.monotonic() + self.start_timeout
        while True:
            exited = process.poll() is not None
            with session_factory() as db:
                run = db.scalar(
                    select(JobRun).where(JobRun.id > last_id).order_by(JobRun.id).limit(1)
                )
                if run is not None:
                    return run_out(run)
            if exited:
                raise ProblemError(
                    500,
                    f"the statistics run exited with {process.returncode} before recording "
                    f"itself: {self._log_tail() or 'no output'}",
                    "job_not_started",
                )
            if time.monotonic() > deadline:
                raise ProblemError(
                    500,
                    f"the statistics run (pid {process.pid}) did not record itself within "
                    f"{self.start_timeout:g} s; see {self.log_path}",
                    "job_not_started",
                )
            time.sleep(0.1)

    def close(self, timeout: float = 10.0) -> None:
        """End a child that is still running, with its whole process group (shutting down).

        SIGINT to the group first: the run records itself as failed ("interrupted") instead of
        staying ``running`` (the JVM and the watchdog ignore it); then SIGKILL to whatever of
        the group is left -- the JVM included -- after ``timeout`` seconds at most.
        """
        process = self._process
        # a child that ended by itself is not signalled: its pid (= group id) may be reused;
        # its JVM, if still there, is ended by its watchdog (spark_stats.watchdog)
        if process is None or process.poll() is not None:
            return
        group = process.pid  # the child leads its own group (start_new_session)
        _signal_group(group, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout)
        _signal_group(group, signal.SIGKILL)  # held as a group id while any member lives
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout)
        _wait_group_gone(group, timeout)  # the JVM dies a moment after its leader


def _wait_group_gone(group: int, timeout: float) -> None:
    """Return once no process of ``group`` is left (or after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.05)


def _signal_group(group: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)
