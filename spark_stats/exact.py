"""Exact integer aggregates -> the float statistics of results.STAT_COLUMNS (pure Python).

An aggregate is ``(count, sum, sumsq, max)`` of integer samples, with ``sum`` and ``sumsq``
exact (Python ints; ``decimal.Decimal`` from Spark is accepted). The statistics are derived once:

* ``avg = sum / count``: Python's int / int true division, correctly rounded;
* ``stddev = sqrt((count * sumsq - sum**2) / count**2)``: the population variance as an exact
  rational (numerator and denominator are exact integers), rounded once to a float, then
  ``math.sqrt`` -- within an ulp or two of the true value, whatever the magnitude of the samples;
* ``max`` as a float (integers below 2**53 are exact).

No floating-point sum of squares is involved anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from pushgrid.metrics.window_spec import WINDOW_NAMES

from .results import CLUSTER_SCOPE, STAT_COLUMNS
from .transforms import INDICATORS

__all__ = ["complete", "empty_stats", "exact_int", "finalize", "moments", "stats_frame"]


def exact_int(value: Any) -> int:
    """An exact integer from a Python/numpy int or an integral Decimal (raises otherwise)."""
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, Decimal):
        if value != value.to_integral_value():
            raise ValueError(f"not an integer: {value}")
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise TypeError(f"not an exact integer: {value!r}")


def moments(count: int, total: int, squares: int) -> tuple[float, float]:
    """``(avg, stddev)`` of ``count`` integer samples with exact ``total`` and ``squares``."""
    if count <= 0:
        raise ValueError("no samples")
    numerator = count * squares - total * total  # count**2 * variance, exact
    if numerator < 0:
        raise ValueError("inconsistent aggregate: negative variance")
    return total / count, math.sqrt(numerator / (count * count))


def finalize(exact: pd.DataFrame) -> pd.DataFrame:
    """Exact aggregates (``transforms.EXACT_COLUMNS``) -> a frame with exactly ``STAT_COLUMNS``.

    Rows with ``count == 0`` (or a null count) get null ``max``/``avg``/``stddev``.
    """
    records: list[tuple[Any, ...]] = []
    for scope, indicator, window, as_of, count, total, squares, maximum in exact.loc[
        :, ["scope", "indicator", "window", "as_of", "count", "sum", "sumsq", "max"]
    ].itertuples(index=False, name=None):
        n = 0 if count is None or pd.isna(count) else int(count)
        if n <= 0:
            records.append((scope, indicator, window, int(as_of), 0, None, None, None))
            continue
        avg, std = moments(n, exact_int(total), exact_int(squares))
        records.append(
            (scope, indicator, window, int(as_of), n, float(exact_int(maximum)), avg, std)
        )
    return stats_frame(records)


def stats_frame(records: Sequence[tuple[Any, ...]]) -> pd.DataFrame:
    """A STAT_COLUMNS frame with stable dtypes (nulls as NaN in the float columns)."""
    frame = pd.DataFrame.from_records(list(records), columns=list(STAT_COLUMNS))
    return frame.astype(
        {
            "scope": "object",
            "indicator": "object",
            "window": "object",
            "as_of": "int64",
            "count": "int64",
            "max": "float64",
            "avg": "float64",
            "stddev": "float64",
        }
    )


def empty_stats() -> pd.DataFrame:
    return stats_frame([])


def complete(
    stats: pd.DataFrame,
    scopes: Iterable[str],
    as_of: int,
    indicators: Sequence[str] = INDICATORS,
    always: Iterable[str] = (CLUSTER_SCOPE,),
) -> pd.DataFrame:
    """``stats`` plus a count-0 row for every missing scope x indicator x window, sorted.

    The ``always`` scopes (the cluster) are present even without a sample.
    """
    wanted = sorted(set(scopes) | set(always), key=lambda s: (s != CLUSTER_SCOPE, s))
    have: Mapping[tuple[str, str, str], int] = {
        (r.scope, r.indicator, r.window): i for i, r in enumerate(stats.itertuples(index=False))
    }
    rows: list[tuple[Any, ...]] = []
    for scope in wanted:
        for indicator in indicators:
            for window in WINDOW_NAMES:
                i = have.get((scope, indicator, window))
                if i is None:
                    rows.append((scope, indicator, window, int(as_of), 0, None, None, None))
                else:
                    rows.append(tuple(stats.iloc[i][list(STAT_COLUMNS)]))
    return stats_frame(rows)
