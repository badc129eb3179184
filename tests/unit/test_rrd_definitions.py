"""The RRD layout of ``pushgrid rrd``: the seven indicators, DERIVE for totals, 1 s to 15 months."""

from __future__ import annotations

import re
from pathlib import Path

from pushgrid.metrics.indicators import INDICATORS
from pushgrid.metrics.rrd import (
    ARCHIVES,
    CHARTS,
    STEP,
    _quote,
    create_args,
    data_sources,
    graph_args,
    parse_stats,
    update_args,
)

SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "M": 31 * 86400}


def seconds(duration: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([smhdwM])", duration).groups()  # type: ignore[union-attr]
    return int(number) * SECONDS[unit]


def test_one_data_source_per_indicator_gauge_for_users_derive_min_0_for_totals() -> None:
    sources = data_sources()
    assert [s.indicator for s in sources] == list(INDICATORS)
    assert {s.name: s.kind for s in sources} == {
        "users": "GAUGE",
        "connections": "DERIVE",
        "disconnections": "DERIVE",
        "msgs_in": "DERIVE",
        "msgs_out": "DERIVE",
        "bytes_in": "DERIVE",
        "bytes_out": "DERIVE",
    }
    for source in sources:
        assert len(source.name) <= 19  # rrdtool's limit
        assert source.definition().endswith(":0:U")  # min 0: a restart is unknown, not a spike
        assert source.stats_key.endswith("_total") == (source.kind == "DERIVE")


def test_archives_cover_one_second_to_fifteen_months() -> None:
    resolutions = [seconds(res) for res, _ in ARCHIVES]
    spans = [seconds(span) for _, span in ARCHIVES]
    assert resolutions[0] == STEP == 1
    assert spans[0] >= 60  # the last minute at full resolution
    assert spans[-1] >= 15 * 30 * 86400  # 15 months
    assert resolutions == sorted(resolutions)
    assert spans == sorted(spans)
    args = create_args(Path("m.rrd"), 1000)
    assert args[:6] == ["create", "m.rrd", "--step", "1", "--start", "1000"]
    assert sum(a.startswith("RRA:AVERAGE:") for a in args) == len(ARCHIVES)
    assert sum(a.startswith("RRA:MAX:") for a in args) == len(ARCHIVES)


def test_stats_text_to_update() -> None:
    text = (
        "# pushgrid stats server=push-1 ts=1795360552\n"
        "uptime_seconds 2.5\nsessions 3\nconnections_total 7\ndisconnections_total 4\n"
        "messages_in_total 10\nmessages_out_total 30\nbytes_in_total 1885\n"
        "connected_users.1m.max U\nnonsense\n"
    )
    stats = parse_stats(text)
    assert stats["sessions"] == 3
    assert "connected_users.1m.max" not in stats  # unknown stays out
    # bytes_out_total is missing: that data source is U (unknown) for this second
    assert update_args(Path("m.rrd"), 1795360553, stats) == [
        "update",
        "m.rrd",
        "1795360553:3:7:4:10:30:1885:U",
    ]


def test_graph_arguments_draw_every_chart_line_from_the_file() -> None:
    names = {s.name for s in data_sources()}
    drawn = {ds for chart in CHARTS for ds, _, _ in chart.lines}
    assert drawn == names  # every indicator is on some chart
    args = graph_args(Path("m.rrd"), Path("out.png"), CHARTS[2], "push-1", "-1d")
    assert args[:6] == ["graph", "out.png", "--start", "-1d", "--end", "now"]
    assert "DEF:msgs_in=m.rrd:msgs_in:AVERAGE" in args
    assert "DEF:msgs_out_max=m.rrd:msgs_out:MAX" in args


def test_quoting_for_the_rrdtool_pipe() -> None:
    assert _quote("/var/lib/pushgrid/rrd/push-1.rrd") == "/var/lib/pushgrid/rrd/push-1.rrd"
    assert _quote("/tmp/my dir/a.rrd") == "'/tmp/my dir/a.rrd'"
