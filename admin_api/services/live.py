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
from typing import Any, Final, TypeVar, cast

import httpx
import msgspec

from pushgrid.metrics.indicators import INDICATOR_NAMES, INDICATORS
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops.attributes import decode
from pushgrid.ops.attributes import names as attribute_names
from pushgrid.ops.indicator import IndicatorLive, WindowMoments

from ..access import member_access
from ..member_client import INDICATORS_MBEAN, MemberEndpoint, MemberFailure, fits_contract
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

V = TypeVar("V", bound=msgspec.Struct)
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


def _windows(windows: Mapping[str, WindowMoments]) -> dict[WindowName, WindowValue]:
    """Every window in WINDOW_NAMES order (a window the member did not send holds no sample)."""
    out: dict[WindowName, WindowValue] = {}
    for window in WINDOW_NAMES:
        moments = windows.get(window) or WindowMoments()
        out[cast(WindowName, window)] = WindowValue(
            max=finite(moments.max),
            avg=finite(moments.avg),
            stddev=finite(moments.stddev),
            count=max(moments.count, 0),
        )
    return out


def indicator_documents(value: Any, view: type[V]) -> dict[str, V]:
    """A Jolokia wildcard read of the Indicator MBeans as ``view`` by indicator name (MBeans of
    indicators this version does not know are skipped); :class:`ContractError` naming the MBean
    when one does not fit the contract."""
    out: dict[str, V] = {}
    if not isinstance(value, Mapping):
        return out
    for object_name, attributes in value.items():
        name = NAME_BY_MBEAN.get(mbean_name(str(object_name)) or "")
        if name is not None and isinstance(attributes, Mapping):
            out[name] = decode(view, attributes, str(object_name))
    return out


def parse_indicators(value: Any) -> tuple[datetime | None, list[LiveIndicator]]:
    """A Jolokia wildcard read of the Indicator MBeans -> (sample time, indicators in order)."""
    by_name = indicator_documents(value, IndicatorLive)
    sample_times = [doc.sample_time for doc in by_name.values() if doc.sample_time > 0]
    sample_time = datetime.fromtimestamp(max(sample_times), UTC) if sample_times else None
    indicators = [
        LiveIndicator(
            name=cast(IndicatorName, name),
            current=finite(by_name[name].current),
            windows=_windows(by_name[name].windows),
        )
        for name in INDICATOR_NAMES
        if name in by_name
    ]
    return sample_time, indicators


async def member_live(http: httpx.AsyncClient, member: MemberEndpoint) -> MemberLive:
    """One member's indicators (raises :class:`MemberFailure`)."""
    access = member_access(http, member)
    value = await access.read(INDICATORS_MBEAN, attribute_names(IndicatorLive))
    with fits_contract(member):
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
