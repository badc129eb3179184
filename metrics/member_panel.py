"""The operator's per-member panel (issue 21 item 8): process CPU, resident memory, open files
against the limit, event-loop lag, flush delay p50/p99, slow consumers and stream replica lag.

Pure computation. A probe on the server's event loop (server/monitoring/probe.py) wakes once a
second, measures how late it woke (the event-loop lag), reads the process (psutil) and hands all
of it to :class:`PanelTracker`; views read the frozen
:class:`~pushgrid.ops.panel.MemberPanel` it builds (the ops contract's one panel type).

How each number is computed (docs/monitoring.md, "Member panel"):

* ``cpu_percent``: process CPU seconds (user + system) between the last two probes divided by the
  monotonic time between them, x 100: percent of one core (200 = two cores busy).
* ``loop_lag_seconds``: how much later than asked the last 1 s sleep of the probe ended; the max
  over the window is ``loop_lag_max_seconds``. A loop blocked for 300 ms reads >= 0.3.
* ``flush_delay_p50/p99_seconds``: quantiles of the flush-delay histogram (ADR 012) over the
  observations of the window only (cumulative snapshot now minus the one a window ago); the upper
  bound of the bucket holding the quantile, as Prometheus' ``histogram_quantile`` would bound it.
* ``slow_consumers_window``: slow-consumer disconnects during the window (counter delta).
* ``replica_lag_max``: the largest lag (records) of the JetStream stream replicas this member
  sees (Guaranteed mode); None without a stream.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from pushgrid.ops.panel import MemberPanel

from .delays import DelaySnapshot

PANEL_WINDOW: Final = 60.0  # seconds the lag max, flush quantiles and slow consumers cover


@dataclass(frozen=True, slots=True)
class ProcessSample:
    """One reading of the process at monotonic time ``at``."""

    at: float
    cpu_seconds: float  # user + system since the process started
    rss_bytes: int
    open_files: int
    max_open_files: int  # soft RLIMIT_NOFILE; 0 when unlimited


EMPTY_PANEL: Final = MemberPanel(
    window_seconds=PANEL_WINDOW,
    cpu_percent=None,
    cpu_seconds_total=0.0,
    rss_bytes=0,
    open_files=0,
    max_open_files=0,
    loop_lag_seconds=None,
    loop_lag_max_seconds=None,
    flush_delay_p50_seconds=None,
    flush_delay_p99_seconds=None,
    flushes_window=0,
    slow_consumers_window=0,
    slow_consumers_total=0,
    replica_lag_max=None,
)


def cpu_percent(earlier: ProcessSample, later: ProcessSample) -> float | None:
    """Percent of one core used between two samples; None when no time passed."""
    elapsed = later.at - earlier.at
    if elapsed <= 0:
        return None
    return max(0.0, later.cpu_seconds - earlier.cpu_seconds) / elapsed * 100.0


def sleep_lag(asked: float, started: float, ended: float) -> float:
    """How much later than ``asked`` seconds a sleep from ``started`` ended (never negative)."""
    return max(0.0, ended - started - asked)


def max_replica_lag(lags: Iterable[int]) -> int | None:
    values = list(lags)
    return max(values) if values else None


@dataclass(frozen=True, slots=True)
class _Probe:
    at: float
    lag: float
    flushes: DelaySnapshot
    slow_total: int


class PanelTracker:
    """Keeps the probes of the last :data:`PANEL_WINDOW` seconds and builds the panel."""

    def __init__(self, window: float = PANEL_WINDOW) -> None:
        if window <= 0:
            raise ValueError("the panel window must be positive")
        self.window = window
        self._probes: deque[_Probe] = deque()
        self._process: ProcessSample | None = None
        self._cpu: float | None = None
        self.panel: MemberPanel = EMPTY_PANEL

    def observe(
        self,
        process: ProcessSample,
        lag: float,
        flushes: DelaySnapshot,
        slow_total: int,
        replica_lags: Mapping[str, int] | None = None,
    ) -> MemberPanel:
        """Record one probe (its ``process.at`` is now) and return the new panel."""
        if self._process is not None:
            self._cpu = cpu_percent(self._process, process)
        self._process = process
        probes = self._probes
        probes.append(_Probe(process.at, lag, flushes, slow_total))
        # keep one probe at or before the window's start: the base of the deltas
        while len(probes) > 1 and probes[1].at <= process.at - self.window:
            probes.popleft()
        self.panel = self._build(process, replica_lags or {})
        return self.panel

    def _build(self, process: ProcessSample, replica_lags: Mapping[str, int]) -> MemberPanel:
        probes = self._probes
        newest, base = probes[-1], probes[0]
        in_window = [p.lag for p in probes if p.at > newest.at - self.window]
        # a lone probe is the first after start: everything counted so far is in the window
        single = len(probes) == 1
        flushes = newest.flushes if single else newest.flushes.since(base.flushes)
        slow_window = newest.slow_total - (0 if single else base.slow_total)
        return MemberPanel(
            window_seconds=self.window,
            cpu_percent=self._cpu,
            cpu_seconds_total=process.cpu_seconds,
            rss_bytes=process.rss_bytes,
            open_files=process.open_files,
            max_open_files=process.max_open_files,
            loop_lag_seconds=newest.lag,
            loop_lag_max_seconds=max(in_window),
            flush_delay_p50_seconds=flushes.quantile(0.5),
            flush_delay_p99_seconds=flushes.quantile(0.99),
            flushes_window=flushes.count,
            slow_consumers_window=slow_window,
            slow_consumers_total=newest.slow_total,
            replica_lag_max=max_replica_lag(replica_lags.values()),
        )


def _present(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def server_panel(own: MemberPanel, others: Sequence[MemberPanel], slow_total: int) -> MemberPanel:
    """The panel of a server of several processes (``Workers`` > 1): worker 0's ``own`` and the
    others' last panels, as one member (docs/monitoring.md, "Member panel").

    Amounts add up (CPU, memory, files and their limits, flushes, slow consumers in the window);
    lags and flush-delay quantiles are the worst process's, since a client of that process waits
    that long (quantiles of separate histograms do not add). ``slow_total`` is the server's
    count since start (a restarted worker's earlier life included); the replica lag is the
    cluster engine's, read by worker 0.
    """
    if not others:
        return own
    panels = (own, *others)
    cpus = _present(p.cpu_percent for p in panels)
    limits = [p.max_open_files for p in panels]
    return own.model_copy(
        update={
            "cpu_percent": round(sum(cpus), 3) if cpus else None,
            "cpu_seconds_total": round(sum(p.cpu_seconds_total for p in panels), 3),
            "rss_bytes": sum(p.rss_bytes for p in panels),
            "open_files": sum(p.open_files for p in panels),
            "max_open_files": 0 if 0 in limits else sum(limits),  # 0: one is unlimited
            "loop_lag_seconds": max(_present(p.loop_lag_seconds for p in panels), default=None),
            "loop_lag_max_seconds": max(
                _present(p.loop_lag_max_seconds for p in panels), default=None
            ),
            "flush_delay_p50_seconds": max(
                _present(p.flush_delay_p50_seconds for p in panels), default=None
            ),
            "flush_delay_p99_seconds": max(
                _present(p.flush_delay_p99_seconds for p in panels), default=None
            ),
            "flushes_window": sum(p.flushes_window for p in panels),
            "slow_consumers_window": sum(p.slow_consumers_window for p in panels),
            "slow_consumers_total": slow_total,
        }
    )
