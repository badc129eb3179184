"""The member-panel probe: once a second on the event loop, how late it woke (the loop lag), what
the process uses (psutil), and the flush, slow-consumer and replica numbers, folded by
:class:`~metrics.member_panel.PanelTracker` into one frozen panel every view reads.

The probe runs on the loop on purpose: a sleep that ends late is exactly what every client of
this member feels. Reading the process costs a few /proc reads (tens of microseconds; listing
/proc/self/fd grows with the open files: about 1 ms for 10,000).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Callable, Mapping
from typing import Final

import psutil

from pushgrid.metrics.delays import DelaySnapshot
from pushgrid.metrics.member_panel import (
    MemberPanel,
    PanelTracker,
    ProcessSample,
    sleep_lag,
)

log = logging.getLogger(__name__)

PROBE_PERIOD: Final = 1.0  # seconds between probes (and the sleep whose lateness is the lag)


def open_file_limit() -> int:
    """The soft open-file limit; 0 when unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 0 if soft == resource.RLIM_INFINITY else int(soft)


def read_process(process: psutil.Process, at: float) -> ProcessSample:
    """This process's CPU seconds, resident bytes and open files, at monotonic time ``at``."""
    with process.oneshot():
        cpu = process.cpu_times()
        rss = process.memory_info().rss
        files = process.num_fds()
    return ProcessSample(at, cpu.user + cpu.system, rss, files, open_file_limit())


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

    @property
    def panel(self) -> MemberPanel:
        return self.tracker.panel

    def probe(self, lag: float, now: float) -> MemberPanel:
        return self.tracker.observe(
            read_process(self.process, now),
            lag,
            self.flushes(),
            self.slow_total(),
            self.replica_lags(),
        )

    async def run(self) -> None:
        self.probe(0.0, time.monotonic())
        while True:
            started = time.monotonic()
            await asyncio.sleep(self.period)
            now = time.monotonic()
            try:
                self.probe(sleep_lag(self.period, started, now), now)
            except (psutil.Error, OSError) as exc:  # keep the last panel; say so once a probe
                log.warning("member panel: cannot read the process: %s", exc)
