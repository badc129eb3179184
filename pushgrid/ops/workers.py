"""The server's processes (``Workers``, docs/workers.md): one type from worker 0 to the console.

Worker 0 builds a :class:`WorkerProcess` per process of its server from the reports the others
send it once a second and from what the supervisor records of each (its restarts, its last
heartbeat); the MBean ``pushgrid:type=Workers`` serves them as ``Processes`` (documents:
:class:`WorkersDocument`), the admin API's member view carries them as ``processes`` and the
console's member panel shows one row each. A one-process server (``Workers = 1``) has one row
of the same shape (no supervisor: no restarts, no heartbeat age).
"""

from __future__ import annotations

from typing import Annotated, Any, Final

import msgspec
from pydantic import BaseModel, ConfigDict, Field

from .attributes import LIST, java

#: a worker whose last heartbeat is older than this is not answering (the supervisor's
#: ``STALL_AFTER``, server/workers/supervisor.py: a unit test keeps the two equal)
NOT_ANSWERING_AFTER: Final = 5.0


class WorkerProcess(BaseModel):
    """One process of a server, as worker 0 last heard of it."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(ge=0, description="Worker index (0 serves monitoring)")
    pid: int = Field(ge=0, description="Process id (0: dead, being restarted)")
    cpus: list[int] = Field(description="The cores it may run on (its CPU affinity)")
    cpu_percent: float | None = Field(description="CPU over its last reports, % of one core")
    cpu_seconds: float = Field(description="CPU seconds (user + system) of its current life")
    rss_bytes: int = Field(ge=0)
    connections: int = Field(ge=0, description="Client and monitoring connections it holds")
    sessions: int = Field(ge=0, description="WebSocket / SSE sessions among them")
    open_files: int = Field(ge=0)
    report_age_seconds: float = Field(description="Age of its last report to worker 0")
    linked: bool = Field(description="Worker 0 has a mesh link to it")
    loop_lag_seconds: float | None = None
    loop_lag_max_seconds: float | None = None
    restarts: int = Field(ge=0, description="Times the supervisor restarted it")
    heartbeat_age_seconds: float | None = Field(
        description="Seconds since its last heartbeat to the supervisor (null: one process)"
    )
    answering: bool = Field(description="It answered its heartbeat within 5 s")

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump()


def not_answering(heartbeat_age: float | None) -> bool:
    """Has a worker whose last heartbeat is ``heartbeat_age`` s old stopped answering?"""
    return heartbeat_age is not None and heartbeat_age > NOT_ANSWERING_AFTER


class WorkersDocument(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """Every attribute of the Workers MBean, in its order."""

    workers: Annotated[int, java("int", "Processes that serve this member (Workers)")]
    cpus: Annotated[list[int], java(LIST, "Every core its processes may run on")]
    restarts: Annotated[int, java("long", "Worker restarts since the server started")]
    not_answering: Annotated[
        list[int], java(LIST, "Indexes of the workers without a heartbeat for 5 s")
    ]
    processes: Annotated[
        list[dict[str, Any]], java(LIST, "One entry per process (docs/workers.md, Monitoring)")
    ]


class WorkersView(msgspec.Struct, rename="pascal", frozen=True):
    """What the admin API reads of the Workers MBean (the alert signals and the member view)."""

    processes: list[dict[str, Any]]

    def rows(self) -> list[WorkerProcess]:
        return [WorkerProcess.model_validate(row) for row in self.processes]


def document(processes: list[WorkerProcess]) -> WorkersDocument:
    """The MBean's document of these rows (worker 0 first)."""
    cpus = sorted({cpu for p in processes for cpu in p.cpus})
    return WorkersDocument(
        workers=len(processes),
        cpus=cpus,
        restarts=sum(p.restarts for p in processes),
        not_answering=[p.index for p in processes if not p.answering],
        processes=[p.as_dict() for p in processes],
    )
