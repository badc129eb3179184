"""Prometheus exposition of the sampler's numbers (prefix ``pushgrid_``, base units).

A custom collector formats, at scrape time, the node's live state and the sampler's read model
(the same values Jolokia, /stats and the meta-subjects format), so /metrics agrees with them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from pushgrid.metrics.delays import DelaySnapshot
from pushgrid.metrics.hotsubjects import RANKINGS
from pushgrid.metrics.indicators import INDICATORS
from pushgrid.metrics.readmodel import ArchiveReading, ReadModel
from pushgrid.ops.panel import MemberPanel

from . import watched_view
from .accounting_view import accounting_metrics
from .canary_view import canary_metrics
from .cluster_view import cluster_metrics
from .delivery_view import delivery_metrics
from .ports import DeflateStats, LiveState, MonitoredNode, WorkerRow

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


# LiveState.refusals key -> (metric name without _total, help): what the hardening limits
# refused (docs/security.md)
_REFUSALS = {
    "auth_failures": ("pushgrid_auth_failures", "Failed monitoring logins"),
    "auth_throttled": (
        "pushgrid_auth_throttled",
        "Monitoring logins refused 429 during a back-off",
    ),
    "pending_refused": (
        "pushgrid_pending_refused",
        "Connections refused 503: too many not upgraded (MaxPendingConnections*)",
    ),
    "protocol_errors": (
        "pushgrid_protocol_errors",
        "WebSocket connections closed 1002/1007 for broken framing",
    ),
    "http_refused": (
        "pushgrid_http_refused",
        "HTTP requests refused 431/505/405 (header limits, version, upgrade method)",
    ),
    "inflating_refused": (
        "pushgrid_inflating_refused",
        "WebSocket connections closed 1008: unfinished compressed messages above "
        "DeflateMaxInflatingPerAddress or DeflateMaxInflating",
    ),
}


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation)
    family.add_metric([], value)
    return family


def live_metrics(live: LiveState) -> Iterator[Metric]:
    """Counters and gauges of the live state."""
    counters = live.counters
    for key, (name, documentation) in _COUNTERS.items():
        yield _counter(name, documentation, counters[key])
    recoveries = CounterMetricFamily(
        "pushgrid_recoveries",
        "Subscriptions asking for recovery, by outcome",
        labels=["outcome"],
    )
    recoveries.add_metric(["success"], counters["recovery_successes_total"])
    recoveries.add_metric(["failure"], counters["recovery_failures_total"])
    yield recoveries
    subscribes = CounterMetricFamily(
        "pushgrid_subscribes",
        "Subscriptions opened (ok) and failed by the member (no quorum, engine error);"
        " denials are neither",
        labels=["outcome"],
    )
    subscribes.add_metric(["ok"], counters["subscribes_total"])
    subscribes.add_metric(["failure"], counters["subscribe_failures_total"])
    yield subscribes
    for key, (name, documentation) in _REFUSALS.items():
        yield _counter(name, documentation, live.refusals[key])
    yield _gauge("pushgrid_connected_users", "Connected users (sessions)", counters["sessions"])
    yield _gauge("pushgrid_subscriptions", "Active subscriptions", counters["subscriptions"])
    engine = live.engine
    yield _gauge("pushgrid_subjects", "Subjects known to the engine", engine.subjects)
    yield _gauge("pushgrid_cache_messages", "Messages in the cache", engine.cached_messages)
    yield _gauge("pushgrid_cache_bytes", "Bytes of cached messages", engine.cached_bytes)
    yield _counter(
        "pushgrid_dropped_snapshots",
        "Dormant snapshots given up for a new subject (MaxSubjects, MaxRetainedBytes)",
        engine.dropped_snapshots,
    )
    yield from deflate_metrics(live.deflate)
    yield delay_histogram(
        "pushgrid_flush_delay_seconds",
        "Per flush, how long its oldest queued frame waited before the write (FlushTick)",
        live.flush_delay,
    )
    yield from panel_metrics(live.panel)
    yield from delivery_metrics(live.delivery)


def deflate_metrics(deflate: DeflateStats) -> Iterator[Metric]:
    """permessage-deflate: contexts in use against the cap, bytes before and after."""
    yield _gauge(
        "pushgrid_deflate_contexts",
        "Connections holding a compressor with context takeover",
        deflate.contexts,
    )
    yield _gauge(
        "pushgrid_deflate_max_contexts", "DeflateMaxContexts (0: deflate off)", deflate.max_contexts
    )
    yield _counter(
        "pushgrid_deflate_uncompressed_bytes",
        "Bytes of the data frames sent on deflate connections, as plain frames",
        deflate.uncompressed_bytes,
    )
    yield _counter(
        "pushgrid_deflate_compressed_bytes",
        "Bytes written for those frames (compressed, or plain when it did not pay)",
        deflate.compressed_bytes,
    )


def panel_metrics(panel: MemberPanel) -> Iterator[Metric]:
    """The member panel's numbers Prometheus does not already have: process CPU, resident
    memory and open files are the standard ``process_*`` metrics (ProcessCollector), and flush
    quantiles over any range come from the histogram (``histogram_quantile``)."""
    window = f"{panel.window_seconds:g} s"
    yield _gauge(
        "pushgrid_event_loop_lag_seconds",
        "How late the last 1 s probe sleep of the event loop ended",
        _or_zero(panel.loop_lag_seconds),
    )
    yield _gauge(
        "pushgrid_event_loop_lag_max_seconds",
        f"Largest event-loop lag over the last {window}",
        _or_zero(panel.loop_lag_max_seconds),
    )
    for label, value in (
        ("p50", panel.flush_delay_p50_seconds),
        ("p99", panel.flush_delay_p99_seconds),
    ):
        yield _gauge(
            f"pushgrid_flush_delay_{label}_seconds",
            f"Flush delay {label} over the last {window} (upper bucket bound; NaN: no flush)",
            float("nan") if value is None else value,
        )
    yield _gauge(
        "pushgrid_slow_consumer_disconnects_window",
        f"Slow consumers closed over the last {window}",
        panel.slow_consumers_window,
    )


def delay_histogram(name: str, documentation: str, reading: DelaySnapshot) -> Metric:
    buckets = [
        (_le(bound), seen) for bound, seen in zip(reading.bounds, reading.cumulative, strict=False)
    ]
    buckets.append(("+Inf", reading.count))
    return HistogramMetricFamily(name, documentation, buckets=buckets, sum_value=reading.sum)


def _le(bound: float) -> str:
    return repr(bound)  # the shortest text that reads back as the same float


def indicator_metrics(model: ReadModel) -> Iterator[Metric]:
    """Each indicator's last sample and its non-empty windows."""
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
    for indicator in INDICATORS:
        reading = model.indicators[indicator.name]
        current.add_metric([indicator.name], reading.current)
        for window_name, r in reading.windows.items():
            if r.count == 0:
                continue
            for stat, value in (("max", r.max), ("avg", r.avg), ("stddev", r.stddev)):
                window.add_metric([indicator.name, window_name, stat], _or_zero(value))
    yield current
    yield window


def archive_metrics(archive: ArchiveReading) -> Iterator[Metric]:
    """Whether the per-second archive is being written (the "archive not written" alert)."""
    yield _gauge(
        "pushgrid_archive_enabled",
        "1 when MetricsArchive is set (the sampler writes one line a second)",
        1 if archive.enabled else 0,
    )
    yield _gauge(
        "pushgrid_archive_last_write_timestamp_seconds",
        "Unix time of the last sample written to the metrics archive (0: none yet)",
        archive.last_write,
    )
    yield _counter(
        "pushgrid_archive_write_errors",
        "Samples the metrics archive failed to write",
        archive.write_errors,
    )


def hot_subject_metrics(hot: Mapping[str, Any]) -> Iterator[Metric]:
    """Top N subjects only (HotSubjects.TopN): the label set stays bounded."""
    rankings = hot.get("rankings", {})
    rates = GaugeMetricFamily(
        "pushgrid_hot_subject_rate",
        "Estimated per-second rate of the top subjects (space-saving sketch, EWMA)",
        labels=["ranking", "subject"],
    )
    for name in RANKINGS:
        for entry in rankings.get(name, ()):
            rates.add_metric([name, entry["subject"]], entry["value"])
    subscribers = GaugeMetricFamily(
        "pushgrid_hot_subject_subscribers",
        "Local subscribers of the most subscribed subjects",
        labels=["subject"],
    )
    for entry in rankings.get("subscribers", ()):
        subscribers.add_metric([entry["subject"]], entry["value"])
    yield rates
    yield subscribers


class PushgridCollector(Collector):
    def __init__(self, node: MonitoredNode) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        model = self.node.read_model()
        live = self.node.live_state()
        yield from live_metrics(live)
        yield from worker_metrics(live.workers)
        yield from indicator_metrics(model)
        yield from archive_metrics(model.archive)
        yield from cluster_metrics(self.node.cluster_status())
        yield from canary_metrics(self.node.canary_state())
        yield from accounting_metrics(self.node.accounting())
        yield from hot_subject_metrics(model.hot)
        yield from watched_view.prometheus_metrics(model.watched)


# --- cluster gauges of a standalone member -----------------------------------------------------
# Every member exports these four gauges (deploy/prometheus alerts and the Grafana dashboard read
# them). The cluster engine replaces this function with its live values; a standalone server
# needs no quorum, so it always has it.


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _or_zero(value: float | None) -> float:
    return 0.0 if value is None else value


_WORKER_GAUGES = (
    ("cpu_seconds", "pushgrid_worker_cpu_seconds", "CPU time of one worker process"),
    ("rss_bytes", "pushgrid_worker_resident_memory_bytes", "Resident memory of one worker"),
    ("connections", "pushgrid_worker_connections", "Connections one worker holds"),
    ("sessions", "pushgrid_worker_sessions", "Client sessions one worker holds"),
    ("open_files", "pushgrid_worker_open_files", "Open file descriptors of one worker"),
    ("report_age", "pushgrid_worker_report_age_seconds", "Age of a worker's last report"),
    ("linked", "pushgrid_worker_up", "1 while worker 0 has a link to the worker (0: restarting)"),
    ("loop_lag_seconds", "pushgrid_worker_loop_lag_seconds", "Event-loop lag of one worker"),
    (
        "loop_lag_max_seconds",
        "pushgrid_worker_loop_lag_max_seconds",
        "Largest event-loop lag of one worker over the last 60 s",
    ),
)


def worker_metrics(rows: Sequence[WorkerRow]) -> Iterator[Metric]:
    """The per-process breakdown of a multi-process server (none with Workers = 1)."""
    if not rows:
        return
    for attribute, name, documentation in _WORKER_GAUGES:
        family = GaugeMetricFamily(name, documentation, labels=["worker", "pid"])
        for row in rows:
            value = getattr(row, attribute)
            if value is not None:  # a lag not measured yet
                family.add_metric([str(row.index), str(row.pid)], float(value))
        yield family


def build_registry(node: MonitoredNode) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PushgridCollector(node))
    ProcessCollector(registry=registry)
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
