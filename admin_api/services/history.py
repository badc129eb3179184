"""History: poll every member's per-second samples into the :class:`HistoryStore`, serve them.

Each second the collector reads the Indicator MBeans' ``Recent`` attribute (the member's own
samples of its last minute, one value per second) of every member it can read over Jolokia, so
a poll that comes late, or fails for a while under a storm, loses no second: the next poll
brings the seconds it missed (up to a minute). A member of an older version without ``Recent``
gives its ``Current``/``SampleTime`` only. Members managed over JMX are not polled (a JVM run
per second is too dear, as for :class:`~admin_api.services.cluster.MemberWatch`); see ADR 026.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

import httpx

from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.ops.attributes import names as attribute_names
from pushgrid.ops.indicator import IndicatorSamples

from ..access import is_jmx
from ..answering import Answering
from ..history import HistoryStore, Series, cluster_series
from ..member_client import (
    INDICATORS_MBEAN,
    MemberClient,
    MemberEndpoint,
    MemberFailure,
    fits_contract,
    new_http_client,
)
from ..schemas import HistoryOut, HistorySeriesOut, IndicatorName
from .cluster import with_discovered
from .live import finite, indicator_documents

POLL_INTERVAL: Final = 1.0  # seconds between two polls of every member
POLL_OFFSET: Final = 0.3  # after the whole second: the members sample just after it
MEMBERS_EVERY: Final = 10.0  # seconds between two refreshes of the member list (discovery)
LIVE_FOR: Final = 5.0  # a member read within this many seconds counts in the cluster's end
CLUSTER = "cluster"

log = logging.getLogger("pushgrid.admin")

Samples = dict[int, dict[str, float]]


def _second(text: Any) -> int | None:
    try:
        ts = int(text)
    except (TypeError, ValueError):
        return None
    return ts if ts > 0 else None


def samples_of(value: Any) -> Samples:
    """A Jolokia wildcard read of the Indicator MBeans (``Recent``, ``Current``,
    ``SampleTime``) -> ``{second: {indicator: value}}`` (pure; :class:`ContractError` naming
    the MBean that does not fit the contract)."""
    out: Samples = {}
    for name, doc in indicator_documents(value, IndicatorSamples).items():
        pairs = [*doc.recent.items(), (doc.sample_time, doc.current)]
        for text, raw in pairs:
            ts, number = _second(text), finite(raw)
            if ts is not None and number is not None:
                out.setdefault(ts, {})[name] = number
    return out


async def read_samples(http: httpx.AsyncClient, member: MemberEndpoint) -> Samples:
    """One member's recent seconds (raises :class:`MemberFailure`)."""
    client = MemberClient(http, member)
    value = await client.read(INDICATORS_MBEAN, attribute_names(IndicatorSamples))
    with fits_contract(member):
        return samples_of(value)


class HistoryCollector:
    """Polls the members every second into ``store`` (started and stopped with the app)."""

    def __init__(
        self,
        store: HistoryStore,
        members: Callable[[], list[MemberEndpoint]],
        discover_allow: Sequence[str] = (),
        interval: float = POLL_INTERVAL,
        answering: Answering | None = None,
    ) -> None:
        """``answering``: the app's memory of silent members (skipped, not waited for)."""
        self.answering = answering
        self.store = store
        self.members = members
        self.discover_allow = list(discover_allow)
        self.interval = interval
        self.last_read: dict[str, float] = {}  # member -> monotonic time of its last read
        self._known: list[MemberEndpoint] = []
        self._known_at = -math.inf
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _member_list(self, http: httpx.AsyncClient) -> list[MemberEndpoint]:
        now = time.monotonic()
        if now - self._known_at >= MEMBERS_EVERY:
            known = await asyncio.to_thread(self.members)
            every = await with_discovered(http, known, self.discover_allow)
            self._known = [m for m in every if not is_jmx(m.monitor_url)]
            self._known_at = now
            self.store.forget(m.name for m in self._known)
        return self._known

    async def poll(self, http: httpx.AsyncClient) -> int:
        """Read every member once; the number of seconds recorded."""
        members = await self._member_list(http)
        results = await asyncio.gather(
            *(read_samples(http, m) for m in members), return_exceptions=True
        )
        recorded = 0
        for member, result in zip(members, results, strict=True):
            if isinstance(result, BaseException):
                self.last_read.pop(member.name, None)  # the cluster's end no longer waits
                if not isinstance(result, MemberFailure):
                    log.warning("history: reading %s failed: %r", member.name, result)
                continue
            self.last_read[member.name] = time.monotonic()
            for ts, sample in result.items():
                self.store.put(member.name, ts, sample)
            recorded += len(result)
        return recorded

    def live_members(self) -> list[str]:
        """Members whose last poll succeeded, within :data:`LIVE_FOR` seconds, and members that
        hang (admin_api/answering.py): their clients are still connected, so the cluster's sums
        end at their last sample instead of dropping by their share (issue 34, 4.5)."""
        now = time.monotonic()
        live = [name for name, at in self.last_read.items() if now - at <= LIVE_FOR]
        if self.answering is not None:
            silent = [m.name for m in self._known if self.answering.silent_for(m.monitor_url)]
            live += [name for name in silent if name not in live]
        return live

    async def _run(self) -> None:
        timeout = max(2.0, self.interval)
        async with new_http_client(timeout, self.answering) as http:
            while True:
                try:
                    await self.poll(http)
                except Exception:
                    log.exception("history poll failed")
                now = time.time()
                await asyncio.sleep(self.interval - (now % self.interval) + POLL_OFFSET)


def _series_out(scope: str, series: Series) -> HistorySeriesOut:
    return HistorySeriesOut(scope=scope, seconds=series.seconds, values=series.values)


def history(
    store: HistoryStore, live: Sequence[str], since: int | None, until: int | None
) -> HistoryOut:
    """Every member's seconds in ``[since, until]`` and their per-second cluster sums.

    ``until`` defaults to the newest second held, ``since`` to 15 minutes before it. Both are
    clamped to the seconds held (the answer says which range it covers), so a request costs
    O(retention) whatever it asks. The cluster ends at the newest second every live member has
    reported.
    """
    newest = store.newest()
    end = newest if until is None else min(until, newest)
    start = max(0, end - 899) if since is None else since
    start = max(start, store.oldest_held())  # past ``end``: an empty answer
    members = store.members()
    parts = [store.series(name, start, end) for name in members]
    ends = [store.rings[name].newest for name in live if name in store.rings]
    cluster_end = min([end, *ends])
    return HistoryOut(
        since=start,
        until=end,
        retention=store.seconds,
        indicators=[cast(IndicatorName, name) for name in INDICATOR_NAMES],
        cluster=_series_out(CLUSTER, cluster_series(parts, cluster_end)),
        members=[_series_out(name, part) for name, part in zip(members, parts, strict=True)],
    )


async def history_off_loop(
    store: HistoryStore, live: Sequence[str], since: int | None, until: int | None
) -> HistoryOut:
    """:func:`history` on a worker thread, over a copy of the rings taken on the loop (the
    poller writes them on the loop): building an hour of every member's seconds never holds
    the admin API's event loop (console, alert evaluation, polls)."""
    return await asyncio.to_thread(history, store.copy(), list(live), since, until)
