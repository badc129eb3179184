"""/stats: HTTP statistics for scripts and RRD tools.

Text (default): one ``name value`` line per number; cumulative totals end in ``_total`` and suit
RRD DERIVE data sources; window statistics are ``<indicator>.<window>.<max|avg|stddev|count>``.
JSON (``?format=json``): the same numbers as a document.

Pure formatting of the sampler's :class:`~metrics.readmodel.ReadModel` and the node's
:class:`~server.monitoring.ports.LiveState`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pushgrid.metrics.indicators import INDICATORS
from pushgrid.metrics.readmodel import ReadModel

from . import accounting_view, canary_view, delivery_view, watched_view
from .numbers import number_text
from .ports import LiveState

GAUGES = ("sessions", "subscriptions")


def stats_document(model: ReadModel, live: LiveState) -> dict[str, Any]:
    indicators: dict[str, Any] = {}
    for indicator in INDICATORS:
        reading = model.indicators[indicator.name]
        indicators[indicator.name] = {
            "current": reading.current,
            "unit": indicator.unit,
            "windows": {window: r.as_dict() for window, r in reading.windows.items()},
        }
    counters = live.counters
    document = {
        "server": live.server_name,
        "ts": model.ts,
        "sample_interval": model.interval,
        "uptime": live.uptime,
        "totals": {
            **{k: v for k, v in counters.items() if k.endswith("_total")},
            "dropped_snapshots_total": live.engine.dropped_snapshots,
            "deflate_uncompressed_bytes_total": live.deflate.uncompressed_bytes,
            "deflate_compressed_bytes_total": live.deflate.compressed_bytes,
        },
        "gauges": {
            **{name: counters[name] for name in GAUGES},
            "subjects": live.engine.subjects,
            "cache_messages": live.engine.cached_messages,
            "cache_bytes": live.engine.cached_bytes,
            "deflate_contexts": live.deflate.contexts,
            "deflate_max_contexts": live.deflate.max_contexts,
        },
        "indicators": indicators,
        "hot_subjects": dict(model.hot),
        "panel": live.panel.as_dict(),
        "watched_subjects": dict(model.watched),
        "delivery": delivery_view.stats_section(live.delivery.document),
    }
    if live.workers:  # Workers > 1 only: one process's document stays as it was
        document["workers"] = [asdict(row) for row in live.workers]
    return document


def stats_text(document: dict[str, Any]) -> str:
    lines = [f"# pushgrid stats server={document['server']} ts={document['ts']}"]
    lines.append(f"uptime_seconds {document['uptime']}")
    for section in ("totals", "gauges"):
        for name, value in document[section].items():
            lines.append(f"{name} {value}")
    for name, indicator in document["indicators"].items():
        lines.append(f"{name} {number_text(indicator['current'])}")
        for window, stats in indicator["windows"].items():
            for stat in ("max", "avg", "stddev", "count"):
                value = stats[stat]
                text = "U" if value is None else number_text(value)
                lines.append(f"{name}.{window}.{stat} {text}")
    for name, value in document["panel"].items():
        lines.append(f"panel.{name} {'U' if value is None else number_text(value)}")
    lines.extend(watched_view.stats_lines(document.get("watched_subjects", {})))
    for row in document.get("workers", ()):
        index = row["index"]
        lines.extend(
            f"worker.{index}.{k} {_worker_value(v)}" for k, v in row.items() if k != "index"
        )
    lines.extend(canary_view.stats_lines(document.get("canaries", {})))
    lines.extend(delivery_view.stats_lines(document.get("delivery", {})))
    lines.extend(accounting_view.stats_lines(document.get("accounting", {})))
    return "\n".join(lines) + "\n"


def _worker_value(value: object) -> str:
    """A worker row's value in the text: booleans as 1/0, unknown as U."""
    if value is None:
        return "U"
    return str(int(value)) if isinstance(value, bool) else str(value)
