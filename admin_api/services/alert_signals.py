"""Reading the built-in signals from the members (the numbers: ``admin_api/alert_signals.py``).

One look per evaluation, only while an enabled rule reads a member signal: every member's Cluster
MBean (its own health, as ``/health`` reports it) merged by the health model, and its Server
MBean (``StartTime`` and the slow-consumer counter). A member managed over JMX has no Cluster
MBean read (a JVM per look is too dear): it is down when its Server MBean cannot be read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from pydantic import ValidationError

from pushgrid.metrics.health import OK, Health, cluster_health
from pushgrid.ops import names
from pushgrid.ops.alerts import CLUSTER, SIGNALS
from pushgrid.ops.cluster import ClusterDocument
from pushgrid.ops.delivery import DeliveryLoss
from pushgrid.ops.server import ServerTotals
from pushgrid.ops.workers import WorkersView

from ..access import is_jmx, read_view
from ..alert_signals import (
    SILENT_DOWN_SECONDS,
    SLOW_COUNTER,
    WORKER_SIGNALS,
    MemberTracker,
    ServerLook,
    WorkerLook,
    WorkerTracker,
    health_readings,
    loss_readings,
    merge,
    stall_readings,
)
from ..alerting import Readings, Rule
from ..member_client import MemberEndpoint, MemberFailure, silences
from .cluster import cluster_views, member_health_of

#: the signals read from the members (the objectives' burn rates come from SQL: services/alerts.py)
MEMBER_SIGNALS = frozenset(
    name for name, (_, scope) in SIGNALS.items() if scope != CLUSTER and not name.startswith("slo_")
)


async def server_look(http: httpx.AsyncClient, member: MemberEndpoint) -> ServerLook | None:
    try:
        value = await read_view(http, member, names.SERVER, ServerTotals)
    except MemberFailure:
        return None
    slow = value.counters.get(SLOW_COUNTER, 0)
    return ServerLook(time.monotonic(), float(value.start_time), float(slow), value.delivery_mode)


async def loss_look(http: httpx.AsyncClient, member: MemberEndpoint) -> dict[str, int] | None:
    """The loss counters the member's clients reported in its window (None: unreadable)."""
    try:
        return (await read_view(http, member, names.DELIVERY, DeliveryLoss)).loss
    except MemberFailure:
        return None


async def workers_look(http: httpx.AsyncClient, member: MemberEndpoint) -> list[WorkerLook] | None:
    """The member's processes (MBean ``pushgrid:type=Workers``; None: unreadable, or a member
    without it)."""
    if is_jmx(member.monitor_url):
        return None
    try:
        rows = (await read_view(http, member, names.WORKERS, WorkersView)).rows()
    except (MemberFailure, ValidationError):
        return None
    return [WorkerLook(r.index, r.pid, r.restarts, r.answering) for r in rows]


async def _none() -> list[Any]:
    return []


def _names(members: Sequence[MemberEndpoint], views: Sequence[ClusterDocument | None]) -> set[str]:
    names = {m.name for m in members}
    for view in views:
        names.update(entry.name for entry in ([] if view is None else view.members))
    return names


def briefly_silent(healths: Mapping[str, Health | None], silent: Mapping[str, float]) -> set[str]:
    """The members that could not be read because they have not answered in time for less than
    :data:`SILENT_DOWN_SECONDS` (pure): not down yet for ``MemberDown``. A member that refused
    (its process is gone) or answered out of contract is not silent: down at once."""
    return {
        name
        for name, health in healths.items()
        if health is None and silent.get(name, SILENT_DOWN_SECONDS) < SILENT_DOWN_SECONDS
    }


class SignalReader:
    """The member signals of every member, one look per call."""

    def __init__(self) -> None:
        self.tracker = MemberTracker()
        self.workers = WorkerTracker()

    async def read(
        self, http: httpx.AsyncClient, members: Sequence[MemberEndpoint], rules: Sequence[Rule]
    ) -> Readings:
        if not any(rule.indicator in MEMBER_SIGNALS for rule in rules) or not members:
            return {}
        wants_loss = any(rule.indicator == "client_loss" for rule in rules)
        wants_workers = any(rule.indicator in WORKER_SIGNALS for rule in rules)
        views, looks, losses, processes = await asyncio.gather(
            cluster_views(http, members),
            asyncio.gather(*(server_look(http, m) for m in members)),
            asyncio.gather(*(loss_look(http, m) for m in members)) if wants_loss else _none(),
            asyncio.gather(*(workers_look(http, m) for m in members)) if wants_workers else _none(),
        )
        healths: dict[str, Health | None] = {}
        for member, view, look in zip(members, views, looks, strict=True):
            if is_jmx(member.monitor_url):
                healths[member.name] = None if look is None else OK
            else:
                healths[member.name] = None if view is None else member_health_of(view)
        unsure = briefly_silent(healths, silences(http, members))
        health = cluster_health({n: h for n, h in healths.items() if n not in unsure})
        readable = [name for name, h in healths.items() if h is not None]
        names = _names(members, views)
        by_name = {m.name: look for m, look in zip(members, looks, strict=True)}
        return merge(
            health_readings(names, readable, health.reasons, unsure),
            stall_readings(names, readable, health.reasons),
            self.tracker.readings(by_name),
            loss_readings(
                {m.name: (by_name[m.name], loss) for m, loss in zip(members, losses, strict=False)}
            ),
            self.workers.readings(
                {m.name: rows for m, rows in zip(members, processes, strict=False)}
            ),
        )
