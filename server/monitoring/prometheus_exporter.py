"""Prometheus exposition of the sampler's numbers (prefix ``pushgrid_``, base units).

A custom collector reads the counters and the sampler's window statistics at scrape time, so
/metrics agrees with Jolokia, /stats and the meta-subjects.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from metrics.hotsubjects import RANKINGS
from metrics.indicators import INDICATORS

from .cluster_view import cluster_metrics

if TYPE_CHECKING:
    from ..app import PushServer

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# counter attribute -> (metric name without _total, help)
_COUNTERS = {
    "connections_total": ("pushgrid_connections", "WebSocket sessions opened"),
    "disconnections_total": ("pushgrid_disconnections", "WebSocket sessions closed"),
    "messages_in_total": ("pushgrid_messages_received", "Messages accepted from publishers"),
    "messages_out_total": ("pushgrid_messages_sent", "Messages sent to subscribers"),
    "bytes_in_total": ("pushgrid_received_bytes", "Bytes received from clients"),
    "bytes_out_total": ("pushgrid_sent_bytes", "Bytes sent to clients"),
    "slow_consumer_disconnects_total": (
        "pushgrid_slow_consumer_disconnects",
        "Clients closed because their outbound buffer overflowed",
    ),
    "keepalive_timeouts_total": (
        "pushgrid_keepalive_timeouts",
        "Clients closed because they sent nothing within KeepaliveTimeout",
    ),
    "publish_rejected_total": (
        "pushgrid_publish_rejected",
        "Publishes answered denied, failed or too_large",
    ),
}


def _security(app: PushServer) -> Iterator[Metric]:
    """What the hardening limits refused (docs/security.md)."""
    security, throttle = app.security, app.auth_throttle
    for name, documentation, value in (
        ("pushgrid_auth_failures", "Failed monitoring logins", throttle.failures_total),
        (
            "pushgrid_auth_throttled",
            "Monitoring logins refused 429 during a back-off",
            throttle.throttled_total,
        ),
        (
            "pushgrid_pending_refused",
            "Connections refused 503: too many not upgraded (MaxPendingConnections*)",
            security.pending_refused_total,
        ),
        (
            "pushgrid_protocol_errors",
            "WebSocket connections closed 1002/1007 for broken framing",
            security.protocol_errors_total,
        ),
        (
            "pushgrid_http_refused",
            "HTTP requests refused 431/505/405 (header limits, version, upgrade method)",
            security.http_refused_total,
        ),
    ):
        family = CounterMetricFamily(name, documentation)
        family.add_metric([], value)
        yield family


class PushgridCollector(Collector):
    def __init__(self, app: PushServer) -> None:
        self.app = app

    def collect(self) -> Iterator[Metric]:
        counters = self.app.counters
        for attribute, (name, documentation) in _COUNTERS.items():
            family = CounterMetricFamily(name, documentation)
            family.add_metric([], getattr(counters, attribute))
            yield family
        recoveries = CounterMetricFamily(
            "pushgrid_recoveries",
            "Subscriptions asking for recovery, by outcome",
            labels=["outcome"],
        )
        recoveries.add_metric(["success"], counters.recovery_successes_total)
        recoveries.add_metric(["failure"], counters.recovery_failures_total)
        yield recoveries
        yield from _security(self.app)
        yield _gauge("pushgrid_connected_users", "Connected users (sessions)", counters.sessions)
        yield _gauge("pushgrid_subscriptions", "Active subscriptions", counters.subscriptions)
        stats = self.app.engine.stats()
        yield _gauge("pushgrid_subjects", "Subjects known to the engine", stats.subjects)
        yield _gauge("pushgrid_cache_messages", "Messages in the cache", stats.cached_messages)
        yield _gauge("pushgrid_cache_bytes", "Bytes of cached messages", stats.cached_bytes)
        yield from self._indicators()
        yield from _archive_metrics(self.app)
        yield from cluster_metrics(self.app.cluster_status())
        yield from self._hot_subjects()

    def _hot_subjects(self) -> Iterator[Metric]:
        """Top N subjects only (HotSubjects.TopN): the label set stays bounded."""
        hot = self.app.hot_subjects
        rates = GaugeMetricFamily(
            "pushgrid_hot_subject_rate",
            "Estimated per-second rate of the top subjects (space-saving sketch, EWMA)",
            labels=["ranking", "subject"],
        )
        for name in RANKINGS:
            for entry in hot.ranking(name):
                rates.add_metric([name, entry["subject"]], entry["value"])
        subscribers = GaugeMetricFamily(
            "pushgrid_hot_subject_subscribers",
            "Local subscribers of the most subscribed subjects",
            labels=["subject"],
        )
        for entry in hot.ranking("subscribers"):
            subscribers.add_metric([entry["subject"]], entry["value"])
        yield rates
        yield subscribers

    def _indicators(self) -> Iterator[Metric]:
        sampler = self.app.sampler
        current = GaugeMetricFamily(
            "pushgrid_indicator",
            "Last per-second sample of each spec indicator",
            labels=["indicator"],
        )
        window = GaugeMetricFamily(
            "pushgrid_indicator_window",
            "Max, average and standard deviation of each indicator over rolling windows",
            labels=["indicator", "window", "stat"],
        )
        stats = sampler.window_stats()
        for indicator in INDICATORS:
            current.add_metric([indicator.name], sampler.latest.values[indicator.name])
            for window_name, moments in stats.get(indicator.name, {}).items():
                if moments.count == 0:
                    continue
                for stat, value in (
                    ("max", moments.max),
                    ("avg", moments.mean),
                    ("stddev", moments.stddev),
                ):
                    window.add_metric([indicator.name, window_name, stat], _finite(value))
        yield current
        yield window


def _archive_metrics(app: PushServer) -> Iterator[Metric]:
    """Whether the per-second archive is being written (the "archive not written" alert)."""
    sampler = app.sampler
    yield _gauge(
        "pushgrid_archive_enabled",
        "1 when MetricsArchive is set (the sampler writes one line a second)",
        1 if sampler.archive is not None else 0,
    )
    yield _gauge(
        "pushgrid_archive_last_write_timestamp_seconds",
        "Unix time of the last sample written to the metrics archive (0: none yet)",
        sampler.archive_last_write,
    )
    errors = CounterMetricFamily(
        "pushgrid_archive_write_errors", "Samples the metrics archive failed to write"
    )
    errors.add_metric([], sampler.archive_write_errors)
    yield errors


# --- cluster gauges of a standalone member -----------------------------------------------------
# Every member exports these four gauges (deploy/prometheus alerts and the Grafana dashboard read
# them). The cluster engine replaces this function with its live values; a standalone server
# needs no quorum, so it always has it.


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _finite(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def build_registry(app: PushServer) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PushgridCollector(app))
    ProcessCollector(registry=registry)
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
