"""The Workers MBean (``pushgrid:type=Workers``): the server's processes, one row each.

Worker 0 reads its own numbers and the others' last reports (``LiveState.workers``), the
supervisor's restarts and heartbeats (:class:`SupervisionBoard`, when the server runs several
processes), each process's CPU affinity (``sched_getaffinity``: the cores it may run on) and
turns the CPU seconds of successive reports into a CPU percentage. A one-process server serves
one row of the same shape from its member panel.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, Final

from pushgrid.ops import names
from pushgrid.ops.workers import WorkerProcess, WorkersDocument, document, not_answering

from .mbeans import MBean, ObjectName, document_attributes
from .ports import LiveState, MonitoredNode, WorkerRow
from .supervision_board import SlotState, SupervisionBoard

#: the CPU percentage covers at least this much time between two reports of a process
_CPU_SPAN: Final = 1.0
_CPU_KEEP: Final = 6.0  # seconds of reports kept per process


class CpuRates:
    """CPU % per process from its (report time, CPU seconds) samples (pure but for its memory)."""

    def __init__(self) -> None:
        self._samples: dict[int, list[tuple[float, float]]] = {}

    def percent(self, pid: int, at: float, cpu_seconds: float) -> float | None:
        """CPU over the last >= 1 s of reports of ``pid`` (None until there are two)."""
        samples = self._samples.setdefault(pid, [])
        if not samples or at > samples[-1][0]:
            samples.append((at, cpu_seconds))
        while len(samples) > 2 and samples[1][0] <= at - _CPU_KEEP:
            samples.pop(0)
        older = [s for s in samples if s[0] <= at - _CPU_SPAN]
        if not older:
            return None
        then, cpu_then = older[-1]
        return round(max(0.0, cpu_seconds - cpu_then) / (at - then) * 100.0, 1)

    def forget_others(self, pids: set[int]) -> None:
        for pid in set(self._samples) - pids:
            del self._samples[pid]


def affinity(pid: int) -> list[int]:
    """The cores ``pid`` may run on ([] when it is gone)."""
    try:
        return sorted(os.sched_getaffinity(pid))
    except OSError:
        return []


def _one_process(state: LiveState) -> WorkerRow:
    """A one-process server's row, from its member panel."""
    panel, counters = state.panel, state.counters
    open_now = counters.get("connections_total", 0) - counters.get("disconnections_total", 0)
    return WorkerRow(
        0,
        os.getpid(),
        panel.cpu_seconds_total,
        panel.rss_bytes,
        max(0, open_now),
        counters.get("sessions", 0),
        panel.open_files,
        0.0,
        True,
        panel.loop_lag_seconds,
        panel.loop_lag_max_seconds,
    )


def process_rows(
    state: LiveState, board: SupervisionBoard | None, rates: CpuRates
) -> list[WorkerProcess]:
    """The server's processes now, worker 0 first."""
    rows = state.workers or (_one_process(state),)
    now, clock = time.time(), time.monotonic()
    out = []
    for row in rows:
        slot = board.read(row.index, clock) if board is not None else None
        pid = row.pid if slot is None or slot.pid in (0, row.pid) else slot.pid
        cpu = rates.percent(row.pid, now - row.report_age, row.cpu_seconds)
        out.append(_process(row, slot, pid, cpu))
    rates.forget_others({row.pid for row in rows})
    return out


def _process(row: WorkerRow, slot: SlotState | None, pid: int, cpu: float | None) -> WorkerProcess:
    age = None if slot is None else slot.heartbeat_age
    dead = slot is not None and slot.pid == 0
    return WorkerProcess(
        index=row.index,
        pid=0 if dead else pid,
        cpus=[] if dead else affinity(pid),
        cpu_percent=None if dead else cpu,
        cpu_seconds=row.cpu_seconds,
        rss_bytes=row.rss_bytes,
        connections=row.connections,
        sessions=row.sessions,
        open_files=row.open_files,
        report_age_seconds=row.report_age,
        linked=row.linked,
        loop_lag_seconds=row.loop_lag_seconds,
        loop_lag_max_seconds=row.loop_lag_max_seconds,
        restarts=0 if slot is None else slot.restarts,
        heartbeat_age_seconds=age,
        answering=not (slot is not None and slot.stalled) and not not_answering(age),
    )


def workers_bean(
    node: MonitoredNode,
    wrap: Callable[[Callable[[], Any]], Any],
    board: SupervisionBoard | None = None,
) -> MBean:
    """The MBean; ``board``: the supervisor's (several processes), None for one process."""
    rates = CpuRates()

    def build() -> WorkersDocument:
        return document(process_rows(node.live_state(), board, rates))

    return MBean(
        ObjectName.parse(names.WORKERS),
        "The processes that serve this member",
        document_attributes(WorkersDocument, build, wrap),
        [],
    )
