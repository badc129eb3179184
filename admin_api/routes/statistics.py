"""``/stats/windows``, ``/stats/trend`` and ``/stats/delivery``: the pipeline's results, from
SQL."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from pushgrid.ops.api.delivery_windows import DeliveryWindowList
from pushgrid.ops.statistics import TrendQuery

from ..deps import AdminSettingsDep, GuardedRoute, SqlSession, Viewer
from ..problems import ProblemError, problem_responses
from ..schemas import IndicatorName, TrendSeries, UnixSeconds, WindowName, WindowStatList
from ..services.statistics import StatisticsService

router = APIRouter(prefix="/stats", tags=["pipeline statistics"], route_class=GuardedRoute)

Scope = Annotated[
    str,
    Query(
        min_length=1,
        max_length=255,
        description="'cluster' or 'node:<ServerName>'",
        examples=["cluster"],
    ),
]


@router.get(
    "/windows",
    name="stats.windows",
    response_model=WindowStatList,
    responses=problem_responses(),
)
def get_window_stats(
    principal: Viewer,
    db: SqlSession,
    admin: AdminSettingsDep,
    scope: Scope | None = None,
    indicator: IndicatorName | None = None,
    window: WindowName | None = None,
) -> WindowStatList:
    """The latest window statistics of every (scope, indicator, window) the pipeline computed.

    Each has its `as_of` (the instant it describes), `computed_at`, `age_seconds` and `stale`
    (older than Admin.StaleAfter). Sorted cluster first, then nodes; indicators and windows in
    their documented order.
    """
    service = StatisticsService(db, admin.admin_stale_after)
    return service.window_stats(scope=scope, indicator=indicator, window=window)


Series = Annotated[
    str,
    Query(
        min_length=1,
        max_length=1040,
        description="'member', 'leg:<leg>' or 'pattern:<pattern>'",
        examples=["member"],
    ),
]


@router.get(
    "/delivery",
    name="stats.delivery",
    response_model=DeliveryWindowList,
    responses=problem_responses(),
)
def get_delivery_windows(
    principal: Viewer,
    db: SqlSession,
    admin: AdminSettingsDep,
    scope: Scope | None = None,
    series: Series | None = None,
) -> DeliveryWindowList:
    """Delivery latency p50/p90/p99/p99.9 of the 12 windows (ADR 062), read from each window's
    merged latency buckets: the latest as-of of every (scope, series, window) the pipeline
    computed, with its age. Cluster first, then nodes; windows in their documented order."""
    service = StatisticsService(db, admin.admin_stale_after)
    return service.delivery_windows(scope=scope, series=series)


@router.get("/trend", name="stats.trend", response_model=TrendSeries, responses=problem_responses())
def get_trend(
    principal: Viewer,
    db: SqlSession,
    admin: AdminSettingsDep,
    indicator: IndicatorName,
    window: WindowName,
    scope: Scope = "cluster",
    since: Annotated[UnixSeconds | None, Query(description="From (inclusive), Unix s")] = None,
    until: Annotated[UnixSeconds | None, Query(description="To (inclusive), Unix s")] = None,
) -> TrendSeries:
    """The trend series of one (scope, indicator, window), oldest first, for charts."""
    if since is not None and until is not None and since > until:
        raise ProblemError(422, f"since ({since}) is after until ({until})")
    service = StatisticsService(db, admin.admin_stale_after)
    query = TrendQuery(scope=scope, indicator=indicator, window=window, since=since, until=until)
    return service.trend(query)
