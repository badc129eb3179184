"""A trend (``GET /stats/trend``): one indicator's window statistics at each hour the pipeline
wrote, oldest first (the query is :class:`pushgrid.ops.statistics.TrendQuery`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class TrendPointOut(BaseModel):
    as_of: datetime
    count: int
    coverage: float = Field(ge=0.0, le=1.0, description="As for window statistics")
    max: float | None
    avg: float | None
    stddev: float | None
    run_id: int | None


class TrendSeries(BaseModel):
    scope: str
    indicator: str
    window: str
    points: list[TrendPointOut] = Field(description="Oldest first")
