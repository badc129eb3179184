"""/stats: HTTP statistics for scripts and RRD tools.

Text (default): one ``name value`` line per number; cumulative totals end in ``_total`` and suit
RRD DERIVE data sources; window statistics are ``<indicator>.<window>.<max|avg|stddev|count>``.
JSON (``?format=json``): the same numbers as a document.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from metrics.indicators import INDICATORS

if TYPE_CHECKING:
    from ..app import PushServer


def stats_document(app: PushServer) -> dict[str, Any]:
    sampler = app.sampler
    engine_stats = app.engine.stats()
    windows = sampler.window_stats()
    indicators: dict[str, Any] = {}
    for indicator in INDICATORS:
        moments_by_window = windows.get(indicator.name, {})
        indicators[indicator.name] = {
            "current": sampler.latest.values[indicator.name],
            "unit": indicator.unit,
            "windows": {
                window: {
                    "max": _finite(m.max) if m.count else None,
                    "avg": _finite(m.mean) if m.count else None,
                    "stddev": _finite(m.stddev) if m.count else None,
                    "count": m.count,
                }
                for window, m in moments_by_window.items()
            },
        }
    counters = app.counters.as_dict()
    return {
        "server": app.settings.server_name,
        "ts": sampler.latest.ts,
        "uptime": app.uptime(),
        "totals": {k: v for k, v in counters.items() if k.endswith("_total")},
        "gauges": {
            "sessions": counters["sessions"],
            "subscriptions": counters["subscriptions"],
            "subjects": engine_stats.subjects,
            "cache_messages": engine_stats.cached_messages,
            "cache_bytes": engine_stats.cached_bytes,
        },
        "indicators": indicators,
        "hot_subjects": app.hot_subjects.document(),
    }


def stats_text(document: dict[str, Any]) -> str:
    lines = [f"# pushgrid stats server={document['server']} ts={document['ts']}"]
    lines.append(f"uptime_seconds {document['uptime']}")
    for section in ("totals", "gauges"):
        for name, value in document[section].items():
            lines.append(f"{name} {value}")
    for name, indicator in document["indicators"].items():
        lines.append(f"{name} {_format(indicator['current'])}")
        for window, stats in indicator["windows"].items():
            for stat in ("max", "avg", "stddev", "count"):
                value = stats[stat]
                lines.append(f"{name}.{window}.{stat} {'U' if value is None else _format(value)}")
    return "\n".join(lines) + "\n"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _format(value: float | int) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))
