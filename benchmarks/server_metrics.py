"""Read pushgrid's own latency figure from its Prometheus endpoint during a benchmark window.

``pushgrid_flush_delay_seconds`` (metrics/delays.py, ADR 012) is observed once per flush: how
long the oldest frame of that flush waited between being queued and being handed to the
kernel. Two scrapes, at the window's start and end, give the window's distribution: the server's
own share of the latency, apart from the load generator's reading backlog.
"""

from __future__ import annotations

import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from pushgrid.metrics.delays import DelaySnapshot

FLUSH_DELAY = "pushgrid_flush_delay_seconds"


def scrape_flush_delay(metrics_url: str, timeout: float = 5.0) -> DelaySnapshot | None:
    """The server's flush-delay histogram now; None if the endpoint or the metric is missing."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=timeout) as response:
            text = response.read().decode()
    except OSError:
        return None
    for family in text_string_to_metric_families(text):
        if family.name == FLUSH_DELAY:
            return _snapshot(family.samples)
    return None


def _snapshot(samples: list[Sample]) -> DelaySnapshot:
    bounds: list[float] = []
    cumulative: list[int] = []
    count, total = 0, 0.0
    for sample in samples:
        if sample.name.endswith("_bucket"):
            le = sample.labels["le"]
            if le != "+Inf":
                bounds.append(float(le))
            cumulative.append(int(sample.value))
        elif sample.name.endswith("_count"):
            count = int(sample.value)
        elif sample.name.endswith("_sum"):
            total = float(sample.value)
    return DelaySnapshot(tuple(bounds), tuple(cumulative), count, total)


def flush_delay_summary(
    start: DelaySnapshot | None, end: DelaySnapshot | None
) -> dict[str, Any] | None:
    """p50 / p90 / p99 / p999 upper bucket bounds in ms, mean ms and flushes over the window."""
    if start is None or end is None:
        return None
    window = end.since(start)
    if window.count == 0:
        return None
    summary: dict[str, Any] = {
        name: _ms(window.quantile(q))
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999))
    }
    summary["mean"] = round(window.sum / window.count * 1000, 3)
    summary["flushes"] = window.count
    return summary


def _ms(seconds: float | None) -> float | None:
    if seconds is None or seconds == float("inf"):
        return None
    return round(seconds * 1000, 3)
