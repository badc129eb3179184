"""The Indicator MBeans (``pushgrid:type=Indicator,name=<Name>``): one per spec indicator.

:class:`IndicatorDocument` is every attribute but the per-window scalars, in the MBean's order:
``Description``, ``Unit``, ``Current``, ``SampleTime``, ``Recent``, ``Total`` and ``Windows``
(every window's statistics as one map). Each window statistic is also a scalar attribute named
``<label><window>`` (``Max1m``, ``Average1m``, ``StdDev1m``, ``Count1m``): what JMX consoles and
jmxquery can read, as the bridge serves ``Windows`` as TabularData they do not print.

The admin API reads parts of the document: :class:`IndicatorLive` (the live page) and
:class:`IndicatorSamples` (the per-second history).
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec

from .attributes import MAP, STRING, java

#: window statistic -> attribute prefix
WINDOW_LABELS: Final = {"max": "Max", "avg": "Average", "stddev": "StdDev", "count": "Count"}


def window_attribute(stat: str, window: str) -> str:
    """The scalar attribute of one statistic of one window: ``("max", "1m")`` -> ``Max1m``."""
    return f"{WINDOW_LABELS[stat]}{window}"


class WindowMoments(msgspec.Struct, frozen=True, kw_only=True):
    """Max / average / population standard deviation / count of one window (null: no sample)."""

    max: float | None = None
    avg: float | None = None
    stddev: float | None = None
    count: int = 0


class IndicatorDocument(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """The attributes of one Indicator MBean before its per-window scalars, in their order."""

    description: Annotated[str, java(STRING, "What is measured")]
    unit: Annotated[str, java(STRING, "Unit")]
    current: Annotated[float, java("double", "Last per-second sample")]
    sample_time: Annotated[int, java("long", "UTC second of the last sample")]
    recent: Annotated[
        dict[str, float],
        java(MAP, "Per-second samples of the last minute: UTC second -> value"),
    ]
    total: Annotated[int, java("long", "Underlying counter (cumulative for rates)")]
    windows: Annotated[dict[str, WindowMoments], java(MAP, "max/avg/stddev/count per window")]


class IndicatorLive(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """What the admin API's live statistics read of each Indicator MBean."""

    current: float | None = None
    sample_time: int = 0  # 0: not sampled yet
    windows: dict[str, WindowMoments] = msgspec.field(default_factory=dict)


class IndicatorSamples(msgspec.Struct, rename="pascal", frozen=True, kw_only=True):
    """What the admin API's history collector reads of each Indicator MBean: the last sample
    and the seconds of the last minute (``Recent``: absent from members older than it)."""

    current: float | None = None
    sample_time: int = 0
    recent: dict[str, float | None] = msgspec.field(default_factory=dict)
