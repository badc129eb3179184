"""PUSH monitoring: the server publishes its statistics as retained messages on meta-subjects.

Subjects (``<node>`` is ServerName with characters other than letters, digits, ``.``, ``_``
and ``-`` replaced by ``_``)::

    /pushgrid/<node>/overview      content: sample time; fields: every indicator's last value,
                                   sessions, subscriptions, subjects, cache size, uptime
    /pushgrid/<node>/<indicator>   content: the last value; fields: ``current``, ``ts`` and
                                   ``<window>.<max|avg|stddev|count>`` for the 12 windows
    /pushgrid/<node>/delivery      once the node's clients have reported (ADR 048): content
                                   the window's latency p99 in seconds (``-`` without samples);
                                   fields: /stats's ``delivery`` section flattened

``/pushgrid/<node>/slow-consumers`` is an event, published the moment the member closes a slow
consumer (ADR 054): content the session id; fields: the slow-consumer record (client id,
address, transport, compression, subjects, queued bytes and their age, send rate, round trip,
offenses). Retained: the last one is its snapshot.

``/pushgrid/<node>/cluster`` (content: the health) is also published as soon as anything in it
changes (checked every ``HEALTH_CHECK_PERIOD``), not only with the next round: a member going
down must not wait up to ``MetaSubjectInterval`` to be seen there.

They are ordinary subjects: entitlement applies, and being retained a new subscriber receives the
latest statistics at once as the snapshot. They use qos ``standard`` so they never fill the
recovery cache.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any, Protocol

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
from . import delivery_view, watched_view
from .cluster_view import meta_fields
from .numbers import number_text
from .ports import LiveState, MonitoredNode

log = logging.getLogger(__name__)

META_ROOT = "/pushgrid"
HEALTH_CHECK_PERIOD = 1.0  # seconds: the cluster meta-subject follows a change within this
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class MetaPublisher(Protocol):
    async def publish(self, request: PublishRequest) -> Published: ...


def node_segment(server_name: str) -> str:
    return _UNSAFE.sub("_", server_name) or "node"


def slow_consumer_event(server_name: str, record: Mapping[str, Any]) -> PublishRequest:
    """The ``/pushgrid/<node>/slow-consumers`` event of one slow-consumer close: every field of
    the record as text (lists and maps as JSON)."""
    fields = {
        key: value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        for key, value in record.items()
    }
    subject = f"{META_ROOT}/{node_segment(server_name)}/slow-consumers"
    return _message(subject, str(record.get("session", "")), fields)


async def publish_event(engine: MetaPublisher, request: PublishRequest) -> None:
    """Publish one meta-subject event; the engine's refusal is logged, never raised."""
    try:
        await engine.publish(request)
    except (EngineUnavailable, EngineFull, SnapshotLimitExceeded) as exc:
        log.warning("meta-subject event %s not published: %s", request.subject, exc)


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
        dropped_snapshots=str(live.engine.dropped_snapshots),
        uptime=number_text(round(live.uptime, 3)),
        ts=ts,
    )
    messages = [_message(f"{node}/overview", ts, overview)]
    for indicator in INDICATORS:
        fields = indicator_fields(model, indicator.name)
        messages.append(_message(f"{node}/{indicator.name}", fields["current"], fields))
    messages.append(cluster_message(live.server_name, cluster))
    if model.watched.get("patterns"):
        messages.extend(watched_view.meta_messages(model, node))
    delivery = live.delivery.document
    if delivery.reports:
        fields = delivery_view.meta_fields(delivery)
        messages.append(_message(f"{node}/delivery", fields.get("latency.p99", "-"), fields))
    return messages


def cluster_message(server_name: str, cluster: ClusterStatus) -> PublishRequest:
    node = f"{META_ROOT}/{node_segment(server_name)}"
    return _message(f"{node}/cluster", cluster.health, meta_fields(cluster))


async def publish_meta_subjects(
    node: MonitoredNode,
    engine: MetaPublisher,
    interval: float,
    health_period: float = HEALTH_CHECK_PERIOD,
) -> None:
    """Publish a round every ``interval`` seconds, and the cluster message whenever it changes
    (checked every ``health_period`` seconds), until cancelled."""
    server_name = node.live_state().server_name
    last_round = time.monotonic()
    last_sample = -1  # the sampled second of the last round: a round repeats none
    last_cluster: PublishRequest | None = None
    while True:
        await asyncio.sleep(min(interval, health_period))
        status = node.cluster_status()
        cluster = cluster_message(server_name, status)
        model = node.read_model()
        # a round is due and the sampler has a second we have not published (a late sampler on
        # a loaded machine would otherwise have the same second published twice as an update)
        if time.monotonic() - last_round >= interval - 0.001 and model.ts != last_sample:
            last_round, last_sample = time.monotonic(), model.ts
            round_ = meta_messages(model, node.live_state(), status)
        elif last_cluster is not None and _same(cluster, last_cluster):
            continue
        else:
            round_ = [cluster]
        last_cluster = cluster
        await _publish_round(engine, round_)


def _same(a: PublishRequest, b: PublishRequest) -> bool:
    return a.content == b.content and a.fields == b.fields


async def _publish_round(engine: MetaPublisher, round_: list[PublishRequest]) -> None:
    for message in round_:
        try:
            await engine.publish(message)
        except (EngineUnavailable, EngineFull) as exc:
            log.warning("meta-subjects not published: %s", exc)
            break
        except SnapshotLimitExceeded as exc:  # an operator's very low MaxFieldsPerSubject
            log.warning("meta-subject %s not published: %s", message.subject, exc)
