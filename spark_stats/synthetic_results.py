"""Synthetic :class:`~spark_stats.results.PipelineResult` values, for tests and demos of the store.

No Spark: pandas frames with :data:`~spark_stats.results.STAT_COLUMNS` for every scope (the
cluster and ``node:<name>`` per node) x indicator x window, the shape the pipeline produces.
Values are deterministic functions of the key, ``as_of`` and ``offset`` (change ``offset`` to
get a "recomputed" result with different numbers for the same keys).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .results import CLUSTER_SCOPE, STAT_COLUMNS, PipelineResult, StageResult, node_scope

if TYPE_CHECKING:
    import pandas as pd


def scopes(nodes: Sequence[str]) -> list[str]:
    return [CLUSTER_SCOPE, *(node_scope(node) for node in nodes)]


def stat_frame(
    as_ofs: Sequence[int],
    nodes: Sequence[str] = ("push-1", "push-2"),
    indicators: Sequence[str] | None = None,
    windows: Sequence[str] | None = None,
    offset: float = 0.0,
    empty_windows: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per as-of x scope x indicator x window; ``empty_windows`` get count 0 and nulls."""
    import pandas as pd

    from pushgrid.metrics.indicators import INDICATOR_NAMES
    from pushgrid.metrics.window_spec import WINDOW_NAMES

    rows: list[dict[str, Any]] = []
    for as_of in as_ofs:
        for s, scope in enumerate(scopes(nodes)):
            for i, indicator in enumerate(indicators or INDICATOR_NAMES):
                for w, window in enumerate(windows or WINDOW_NAMES):
                    base = 1000.0 * (s + 1) + 10.0 * i + w + offset + (as_of % 3600) / 3600
                    empty = window in empty_windows
                    rows.append(
                        {
                            "scope": scope,
                            "indicator": indicator,
                            "window": window,
                            "as_of": as_of,
                            "count": 0 if empty else 60 * (w + 1),
                            "max": None if empty else base * 2,
                            "avg": None if empty else base,
                            "stddev": None if empty else base / 10,
                        }
                    )
    frame = pd.DataFrame(rows, columns=list(STAT_COLUMNS))
    return frame.astype({"as_of": "int64", "count": "int64", "max": "float64", "avg": "float64"})


def synthetic_result(
    as_of: int,
    nodes: Sequence[str] = ("push-1", "push-2"),
    trend_points: int = 3,
    trend_step: int = 3600,
    offset: float = 0.0,
    indicators: Sequence[str] | None = None,
    windows: Sequence[str] | None = None,
) -> PipelineResult:
    """Window statistics as of ``as_of`` and ``trend_points`` trend points ending at ``as_of``."""
    trend_as_ofs = [as_of - k * trend_step for k in reversed(range(trend_points))]
    stats = stat_frame([as_of], nodes, indicators, windows, offset)
    trend = stat_frame(trend_as_ofs, nodes, indicators, windows, offset)
    samples = 3600 * 2 * len(nodes)
    return PipelineResult(
        as_of=as_of,
        window_stats=stats,
        trend_points=trend,
        stages=[
            StageResult("compaction", samples, samples, 0.5),
            StageResult("rollups", samples, samples // 60, 0.25),
            StageResult("windows", samples // 60, len(stats) + len(trend), 0.25),
        ],
    )


def synthetic_delivery(as_of: int, nodes: Sequence[str] = ("push-1", "push-2")) -> pd.DataFrame:
    """Delivery latency windows (``spark_stats.delivery.DELIVERY_COLUMNS``) as the pipeline
    writes them: the cluster and each node, the ``member`` series, every window; the minute's
    100 latencies are 60 in bucket 30 (10 ms), 39 in 31 and 1 above 100 s (p99.9 ``inf``), and
    the clients reported 2 gaps."""
    import pandas as pd

    from pushgrid.metrics.window_spec import WINDOW_NAMES

    from .delivery import delivery_windows

    records = [
        (f"{scope}\tmember\t{part}", window, n * (w + 1))
        for scope in scopes(nodes)
        for w, window in enumerate(WINDOW_NAMES)
        for part, n in (("30", 60), ("31", 39), ("71", 1), ("loss:gaps", 2))
    ]
    return delivery_windows(pd.DataFrame(records, columns=["scope", "window", "sum"]), as_of)
