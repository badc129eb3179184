"""The admin API's answer types (pushgrid/ops/api/) filled in for the console's unit tests: only
the fields a test cares about are arguments, the rest take a neutral value. ``tests/`` is on the
path (pytest ``pythonpath``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pushgrid.ops.api.live import LiveIndicator, WindowValue
from pushgrid.ops.api.members import MemberOut
from pushgrid.ops.api.statistics import WindowStatOut


def member(
    name: str, monitor_url: str = "", reachable: bool = True, error: str | None = None
) -> MemberOut:
    return MemberOut(
        name=name,
        source="config",
        monitor_url=monitor_url,
        client_url=None,
        has_credentials=False,
        reachable=reachable,
        error=error,
    )


def moments(count: int, max_: float | None, avg: float | None, stddev: float | None) -> WindowValue:
    return WindowValue(count=count, max=max_, avg=avg, stddev=stddev)


def indicator(
    name: str, current: float | None, windows: dict[str, WindowValue] | None = None
) -> LiveIndicator:
    return LiveIndicator.model_validate(
        {"name": name, "current": current, "windows": windows or {}}
    )


def stat_row(
    indicator_name: str,
    window: str,
    count: int,
    max_: float | None,
    avg: float | None,
    stddev: float | None,
    coverage: float = 1.0,
    **fields: Any,
) -> WindowStatOut:
    """One stored window; ``fields`` overrides the rest (scope, as_of, stale, ...)."""
    at = datetime.fromtimestamp(1000, UTC)
    values: dict[str, Any] = {
        "scope": "cluster",
        "indicator": indicator_name,
        "window": window,
        "as_of": at,
        "count": count,
        "coverage": coverage,
        "low_coverage": coverage < 0.9,
        "max": max_,
        "avg": avg,
        "stddev": stddev,
        "run_id": None,
        "computed_at": at,
        "age_seconds": 0.0,
        "stale": False,
    }
    return WindowStatOut.model_validate(values | fields)
