"""Pure formatting and shaping functions of the console (no Dash, no I/O): unit-tested."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, cast

from pushgrid.metrics.indicators import INDICATORS, Indicator
from pushgrid.metrics.window_spec import LOW_COVERAGE, WINDOW_NAMES

from .provider import CLUSTER, LiveOverview, Member, StatRow, WindowStatistics

INDICATOR_BY_NAME: dict[str, Indicator] = {i.name: i for i in INDICATORS}
STATS: tuple[tuple[str, str], ...] = (("max", "max"), ("avg", "avg"), ("stddev", "σ"))
DASH = "—"

Health = Literal["ok", "degraded", "down", "unknown"]


# --- numbers --------------------------------------------------------------------------------


def label(indicator: str) -> str:
    """``incoming_messages_per_second`` -> ``Incoming messages/s``."""
    text = indicator.replace("_per_second", "/s").replace("_", " ")
    return text[:1].upper() + text[1:]


def unit(indicator: str) -> str:
    known = INDICATOR_BY_NAME.get(indicator)
    return known.unit if known is not None else ""


def is_bytes(indicator: str) -> bool:
    return "bytes" in indicator


_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_BYTES = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def compact(value: float | None, indicator: str = "") -> str:
    """A short human reading: ``1.23k``, ``4.5 MiB``, ``12``, ``0.25``; ``—`` for no value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if is_bytes(indicator):
        for byte_size, byte_suffix in _BYTES:
            if abs(value) >= byte_size:
                return f"{value / byte_size:.3g} {byte_suffix}"
        return f"{value:.0f} B" if float(value).is_integer() else f"{value:.3g} B"
    for size, suffix in _SI:
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    if float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.3g}"


def exact(value: float | None) -> str:
    """The statistics table's reading: thousands separators, two decimals; ``—`` for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    return f"{value:,.2f}"


def count(value: int | None) -> str:
    return DASH if value is None else f"{value:,}"


def duration(seconds: float | None) -> str:
    """``0.42 s``, ``12.3 s``, ``4 min 05 s``, ``15 min``, ``3 h 07 min``, ``2 d 04 h``."""
    if seconds is None:
        return DASH
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 3600:
        big, small, units = whole // 60, whole % 60, ("min", "s")
    elif whole < 86400:
        big, small, units = whole // 3600, whole % 3600 // 60, ("h", "min")
    else:
        big, small, units = whole // 86400, whole % 86400 // 3600, ("d", "h")
    return f"{big} {units[0]}" if small == 0 else f"{big} {units[0]} {small:02d} {units[1]}"


def age(seconds: float) -> str:
    """How long ago: ``just now``, ``42 s ago``, ``5 min ago``, ``3 h ago``, ``2 d ago``."""
    if seconds < 1:
        return "just now"
    if seconds < 60:
        return f"{int(seconds)} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def timestamp(unix: float | None) -> str:
    """``2026-11-22 14:05:03 UTC``."""
    if unix is None:
        return DASH
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso_time(text: str | None) -> str:
    """An ISO 8601 instant as ``2026-11-22 14:05:03 UTC``."""
    if not text:
        return DASH
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return timestamp(moment.timestamp())


def iso_unix(text: str | None) -> float | None:
    if not text:
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# --- health ---------------------------------------------------------------------------------


def cluster_health(
    members: Sequence[Member], health: str | None, reasons: Sequence[str] = ()
) -> tuple[Health, str]:
    """The cluster at a glance, as the admin API's ``GET /cluster`` says it (the one health
    model, metrics/health.py): its status and reasons, never a verdict of the console's own.

    ``health`` None (the admin API could not say) is ``unknown``."""
    if not members:
        return "unknown", "no members registered"
    if health not in ("ok", "degraded", "down"):
        return "unknown", "the admin API cannot read the cluster's health"
    if reasons:
        return cast(Health, health), "; ".join(reasons)
    up = sum(1 for m in members if m.up)
    total = len(members)
    return cast(Health, health), f"{up} of {total} member{'s' if total != 1 else ''} up"


def member_problems(members: Iterable[Member]) -> list[str]:
    """One line per member that is down, for the alert area."""
    return [f"member {m.name} is down: {m.error or 'no answer'}" for m in members if not m.up]


# --- statistics -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StatCell:
    window: str
    value: float | None
    count: int
    coverage: float = 1.0

    @property
    def partial(self) -> bool:
        """The window is mostly without samples: its value describes the seconds present."""
        return self.value is not None and self.coverage < LOW_COVERAGE

    @property
    def text(self) -> str:
        return exact(self.value)


@dataclass(frozen=True)
class StatLine:
    """One line of the statistics table: an indicator's ``stat`` across the twelve windows."""

    indicator: str
    stat: str  # max | avg | stddev
    cells: list[StatCell]


def stats_matrix(
    stats: WindowStatistics,
    indicators: Sequence[str] | None = None,
    windows: Sequence[str] = WINDOW_NAMES,
) -> list[StatLine]:
    """The seven indicators x twelve windows as lines of max, avg and stddev (missing: None)."""
    by_key: dict[tuple[str, str], StatRow] = {(r.indicator, r.window): r for r in stats.rows}
    names = list(indicators or [i.name for i in INDICATORS])
    extra = sorted({r.indicator for r in stats.rows} - set(names))
    lines: list[StatLine] = []
    for indicator in [*names, *extra]:
        for stat, _ in STATS:
            cells = []
            for window in windows:
                row = by_key.get((indicator, window))
                value = None if row is None else getattr(row, stat)
                if row is None:
                    cells.append(StatCell(window, None, 0))
                else:
                    cells.append(StatCell(window, value, row.count, row.coverage))
            lines.append(StatLine(indicator, stat, cells))
    return lines


def freshness(stats: WindowStatistics, now: float) -> tuple[bool, str]:
    """(stale, text) for the as-of banner of the statistics page."""
    if stats.as_of is None:
        return True, "no pipeline results yet: run the statistics job (Jobs page)"
    text = f"as of {timestamp(stats.as_of)} ({age(max(0.0, now - stats.as_of))})"
    if stats.stale:
        limit = duration(stats.stale_after) if stats.stale_after else "the limit"
        return True, f"STALE: {text}, older than {limit}"
    return False, text


def scope_label(scope: str, members: Collection[str] | None = None) -> str:
    """A scope's name; with ``members`` (the members configured now), a node that is not one
    of them says so: its statistics are history, not a live member's."""
    if scope == CLUSTER:
        return "Cluster"
    name = scope.removeprefix("node:")
    if members is not None and name not in members:
        return f"{name} (not a member now)"
    return name


def scope_options(
    scopes: Iterable[str], members: Collection[str] | None = None
) -> list[dict[str, str]]:
    ordered = sorted(set(scopes), key=lambda s: (s != CLUSTER, s))
    return [{"label": scope_label(s, members), "value": s} for s in ordered]


def coverage_text(cell: StatCell) -> str:
    """``covers 4 min of 1d (0.3%)``: a cell's share of its window, for its tooltip."""
    covered = duration(cell.count)
    return f"covers {covered} of {cell.window} ({cell.coverage:.1%})"


# --- overview -------------------------------------------------------------------------------


def series_names(overview: LiveOverview) -> list[str]:
    """The traces of every live chart: the cluster, then each member when there are several."""
    if len(overview.members) <= 1:
        return [CLUSTER]
    return [CLUSTER, *(m.name for m in overview.members)]


def live_points(
    overview: LiveOverview, series: Sequence[str], indicator: str
) -> list[tuple[int | None, float | None]]:
    """(sample second, value) of ``indicator`` for each series, in ``series`` order."""
    out: list[tuple[int | None, float | None]] = []
    for name in series:
        scope = overview.cluster if name == CLUSTER else overview.scopes.get(name)
        if scope is None or scope.error is not None:
            out.append((None, None))
            continue
        live = scope.indicators.get(indicator)
        out.append((scope.ts, None if live is None else live.current))
    return out


def live_extension(
    overview: LiveOverview, series: Sequence[str], indicator: str, last: Mapping[str, int]
) -> tuple[dict[str, list[list[object]]], list[int]] | None:
    """The ``extendData`` of one chart: points newer than ``last`` (series name -> second).

    ``None`` when no series has a new sample (the chart is left as it is).
    """
    xs: list[list[object]] = []
    ys: list[list[object]] = []
    traces: list[int] = []
    for index, (name, (ts, value)) in enumerate(
        zip(series, live_points(overview, series, indicator), strict=True)
    ):
        if ts is None or ts <= last.get(name, -1):
            continue
        xs.append([chart_time(ts)])
        ys.append([value])
        traces.append(index)
    if not traces:
        return None
    return {"x": xs, "y": ys}, traces


def newest_seconds(overview: LiveOverview, series: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in series:
        scope = overview.cluster if name == CLUSTER else overview.scopes.get(name)
        if scope is not None and scope.ts is not None and scope.error is None:
            out[name] = scope.ts
    return out


def chart_time(ts: int) -> str:
    """A sample second as the ISO text plotly reads as a date axis value (UTC)."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


# --- subjects -------------------------------------------------------------------------------


def parse_fields(text: str | None) -> dict[str, str]:
    """``key=value`` lines (blank lines ignored) as a dict; ValueError names a bad line."""
    fields: dict[str, str] = {}
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"line {number} {line!r} is not key=value")
        fields[key.strip()] = value.strip()
    return fields


# --- sessions -------------------------------------------------------------------------------


def page_label(offset: int, limit: int, total: int, shown: int) -> str:
    if total == 0:
        return "no sessions"
    first = offset + 1 if shown else offset
    return f"{first}–{offset + shown} of {total}"


def clamp_page(page: int, limit: int, total: int) -> int:
    """A page number within 0 .. last page."""
    last = max(0, (total - 1) // limit) if limit > 0 else 0
    return min(max(0, page), last)
