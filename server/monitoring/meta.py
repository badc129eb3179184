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
from typing import TYPE_CHECKING

from metrics.indicators import INDICATORS

from ..engine.base import EngineUnavailable, PublishRequest
from .cluster_view import health_status, meta_fields
from .stats_page import _format

if TYPE_CHECKING:
    from ..app import PushServer

log = logging.getLogger(__name__)

META_ROOT = "/pushgrid"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def node_segment(server_name: str) -> str:
    return _UNSAFE.sub("_", server_name) or "node"


def meta_messages(app: PushServer) -> list[PublishRequest]:
    """The messages of one meta-subject round, built from the sampler's latest numbers."""
    sampler = app.sampler
    node = node_segment(app.settings.server_name)
    ts = str(sampler.latest.ts)
    windows = sampler.window_stats()
    engine_stats = app.engine.stats()
    overview = {i.name: _format(sampler.latest.values[i.name]) for i in INDICATORS}
    overview.update(
        sessions=str(app.counters.sessions),
        subscriptions=str(app.counters.subscriptions),
        subjects=str(engine_stats.subjects),
        cache_messages=str(engine_stats.cached_messages),
        uptime=_format(round(app.uptime(), 3)),
        ts=ts,
    )
    messages = [PublishRequest(f"{META_ROOT}/{node}/overview", ts, overview, True, "standard")]
    for indicator in INDICATORS:
        current = _format(sampler.latest.values[indicator.name])
        fields = {"current": current, "ts": ts}
        for window, moments in windows.get(indicator.name, {}).items():
            fields[f"{window}.count"] = str(moments.count)
            if moments.count:
                fields[f"{window}.max"] = _format(moments.max)
                fields[f"{window}.avg"] = _format(moments.mean)
                fields[f"{window}.stddev"] = _format(moments.stddev)
        subject = f"{META_ROOT}/{node}/{indicator.name}"
        messages.append(PublishRequest(subject, current, fields, True, "standard"))
    cluster = app.cluster_status()
    messages.append(
        PublishRequest(
            f"{META_ROOT}/{node}/cluster",
            health_status(cluster),
            meta_fields(cluster),
            True,
            "standard",
        )
    )
    return messages


async def publish_meta_subjects(app: PushServer, interval: float) -> None:
    """Publish a round every ``interval`` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        for message in meta_messages(app):
            try:
                await app.engine.publish(message)
            except EngineUnavailable as exc:
                log.warning("meta-subjects not published: %s", exc)
                break
