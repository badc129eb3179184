"""The three archive families the pipeline reads (docs/archive.md, ADR 030, ADR 062).

* ``samples``: the seven indicators, one line per node and second (``ts,node,<7>``);
* ``watched``: the watched patterns, one line per node, pattern and second
  (``ts,node,pattern,<6>``), written only while a pattern is watched;
* ``delivery``: the delivery latency buckets, one line per node, series and second
  (``ts,node,scope,buckets,<6>``); its windows sum one measure per bucket (ADR 062).

Each family runs the same stages -- compaction, rollups, windows -- over its own files and its
own warehouse tables (the watched family under ``<warehouse>/watched/``). Everything after the
scope seconds is the same long bucket shape (scope, indicator, bucket); the watched family's
scope carries the pattern (``<scope>\\t<pattern>``, :data:`results.PATTERN_SEPARATOR`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql.types import LongType, StringType, StructField, StructType

from pushgrid.metrics.archive import DELIVERY, SAMPLES, WATCHED
from pushgrid.metrics.watched import WATCH_NAMES

from . import transforms as T
from .delivery import DELIVERY_KEYS, DELIVERY_MEASURES, DELIVERY_VALUES, delivery_scope_seconds
from .results import CLUSTER_SCOPE

__all__ = ["DELIVERY_FAMILY", "FAMILIES", "INDICATOR_FAMILY", "WATCHED_FAMILY", "Family"]


@dataclass(frozen=True)
class Family:
    prefix: str  # archive file prefix: "<prefix>-HH.csv[.open]"
    keys: tuple[str, ...]  # text columns after ``node``
    indicators: tuple[str, ...]
    seconds: Callable[[DataFrame], DataFrame]  # samples -> scope seconds
    subdir: str  # warehouse sub-directory ("" for the indicators: the historical layout)
    always_scopes: tuple[str, ...]  # scopes listed even without a sample
    #: what the scope seconds hold and the rollups and windows sum (the archive's integer
    #: columns when empty; the delivery family turns its buckets into one measure)
    measures: tuple[str, ...] = ()
    #: text columns an archive line may leave empty (read as "", never dropped as missing): the
    #: delivery family's ``buckets`` of a loss-only line (clients reported loss, no latency)
    may_be_empty: tuple[str, ...] = ()

    @property
    def window_indicators(self) -> tuple[str, ...]:
        return self.measures or self.indicators

    @property
    def columns(self) -> tuple[str, ...]:
        return ("ts", "node", *self.keys, *self.indicators)

    @property
    def schema(self) -> StructType:
        return StructType(
            [StructField("ts", LongType()), StructField("node", StringType())]
            + [StructField(k, StringType()) for k in self.keys]
            + [StructField(name, LongType()) for name in self.indicators]
        )

    @property
    def header(self) -> str:
        return ",".join(self.columns)

    @property
    def file_re(self) -> re.Pattern[str]:
        return re.compile(rf"^{re.escape(self.prefix)}-(\d{{2}})\.csv(\.open)?$")

    def warehouse(self, root: Path) -> Path:
        return root / self.subdir if self.subdir else root


INDICATOR_FAMILY = Family(SAMPLES, (), T.INDICATORS, T.scope_seconds, "", (CLUSTER_SCOPE,))
WATCHED_FAMILY = Family(WATCHED, ("pattern",), WATCH_NAMES, T.watched_scope_seconds, WATCHED, ())
DELIVERY_FAMILY = Family(
    DELIVERY,
    DELIVERY_KEYS,
    DELIVERY_VALUES,
    delivery_scope_seconds,
    DELIVERY,
    (),
    DELIVERY_MEASURES,
    ("buckets",),
)
FAMILIES = (INDICATOR_FAMILY, WATCHED_FAMILY, DELIVERY_FAMILY)
