"""The member-panel probe: once a second on the event loop, how late it woke (the loop lag), what
the process uses (psutil), and the flush, slow-consumer and replica numbers, folded by
:class:`~metrics.member_panel.PanelTracker` into one frozen panel every view reads.

The probe runs on the loop on purpose: a sleep that ends late is exactly what every client of
this member feels. CPU (``os.times``) and RSS (``/proc/self/statm``) cost about 15 us there.
Counting open files lists ``/proc/self/fd``, about 4 us a file (40 ms at 10,000 files, measured):
that runs in a worker thread, and less often as files grow (every ``files / 1000`` seconds, at
least every second, at most every 30 s), so a member with many clients is not slowed by its own
panel (ADR 027).
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import time
from collections.abc import Callable, Mapping
from typing import Final

import psutil

from pushgrid.metrics.delays import DelaySnapshot
from pushgrid.metrics.member_panel import PanelTracker, ProcessSample, sleep_lag
from pushgrid.ops.panel import MemberPanel

log = logging.getLogger(__name__)

PROBE_PERIOD: Final = 1.0  # seconds between probes (and the sleep whose lateness is the lag)
FILES_REFRESH_MAX: Final = 30.0  # seconds: open files are counted at least this often


def open_file_limit() -> int:
    """The soft open-file limit; 0 when unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 0 if soft == resource.RLIM_INFINITY else int(soft)


def read_process(process: psutil.Process, at: float, open_files: int) -> ProcessSample:
    """This process's CPU seconds and resident bytes at monotonic time ``at`` (cheap: on the
    loop), with ``open_files`` counted before."""
    times = os.times()
    rss = process.memory_info().rss
    return ProcessSample(at, times.user + times.system, rss, open_files, open_file_limit())


def files_refresh_after(files: int) -> float:
    """Seconds until the open files are counted again: the listing costs ~4 us a file."""
    return min(FILES_REFRESH_MAX, max(1.0, files / 1000))


class PanelProbe:
    """Runs :meth:`run` as a task of the server; :attr:`panel` is the last panel built."""

    def __init__(
        self,
        flushes: Callable[[], DelaySnapshot],
        slow_total: Callable[[], int],
        replica_lags: Callable[[], Mapping[str, int]],
        period: float = PROBE_PERIOD,
    ) -> None:
        self.flushes = flushes
        self.slow_total = slow_total
        self.replica_lags = replica_lags
        self.period = period
        self.tracker = PanelTracker()
        self.process = psutil.Process()
        self.open_files = 0
        self._files_due = 0.0  # monotonic time of the next count of the open files

    @property
    def panel(self) -> MemberPanel:
        return self.tracker.panel

    def probe(self, lag: float, now: float) -> MemberPanel:
        return self.tracker.observe(
            read_process(self.process, now, self.open_files),
            lag,
            self.flushes(),
            self.slow_total(),
            self.replica_lags(),
        )

    async def _count_files(self) -> None:
        now = time.monotonic()
        if now >= self._files_due:
            self.open_files = await asyncio.to_thread(self.process.num_fds)
            self._files_due = now + files_refresh_after(self.open_files)

    async def run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await self._count_files()  # (a slow count is the thread's, not the loop's lag)
                asleep = time.monotonic()
                asked = max(0.0, started + self.period - asleep)
                await asyncio.sleep(asked)
                now = time.monotonic()
                self.probe(sleep_lag(asked, asleep, now), now)
            except (psutil.Error, OSError) as exc:  # keep the last panel; say so once a probe
                log.warning("member panel: cannot read the process: %s", exc)
                await asyncio.sleep(self.period)
