"""Watched subjects in every monitoring view: MBean rows, /stats, Prometheus, meta-subjects.

Each view formats ``ReadModel.watched`` (server.core.watch.Watchlist.document() after the last
reading), so they agree with each other. Labels and names carry the *pattern* an operator
declared, never a raw subject: the label set is bounded by WatchedSubjects.MaxPatterns.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pushgrid.metrics.readmodel import ReadModel
from pushgrid.metrics.watched import TOTALS, WATCH_INDICATORS

from ..engine.base import PublishRequest
from .numbers import number_text

#: cumulative total -> (Prometheus name without _total, help)
PROMETHEUS_TOTALS = {
    "messages_in_total": (
        "pushgrid_watched_messages_received",
        "Messages published on a watched pattern's subjects, accepted by this member",
    ),
    "messages_out_total": (
        "pushgrid_watched_messages_sent",
        "Messages of a watched pattern's subjects sent to this member's subscribers",
    ),
    "bytes_in_total": (
        "pushgrid_watched_received_bytes",
        "Size of the messages published on a watched pattern's subjects (content and fields)",
    ),
    "bytes_out_total": (
        "pushgrid_watched_sent_bytes",
        "WebSocket bytes of a watched pattern's messages sent to subscribers",
    ),
}
STATS = ("max", "avg", "stddev")


def patterns(watched: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The patterns of a ``ReadModel.watched`` document."""
    return list(watched.get("patterns", ()))


def pattern_key(pattern: str) -> str:
    """The pattern as one token of a text line or a subject segment (percent-encoded: no
    ``/``, space or control character; ``*`` kept)."""
    return quote(pattern, safe="*")


# -- JMX / Jolokia -----------------------------------------------------------------------------


def summary(model: ReadModel) -> list[dict[str, Any]]:
    """One row per pattern: pattern, source, totals, gauges and current rates."""
    return [
        {
            "pattern": p["pattern"],
            "source": p["source"],
            **p["totals"],
            "subscribers": p["subscribers"],
            "subjects": p["subjects"],
            **{name: i["current"] for name, i in p["indicators"].items()},
        }
        for p in patterns(model.watched)
    ]


# -- /stats ------------------------------------------------------------------------------------


def stats_lines(watched: Mapping[str, Any]) -> list[str]:
    """``watched.<pattern>.<total|indicator>[.<window>.<stat>] value`` lines."""
    lines = []
    for p in patterns(watched):
        key = f"watched.{pattern_key(p['pattern'])}"
        for total in TOTALS:
            lines.append(f"{key}.{total} {p['totals'][total]}")
        for name, indicator in p["indicators"].items():
            lines.append(f"{key}.{name} {number_text(indicator['current'])}")
            for window, stats in indicator["windows"].items():
                for stat in (*STATS, "count"):
                    value = stats[stat]
                    text = "U" if value is None else number_text(value)
                    lines.append(f"{key}.{name}.{window}.{stat} {text}")
    return lines


# -- Prometheus --------------------------------------------------------------------------------


def prometheus_metrics(watched: Mapping[str, Any]) -> Iterator[Metric]:
    """Per pattern: four counters, two gauges, current rates and non-empty windows."""
    found = patterns(watched)
    yield GaugeMetricFamily(
        "pushgrid_watched_patterns", "Watched subject patterns on this member", value=len(found)
    )
    totals = {
        key: CounterMetricFamily(name, text, labels=["pattern"])
        for key, (name, text) in PROMETHEUS_TOTALS.items()
    }
    subscribers = GaugeMetricFamily(
        "pushgrid_watched_subscribers",
        "Local subscriptions to a watched pattern's subjects",
        labels=["pattern"],
    )
    subjects = GaugeMetricFamily(
        "pushgrid_watched_subjects",
        "Subjects of a watched pattern with a local subscriber or a message in the last second",
        labels=["pattern"],
    )
    current = GaugeMetricFamily(
        "pushgrid_watched_indicator",
        "Last per-second sample of a watched pattern's indicators",
        labels=["pattern", "indicator"],
    )
    windows = GaugeMetricFamily(
        "pushgrid_watched_indicator_window",
        "Max, average and standard deviation of a watched pattern's indicators over windows",
        labels=["pattern", "indicator", "window", "stat"],
    )
    for p in found:
        pattern = p["pattern"]
        for key, family in totals.items():
            family.add_metric([pattern], p["totals"][key])
        subscribers.add_metric([pattern], p["subscribers"])
        subjects.add_metric([pattern], p["subjects"])
        for name, indicator in p["indicators"].items():
            current.add_metric([pattern, name], indicator["current"])
            for window, stats in indicator["windows"].items():
                if stats["count"]:
                    for stat in STATS:
                        windows.add_metric([pattern, name, window, stat], stats[stat] or 0.0)
    yield from totals.values()
    yield from (subscribers, subjects, current, windows)


# -- meta-subjects -----------------------------------------------------------------------------


def meta_messages(model: ReadModel, node: str) -> list[PublishRequest]:
    """``<node>/watched`` (fields: pattern -> its subject) and one retained message per
    pattern on ``<node>/watched/<percent-encoded pattern>``."""
    index: dict[str, str] = {}
    messages = []
    for p in patterns(model.watched):
        subject = f"{node}/watched/{pattern_key(p['pattern'])}"
        index[p["pattern"]] = subject
        messages.append(PublishRequest(subject, p["pattern"], pattern_fields(p), True, "standard"))
    overview = PublishRequest(f"{node}/watched", str(len(index)), index, True, "standard")
    return [overview, *messages]


def pattern_fields(p: Mapping[str, Any]) -> dict[str, str]:
    fields = {"pattern": p["pattern"], "ts": str(p["ts"]), "windows_ts": str(p["windows_ts"])}
    fields.update({total: str(p["totals"][total]) for total in TOTALS})
    for indicator in WATCH_INDICATORS:
        reading = p["indicators"][indicator.name]
        fields[indicator.name] = number_text(reading["current"])
        for window, stats in reading["windows"].items():
            fields[f"{indicator.name}.{window}.count"] = str(stats["count"])
            for stat in STATS:
                if stats[stat] is not None:
                    fields[f"{indicator.name}.{window}.{stat}"] = number_text(stats[stat])
    return fields
