"""PUSH monitoring: the server publishes its statistics as retained messages on meta-subjects.

Subjects (``<node>`` is ServerName with characters other than letters, digits, ``.``, ``_``
and ``-`` replaced by ``_``)::

    /pushgrid/<node>/overview      content: sample time; fields: every indicator's last value,
                                   sessions, subscriptions, subjects, cache size, uptime
    /pushgrid/<node>/<indicator>   content: the last value; fields: ``current``, ``ts`` and
                                   ``<window>.<max|avg|stddev|count>`` for the 12 windows

They are ordinary subjects: entitlement applies, and being retained a new subscriber receives the
latest statistics at once as the snapshot. They use qos ``standard`` so they never fill the
recovery cache.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Protocol

from pushgrid.metrics.indicators import INDICATORS
from pushgrid.metrics.readmodel import ReadModel

from ..cluster.status import ClusterStatus
from ..engine.base import (
    EngineFull,
    EngineUnavailable,
    Published,
    PublishRequest,
    SnapshotLimitExceeded,
)
from . import watched_view
from .cluster_view import meta_fields
from .numbers import number_text
from .ports import LiveState, MonitoredNode

log = logging.getLogger(__name__)

META_ROOT = "/pushgrid"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class Publisher(Protocol):
    async def publish(self, request: PublishRequest) -> Published: ...


def node_segment(server_name: str) -> str:
    return _UNSAFE.sub("_", server_name) or "node"


def _message(subject: str, content: str, fields: dict[str, str]) -> PublishRequest:
    """Retained, qos standard: the latest round is the snapshot, nothing fills the cache."""
    return PublishRequest(subject, content, fields, True, "standard")


def indicator_fields(model: ReadModel, name: str) -> dict[str, str]:
    """``current``, ``ts`` and ``<window>.count`` (+ max/avg/stddev when not empty)."""
    reading = model.indicators[name]
    fields = {"current": number_text(reading.current), "ts": str(model.ts)}
    for window, r in reading.windows.items():
        fields[f"{window}.count"] = str(r.count)
        for stat, value in (("max", r.max), ("avg", r.avg), ("stddev", r.stddev)):
            if value is not None:
                fields[f"{window}.{stat}"] = number_text(value)
    return fields


def meta_messages(
    model: ReadModel, live: LiveState, cluster: ClusterStatus
) -> list[PublishRequest]:
    """The messages of one meta-subject round (pure: formats the read model and live state)."""
    node = f"{META_ROOT}/{node_segment(live.server_name)}"
    ts = str(model.ts)
    overview = {i.name: number_text(model.current(i.name)) for i in INDICATORS}
    overview.update(
        sessions=str(live.counters["sessions"]),
        subscriptions=str(live.counters["subscriptions"]),
        subjects=str(live.engine.subjects),
        cache_messages=str(live.engine.cached_messages),
        uptime=number_text(round(live.uptime, 3)),
        ts=ts,
    )
    messages = [_message(f"{node}/overview", ts, overview)]
    for indicator in INDICATORS:
        fields = indicator_fields(model, indicator.name)
        messages.append(_message(f"{node}/{indicator.name}", fields["current"], fields))
    messages.append(_message(f"{node}/cluster", cluster.health, meta_fields(cluster)))
    if model.watched.get("patterns"):
        messages.extend(watched_view.meta_messages(model, node))
    return messages


async def publish_meta_subjects(node: MonitoredNode, engine: Publisher, interval: float) -> None:
    """Publish a round every ``interval`` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        round_ = meta_messages(node.read_model(), node.live_state(), node.cluster_status())
        for message in round_:
            try:
                await engine.publish(message)
            except (EngineUnavailable, EngineFull) as exc:
                log.warning("meta-subjects not published: %s", exc)
                break
            except SnapshotLimitExceeded as exc:  # an operator's very low MaxFieldsPerSubject
                log.warning("meta-subject %s not published: %s", message.subject, exc)
