"""The SLO recorder: every ``Alerts.Interval`` seconds, one look at each member's cumulative
counters (Delivery MBean ``LatencyTotalBuckets`` and ``LossTotal``, Server MBean ``Counters``),
the increase since the previous look, and each objective's good and total events of it added to
the current minute in SQL (admin_api/slo.py; ADR 055).

The first look at a member (after the admin API starts, or a member newly listed) only sets the
baseline: what the member counted before is not attributed to any minute. A member that cannot be
read keeps its baseline; what it counted meanwhile is attributed to the minute it is read again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence

import httpx
from sqlalchemy.orm import Session

from pushgrid.config import AlertsSettings
from pushgrid.ops import names
from pushgrid.ops.delivery import DeliveryTotals, text_counts, text_loss
from pushgrid.ops.server import ServerTotals

from ..access import read_view
from ..answering import Answering
from ..background import BackgroundTask, repeat
from ..member_client import MemberEndpoint, MemberFailure, new_http_client
from ..slo import Events, MemberCounts, ObjectiveSpec, PatternCounts, increase, minute_of
from .slos import SloService, spec_of

log = logging.getLogger(__name__)


async def member_counts(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberCounts | None:
    """One look at the member's cumulative counters (None: it cannot be read)."""
    try:
        delivery, server = await asyncio.gather(
            read_view(http, member, names.DELIVERY, DeliveryTotals),
            read_view(http, member, names.SERVER, ServerTotals),
        )
        latency = tuple(text_counts(delivery.latency_total_buckets))
    except (MemberFailure, ValueError) as exc:
        log.debug("SLO look at %s failed: %s", member.name, exc)
        return None
    counters = server.counters
    return MemberCounts(
        server.start_time,
        latency,
        dict(delivery.loss_total),
        counters.get("recovery_successes_total", 0),
        counters.get("recovery_failures_total", 0),
        counters.get("subscribes_total", 0),
        counters.get("subscribe_failures_total", 0),
        patterns=pattern_counts(delivery),
    )


def pattern_counts(delivery: DeliveryTotals) -> dict[str, PatternCounts]:
    """Each watched pattern's cumulative counts (a pattern whose text does not parse: left
    out, as a member of another version would send it)."""
    out: dict[str, PatternCounts] = {}
    for pattern, buckets in delivery.pattern_total_buckets.items():
        try:
            loss = text_loss(delivery.pattern_loss_total.get(pattern, ""))
            out[pattern] = PatternCounts(tuple(text_counts(buckets)), loss)
        except ValueError as exc:
            log.debug("SLO look: pattern %s unreadable: %s", pattern, exc)
    return out


def objective_events(
    objectives: Sequence[ObjectiveSpec], increases: Mapping[str, MemberCounts]
) -> dict[int, Events]:
    """Each objective's events in the members' increases (member name -> counts), summed over
    the members it counts (all, or its one member)."""
    out: dict[int, Events] = {}
    for objective in objectives:
        total = Events()
        for member, counts in increases.items():
            if objective.counts_on(member):
                total += objective.events(counts)
        out[objective.id] = total
    return out


class SloRecorder(BackgroundTask):
    def __init__(
        self,
        settings: AlertsSettings,
        session_factory: Callable[[], Session],
        members_of: Callable[[Session], list[MemberEndpoint]],
        answering: Answering | None = None,
    ) -> None:
        self.settings = settings
        self.session_factory = session_factory
        self.members_of = members_of
        self.answering = answering
        self.last: dict[str, MemberCounts] = {}
        self.looks = 0

    async def run(self) -> None:
        async with new_http_client(answering=self.answering) as http:
            await repeat(
                lambda: self.record_once(http),
                lambda: self.settings.alerts_interval,
                "SLO recording",
            )

    def _load(self) -> tuple[list[ObjectiveSpec], list[MemberEndpoint]]:
        with self.session_factory() as db:
            objectives = [spec_of(row) for row in SloService(db).rows()]
            return objectives, (self.members_of(db) if objectives else [])

    def _save(self, events: dict[int, Events], now: float) -> None:
        with self.session_factory() as db:
            SloService(db).add(minute_of(now), events, now)

    async def record_once(self, http: httpx.AsyncClient) -> dict[int, Events]:
        """One look at every member; the events recorded, per objective id."""
        objectives, members = await asyncio.to_thread(self._load)
        if not objectives:
            self.last.clear()  # nothing measured: start from a fresh baseline later
            return {}
        looks = await asyncio.gather(*(member_counts(http, m) for m in members))
        increases: dict[str, MemberCounts] = {}
        for member, look in zip(members, looks, strict=True):
            if look is None:
                continue
            more = increase(self.last.get(member.name), look)
            self.last[member.name] = look
            if more is not None:
                increases[member.name] = more
        events = objective_events(objectives, increases)
        now = time.time()
        await asyncio.to_thread(self._save, events, now)
        self.looks += 1
        return events
