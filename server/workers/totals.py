"""One monitoring view of a multi-process server: worker 0 counts for all (ADR 044).

Every other worker sends worker 0 a ``WorkerReport`` once a second on the mesh: its counters
(metrics.counters.Counters), its engine's counts and its process numbers. Worker 0's counters
are a :class:`WorkerTotals`: its own hot-path integers plus the others' last reports, so the
sampler, /stats, Prometheus, the MBeans, the meta-subjects and the archive (all of which read
``Counters.as_dict()``) see the server's totals, each message counted once (where it entered
or where it was delivered, as in one process).

A worker that restarts starts its counters at 0: its last report's totals are kept as
*retired* so the server's totals never go down (rates stay right); its gauges (sessions,
subscriptions) leave with it. Only ``Counters`` names are summed: a newer worker's extra
counter never reaches the sampler.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections.abc import Callable

from pushgrid.metrics.counters import Counters

from ..engine.base import EngineStats
from .wire import WorkerReport

REPORT_INTERVAL = 1.0  # seconds between two reports of a worker to worker 0
_PAGE = os.sysconf("SC_PAGE_SIZE")


class WorkerTotals(Counters):
    """Worker 0's counters: its own, plus every other worker's last report."""

    __slots__ = ("_down", "_peers", "_retired")

    def __init__(self) -> None:
        super().__init__()
        self._peers: dict[int, WorkerReport] = {}
        self._down: set[int] = set()  # workers whose link is down: their totals only
        self._retired: dict[str, int] = {}  # the totals of workers' earlier lives

    def absorb(self, report: WorkerReport) -> None:
        old = self._peers.get(report.index)
        if old is not None and old.pid != report.pid:  # a new life starts at 0
            for name, value in old.counters.items():
                if name.endswith("_total"):
                    self._retired[name] = self._retired.get(name, 0) + value
        self._peers[report.index] = report
        self._down.discard(report.index)

    def gone(self, index: int) -> None:
        """Worker ``index``'s link is down: its gauges leave, its totals stay (if the same
        process comes back, its next report replaces them: nothing is counted twice)."""
        self._down.add(index)

    def linked(self, index: int) -> bool:
        """Is worker ``index``'s link up (its last report describes a running process)?"""
        return index not in self._down

    def as_dict(self) -> dict[str, int]:
        totals = own_counters(self)
        for name, value in self._retired.items():
            totals[name] += value
        for index, report in self._peers.items():
            down = index in self._down
            for name, value in report.counters.items():
                if name in totals and not (down and not name.endswith("_total")):
                    totals[name] += value
        return totals

    def reports(self) -> list[WorkerReport]:
        return [self._peers[index] for index in sorted(self._peers)]

    def engine_stats(self, own: EngineStats) -> EngineStats:
        """The server's engine counts: worker 0's own plus the others' last ones."""
        subjects, messages, size, dropped = (
            own.subjects,
            own.cached_messages,
            own.cached_bytes,
            own.dropped_snapshots,
        )
        for index, report in self._peers.items():
            if index in self._down:
                continue
            subjects += report.engine[0]
            messages += report.engine[1]
            size += report.engine[2]
            dropped += report.engine[3]
        return EngineStats(subjects, messages, size, dropped)


def own_counters(counters: Counters) -> dict[str, int]:
    """A process's own hot-path counters (``as_dict`` of worker 0's holds the others' too;
    ``self.__slots__`` there would name WorkerTotals' own slots)."""
    return {name: getattr(counters, name) for name in Counters.__slots__}


def own_report(
    index: int,
    counters: Counters,
    connections: int,
    engine: EngineStats,
    loop_lag: tuple[float | None, float | None] = (None, None),
) -> WorkerReport:
    """This process's numbers now (``loop_lag``: its panel's last and window max)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return WorkerReport(
        index=index,
        pid=os.getpid(),
        counters=own_counters(counters),
        connections=connections,
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 3),
        rss_bytes=_rss(),
        open_files=_open_files(),
        engine=[
            engine.subjects,
            engine.cached_messages,
            engine.cached_bytes,
            engine.dropped_snapshots,
        ],
        sent_at=time.time(),
        loop_lag=loop_lag[0],
        loop_lag_max=loop_lag[1],
    )


def _rss() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _open_files() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


async def report_to_worker_zero(
    send: Callable[[WorkerReport], bool], make: Callable[[], WorkerReport]
) -> None:
    """Once a second: this worker's numbers to worker 0 (lost while its link is down)."""
    while True:
        await asyncio.sleep(REPORT_INTERVAL)
        send(make())
