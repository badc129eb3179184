"""What the Spark jobs hand to the store: small pandas frames with fixed columns.

``scope`` is ``"cluster"`` or ``"node:<ServerName>"``; ``indicator`` an archive column name
(metrics.indicators.INDICATOR_NAMES); ``window`` a window name (metrics.window_spec.WINDOW_NAMES);
``as_of`` a UTC Unix second. Statistics follow docs/monitoring.md: population standard deviation,
``avg``/``max``/``stddev`` null when ``count`` is 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

STAT_COLUMNS = ("scope", "indicator", "window", "as_of", "count", "max", "avg", "stddev")
CLUSTER_SCOPE = "cluster"
#: Watched patterns' rows (ADR 030) carry their pattern: ``pattern`` + ``STAT_COLUMNS``. Inside
#: the Spark jobs the pattern rides in the scope, ``<scope>\t<pattern>`` (never in a pattern).
WATCHED_COLUMNS = ("pattern", *STAT_COLUMNS)
PATTERN_SEPARATOR = "\t"


def node_scope(node: str) -> str:
    return f"node:{node}"


@dataclass
class StageResult:
    """Counts of one stage (compaction, rollups, windows) for the job_runs table."""

    name: str
    input_rows: int = 0
    output_rows: int = 0
    seconds: float = 0.0


@dataclass
class PipelineResult:
    as_of: int
    window_stats: pd.DataFrame  # STAT_COLUMNS, as of ``as_of``
    trend_points: pd.DataFrame  # STAT_COLUMNS, one row per as-of point of the series
    stages: list[StageResult] = field(default_factory=list)
    watched_stats: pd.DataFrame | None = None  # WATCHED_COLUMNS, as of ``as_of``
    watched_trend: pd.DataFrame | None = None  # WATCHED_COLUMNS, the hourly points
    delivery_stats: pd.DataFrame | None = None  # delivery.DELIVERY_COLUMNS, as of ``as_of``


def split_pattern_scope(frame: pd.DataFrame) -> pd.DataFrame:
    """A watched family's ``STAT_COLUMNS`` frame (scope ``<scope>\t<pattern>``) as
    ``WATCHED_COLUMNS``."""
    parts = frame["scope"].astype(str).str.split(PATTERN_SEPARATOR, n=1, expand=True)
    out = frame.copy()
    if len(out) == 0:
        out.insert(0, "pattern", [])
        return out.loc[:, list(WATCHED_COLUMNS)]
    out["scope"] = parts[0]
    out.insert(0, "pattern", parts[1])
    return out.loc[:, list(WATCHED_COLUMNS)].reset_index(drop=True)
