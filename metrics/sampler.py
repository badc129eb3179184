"""The 1 s sampler: turns hot-path counters into per-second indicator samples.

After each sample it publishes one frozen :class:`~metrics.readmodel.ReadModel` (the sample, every
indicator's windows already computed, the archive state and the hot-subject rankings) by swapping
one reference: every reader (Jolokia MBeans, /stats, /metrics, meta-subjects) formats that value,
so they always agree with each other and with the archive, from any thread (ADR 014).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .archive import ArchiveWriter
from .counters import Counters
from .indicators import INDICATOR_NAMES, PerSecond
from .readmodel import ArchiveReading, ReadModel, build_read_model
from .rolling_windows import IndicatorSet

log = logging.getLogger(__name__)

# Seconds of per-second samples every read model carries (the Indicator MBeans' ``Recent``):
# a reader that polls every few seconds, or misses a poll, still reads each second's own value.
RECENT_SECONDS = 60


class HotDocument(Protocol):
    """What the read model takes from :class:`~metrics.hotsubjects.HotSubjects`."""

    def document(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Sample:
    ts: int  # the UTC second the sample describes
    values: dict[str, float]
    interval: float = 0.0  # the sampler's last period (monotonic seconds between readings)


class Sampler:
    def __init__(
        self,
        counters: Counters,
        archive: ArchiveWriter | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] | None = None,
    ) -> None:
        """``clock`` (Unix time) names the second of a sample; ``monotonic`` measures the time
        between two samples, the divisor of every rate (default ``time.monotonic``, or ``clock``
        itself when a test passes its own clock only)."""
        self.counters = counters
        self.archive = archive
        self.windows = IndicatorSet(INDICATOR_NAMES)
        self.clock = clock
        if monotonic is None:
            monotonic = time.monotonic if clock is time.time else clock
        self.monotonic = monotonic
        self.latest = Sample(0, dict.fromkeys(INDICATOR_NAMES, 0.0))
        # For the "archive not written" alert: when the last line reached the archive.
        self.archive_last_write = 0.0
        self.archive_write_errors = 0
        self.archive_last_error = 0.0
        self.per_second = PerSecond()
        self.recent: deque[Sample] = deque(maxlen=RECENT_SECONDS)
        # called with the seconds a reading completed (usually one; several after a blocked
        # loop): hot subjects fold their deltas, the server watches its cluster
        self.listeners: list[Callable[[Sequence[int]], None]] = []
        # the hot-subject rankings copied into each read model (set by the server)
        self.hot: HotDocument | None = None
        # the watched patterns' statistics, likewise (server/core/watch.py)
        self.watched: HotDocument | None = None
        # the last reading (Unix time, monotonic): listeners that keep rates of their own (the
        # watched patterns) read at the same moment, so their seconds are the indicators'
        self.last_reading = (0.0, 0.0)
        self.read_model: ReadModel = self._read_model()

    def sample(self) -> list[Sample]:
        """Read the counters now; record and return the whole seconds this reading completes.

        Normally called by :meth:`run` just after each whole second, so one second a call; a
        late call still gives each second its own events (:class:`~metrics.indicators.PerSecond`),
        a call after a blocked event loop records every second it missed, and a second call
        within one second records nothing. The first call only takes the first reading.
        """
        now, tick = self.clock(), self.monotonic()
        self.last_reading = (now, tick)
        emitted = self.per_second.add(now, tick, self.counters.as_dict())
        samples: list[Sample] = []
        for ts, values in emitted:
            sample = Sample(ts, values, round(self.per_second.last_period, 6))
            self.latest = sample
            self.recent.append(sample)
            self.windows.add_sample(ts, values)
            if self.archive is not None:
                try:
                    self.archive.write(ts, values)
                except OSError as exc:
                    self.archive_write_errors += 1
                    self.archive_last_error = now
                    log.warning("metrics archive write failed: %s", exc)
                else:
                    self.archive_last_write = now
            samples.append(sample)
        if samples:
            seconds = [sample.ts for sample in samples]
            for listener in self.listeners:
                listener(seconds)
            self.read_model = self._read_model()  # one reference swap: readers see old or new
        return samples

    def attach_hot(self, hot: HotDocument) -> None:
        """Copy ``hot``'s rankings into every read model from now on (and into the current one)."""
        self.hot = hot
        self.read_model = self._read_model()

    def attach_watched(self, watched: HotDocument) -> None:
        """Copy ``watched``'s document into every read model from now on."""
        self.watched = watched
        self.read_model = self._read_model()

    def _read_model(self) -> ReadModel:
        ts = self.latest.ts
        archive = ArchiveReading(
            self.archive is not None,
            self.archive_last_write,
            self.archive_write_errors,
            self.archive_last_error,
        )
        hot = self.hot.document() if self.hot is not None else None
        watched = self.watched.document() if self.watched is not None else None
        return build_read_model(
            ts,
            self.latest.values,
            self.windows.snapshot(ts),
            archive,
            hot,
            interval=self.latest.interval,
            watched=watched,
            recent=tuple((s.ts, s.values) for s in self.recent),
        )

    async def run(self) -> None:
        """Sample just after every whole second until cancelled."""
        self.per_second.add(self.clock(), self.monotonic(), self.counters.as_dict())
        while True:
            now = self.clock()
            await asyncio.sleep(1.0 - (now % 1.0) + 0.001)
            self.sample()

    def close(self) -> None:
        if self.archive is not None:
            self.archive.close()
