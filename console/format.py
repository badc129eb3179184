"""Pure formatting and shaping functions of the console (no Dash, no I/O): unit-tested."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal, cast

from pushgrid.metrics.indicators import INDICATORS, Indicator
from pushgrid.metrics.window_spec import LOW_COVERAGE, WINDOW_NAMES
from pushgrid.ops.api.history import HistoryOut
from pushgrid.ops.api.members import MemberOut
from pushgrid.ops.api.statistics import WindowStatOut
from pushgrid.ops.api.trends import TrendPointOut

from .provider import CLUSTER, LiveOverview, WindowStatistics

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


NumberKind = Literal["bytes", "rate", "count"]
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_BYTES = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def kind(indicator: str) -> NumberKind:
    """How an indicator's numbers read: ``bytes`` (KiB, MiB: powers of 1024), ``rate`` (SI
    prefixes, k = 1000) or ``count`` (whole numbers with thousands separators)."""
    if is_bytes(indicator):
        return "bytes"
    if indicator.endswith("_per_second") or indicator.startswith(("messages_", "rate")):
        return "rate"
    return "count"


def _digits(number: float, digits: int = 3) -> str:
    """``number`` with ``digits`` significant digits at most, never an exponent, trailing
    zeros dropped: ``1.5``, ``12.3``, ``252``, ``1010``; an integer is printed as one."""
    if float(number).is_integer():
        return f"{number:.0f}"
    whole = len(str(int(abs(number)))) if abs(number) >= 1 else 1
    decimals = max(0, digits - whole) if abs(number) >= 1 else digits - 1
    if abs(number) < 1:  # 0.0123 -> 0.0123: keep ``digits`` significant digits
        decimals = max(decimals, -math.floor(math.log10(abs(number))) + digits - 1)
    text = f"{number:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def byte_unit(peak: float | None) -> tuple[float, str]:
    """(divisor, unit) for byte values up to ``peak``: the largest binary unit whose amount
    has at most three digits before the point (1,044,480 B is ``0.996 MiB``, not ``1020 KiB``:
    three significant digits never need a fourth)."""
    top = abs(peak or 0.0)
    for size, suffix in _BYTES:
        if top >= size * _ROLL_OVER:
            return float(size), suffix
    return 1.0, "B"


#: an amount of 1000 or more of a unit is shown in the next one (0.977 KiB, not 1000 B)
_ROLL_OVER: Final = 1000 / 1024


def number(value: float | None, how: NumberKind = "count", digits: int = 3) -> str:
    """The console's one number formatter (every page, every chart's hover and axis unit):

    * ``bytes``: ``512 B``, ``2 KiB``, ``1.52 MiB`` (powers of 1024, a space, never kB or MB);
    * ``rate``: ``12``, ``0.25``, ``4.5k``, ``1.2M`` (SI prefixes);
    * ``count``: ``252``, ``1,234`` (an integer is an integer, never ``252.00``), ``252.5``;

    ``digits`` significant digits at most, never an exponent; ``—`` for no value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return DASH
    if how == "bytes":
        return _bytes(value, digits)
    if how == "rate" and abs(value) >= 999.5:
        for size, prefix in _SI:
            amount = value / size
            if abs(float(_digits(amount, digits))) >= 1:
                return f"{_digits(amount, digits)}{prefix}"
    if float(value).is_integer():
        return f"{value:,.0f}"
    if how == "count" and abs(value) >= 10:
        return f"{value:,.1f}"  # an average of users: 252.5
    return _digits(value, digits)


def _bytes(value: float, digits: int) -> str:
    size, name = byte_unit(value)
    text = _digits(value / size, digits)
    bigger = [step for step in _BYTES if step[0] > size]
    if abs(float(text)) >= 1000 and bigger:  # 999.7 KiB rounds to 1000 KiB: say 0.976 MiB
        size, name = bigger[-1]
        text = _digits(value / size, digits)
    return f"{text} {name}"


def compact(value: float | None, indicator: str = "") -> str:
    """An indicator's reading (cards, tables, hovers): :func:`number` of its :func:`kind`."""
    return number(value, kind(indicator) if indicator else "rate")


def exact(value: float | None, indicator: str = "") -> str:
    """The statistics table's reading: four significant digits of :func:`number`; the cell's
    title holds the value exactly as written."""
    return number(value, kind(indicator) if indicator else "count", digits=4)


def count(value: int | None) -> str:
    return DASH if value is None else f"{value:,}"


def plural(value: int, noun: str, many: str | None = None) -> str:
    """``1 record``, ``0 records``, ``1,000 records`` (``many``: an irregular plural)."""
    return f"{value:,} {noun if value == 1 else many or noun + 's'}"


def latency(seconds: float | None) -> str:
    """A short time such as a loop lag or a flush delay: ``0.25 ms``, ``12.3 ms``, ``850 ms``,
    then :func:`duration` from one second on (``20.2 s``, not ``2.02e+04 ms``)."""
    if seconds is None or not math.isfinite(seconds):
        return DASH
    if abs(seconds) < 0.9995:
        return f"{_digits(seconds * 1000, 3)} ms"
    return duration(seconds)


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


def moment(when: datetime | None) -> str:
    """An instant of an admin API answer (decoded by its shared type) as ``2026-11-22 14:05:03
    UTC``; one without a zone is UTC, as the API writes it."""
    return timestamp(unix_of(when))


def second(when: datetime) -> int:
    """The Unix second of an instant of an answer (one without a zone is UTC)."""
    return int((when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp())


def unix_of(when: datetime | None) -> float | None:
    if when is None:
        return None
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


def iso_millis(text: str | None) -> str:
    """An ISO 8601 instant as ``14:05:03.120 UTC`` (a trace's events: milliseconds apart)."""
    unix = iso_unix(text)
    if unix is None:
        return DASH
    moment = datetime.fromtimestamp(unix, UTC)
    return moment.strftime("%H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def iso_unix(text: str | None) -> float | None:
    if not text:
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


# --- health ---------------------------------------------------------------------------------


def cluster_health(
    members: Sequence[MemberOut], health: str | None, reasons: Sequence[str] = ()
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
    up = sum(1 for m in members if m.reachable)
    total = len(members)
    return cast(Health, health), f"{up} of {total} member{'s' if total != 1 else ''} up"


def member_problems(members: Iterable[MemberOut]) -> list[str]:
    """One line per member that is down, for the alert area."""
    down = (m for m in members if not m.reachable)
    return [f"member {m.name} is down: {m.error or 'no answer'}" for m in down]


# --- statistics -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StatCell:
    window: str
    value: float | None
    count: int
    coverage: float = 1.0
    indicator: str = ""

    @property
    def partial(self) -> bool:
        """The window is mostly without samples: its value describes the seconds present."""
        return self.value is not None and self.coverage < LOW_COVERAGE

    @property
    def text(self) -> str:
        return exact(self.value, self.indicator)


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
    by_key: dict[tuple[str, str], WindowStatOut] = {(r.indicator, r.window): r for r in stats.rows}
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
                    cells.append(StatCell(window, None, 0, indicator=indicator))
                else:
                    cells.append(StatCell(window, value, row.count, row.coverage, indicator))
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


# --- chart ranges and history (the Overview's charts) ------------------------------------------


@dataclass(frozen=True)
class ChartRange:
    """A time range of the Overview's charts: the admin API's per-second history up to its
    retention, the statistics store's trend (one ``trend_window`` point a run) beyond it."""

    key: str
    label: str
    seconds: int
    trend_window: str | None = None


RANGES: tuple[ChartRange, ...] = (
    ChartRange("5m", "5 min", 300),
    ChartRange("15m", "15 min", 900),
    ChartRange("1h", "1 h", 3600),
    ChartRange("24h", "24 h", 86400, "1h"),
    ChartRange("7d", "7 d", 7 * 86400, "1d"),
)
DEFAULT_RANGE = "15m"


def chart_range(key: str | None) -> ChartRange:
    return next((r for r in RANGES if r.key == key), next(r for r in RANGES if r.key == "15m"))


@dataclass(frozen=True)
class ChartTrace:
    """One line of a chart: x as chart times, y in the chart's unit (None breaks the line)."""

    name: str
    x: list[str]
    y: list[float | None]


def _points(
    seconds: Sequence[int], values: Sequence[float | None], divisor: float, after: int
) -> tuple[list[str], list[float | None]]:
    """(x, y) of the seconds after ``after``; a missing second breaks the line (a None)."""
    xs: list[str] = []
    ys: list[float | None] = []
    previous = after
    for ts, value in zip(seconds, values, strict=False):
        if ts <= after:
            continue
        if previous >= 0 and ts > previous + 1:
            xs.append(chart_time(previous + 1))
            ys.append(None)
        xs.append(chart_time(ts))
        ys.append(None if value is None else value / divisor)
        previous = ts
    return xs, ys


def history_traces(
    history: HistoryOut, series: Sequence[str], indicator: str, divisor: float = 1.0
) -> list[ChartTrace]:
    """Each series' line (the cluster, then the members) of ``indicator``."""
    traces = []
    for name in series:
        scope = history.scope(name)
        seconds = [] if scope is None else scope.seconds
        values = [] if scope is None else scope.values.get(indicator, [])
        xs, ys = _points(seconds, values, divisor, -1)
        traces.append(ChartTrace(name, xs, ys))
    return traces


def history_extension(
    history: HistoryOut,
    series: Sequence[str],
    indicator: str,
    last: Mapping[str, int],
    divisor: float = 1.0,
) -> tuple[dict[str, list[list[object]]], list[int]] | None:
    """The ``extendData`` of one chart: each series' seconds after ``last[name]``, a gap kept
    as a break. ``None`` when no series has a new second."""
    xs: list[list[object]] = []
    ys: list[list[object]] = []
    traces: list[int] = []
    for index, name in enumerate(series):
        scope = history.scope(name)
        if scope is None:
            continue
        x, y = _points(scope.seconds, scope.values.get(indicator, []), divisor, last.get(name, -1))
        if x:
            xs.append(list(x))
            ys.append(list(y))
            traces.append(index)
    if not traces:
        return None
    return {"x": xs, "y": ys}, traces


def history_newest(history: HistoryOut, series: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name in series:
        scope = history.scope(name)
        if scope is not None and scope.seconds:
            out[name] = scope.seconds[-1]
    return out


def history_peak(history: HistoryOut, indicator: str) -> float:
    """The largest value of ``indicator`` in any series (0 without any)."""
    scopes = [history.cluster, *history.members]
    values = [v for s in scopes for v in s.values.get(indicator, []) if v is not None]
    return max(values, default=0.0)


def trend_traces(points: Sequence[TrendPointOut], window: str, divisor: float) -> list[ChartTrace]:
    """The cluster's average and maximum over each run's ``window`` (the statistics store)."""
    xs = [chart_time(second(p.as_of)) for p in points]
    return [
        ChartTrace(
            f"avg ({window})", xs, [None if p.avg is None else p.avg / divisor for p in points]
        ),
        ChartTrace(
            f"max ({window})", xs, [None if p.max is None else p.max / divisor for p in points]
        ),
    ]


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
