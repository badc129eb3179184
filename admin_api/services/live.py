"""Live statistics: the seven indicators of every member (Jolokia or JMX), and their sum.

Per member: the current value (last per-second sample) and the live windows (what the member
sampled since it started). For the cluster only the current values are summed: a sum of
per-member maxima or standard deviations is not the cluster's statistic, so cluster windows come
from the pipeline (``/api/v1/stats/windows?scope=cluster``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, cast

import httpx

from pushgrid.metrics.indicators import INDICATOR_NAMES, INDICATORS
from pushgrid.metrics.window_spec import WINDOW_NAMES

from ..access import member_access
from ..member_client import INDICATORS_MBEAN, MemberEndpoint, MemberFailure
from ..schemas import (
    ClusterIndicator,
    ClusterLive,
    IndicatorName,
    LiveIndicator,
    LiveStats,
    MemberLive,
    WindowName,
    WindowValue,
)

NAME_BY_MBEAN: Final[dict[str, str]] = {indicator.mbean: indicator.name for indicator in INDICATORS}


def finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def mbean_name(object_name: str) -> str | None:
    """``pushgrid:name=ConnectedUsers,type=Indicator`` -> ``ConnectedUsers``."""
    _, _, keys = object_name.partition(":")
    for pair in keys.split(","):
        key, _, value = pair.partition("=")
        if key.strip() == "name":
            return value.strip()
    return None


def _windows(raw: Any) -> dict[WindowName, WindowValue]:
    out: dict[WindowName, WindowValue] = {}
    source = raw if isinstance(raw, Mapping) else {}
    for window in WINDOW_NAMES:
        entry = source.get(window)
        entry = entry if isinstance(entry, Mapping) else {}
        count = entry.get("count")
        out[cast(WindowName, window)] = WindowValue(
            max=finite(entry.get("max")),
            avg=finite(entry.get("avg")),
            stddev=finite(entry.get("stddev")),
            count=count if isinstance(count, int) and count >= 0 else 0,
        )
    return out


def parse_indicators(value: Any) -> tuple[datetime | None, list[LiveIndicator]]:
    """A Jolokia wildcard read of the Indicator MBeans -> (sample time, indicators in order)."""
    by_name: dict[str, Mapping[str, Any]] = {}
    if isinstance(value, Mapping):
        for object_name, attributes in value.items():
            mbean = mbean_name(str(object_name))
            name = NAME_BY_MBEAN.get(mbean or "")
            if name is not None and isinstance(attributes, Mapping):
                by_name[name] = attributes
    sample_times = [
        attributes["SampleTime"]
        for attributes in by_name.values()
        if isinstance(attributes.get("SampleTime"), int) and attributes["SampleTime"] > 0
    ]
    sample_time = datetime.fromtimestamp(max(sample_times), UTC) if sample_times else None
    indicators = [
        LiveIndicator(
            name=cast(IndicatorName, name),
            current=finite(by_name[name].get("Current")),
            windows=_windows(by_name[name].get("Windows")),
        )
        for name in INDICATOR_NAMES
        if name in by_name
    ]
    return sample_time, indicators


async def member_live(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberLive:
    """One member's indicators (raises :class:`MemberFailure`)."""
    access = member_access(http, member)
    value = await access.read(INDICATORS_MBEAN, ["Current", "SampleTime", "Windows"])
    sample_time, indicators = parse_indicators(value)
    if not indicators:
        raise MemberFailure(member, "error", "no pushgrid Indicator MBeans")
    return MemberLive(
        member=member.name, reachable=True, sample_time=sample_time, indicators=indicators
    )


async def _member_or_error(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberLive:
    try:
        return await member_live(http, member)
    except MemberFailure as exc:
        return MemberLive(member=member.name, reachable=False, error=exc.detail)


def cluster_sums(members: Sequence[MemberLive]) -> list[ClusterIndicator]:
    """The current value of each indicator summed over the reachable members (0 without any)."""
    totals = dict.fromkeys(INDICATOR_NAMES, 0.0)
    for member in members:
        if not member.reachable:
            continue
        for indicator in member.indicators:
            if indicator.current is not None:
                totals[indicator.name] += indicator.current
    return [
        ClusterIndicator(name=cast(IndicatorName, name), current=total)
        for name, total in totals.items()
    ]


async def live_stats(http: httpx.AsyncClient, members: Sequence[MemberEndpoint]) -> LiveStats:
    results = list(await asyncio.gather(*(_member_or_error(http, m) for m in members)))
    reachable = sum(1 for result in results if result.reachable)
    return LiveStats(
        at=datetime.now(UTC),
        cluster=ClusterLive(
            members_reachable=reachable,
            members_unreachable=len(results) - reachable,
            indicators=cluster_sums(results),
        ),
        members=results,
    )
