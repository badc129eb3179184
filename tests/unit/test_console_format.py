"""The console's pure formatting and shaping functions (console.format)."""

from __future__ import annotations

import pytest
from console_values import indicator as live_indicator
from console_values import member, stat_row

from pushgrid.console import format as fmt
from pushgrid.console.provider import (
    CLUSTER,
    LiveOverview,
    LiveScope,
    WindowStatistics,
)
from pushgrid.metrics.indicators import INDICATOR_NAMES
from pushgrid.metrics.window_spec import WINDOW_NAMES
from pushgrid.ops.api.history import HistoryOut
from pushgrid.ops.api.members import MemberOut
from pushgrid.ops.api.statistics import WindowStatOut


@pytest.mark.parametrize(
    ("value", "indicator", "text"),
    [
        (None, "", "—"),
        (float("nan"), "", "—"),
        (float("inf"), "", "—"),
        (0, "", "0"),
        (12, "connected_users", "12"),
        (252.0, "connected_users", "252"),  # an integer is an integer, never 252.00
        (1234, "connected_users", "1,234"),
        (252.5, "connected_users", "252.5"),
        (0.25, "", "0.25"),
        (1234, "", "1.23k"),
        (999.7, "outgoing_messages_per_second", "1k"),  # rounded up: the next prefix
        (42_000, "outgoing_messages_per_second", "42k"),
        (3_500_000, "", "3.5M"),
        (512, "outgoing_bytes_per_second", "512 B"),
        (2048, "incoming_bytes_per_second", "2 KiB"),
        # was 1.01e+03 KiB, then 1010 KiB (issue 34): never four digits before the point
        (1_034_000, "outgoing_bytes_per_second", "0.986 MiB"),
        (1020 * 1024, "outgoing_bytes_per_second", "0.996 MiB"),
        (999 * 1024, "outgoing_bytes_per_second", "999 KiB"),
        (1000, "outgoing_bytes_per_second", "0.977 KiB"),
        (1023.9 * 1024, "outgoing_bytes_per_second", "1 MiB"),  # not 1024 KiB
        (1_597_465, "outgoing_bytes_per_second", "1.52 MiB"),  # was 1,597,465.00
        (9_500_000, "outgoing_bytes_per_second", "9.06 MiB"),
        (3 * (1 << 30), "incoming_bytes_per_second", "3 GiB"),
    ],
)
def test_compact_readings(value: float | None, indicator: str, text: str) -> None:
    assert fmt.compact(value, indicator) == text


@pytest.mark.parametrize(
    ("value", "how", "text"),
    [
        (0.0123, "rate", "0.0123"),
        (12.34, "rate", "12.3"),
        (-3.5, "rate", "-3.5"),
        (2.5e12, "rate", "2.5T"),
        (999_999, "rate", "1M"),
        (0.47, "count", "0.47"),
        (1_000_000, "count", "1,000,000"),
        (1023.7, "bytes", "1 KiB"),
    ],
)
def test_one_number_formatter_never_writes_an_exponent(value: float, how: str, text: str) -> None:
    assert fmt.number(value, how) == text  # type: ignore[arg-type]
    assert "e+" not in text
    assert "e-" not in text


def test_the_kind_of_each_indicator() -> None:
    assert fmt.kind("outgoing_bytes_per_second") == "bytes"
    assert fmt.kind("connections_per_second") == "rate"
    assert fmt.kind("connected_users") == "count"
    assert fmt.byte_unit(1536) == (1024.0, "KiB")
    assert fmt.byte_unit(None) == (1.0, "B")


def test_exact_reads_four_digits_in_the_indicators_unit() -> None:
    assert fmt.exact(1234567.891, "incoming_messages_per_second") == "1.235M"
    assert fmt.exact(1_597_465.0, "outgoing_bytes_per_second") == "1.523 MiB"
    assert fmt.exact(252.0, "connected_users") == "252"
    assert fmt.exact(0.0) == "0"
    assert fmt.exact(None) == "—"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (0.421, "0.42 s"),
        (21.5, "21.5 s"),
        (245, "4 min 05 s"),
        (900, "15 min"),
        (7200, "2 h"),
        (3 * 3600 + 7 * 60, "3 h 07 min"),
        (2 * 86400 + 4 * 3600, "2 d 04 h"),
    ],
)
def test_duration(seconds: float | None, text: str) -> None:
    assert fmt.duration(seconds) == text


def test_age_and_timestamps() -> None:
    assert fmt.age(0.2) == "just now"
    assert fmt.age(42) == "42 s ago"
    assert fmt.age(301) == "5 min ago"
    assert fmt.age(3 * 3600 + 5) == "3 h ago"
    assert fmt.timestamp(0) == "1970-01-01 00:00:00 UTC"
    assert fmt.iso_time("2026-11-22T14:05:03+00:00") == "2026-11-22 14:05:03 UTC"
    assert fmt.iso_time("2026-11-22T15:05:03+01:00") == "2026-11-22 14:05:03 UTC"
    assert fmt.iso_unix("1970-01-01T00:01:00Z") == 60.0


def test_labels_and_units() -> None:
    assert fmt.label("incoming_messages_per_second") == "Incoming messages/s"
    assert fmt.label("connected_users") == "Connected users"
    assert fmt.unit("outgoing_bytes_per_second") == "bytes/s"
    assert fmt.unit("nope") == ""


def _member(name: str, up: bool = True, error: str | None = None) -> MemberOut:
    return member(name, f"http://{name}:8900", up, error)


def test_cluster_health_is_the_admin_apis() -> None:
    """The console shows the one health model's verdict (the admin API's), it never makes its
    own: with a member down and the API saying so, both say degraded for the same reason."""
    assert fmt.cluster_health([], "ok") == ("unknown", "no members registered")
    assert fmt.cluster_health([_member("a")], "ok") == ("ok", "1 of 1 member up")
    down = [_member("a"), _member("b", False)]
    assert fmt.cluster_health(down, "degraded", ["member b is down"]) == (
        "degraded",
        "member b is down",
    )
    assert fmt.cluster_health(down, None)[0] == "unknown"
    assert fmt.cluster_health(down, "down", ["member a is down", "member b is down"])[0] == "down"
    assert fmt.member_problems([_member("a"), _member("b", False, "refused")]) == [
        "member b is down: refused"
    ]


def _stats(
    rows: list[WindowStatOut], stale: bool = False, as_of: int | None = 1000
) -> WindowStatistics:
    return WindowStatistics(CLUSTER, as_of, "2026-11-22T14:00:00+00:00", stale, 900.0, rows)


def test_stats_matrix_is_seven_indicators_by_three_stats_by_twelve_windows() -> None:
    rows = [stat_row("connected_users", "1m", 60, 5.0, 2.5, 0.5)]
    lines = fmt.stats_matrix(_stats(rows))
    assert len(lines) == len(INDICATOR_NAMES) * 3
    assert [(line.indicator, line.stat) for line in lines[:3]] == [
        ("connected_users", "max"),
        ("connected_users", "avg"),
        ("connected_users", "stddev"),
    ]
    assert [cell.window for cell in lines[0].cells] == list(WINDOW_NAMES)
    assert (lines[0].cells[0].value, lines[1].cells[0].value, lines[2].cells[0].value) == (
        5.0,
        2.5,
        0.5,
    )
    assert lines[0].cells[1].value is None
    assert lines[0].cells[1].text == "—"


def test_stats_matrix_keeps_unknown_indicators_at_the_end() -> None:
    lines = fmt.stats_matrix(_stats([stat_row("future_indicator", "1m", 1, 1.0, 1.0, 0.0)]))
    assert lines[-1].indicator == "future_indicator"


def test_freshness() -> None:
    stale, text = fmt.freshness(_stats([], as_of=1000), now=1060)
    assert not stale
    assert text == "as of 1970-01-01 00:16:40 UTC (1 min ago)"
    stale, text = fmt.freshness(_stats([], stale=True, as_of=1000), now=20000)
    assert stale
    assert text.startswith("STALE: as of")
    assert text.endswith("older than 15 min")
    stale, text = fmt.freshness(_stats([], as_of=None), now=0)
    assert stale
    assert "no pipeline results" in text


def test_scope_options_put_the_cluster_first() -> None:
    assert fmt.scope_options(["node:b", "cluster", "node:a"]) == [
        {"label": "Cluster", "value": "cluster"},
        {"label": "a", "value": "node:a"},
        {"label": "b", "value": "node:b"},
    ]


def _overview(ts: int, value: float, members: tuple[str, ...] = ("m1",)) -> LiveOverview:
    indicator = "incoming_messages_per_second"
    scopes = {
        name: LiveScope(name, ts, {indicator: live_indicator(indicator, value)}) for name in members
    }
    cluster = LiveScope(CLUSTER, ts, {indicator: live_indicator(indicator, value * len(members))})
    return LiveOverview([_member(m) for m in members], cluster, scopes)


def test_series_one_member_is_the_cluster_only() -> None:
    assert fmt.series_names(_overview(10, 1.0)) == [CLUSTER]
    assert fmt.series_names(_overview(10, 1.0, ("a", "b"))) == [CLUSTER, "a", "b"]


def _history(until: int, members: tuple[str, ...], gap: int | None = None) -> HistoryOut:
    indicator = "incoming_messages_per_second"
    seconds = [ts for ts in range(until - 4, until + 1) if ts != gap]
    cluster = {indicator: [7.0 * len(members)] * len(seconds)}
    return HistoryOut.model_validate(
        {
            "since": until - 4,
            "until": until,
            "retention": 3600,
            "indicators": [indicator],
            "cluster": {"scope": CLUSTER, "seconds": seconds, "values": cluster},
            "members": [
                {"scope": name, "seconds": seconds, "values": {indicator: [7.0] * len(seconds)}}
                for name in members
            ],
        }
    )


def test_history_traces_break_the_line_at_a_missing_second() -> None:
    history = _history(104, ("a", "b"), gap=102)
    traces = fmt.history_traces(history, [CLUSTER, "a"], "incoming_messages_per_second", 2.0)
    assert [t.name for t in traces] == [CLUSTER, "a"]
    assert traces[0].y == [7.0, 7.0, None, 7.0, 7.0]
    assert traces[0].x[2] == fmt.chart_time(102)
    assert fmt.history_newest(history, [CLUSTER, "a"]) == {CLUSTER: 104, "a": 104}
    assert fmt.history_peak(history, "incoming_messages_per_second") == 14.0


def test_history_extension_adds_only_the_seconds_each_series_lacks() -> None:
    history = _history(104, ("a", "b"))
    series = [CLUSTER, "a", "b"]
    last = {CLUSTER: 101, "a": 104, "b": 98}
    ext = fmt.history_extension(history, series, "incoming_messages_per_second", last)
    assert ext is not None
    data, traces = ext
    assert traces == [0, 2]  # a has nothing new
    assert data["x"][0] == [fmt.chart_time(ts) for ts in (102, 103, 104)]
    assert data["y"][1] == [None, 7.0, 7.0, 7.0, 7.0, 7.0]  # b: 99 missing, then 100..104
    seen = fmt.history_newest(history, series)
    assert fmt.history_extension(history, series, "incoming_messages_per_second", seen) is None


def test_chart_ranges() -> None:
    assert [r.key for r in fmt.RANGES] == ["5m", "15m", "1h", "24h", "7d"]
    assert fmt.chart_range(None).key == fmt.DEFAULT_RANGE == "15m"
    assert fmt.chart_range("1h").trend_window is None
    assert fmt.chart_range("24h").trend_window == "1h"


def test_parse_fields() -> None:
    assert fmt.parse_fields("bid=195\n\n ask = 196 \nnote=a=b") == {
        "bid": "195",
        "ask": "196",
        "note": "a=b",
    }
    assert fmt.parse_fields(None) == {}
    with pytest.raises(ValueError, match="line 2"):
        fmt.parse_fields("a=1\nnope")
    with pytest.raises(ValueError, match="key=value"):
        fmt.parse_fields("=1")


def test_paging_helpers() -> None:
    assert fmt.page_label(0, 15, 0, 0) == "no sessions"
    assert fmt.page_label(15, 15, 40, 15) == "16–30 of 40"
    assert fmt.clamp_page(9, 15, 40) == 2
    assert fmt.clamp_page(-1, 15, 40) == 0
    assert fmt.clamp_page(3, 15, 0) == 0


def test_live_value_axis_never_goes_below_one_unit_and_reads_kib_like_the_values() -> None:
    """Plotly picks the tick step from the range: reaching at least 10 keeps it >= 1 (the
    rendered ticks are checked in tests/integration/test_console_axis_browser.py). Byte axes
    carry the unit the values are divided into (KiB, MiB), never plotly's SI kB/MB."""
    from pushgrid.console.figures import LIVE_AXIS_FLOOR, live_figure, live_value_axis

    assert LIVE_AXIS_FLOOR >= 10
    byte_axis = live_value_axis("outgoing_bytes_per_second")
    assert byte_axis["autorangeoptions"] == {"minallowed": 0, "include": [0, LIVE_AXIS_FLOOR]}
    assert (byte_axis["tickformat"], byte_axis["ticksuffix"]) == ("~g", " B")
    assert live_value_axis("outgoing_bytes_per_second", "MiB")["ticksuffix"] == " MiB"
    assert "ticksuffix" not in live_value_axis("connected_users")
    trace = fmt.ChartTrace(CLUSTER, [fmt.chart_time(1_800_000_000)], [0.0])
    figure = live_figure("incoming_bytes_per_second", [trace], "KiB")
    assert figure.layout.yaxis.autorangeoptions.include == (0, 1)
    assert figure.layout.yaxis.ticksuffix == " KiB"
    assert "KiB" in figure.data[0].hovertemplate


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (0.00025, "0.25 ms"),
        (0.0123, "12.3 ms"),
        (0.85, "850 ms"),
        (0.9996, "1.00 s"),
        (20.2, "20.2 s"),  # the loop lag shown as 2.02e+04 ms (issue 34)
        (245.0, "4 min 05 s"),
    ],
)
def test_latency(seconds: float | None, text: str) -> None:
    assert fmt.latency(seconds) == text


def test_plural() -> None:
    assert fmt.plural(1, "record") == "1 record"  # was "1 records" (issue 34)
    assert fmt.plural(0, "record") == "0 records"
    assert fmt.plural(1000, "record") == "1,000 records"
    assert fmt.plural(2, "index", "indices") == "2 indices"
