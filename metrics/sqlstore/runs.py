"""Job runs of the statistics pipeline (``job_runs``): start, stages, finish, stale runs.

A run is recorded ``running`` with its owner (host, process id, warehouse) before it does
anything, so a run that is killed leaves a trace; :func:`fail_stale`, called by the next run once
it holds the warehouse lock, closes the runs whose owner is gone as ``failed`` with the reason.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from .engine import StoreError, transaction
from .models import JobRun, RunStatus, from_unix, utc_now

__all__ = [
    "INTERRUPTED",
    "MAX_ERROR_CHARS",
    "RunOwner",
    "Stage",
    "fail_stale",
    "finish_run",
    "get_run",
    "latest_runs",
    "record_stages",
    "running_run",
    "start_run",
]

MAX_ERROR_CHARS: Final = 20_000

#: ``job_runs.error`` of a run that ended without recording its outcome (killed, machine down).
INTERRUPTED = "interrupted: the run ended without recording its outcome (killed?)"


class Stage(Protocol):
    """Counts of one pipeline stage (``spark_stats.results.StageResult`` has this shape)."""

    @property
    def name(self) -> str: ...
    @property
    def input_rows(self) -> int: ...
    @property
    def output_rows(self) -> int: ...
    @property
    def seconds(self) -> float: ...


class RunOwner:
    """Who runs a job: this host and process, on one warehouse directory."""

    def __init__(self, warehouse: str, host: str | None = None, pid: int | None = None) -> None:
        self.warehouse = warehouse
        self.host = host if host is not None else socket.gethostname()
        self.pid = pid if pid is not None else os.getpid()


def _stage_dicts(stages: Iterable[Stage]) -> list[dict[str, Any]]:
    return [
        {
            "name": stage.name,
            "input_rows": stage.input_rows,
            "output_rows": stage.output_rows,
            "seconds": stage.seconds,
        }
        for stage in stages
    ]


def start_run(
    db: Session,
    *,
    master: str | None = None,
    as_of: int | None = None,
    started_at: datetime | None = None,
    owner: RunOwner | None = None,
) -> JobRun:
    """Record a run as ``running`` (committed at once, so a crash leaves a trace)."""
    run = JobRun(
        started_at=started_at or utc_now(),
        status="running",
        master=master,
        as_of=None if as_of is None else from_unix(as_of),
        owner_host=owner.host if owner else None,
        owner_pid=owner.pid if owner else None,
        warehouse=owner.warehouse if owner else None,
    )
    with transaction(db):
        db.add(run)
    return run


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


def _stale_reason(run: JobRun, owner: RunOwner) -> str | None:
    """Why a ``running`` row is a dead run, or ``None`` when its owner may still be alive."""
    if run.warehouse is None or run.warehouse == owner.warehouse:
        # Every live run holds its warehouse's lock and the caller holds this one's, so the
        # row's run is gone (rows from before owners were recorded are treated the same way).
        return INTERRUPTED
    pid = run.owner_pid
    if run.owner_host == owner.host and pid is not None and _process_gone(pid):
        return (
            f"interrupted: its process {pid} on {run.owner_host} is gone without recording "
            "the outcome (killed?)"
        )
    return None  # another warehouse, another machine or a live process: not ours to judge


def fail_stale(db: Session, owner: RunOwner) -> list[int]:
    """Mark the ``running`` runs whose owner is gone ``failed`` with the reason (ids returned).

    Call only while holding ``owner.warehouse``'s lock. A run on that warehouse is then dead; a
    run on another warehouse is dead when it was started on this host by a process that no
    longer exists. Runs of other hosts on other warehouses are left as they are.
    """
    failed: list[int] = []
    with transaction(db):
        for run in db.scalars(select(JobRun).where(JobRun.status == "running")):
            reason = _stale_reason(run, owner)
            if reason is not None:
                run.status = "failed"
                run.finished_at = utc_now()
                run.error = reason
                failed.append(run.id)
    return failed


def record_stages(db: Session, run_id: int, stages: Sequence[Stage]) -> None:
    """Store the stages done so far of a running run (``pushgrid stats status`` shows them)."""
    with transaction(db):
        get_run(db, run_id).stages = _stage_dicts(stages)


def running_run(db: Session, warehouse: str | None = None) -> JobRun | None:
    """The newest ``running`` run, if any (on ``warehouse`` when given, or of unknown one)."""
    stmt = select(JobRun).where(JobRun.status == "running")
    if warehouse is not None:
        stmt = stmt.where((JobRun.warehouse == warehouse) | JobRun.warehouse.is_(None))
    return db.scalar(stmt.order_by(JobRun.started_at.desc(), JobRun.id.desc()).limit(1))


def get_run(db: Session, run_id: int) -> JobRun:
    run = db.get(JobRun, run_id)
    if run is None:
        raise StoreError(f"no job run {run_id}")
    return run


def finish_run(
    db: Session,
    run_id: int,
    *,
    status: RunStatus,
    as_of: int | None = None,
    input_rows: int | None = None,
    output_rows: int | None = None,
    stages: Sequence[Stage] | None = None,
    error: str | None = None,
    finished_at: datetime | None = None,
) -> JobRun:
    """Close a run as ``succeeded``, ``failed`` or ``interrupted`` with its counts or error text.

    ``as_of``, counts and stages left ``None`` keep what the run already has.
    """
    if status == "running":
        raise ValueError("a run finishes as succeeded, failed or interrupted, not 'running'")
    with transaction(db):
        run = get_run(db, run_id)
        run.status = status
        run.finished_at = finished_at or utc_now()
        if as_of is not None:
            run.as_of = from_unix(as_of)
        if input_rows is not None:
            run.input_rows = int(input_rows)
        if output_rows is not None:
            run.output_rows = int(output_rows)
        if stages is not None:
            run.stages = _stage_dicts(stages)
        if error is not None:
            run.error = error[:MAX_ERROR_CHARS]
    return run


def latest_runs(db: Session, limit: int = 10) -> list[JobRun]:
    """The last ``limit`` runs, newest first."""
    stmt = select(JobRun).order_by(JobRun.id.desc()).limit(limit)
    return list(db.scalars(stmt))
